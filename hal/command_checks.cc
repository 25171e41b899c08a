#include "hal/command_checks.h"

namespace kiln::hal {
namespace {

unsigned long long U(uint64_t v) { return static_cast<unsigned long long>(v); }

}  // namespace

Status CheckCopy(Buffer& source, uint64_t source_offset, Buffer& target, uint64_t target_offset,
                 uint64_t length) {
  if (!InBounds(source, source_offset, length)) {
    return OutOfRangeError("CopyBuffer: source range [%llu, +%llu) exceeds buffer of %llu bytes",
                           U(source_offset), U(length), U(source.size()));
  }
  if (!InBounds(target, target_offset, length)) {
    return OutOfRangeError("CopyBuffer: target range [%llu, +%llu) exceeds buffer of %llu bytes",
                           U(target_offset), U(length), U(target.size()));
  }
  uint64_t s = source.allocation_offset() + source_offset;
  uint64_t d = target.allocation_offset() + target_offset;
  if (length && source.allocation() == target.allocation() && s < d + length && d < s + length) {
    return InvalidArgumentError("CopyBuffer: source and target ranges overlap");
  }
  return OkStatus();
}

Status CheckFill(const Buffer& target, uint64_t offset, uint64_t length) {
  if (!InBounds(target, offset, length)) {
    return OutOfRangeError("FillBuffer: range [%llu, +%llu) exceeds buffer of %llu bytes",
                           U(offset), U(length), U(target.size()));
  }
  uint64_t absolute = target.allocation_offset() + offset;
  if (absolute % 4 != 0 || length % 4 != 0) {
    return InvalidArgumentError(
        "FillBuffer: offset (absolute %llu) and length (%llu) must be multiples of 4",
        U(absolute), U(length));
  }
  return OkStatus();
}

StatusOr<uint64_t> CheckBarrierRange(uint32_t index, const Buffer& buffer, uint64_t offset,
                                     uint64_t length) {
  length = LengthToEnd(buffer, offset, length);
  if (!InBounds(buffer, offset, length)) {
    return OutOfRangeError("Barrier: range %u [%llu, +%llu) exceeds buffer of %llu bytes", index,
                           U(offset), U(length), U(buffer.size()));
  }
  return length;
}

Status CheckDispatch(const EntryPointInfo& entry, uint64_t workgroup_invocations,
                     const DeviceInfo& limits, const uint32_t workgroup_count[3],
                     const void* push_constants, uint32_t push_constant_bytes,
                     const BufferBinding* bindings, uint32_t binding_count) {
  if (!workgroup_count) return InvalidArgumentError("Dispatch: workgroup_count is null");
  const char* name = entry.name.c_str();
  uint64_t invocations = workgroup_invocations;
  for (int i = 0; i < 3; ++i) {
    if (workgroup_count[i] > limits.max_compute_workgroup_count[i]) {
      return InvalidArgumentError("Dispatch '%s': workgroup_count[%d] = %u exceeds the limit %u",
                                  name, i, workgroup_count[i],
                                  limits.max_compute_workgroup_count[i]);
    }
    invocations *= workgroup_count[i];  // <= (2^32 - 1)^2 before the break: no overflow
    if (invocations > UINT32_MAX) break;
  }
  if (invocations > UINT32_MAX) {
    return InvalidArgumentError(
        "Dispatch '%s': %ux%ux%u workgroups of %llu invocations exceed 2^32 invocations", name,
        workgroup_count[0], workgroup_count[1], workgroup_count[2], U(workgroup_invocations));
  }
  if (push_constant_bytes != entry.push_constant_bytes) {
    return InvalidArgumentError("Dispatch '%s': %u push-constant bytes given, entry point takes %u",
                                name, push_constant_bytes, entry.push_constant_bytes);
  }
  if (push_constant_bytes && !push_constants) {
    return InvalidArgumentError("Dispatch '%s': push_constants is null", name);
  }
  if (binding_count != entry.binding_count) {
    return InvalidArgumentError("Dispatch '%s': %u bindings given, entry point takes %u", name,
                                binding_count, entry.binding_count);
  }
  if (binding_count && !bindings) {
    return InvalidArgumentError("Dispatch '%s': bindings is null", name);
  }
  return OkStatus();
}

StatusOr<uint64_t> CheckBinding(const EntryPointInfo& entry, uint32_t index,
                                const DeviceInfo& limits, const BufferBinding& binding) {
  const char* name = entry.name.c_str();
  const Buffer& buffer = *binding.buffer;
  uint64_t length = LengthToEnd(buffer, binding.offset, binding.length);
  if (!InBounds(buffer, binding.offset, length)) {
    return OutOfRangeError("Dispatch '%s': binding %u range [%llu, +%llu) exceeds buffer of %llu bytes",
                           name, index, U(binding.offset), U(length), U(buffer.size()));
  }
  if (length == 0) return InvalidArgumentError("Dispatch '%s': binding %u is empty", name, index);
  uint64_t absolute = buffer.allocation_offset() + binding.offset;
  if (entry.kind(index) == BindingKind::kUniformTexelBuffer) {
    const uint64_t alignment = limits.min_texel_buffer_offset_alignment
                                   ? limits.min_texel_buffer_offset_alignment : 1;
    if (absolute % alignment != 0) {
      return InvalidArgumentError(
          "Dispatch '%s': texel binding %u offset %llu (allocation offset %llu) is not a "
          "multiple of the device's min texel buffer offset alignment (%llu)",
          name, index, U(binding.offset), U(absolute), U(alignment));
    }
    if (length % 16 != 0 || length / 16 > limits.max_texel_buffer_elements) {
      return InvalidArgumentError(
          "Dispatch '%s': texel binding %u spans %llu bytes; it must be whole 16-byte texels, "
          "at most the device's %u",
          name, index, U(length), limits.max_texel_buffer_elements);
    }
    return length;
  }
  if (length > limits.max_storage_buffer_range) {
    return InvalidArgumentError(
        "Dispatch '%s': binding %u spans %llu bytes; the device's max storage buffer range is %llu",
        name, index, U(length), U(limits.max_storage_buffer_range));
  }
  const uint64_t alignment =
      limits.min_storage_buffer_offset_alignment ? limits.min_storage_buffer_offset_alignment : 1;
  if (absolute % alignment != 0) {
    return InvalidArgumentError(
        "Dispatch '%s': binding %u offset %llu (allocation offset %llu) is not a multiple of "
        "the device's min storage buffer offset alignment (%llu)",
        name, index, U(binding.offset), U(absolute), U(alignment));
  }
  return length;
}

Status CheckEntryPointLimits(const HostVector<EntryPointInfo>& entry_points,
                             const DeviceInfo& limits) {
  for (const EntryPointInfo& entry : entry_points) {
    uint32_t texel = 0;
    for (uint32_t b = 0; b < entry.binding_count; ++b) {
      const BindingKind kind = entry.kind(b);
      if (kind != BindingKind::kStorageBuffer && kind != BindingKind::kUniformTexelBuffer) {
        return InvalidArgumentError("CreateExecutable: entry point '%s' binding %u has kind %u, "
                                    "which this runtime does not know",
                                    entry.name.c_str(), b, static_cast<unsigned>(kind));
      }
      if (kind == BindingKind::kUniformTexelBuffer) {
        if (b < entry.binding_readonly.size() && !entry.binding_readonly[b]) {
          return InvalidArgumentError(
              "CreateExecutable: entry point '%s' binding %u is a texel buffer but not read-only",
              entry.name.c_str(), b);
        }
        ++texel;
      }
    }
    if (entry.binding_count - texel > limits.max_bound_storage_buffers) {
      return InvalidArgumentError(
          "CreateExecutable: entry point '%s' uses %u storage buffers; device limit is %u",
          entry.name.c_str(), entry.binding_count - texel, limits.max_bound_storage_buffers);
    }
    if (texel > limits.max_bound_texel_buffers) {
      return InvalidArgumentError(
          "CreateExecutable: entry point '%s' uses %u texel buffers; device limit is %u",
          entry.name.c_str(), texel, limits.max_bound_texel_buffers);
    }
    if (entry.push_constant_bytes % 4 != 0 ||
        entry.push_constant_bytes > limits.max_push_constants_size) {
      return InvalidArgumentError(
          "CreateExecutable: entry point '%s' has %u push-constant bytes; must be a multiple "
          "of 4 and at most %u",
          entry.name.c_str(), entry.push_constant_bytes, limits.max_push_constants_size);
    }
  }
  return OkStatus();
}

Status CheckSubmission(const SemaphorePoint* waits, uint32_t wait_count,
                       const SemaphorePoint* signals, uint32_t signal_count) {
  if ((wait_count && !waits) || (signal_count && !signals)) {
    return InvalidArgumentError("QueueExecute: null wait/signal array with nonzero count");
  }
  for (uint32_t i = 0; i < wait_count; ++i) {
    if (!waits[i].semaphore) return InvalidArgumentError("QueueExecute: wait %u has no semaphore", i);
  }
  for (uint32_t i = 0; i < signal_count; ++i) {
    if (!signals[i].semaphore) {
      return InvalidArgumentError("QueueExecute: signal %u has no semaphore", i);
    }
    for (uint32_t j = 0; j < i; ++j) {
      if (signals[j].semaphore == signals[i].semaphore) {
        return InvalidArgumentError("QueueExecute: semaphore signalled twice in one submission");
      }
    }
  }
  return OkStatus();
}

}  // namespace kiln::hal
