// The C API's invocation (include/kiln/kiln.h): kiln_invoke, kiln_invoke_ex,
// kiln_invoke_async, fences, and waiting for a context's work.
#include <vector>

#include "runtime/kiln_internal.h"

using namespace kiln::capi;  // NOLINT: the entry points below use the helpers

namespace {

// Releases the references that KILN_ARG_CONSUME entries hand to a call which
// fails before adopting them.
void ReleaseConsumed(const kiln_invoke_arg_t* args, size_t arg_count) {
  if (!args) return;
  for (size_t i = 0; i < arg_count; ++i) {
    if ((args[i].flags & KILN_ARG_CONSUME) && !(args[i].flags & KILN_ARG_OUTPUT_STORAGE)) {
      kiln_tensor_release(args[i].tensor);
    }
  }
}

template <typename T>
void Grow(HostVector<T>* v, size_t n) {
  if (v->size() < n) {
    kiln::vm::CountHostAllocation();
    v->resize(n);
  }
}

// Frees the C API's and the VM's invoke scratch (it grows again on the next
// call): after a refused allocation it may hold a block taken from malloc
// instead of the app's allocator. Only null pointers are left in the C API's
// between calls.
void DropInvokeScratch(kiln_context_t context) {
  context->context->DropInvokeScratch();
  HostVector<kiln::vm::InvokeArg>().swap(context->invoke_args);
  HostVector<kiln::vm::BufferView*>().swap(context->storage_views);
  HostVector<kiln_tensor_s*>().swap(context->storage_tensors);
  HostVector<Ref<kiln::vm::BufferView>>().swap(context->result_views);
}

// The shared body of kiln_invoke and kiln_invoke_ex: context->invoke_args
// (arguments; consumed ones already adopted) and, when `with_storage`,
// context->storage_views/storage_tensors are filled in.
kiln_status_t InvokePrepared(const char* api, kiln_context_t context, kiln_function_t function,
                             size_t arg_count, bool with_storage, kiln_tensor_t* out_results,
                             size_t result_count, uint64_t allocations_before,
                             const HostFailureWatch& watch,
                             kiln::vm::InvokeFences* fences = nullptr) {
  Grow(&context->result_views, result_count);
  uint64_t vm_before = kiln::vm::HostAllocationCount();
  Status s = context->context->InvokeEx(function->ref, context->invoke_args.data(), arg_count,
                                        context->result_views.data(), result_count,
                                        with_storage ? context->storage_views.data() : nullptr,
                                        fences);
  // Context::InvokeEx added its own allocations to the stats; add the rest.
  uint64_t vm_allocations = kiln::vm::HostAllocationCount() - vm_before;
  if (s.ok() && fences && fences->signal_submitted) {
    // Asynchronous: host reads of the results and output storage wait for
    // the signal point (kiln_tensor_read), bounded by the context's timeout.
    uint64_t timeout = context->context->limits().wait_timeout_ns;
    for (size_t i = 0; i < result_count; ++i) {
      if (context->result_views[i]) MarkPendingWrite(context->result_views[i].get(), fences->signal, timeout);
      if (with_storage && context->storage_views[i]) {
        MarkPendingWrite(context->storage_views[i], fences->signal, timeout);
      }
    }
  }
  if (s.ok() && watch.failed()) {
    // The allocator refused a block that a container then took from malloc
    // (host_alloc.h): the call fails, as every creating call does, and its
    // results are dropped (the device work has run or is
    // queued; output storage it writes stays marked for host reads).
    s = kiln::ResourceExhaustedError("%s: out of host memory (the allocator returned NULL)", api);
  }
  if (s.ok()) {
    for (size_t i = 0; i < result_count; ++i) {
      kiln_tensor_s* storage = with_storage ? context->storage_tensors[i] : nullptr;
      if (storage && context->result_views[i].get() == storage->view.get()) {
        storage->Retain();  // the caller's own tensor is the result
        out_results[i] = storage;
        continue;
      }
      auto* t = new kiln_tensor_s();  // pooled; counts only on a pool miss
      if (!t) {
        for (size_t j = 0; j < i; ++j) {
          kiln_tensor_release(out_results[j]);
          out_results[j] = nullptr;
        }
        s = kiln::ResourceExhaustedError("out of host memory (the allocator returned NULL)");
        break;
      }
      t->device = context->device;
      t->view = std::move(context->result_views[i]);
      out_results[i] = t;
    }
  }
  for (size_t i = 0; i < result_count; ++i) context->result_views[i].reset();
  context->device->device->stats().host_allocations_invoke +=
      kiln::vm::HostAllocationCount() - allocations_before - vm_allocations;
  if (watch.failed()) DropInvokeScratch(context);
  return Wrap(std::move(s));
}

}  // namespace

