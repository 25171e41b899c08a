// Invocation: frames, the interpreter's calls into other functions,
// argument and result checks, and the invoke scratch. Linking is in
// context_link.cc, ABI ownership (consume claims, take/donate, output
// storage) in abi_ownership.cc, the allocation cache in allocation_cache.cc,
// recorded command buffers in replay.cc, the interpreter loop in
// interpreter.cc.
#include "vm/context.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "vm/tensor_sig.h"

namespace kiln::vm {

namespace {

uint32_t NextPow2(uint32_t n) {
  uint32_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace

StatusOr<Ref<Context>> Context::Create(Ref<hal::Device> device) {
  Ref<Context> ctx = Ref<Context>::Adopt(new Context(std::move(device)));
  if (!ctx) return ResourceExhaustedError("out of host memory for a context");
  KILN_RETURN_IF_ERROR(ctx->hal_.Initialize());
  return ctx;
}

const FunctionInfo& Context::function_info(FunctionRef fn) const {
  return modules_[fn.module]->module->function(fn.ordinal);
}

const HostVector<int32_t>& Context::i32_registers_for_testing() const {
  static const HostVector<int32_t> kEmpty;
  return frames_.empty() ? kEmpty : frames_[0]->i32;
}

Frame* Context::AcquireFrame(uint32_t depth, const FunctionInfo& info) {
  while (frames_.size() <= depth) {
    CountHostAllocation(2);  // the Frame and the frames_ slot
    frames_.push_back(std::make_unique<Frame>());
  }
  Frame* frame = frames_[depth].get();
  uint32_t ni = NextPow2(std::max<uint32_t>(info.i32_register_count, 1));
  uint32_t nr = NextPow2(std::max<uint32_t>(info.ref_register_count, 1));
  if (frame->i32.size() < ni) {
    CountHostAllocation();
    frame->i32.resize(ni);
  }
  if (frame->refs.size() < nr) {
    CountHostAllocation();
    frame->refs.resize(nr);
  }
  frame->i32_mask = static_cast<uint32_t>(frame->i32.size() - 1);
  frame->ref_mask = static_cast<uint32_t>(frame->refs.size() - 1);
  std::fill(frame->i32.begin(), frame->i32.begin() + ni, 0);
  frame->serial = next_serial_++;
  frame->depth = depth;
  return frame;
}

void Context::ClearFrame(uint32_t depth) {
  if (depth >= frames_.size()) return;
  for (RefValue& r : frames_[depth]->refs) r.reset();
}

Status Context::Invoke(FunctionRef fn, BufferView* const* args, size_t arg_count,
                       Ref<BufferView>* results, size_t result_count) {
  if (!args && arg_count) return InvalidArgumentError("null argument array");
  if (scratch_args_.size() < arg_count) {
    CountHostAllocation();
    scratch_args_.resize(arg_count);
  }
  for (size_t i = 0; i < arg_count; ++i) scratch_args_[i] = InvokeArg{args[i], false};
  return InvokeEx(fn, scratch_args_.data(), arg_count, results, result_count, nullptr);
}

Status Context::CallBytecodeImport(FunctionRef callee, const ImportCall& call, uint32_t depth) {
  if (depth + 1 >= kMaxCallDepth) {
    return ResourceExhaustedError("call depth exceeds %u", kMaxCallDepth);
  }
  const FunctionInfo& info = function_info(callee);
  const format::Function* def = info.def;
  std::string_view module_name = modules_[callee.module]->module->name();  // NUL-terminated
  Frame* frame = call.frame;
  Frame* callee_frame = AcquireFrame(depth + 1, info);
  // Borrowed arguments first, then moves, so a register passed both ways is
  // seen as shared.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < call.args.size(); ++i) {
      bool consume = def->args()->Get(static_cast<flatbuffers::uoffset_t>(i))->ownership() ==
                     format::Ownership::consume;
      if (consume != (pass == 1)) continue;
      RefValue& src = frame->R(call.args[i].index);
      if (consume) {
        callee_frame->R(static_cast<uint16_t>(i)) = std::move(src);
      } else {
        callee_frame->R(static_cast<uint16_t>(i)) = src;
      }
    }
  }
  for (size_t i = 0; i < call.args.size(); ++i) {
    const format::TensorSig* sig = def->args()->Get(static_cast<flatbuffers::uoffset_t>(i));
    const RefValue& v = callee_frame->R(static_cast<uint16_t>(i));
    bool ok = v.type() == RefType::kBufferView && ViewMatches(v.as<BufferView>(), sig);
    if (!ok) {
      Status s =
          InvalidArgumentError("argument %zu '%s' of '%s.%s': expected %s, got %s", i,
                               KILN_STATUS_TEXT(SigName(sig).c_str()), module_name.data(),
                               info.name.data(), KILN_STATUS_TEXT(SigTypeString(sig).c_str()),
                               KILN_STATUS_TEXT(v.type() == RefType::kBufferView
                                                    ? v.as<BufferView>()->TypeString().c_str()
                                                    : RefTypeName(v.type())));
      ClearFrame(depth + 1);
      return s;
    }
    if (sig->ownership() == format::Ownership::consume) {
      ClaimConsumed(callee_frame, static_cast<uint16_t>(i));
    }
  }
  RegList ret;
  Status s = Run(callee.module, callee.ordinal, depth + 1, &ret);
  if (s.ok()) {
    for (size_t i = 0; i < call.results.size(); ++i) {
      const format::TensorSig* sig = def->results()->Get(static_cast<flatbuffers::uoffset_t>(i));
      const RefValue& v = callee_frame->R(ret[i].index);
      if (v.type() != RefType::kBufferView || !ViewMatches(v.as<BufferView>(), sig)) {
        s = InternalError("'%s.%s' result %zu '%s': expected %s, got %s", module_name.data(),
                          info.name.data(), i, KILN_STATUS_TEXT(SigName(sig).c_str()),
                          KILN_STATUS_TEXT(SigTypeString(sig).c_str()),
                          KILN_STATUS_TEXT(v.type() == RefType::kBufferView
                                               ? v.as<BufferView>()->TypeString().c_str()
                                               : RefTypeName(v.type())));
        break;
      }
    }
    if (s.ok()) {
      // Copies (not moves): RET may name one register twice.
      for (size_t i = 0; i < call.results.size(); ++i) {
        RefValue v = callee_frame->R(ret[i].index);
        frame->R(call.results[i].index) = std::move(v);
      }
    }
  }
  ClearFrame(depth + 1);
  return s;
}

Status Context::InvokeEx(FunctionRef fn, const InvokeArg* args, size_t arg_count,
                       Ref<BufferView>* results, size_t result_count,
                       BufferView* const* output_storage, InvokeFences* fences) {
  // Consumed references are adopted now, so every path releases them.
  struct ConsumeGuard {
    const InvokeArg* args;
    size_t count;
    bool armed = true;
    ~ConsumeGuard() {
      if (!armed) return;
      for (size_t i = 0; i < count; ++i) {
        if (args[i].consume && args[i].view) args[i].view->Release();
      }
    }
  } guard{args, args ? arg_count : 0};
  struct StorageGuard {
    HostVector<Ref<BufferView>>* storage;
    ~StorageGuard() {
      for (Ref<BufferView>& s : *storage) s.reset();
    }
  } storage_guard{&output_storage_};

  if (fn.module >= modules_.size() || fn.ordinal >= modules_[fn.module]->module->function_count()) {
    return InvalidArgumentError("invalid function reference");
  }
  if (!args && arg_count) return InvalidArgumentError("null argument array");
  if (!results && result_count) return InvalidArgumentError("null result array");
  const FunctionInfo& info = function_info(fn);
  const format::Function* def = info.def;
  if (arg_count != info.arg_count) {
    return InvalidArgumentError("function '%s' expects %u arguments, got %zu", info.name.data(),
                                info.arg_count, arg_count);
  }
  if (result_count != info.result_count) {
    return InvalidArgumentError("function '%s' returns %u results, %zu result slots given",
                                info.name.data(), info.result_count, result_count);
  }
  for (size_t i = 0; i < result_count; ++i) results[i].reset();
  for (size_t i = 0; i < arg_count; ++i) {
    const format::TensorSig* sig = def->args()->Get(static_cast<flatbuffers::uoffset_t>(i));
    if (!args[i].view) {
      return InvalidArgumentError("argument %zu '%s': expected %s, got null", i,
                                  KILN_STATUS_TEXT(SigName(sig).c_str()),
                                  KILN_STATUS_TEXT(SigTypeString(sig).c_str()));
    }
    if (!ViewMatches(args[i].view, sig)) {
      return InvalidArgumentError("argument %zu '%s': expected %s, got %s", i,
                                  KILN_STATUS_TEXT(SigName(sig).c_str()),
                                  KILN_STATUS_TEXT(SigTypeString(sig).c_str()),
                                  KILN_STATUS_TEXT(args[i].view->TypeString().c_str()));
    }
  }

  // Output storage: the caller's, plus arguments declared output_storage.
  uint64_t allocations_before = HostAllocationCount();
  if (output_storage_.size() < result_count) {
    CountHostAllocation();
    output_storage_.resize(result_count);
  }
  if (scratch_consumed_.size() < arg_count) {
    CountHostAllocation();
    scratch_consumed_.resize(arg_count);
  }
  bool any_storage = false;
  for (size_t k = 0; k < result_count; ++k) {
    if (output_storage && output_storage[k]) {
      output_storage_[k] = Ref<BufferView>::Retain(output_storage[k]);
      any_storage = true;
    }
  }
  for (size_t i = 0; i < arg_count; ++i) {
    scratch_consumed_[i] = 0;
    const format::TensorSig* sig = def->args()->Get(static_cast<flatbuffers::uoffset_t>(i));
    if (sig->ownership() != format::Ownership::output_storage) continue;
    size_t k = static_cast<size_t>(sig->tied_result());
    if (output_storage_[k] && output_storage_[k].get() != args[i].view) {
      return InvalidArgumentError(
          "result %zu has output storage both from argument %zu '%s' and from the caller", k, i,
          KILN_STATUS_TEXT(SigName(sig).c_str()));
    }
    output_storage_[k] = Ref<BufferView>::Retain(args[i].view);
    scratch_consumed_[i] = 1;  // marks "is the storage of its tied result"
    any_storage = true;
  }
  if (any_storage) {
    for (size_t k = 0; k < result_count; ++k) {
      BufferView* st = output_storage_[k].get();
      if (!st) continue;
      const format::TensorSig* sig = def->results()->Get(static_cast<flatbuffers::uoffset_t>(k));
      if (static_cast<uint8_t>(st->dtype()) != static_cast<uint8_t>(sig->dtype())) {
        return InvalidArgumentError(
            "output storage for result %zu '%s': %s has dtype %s, the result is %s", k,
            KILN_STATUS_TEXT(SigName(sig).c_str()), KILN_STATUS_TEXT(st->TypeString().c_str()),
            DTypeName(st->dtype()), KILN_STATUS_TEXT(SigTypeString(sig).c_str()));
      }
      uint64_t need = SigByteSize(sig);
      if (st->byte_length() < need) {
        return InvalidArgumentError(
            "output storage for result %zu '%s': %s (%llu bytes) is smaller than %s (%llu bytes)",
            k, KILN_STATUS_TEXT(SigName(sig).c_str()), KILN_STATUS_TEXT(st->TypeString().c_str()),
            static_cast<unsigned long long>(st->byte_length()),
            KILN_STATUS_TEXT(SigTypeString(sig).c_str()), static_cast<unsigned long long>(need));
      }
      for (size_t j = 0; j < arg_count; ++j) {
        if (scratch_consumed_[j] && args[j].view == st) continue;  // the declared storage itself
        if (!args[j].view->Overlaps(*st)) continue;
        const format::TensorSig* in = def->args()->Get(static_cast<flatbuffers::uoffset_t>(j));
        return FailedPreconditionError(
            "argument %zu '%s' overlaps the output storage of result %zu '%s' (bytes [%llu, %llu) "
            "and [%llu, %llu) of one allocation)",
            j, KILN_STATUS_TEXT(SigName(in).c_str()), k, KILN_STATUS_TEXT(SigName(sig).c_str()),
            static_cast<unsigned long long>(args[j].view->root_offset()),
            static_cast<unsigned long long>(args[j].view->root_offset() +
                                            args[j].view->byte_length()),
            static_cast<unsigned long long>(st->root_offset()),
            static_cast<unsigned long long>(st->root_offset() + st->byte_length()));
      }
      for (size_t k2 = 0; k2 < k; ++k2) {
        if (!output_storage_[k2] || !output_storage_[k2]->Overlaps(*st)) continue;
        const format::TensorSig* other =
            def->results()->Get(static_cast<flatbuffers::uoffset_t>(k2));
        return FailedPreconditionError(
            "the output storage of result %zu '%s' overlaps the output storage of result %zu '%s'",
            k, KILN_STATUS_TEXT(SigName(sig).c_str()), k2,
            KILN_STATUS_TEXT(SigName(other).c_str()));
      }
    }
    // Type each storage as its result (a view of its first bytes if needed).
    for (size_t k = 0; k < result_count; ++k) {
      BufferView* st = output_storage_[k].get();
      if (!st) continue;
      const format::TensorSig* sig = def->results()->Get(static_cast<flatbuffers::uoffset_t>(k));
      int64_t dims[kMaxRank];
      size_t rank;
      SigDims(sig, dims, &rank);
      if (st->SameType(static_cast<DType>(sig->dtype()), dims, rank)) continue;
      KILN_ASSIGN_OR_RETURN(output_storage_[k],
                            BufferView::CreateSubview(*st, 0, static_cast<DType>(sig->dtype()),
                                                      dims, rank));
    }
  }

  if (fences && !fences->signal.semaphore) {
    return InvalidArgumentError("asynchronous invocation without a signal fence");
  }
  steps_left_ = limits_.step_budget;
  // The caller's borrowed arguments: no dispatch may bind them writable
  // (HalModule::borrowed). Cleared on every return path.
  struct BorrowedGuard {
    HostVector<hal::BufferBinding>* ranges;
    ~BorrowedGuard() { ranges->clear(); }
  } borrowed_guard{&hal_.borrowed()};
  if (hal_.borrowed().capacity() < arg_count) {
    CountHostAllocation();
    hal_.borrowed().reserve(arg_count);
  }
  for (size_t i = 0; i < arg_count; ++i) {
    const format::TensorSig* sig = def->args()->Get(static_cast<flatbuffers::uoffset_t>(i));
    if (args[i].consume || sig->ownership() != format::Ownership::borrow || !args[i].view->buffer())
      continue;
    hal_.borrowed().push_back(hal::BufferBinding{args[i].view->buffer()->allocation(),
                                                 args[i].view->root_offset(),
                                                 args[i].view->byte_length()});
  }
  // Free what finished since the last call (never blocks).
  PruneRecordings();
  KILN_RETURN_IF_ERROR(hal_.Retire());

  // A recorded command buffer for this binding set: resubmit it (replay.h).
  if (info.replayable && hal_.device()) {
    bool replayed = false;
    Status s = TryReplay(fn, args, arg_count, results, result_count, any_storage, fences,
                         &replayed);
    if (!s.ok() || replayed) {
      if (hal_.device()) {
        hal_.device()->stats().host_allocations_invoke +=
            HostAllocationCount() - allocations_before;
      }
      return s;  // the guard releases consumed arguments
    }
  }

  Frame* frame = AcquireFrame(0, info);
  for (size_t i = 0; i < arg_count; ++i) {
    if (args[i].consume) {
      frame->R(static_cast<uint16_t>(i)) =
          RefValue::Adopt(RefType::kBufferView, Ref<BufferView>::Adopt(args[i].view));
    } else {
      frame->R(static_cast<uint16_t>(i)) = RefValue(RefType::kBufferView, args[i].view);
    }
  }
  guard.armed = false;
  for (size_t i = 0; i < arg_count; ++i) {
    if (args[i].consume) ClaimConsumed(frame, static_cast<uint16_t>(i));
  }

  // A final execute may carry the signal fence unless the runtime records
  // work after the program (copies into output storage).
  hal_.BeginInvocation(fences ? fences->wait : hal::SemaphorePoint{},
                       fences ? fences->signal : hal::SemaphorePoint{}, !any_storage);
  if (info.replayable && hal_.device()) BeginRecording(fn, args, arg_count, frame, result_count);
  RegList ret;
  Status status = Run(fn.module, fn.ordinal, 0, &ret);
  hal_.set_capture(nullptr);
  if (status.ok()) {
    Ref<CommandBufferState> copy_cb;
    for (size_t i = 0; i < result_count; ++i) {
      RefValue& v = frame->R(ret[i].index);
      const format::TensorSig* sig = def->results()->Get(static_cast<flatbuffers::uoffset_t>(i));
      if (v.type() != RefType::kBufferView) {
        status = InternalError("function '%s' result %zu '%s': expected %s, got %s",
                               info.name.data(), i, KILN_STATUS_TEXT(SigName(sig).c_str()),
                               KILN_STATUS_TEXT(SigTypeString(sig).c_str()), RefTypeName(v.type()));
        break;
      }
      if (!ViewMatches(v.as<BufferView>(), sig)) {
        status = InternalError("function '%s' result %zu '%s': expected %s, got %s",
                               info.name.data(), i, KILN_STATUS_TEXT(SigName(sig).c_str()),
                               KILN_STATUS_TEXT(SigTypeString(sig).c_str()),
                               KILN_STATUS_TEXT(v.as<BufferView>()->TypeString().c_str()));
        break;
      }
      results[i] = Ref<BufferView>::Retain(v.as<BufferView>());
      if (output_storage_[i]) {
        status = FinishOutputStorage(i, sig, &results[i], &copy_cb);
        if (!status.ok()) break;
      }
    }
    if (status.ok() && copy_cb) status = hal_.Execute(copy_cb.get(), /*final=*/false);
    if (recording_) {
      FinishRecording(status.ok(), args, arg_count, frame, ret, result_count, copy_cb.get() != nullptr);
    }
    if (!status.ok()) {
      for (size_t i = 0; i < result_count; ++i) results[i].reset();
    }
  }
  if (recording_) FinishRecording(false, args, arg_count, frame, ret, result_count, false);
  ClearFrame(0);
  // Signal the fence (asynchronous) or wait for the last timepoint.
  Status end = hal_.EndInvocation();
  if (fences) fences->signal_submitted = end.ok();
  if (status.ok() && !end.ok()) {
    status = end;
    for (size_t i = 0; i < result_count; ++i) results[i].reset();
  }
  if (hal_.device()) {
    hal_.device()->stats().host_allocations_invoke += HostAllocationCount() - allocations_before;
  }
  return status;
}

void Context::DropInvokeScratch() {
  // Recordings become ordinary command buffers again: retirement resets them
  // (releasing their buffers, queue-ordered when still in flight).
  for (auto& r : recordings_) r->cb->persistent = false;
  HostVector<std::unique_ptr<Recording>>().swap(recordings_);
  recording_.reset();
  HostVector<std::unique_ptr<Frame>>().swap(frames_);
  HostVector<Ref<BufferView>>().swap(output_storage_);
  HostVector<CacheEntry>().swap(cache_);  // cached transients: allocated again
  HostVector<InvokeArg>().swap(scratch_args_);
  HostVector<uint8_t>().swap(scratch_consumed_);
  HostVector<uint8_t>().swap(scratch_owned_);
  hal_.DropScratch();
}

}  // namespace kiln::vm