extern "C" {

kiln_status_t kiln_invoke(kiln_context_t context, kiln_function_t function,
                          const kiln_tensor_t* args, size_t arg_count,
                          kiln_tensor_t* out_results, size_t result_count) {
  if (!context) return NullArg("kiln_invoke", "context");
  if (!function) return NullArg("kiln_invoke", "function");
  if (function->context != context) {
    return Wrap(kiln::InvalidArgumentError(
        "kiln_invoke: function '%s' was looked up in a different context",
        function->info->name.data()));
  }
  if (!args && arg_count) return NullArg("kiln_invoke", "args");
  if (!out_results && result_count) return NullArg("kiln_invoke", "out_results");
  HostFailureWatch watch;
  uint64_t allocations_before = kiln::vm::HostAllocationCount();
  Grow(&context->invoke_args, arg_count);
  if (watch.failed()) {
    DropInvokeScratch(context);
    return OutOfHostMemory("kiln_invoke");
  }
  for (size_t i = 0; i < arg_count; ++i) {
    if (!args[i]) {
      return Wrap(kiln::InvalidArgumentError("kiln_invoke: args[%zu] is NULL", i));
    }
    if (args[i]->device->device.get() != context->device->device.get()) {
      return Wrap(kiln::InvalidArgumentError(
          "kiln_invoke: args[%zu] lives on a different device than the context", i));
    }
    context->invoke_args[i] = kiln::vm::InvokeArg{args[i]->view.get(), false};
  }
  return InvokePrepared("kiln_invoke", context, function, arg_count, false, out_results,
                        result_count, allocations_before, watch);
}

}  // extern "C"

namespace {

// kiln_invoke_ex and kiln_invoke_async (`api` names the entry point in
// messages; `fences` null: synchronous).
kiln_status_t InvokeExImpl(const char* api, kiln_context_t context, kiln_function_t function,
                           const kiln_invoke_arg_t* args, size_t arg_count,
                           kiln::vm::InvokeFences* fences, kiln_tensor_t* out_results,
                           size_t result_count) {
  auto fail = [&](Status status) {
    ReleaseConsumed(args, arg_count);
    return Wrap(std::move(status));
  };
  if (!context) return fail(kiln::InvalidArgumentError("%s: context is NULL", api));
  if (!function) return fail(kiln::InvalidArgumentError("%s: function is NULL", api));
  if (function->context != context) {
    return fail(kiln::InvalidArgumentError(
        "%s: function '%s' was looked up in a different context", api,
        function->info->name.data()));
  }
  if (!args && arg_count) return NullArg(api, "args");
  if (!out_results && result_count) {
    return fail(kiln::InvalidArgumentError("%s: out_results is NULL", api));
  }
  if (result_count != function->info->result_count) {
    return fail(kiln::InvalidArgumentError(
        "%s: function '%s' returns %u results, %zu result slots given", api,
        function->info->name.data(), function->info->result_count, result_count));
  }
  HostFailureWatch watch;
  uint64_t allocations_before = kiln::vm::HostAllocationCount();
  Grow(&context->invoke_args, arg_count);
  Grow(&context->storage_views, result_count);
  Grow(&context->storage_tensors, result_count);
  if (watch.failed()) {  // before anything is adopted or run
    DropInvokeScratch(context);
    return fail(kiln::ResourceExhaustedError("%s: out of host memory (the allocator returned NULL)", api));
  }
  for (size_t k = 0; k < result_count; ++k) {
    context->storage_views[k] = nullptr;
    context->storage_tensors[k] = nullptr;
  }
  // Pass 1: validate every entry and take borrowed pointers (before any
  // consumed handle is released: one tensor may appear twice).
  size_t n = 0;
  bool any_storage = false;
  for (size_t i = 0; i < arg_count; ++i) {
    const kiln_invoke_arg_t& a = args[i];
    if (!a.tensor) {
      return fail(kiln::InvalidArgumentError("%s: args[%zu].tensor is NULL", api, i));
    }
    if (a.tensor->device->device.get() != context->device->device.get()) {
      return fail(kiln::InvalidArgumentError(
          "%s: args[%zu] lives on a different device than the context", api, i));
    }
    if (a.flags & ~static_cast<kiln_arg_flags_t>(KILN_ARG_CONSUME | KILN_ARG_OUTPUT_STORAGE)) {
      return fail(kiln::InvalidArgumentError("%s: args[%zu]: unknown flags 0x%x", api, i,
                                             a.flags));
    }
    if ((a.flags & KILN_ARG_CONSUME) && (a.flags & KILN_ARG_OUTPUT_STORAGE)) {
      return fail(kiln::InvalidArgumentError(
          "%s: args[%zu]: KILN_ARG_CONSUME and KILN_ARG_OUTPUT_STORAGE exclude each "
          "other",
          api, i));
    }
    if (a.flags & KILN_ARG_OUTPUT_STORAGE) {
      if (a.result_index < 0 || static_cast<size_t>(a.result_index) >= result_count) {
        return fail(kiln::InvalidArgumentError(
            "%s: args[%zu]: output storage for result %d, but function '%s' has %zu "
            "results",
            api, i, a.result_index, function->info->name.data(), result_count));
      }
      size_t k = static_cast<size_t>(a.result_index);
      if (context->storage_tensors[k]) {
        return fail(kiln::InvalidArgumentError(
            "%s: args[%zu]: result %zu already has output storage", api, i, k));
      }
      context->storage_tensors[k] = a.tensor;
      context->storage_views[k] = a.tensor->view.get();
      any_storage = true;
      continue;
    }
    if (n < arg_count) context->invoke_args[n] = kiln::vm::InvokeArg{a.tensor->view.get(), false};
    ++n;
  }
  if (n != function->info->arg_count) {
    return fail(kiln::InvalidArgumentError(
        "%s: function '%s' expects %u arguments, got %zu (plus %zu output storage "
        "entries)", api,
        function->info->name.data(), function->info->arg_count, n, arg_count - n));
  }
  // Pass 2: adopt consumed references. A handle nobody else holds gives up
  // its view (so the view's only holder becomes the call); otherwise the view
  // is retained for the call and the caller's handle reference released.
  n = 0;
  for (size_t i = 0; i < arg_count; ++i) {
    const kiln_invoke_arg_t& a = args[i];
    if (a.flags & KILN_ARG_OUTPUT_STORAGE) continue;
    if (a.flags & KILN_ARG_CONSUME) {
      kiln_tensor_s* t = a.tensor;
      kiln::vm::BufferView* view;
      if (t->refcount() == 1) {
        view = t->view.release();
      } else {
        view = t->view.get();
        view->Retain();
      }
      t->Release();
      context->invoke_args[n] = kiln::vm::InvokeArg{view, true};
    }
    ++n;
  }
  return InvokePrepared(api, context, function, n, any_storage, out_results, result_count,
                        allocations_before, watch, fences);
}

}  // namespace

extern "C" {

kiln_status_t kiln_invoke_ex(kiln_context_t context, kiln_function_t function,
                             const kiln_invoke_arg_t* args, size_t arg_count,
                             kiln_tensor_t* out_results, size_t result_count) {
  return InvokeExImpl("kiln_invoke_ex", context, function, args, arg_count, nullptr, out_results,
                      result_count);
}

kiln_status_t kiln_invoke_async(kiln_context_t context, kiln_function_t function,
                                const kiln_invoke_arg_t* args, size_t arg_count,
                                kiln_fence_t wait_fence, kiln_fence_t signal_fence,
                                kiln_tensor_t* out_results, size_t result_count) {
  auto fail = [&](Status status) {
    ReleaseConsumed(args, arg_count);
    return Wrap(std::move(status));
  };
  if (!context) return fail(kiln::InvalidArgumentError("kiln_invoke_async: context is NULL"));
  if (!signal_fence) {
    return fail(kiln::InvalidArgumentError(
        "kiln_invoke_async: signal_fence is NULL (the results are valid only once it is "
        "signalled)"));
  }
  if (signal_fence->device->device.get() != context->device->device.get() ||
      (wait_fence && wait_fence->device->device.get() != context->device->device.get())) {
    return fail(kiln::InvalidArgumentError(
        "kiln_invoke_async: a fence belongs to a different device than the context"));
  }
  if (wait_fence == signal_fence) {
    return fail(kiln::InvalidArgumentError(
        "kiln_invoke_async: wait_fence and signal_fence are the same fence (the call would "
        "wait on itself)"));
  }
  if (signal_fence->signal_claimed.exchange(true)) {
    return fail(kiln::FailedPreconditionError(
        "kiln_invoke_async: signal_fence was already signalled or given to another call "
        "(kiln_fence_reset it once reached, or create a new one)"));
  }
  kiln::vm::InvokeFences fences;
  if (wait_fence) fences.wait = {wait_fence->semaphore.get(), wait_fence->value.load()};
  fences.signal = {signal_fence->semaphore.get(), signal_fence->value.load()};
  kiln_status_t status = InvokeExImpl("kiln_invoke_async", context, function, args, arg_count,
                                      &fences, out_results, result_count);
  // Failed before any work was submitted: the fence stays usable.
  if (!fences.signal_submitted) {
    signal_fence->signal_claimed.store(false);
  } else {
    if (context->last_signal_semaphore.get() != fences.signal.semaphore) {
      context->last_signal_semaphore = Ref<kiln::hal::Semaphore>::Retain(fences.signal.semaphore);
    }
    context->last_signal_value = fences.signal.value;
  }
  return status;
}

kiln_status_t kiln_context_wait_idle(kiln_context_t context, uint64_t timeout_ns) {
  if (!context) return NullArg("kiln_context_wait_idle", "context");
  kiln::hal::Semaphore* semaphore = context->last_signal_semaphore.get();
  if (semaphore) {
    uint64_t value = context->last_signal_value;
    Status s = semaphore->Wait(value, timeout_ns);
    if (!s.ok()) {
      auto now = semaphore->Query();
      if (now.ok() && now.value() < value) {
        return Wrap(kiln::DeadlineExceededError(
            "kiln_context_wait_idle: timeout: the context's work has not finished within %llu "
            "ns (is it waiting on a fence nobody signalled?)",
            static_cast<unsigned long long>(timeout_ns)));
      }
      return Wrap(std::move(s));
    }
  }
  return Wrap(context->context->Collect());
}

kiln_status_t kiln_context_release_within(kiln_context_t context, uint64_t timeout_ns) {
  if (!context) return nullptr;
  if (!LiveHandle<kiln_context_s, HandleTag::kContext>(context, "kiln_context_release_within")) {
    return Wrap(kiln::InvalidArgumentError(
        "kiln_context_release_within: not a live context handle (double release?)"));
  }
  // Only the last reference waits (kiln_context_release blocks there).
  if (context->refcount() == 1) {
    kiln_status_t idle = kiln_context_wait_idle(context, timeout_ns);
    if (idle) return idle;  // still held by the caller
  }
  context->Release();
  return nullptr;
}

kiln_status_t kiln_context_collect(kiln_context_t context) {
  if (!context) return NullArg("kiln_context_collect", "context");
  return Wrap(context->context->Collect());
}

// --- fences --------------------------------------------------------------------

kiln_status_t kiln_fence_create(kiln_device_t device, kiln_fence_t* out_fence) {
  if (!device) return NullArg("kiln_fence_create", "device");
  if (!out_fence) return NullArg("kiln_fence_create", "out_fence");
  auto semaphore = device->device->CreateSemaphore(0);
  if (!semaphore.ok()) {
    Status s = semaphore.take_status();
    return Wrap(s.Annotate("kiln_fence_create"));
  }
  auto* fence = new (std::nothrow) kiln_fence_s();
  if (!fence) return Wrap(kiln::ResourceExhaustedError("kiln_fence_create: out of memory"));
  fence->device = Ref<kiln_device_s>::Retain(device);
  fence->semaphore = std::move(semaphore).value();
  *out_fence = fence;
  return nullptr;
}
void kiln_fence_retain(kiln_fence_t fence) {
  RetainHandle<HandleTag::kFence>(fence, "kiln_fence_retain");
}
void kiln_fence_release(kiln_fence_t fence) {
  ReleaseHandle<HandleTag::kFence>(fence, "kiln_fence_release");
}
kiln_status_t kiln_fence_release_within(kiln_fence_t fence, uint64_t timeout_ns) {
  if (!fence) return nullptr;
  if (!LiveHandle<kiln_fence_s, HandleTag::kFence>(fence, "kiln_fence_release_within")) {
    return Wrap(kiln::InvalidArgumentError(
        "kiln_fence_release_within: not a live fence handle (double release?)"));
  }
  // Only the release that destroys the semaphore blocks (kiln_fence_release
  // waits there): the last fence reference, with no context still holding
  // the semaphore as its last signal point.
  if (fence->refcount() == 1 && fence->semaphore && fence->semaphore->refcount() == 1) {
    Status s = fence->semaphore->WaitUnused(timeout_ns);
    if (!s.ok()) {
      if (s.code() != StatusCode::kDeadlineExceeded) return Wrap(std::move(s));
      return Wrap(kiln::DeadlineExceededError(
          "kiln_fence_release_within: timeout: device work that waits on or signals the fence "
          "has not finished within %llu ns (signal the fences it waits on, then release again)",
          static_cast<unsigned long long>(timeout_ns)));
    }
  }
  fence->Release();
  return nullptr;
}

kiln_status_t kiln_fence_signal(kiln_fence_t fence) {
  if (!fence) return NullArg("kiln_fence_signal", "fence");
  if (fence->signal_claimed.exchange(true)) {
    return Wrap(kiln::FailedPreconditionError(
        "kiln_fence_signal: the fence was already signalled or is the signal fence of an "
        "invocation"));
  }
  Status s = fence->semaphore->Signal(fence->value.load());
  if (!s.ok()) fence->signal_claimed.store(false);
  return Wrap(std::move(s));
}

kiln_status_t kiln_fence_reset(kiln_fence_t fence) {
  if (!fence) return NullArg("kiln_fence_reset", "fence");
  if (!fence->signal_claimed.load()) return nullptr;  // unsignalled, nothing scheduled: already reset
  auto value = fence->semaphore->Query();
  if (!value.ok()) return Wrap(value.take_status());
  if (value.value() < fence->value.load()) {
    return Wrap(kiln::FailedPreconditionError(
        "kiln_fence_reset: the fence has a signal scheduled that has not been reached yet "
        "(kiln_fence_wait for it first)"));
  }
  // Work already submitted against the old point waits for a smaller value,
  // which the semaphore has passed: it is unaffected.
  fence->value.fetch_add(1);
  fence->signal_claimed.store(false);
  return nullptr;
}

kiln_status_t kiln_fence_query(kiln_fence_t fence, int* out_signaled) {
  if (!fence) return NullArg("kiln_fence_query", "fence");
  if (!out_signaled) return NullArg("kiln_fence_query", "out_signaled");
  auto value = fence->semaphore->Query();
  if (!value.ok()) return Wrap(value.take_status());
  *out_signaled = value.value() >= fence->value.load() ? 1 : 0;
  return nullptr;
}

kiln_status_t kiln_fence_wait(kiln_fence_t fence, uint64_t timeout_ns) {
  if (!fence) return NullArg("kiln_fence_wait", "fence");
  uint64_t point = fence->value.load();
  Status s = fence->semaphore->Wait(point, timeout_ns);
  if (s.ok()) return nullptr;
  auto value = fence->semaphore->Query();
  if (value.ok() && value.value() < point) {
    return Wrap(kiln::DeadlineExceededError(
        "kiln_fence_wait: timeout: the fence was not signalled within %llu ns",
        static_cast<unsigned long long>(timeout_ns)));
  }
  return Wrap(std::move(s));
}

}  // extern "C"
