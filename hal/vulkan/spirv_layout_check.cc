#include "hal/vulkan/spirv_layout_check.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace kiln::hal::vulkan {
namespace {

// SPIR-V numbers used below (SPIR-V 1.6 specification, section 3).
enum Op : uint32_t {
  kOpMemoryModel = 14, kOpEntryPoint = 15, kOpExecutionMode = 16, kOpCapability = 17,
  kOpTypeInt = 21, kOpTypeFloat = 22, kOpTypeVector = 23, kOpTypeImage = 25,
  kOpTypeSampledImage = 27, kOpTypeArray = 28,
  kOpTypeStruct = 30, kOpTypePointer = 32, kOpTypeForwardPointer = 39, kOpConstant = 43,
  kOpConstantComposite = 44, kOpSpecConstant = 50, kOpSpecConstantComposite = 51,
  kOpFunction = 54, kOpFunctionEnd = 56, kOpFunctionCall = 57, kOpVariable = 59, kOpStore = 62,
  kOpCopyMemory = 63, kOpCopyMemorySized = 64, kOpAccessChain = 65,
  kOpInBoundsAccessChain = 66, kOpPtrAccessChain = 67, kOpInBoundsPtrAccessChain = 70,
  kOpDecorate = 71, kOpMemberDecorate = 72, kOpCopyObject = 83, kOpBitcast = 124,
  kOpSelect = 169, kOpAtomicStore = 228, kOpAtomicExchange = 229, kOpAtomicXor = 242,
  kOpPhi = 245, kOpAtomicFlagTestAndSet = 318, kOpAtomicFlagClear = 319,
  kOpExecutionModeId = 331, kOpAtomicFMinEXT = 5614, kOpAtomicFMaxEXT = 5615,
  kOpAtomicFAddEXT = 6035,
};
enum Decoration : uint32_t {
  kSpecId = 1, kBlock = 2, kArrayStride = 6, kBuiltIn = 11, kNonWritable = 24, kBinding = 33,
  kDescriptorSet = 34, kOffset = 35,
};
enum StorageClass : uint32_t {
  kUniformConstant = 0, kInput = 1, kWorkgroup = 4, kPrivate = 6, kFunction = 7, kPushConstant = 9, kStorageBuffer = 12,
};
constexpr uint32_t kBuiltInWorkgroupSize = 25;
constexpr uint32_t kLocalSize = 17, kLocalSizeId = 38;
constexpr uint32_t kGLCompute = 5;

// Per-id facts gathered in one walk.
enum IdFlag : uint8_t {
  kFlagBlock = 1, kFlagNonWritable = 2, kFlagBuiltIn = 4, kFlagWorkgroupSize = 8,
  kFlagReadOnly = 16,  // a pointer into a binding the module declares read-only
};
struct IdInfo {
  uint32_t def = 0;           // word offset of the defining instruction; 0: none
  uint32_t binding = UINT32_MAX, set = UINT32_MAX;
  uint32_t aux = UINT32_MAX;  // SpecId (constants), ArrayStride (arrays), NonWritable members (structs)
  uint8_t flags = 0;
};

constexpr char kBadLength[] = "opcode %u of %u words: too few, or past the module's end";
constexpr char kBadStorageClass[] =
    "storage class %u (a kernel may use Input, Workgroup, Private, Function, PushConstant, "
    "StorageBuffer and UniformConstant texel buffers)";

// The fewest words an instruction may have: for those the check reads, the
// words it reads; for the rest, the opcode word itself.
uint32_t MinWords(uint32_t op) {
  switch (op) {
    case kOpEntryPoint: case kOpMemberDecorate: case kOpVariable:
      return 4;
    case kOpExecutionMode: case kOpExecutionModeId: case kOpDecorate: case kOpTypePointer:
    case kOpTypeForwardPointer: case kOpConstant: case kOpSpecConstant:
    case kOpConstantComposite: case kOpSpecConstantComposite:
      return 3;
    case kOpTypeImage:
      return 9;
    case kOpTypeInt: case kOpTypeFloat: case kOpTypeVector: case kOpTypeArray: case kOpTypeStruct:
    case kOpTypeSampledImage:
      return 2;
    default:
      return 1;
  }
}

bool AllowedStorageClass(uint32_t sc) {
  return sc == kInput || sc == kWorkgroup || sc == kPrivate || sc == kFunction ||
         sc == kPushConstant || sc == kStorageBuffer || sc == kUniformConstant;
}

class Checker {
 public:
  Checker(const uint32_t* w, size_t n, const HostVector<EntryPointInfo>& entries,
          const SpirvLimits& limits)
      : w_(w), n_(n), entries_(entries), limits_(limits) {}

  Status Run(HostVector<uint32_t>* invocations) {
    if (!w_ || n_ < 5) return Bad(0, "the module is %zu words; the header alone is 5", n_);
    if (w_[0] != 0x07230203u) return Bad(0, "magic 0x%08x is not SPIR-V's", w_[0]);
    if (w_[3] == 0 || w_[3] > kMaxSpirvIdBound)
      return Bad(3, "id bound %u is outside 1..%u", w_[3], kMaxSpirvIdBound);
    ids_.resize(w_[3]);
    min_bindings_ = UINT32_MAX;
    min_push_ = UINT32_MAX;
    for (const EntryPointInfo& e : entries_) {
      if (e.binding_count < min_bindings_) min_bindings_ = e.binding_count;
      if (e.push_constant_bytes < min_push_) min_push_ = e.push_constant_bytes;
    }
    KILN_RETURN_IF_ERROR(Walk());
    KILN_RETURN_IF_ERROR(CheckVariables());
    KILN_RETURN_IF_ERROR(CheckWrites());
    for (const EntryPointInfo& e : entries_) {
      uint32_t n = 0;
      KILN_RETURN_IF_ERROR(CheckEntryPoint(e, &n));
      if (invocations) invocations->push_back(n);
    }
    return OkStatus();
  }

 private:
#if KILN_STATUS_MESSAGES
  // One out-of-line error builder (no per-call-site template code).
  static Status Bad(size_t at, const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    char what[192];
    va_list args;
    va_start(args, fmt);
    vsnprintf(what, sizeof(what), fmt, args);
    va_end(args);
    return InvalidArgumentError("SPIR-V layout check: word %zu: %s", at, what);
  }
#else
  template <typename... Args>
  static Status Bad(size_t, const char*, Args&&...) {
    return Status(StatusCode::kInvalidArgument);
  }
#endif
  uint32_t Len(size_t at) const { return w_[at] >> 16; }
  uint32_t OpAt(size_t at) const { return w_[at] & 0xffffu; }
  // Operand word k of the instruction at `at`, or 0 past its end.
  uint32_t W(size_t at, uint32_t k) const { return k < Len(at) ? w_[at + k] : 0; }
  Status IdOk(size_t at, uint32_t id) {
    if (id == 0 || id >= ids_.size()) return Bad(at, "id %u is outside 1..%zu", id, ids_.size() - 1);
    return OkStatus();
  }
  Status Define(size_t at, uint32_t k) {
    uint32_t id = W(at, k);
    KILN_RETURN_IF_ERROR(IdOk(at, id));
    if (ids_[id].def) return Bad(at, "id %u is defined twice", id);
    ids_[id].def = static_cast<uint32_t>(at);
    return OkStatus();
  }

  // Pass 1: instruction lengths, capabilities, decorations, definitions of
  // the ids the later checks read, storage classes.
  Status Walk() {
    for (size_t at = 5; at < n_; at += Len(at)) {
      uint32_t len = Len(at), op = OpAt(at);
      if (len < MinWords(op) || len > n_ - at) return Bad(at, kBadLength, op, len);
      switch (op) {
        case kOpCapability: {
          uint32_t c = W(at, 1);
          if (c == 4 || c == 5 || c == 6 || c == 4441 || c == 4442 || c == 5347)
            return Bad(at, "capability %u allows pointers the layout cannot bound", c);
          break;
        }
        case kOpMemoryModel:
          if (W(at, 1) != 0) return Bad(at, "addressing model %u is not Logical", W(at, 1));
          break;
        case kOpEntryPoint:
          KILN_RETURN_IF_ERROR(IdOk(at, W(at, 2)));
          entry_points_.push_back(static_cast<uint32_t>(at));
          break;
        case kOpExecutionMode:
        case kOpExecutionModeId:
          KILN_RETURN_IF_ERROR(IdOk(at, W(at, 1)));
          if (W(at, 2) == kLocalSize || W(at, 2) == kLocalSizeId) {
            if (len != 6) return Bad(at, "LocalSize with %u operands", len - 3);
            modes_.push_back(static_cast<uint32_t>(at));
          }
          break;
        case kOpDecorate: {
          uint32_t id = W(at, 1), d = W(at, 2);
          KILN_RETURN_IF_ERROR(IdOk(at, id));
          IdInfo& info = ids_[id];
          if (len < 4 && (d == kSpecId || d == kArrayStride || d == kBuiltIn || d == kBinding ||
                          d == kDescriptorSet))
            return Bad(at, "decoration %u without its value", d);
          if (d == kBlock) info.flags |= kFlagBlock;
          if (d == kNonWritable) info.flags |= kFlagNonWritable;
          if (d == kBuiltIn) info.flags |= kFlagBuiltIn | (W(at, 3) == kBuiltInWorkgroupSize ? kFlagWorkgroupSize : 0);
          if (d == kBinding) info.binding = W(at, 3);
          if (d == kDescriptorSet) info.set = W(at, 3);
          if (d == kSpecId || d == kArrayStride) info.aux = W(at, 3);
          if (d == kBuiltIn && W(at, 3) == kBuiltInWorkgroupSize) workgroup_size_id_ = id;
          break;
        }
        case kOpMemberDecorate:
          KILN_RETURN_IF_ERROR(IdOk(at, W(at, 1)));
          if (W(at, 3) == kNonWritable) {
            IdInfo& s = ids_[W(at, 1)];
            s.aux = s.aux == UINT32_MAX ? 1 : s.aux + 1;
          }
          if (W(at, 3) == kOffset) member_offsets_.push_back(static_cast<uint32_t>(at));
          break;
        case kOpTypeInt: case kOpTypeFloat: case kOpTypeVector: case kOpTypeArray:
        case kOpTypeStruct: case kOpTypeImage: case kOpTypeSampledImage:
          KILN_RETURN_IF_ERROR(Define(at, 1));
          break;
        case kOpTypePointer:
        case kOpTypeForwardPointer:
          if (!AllowedStorageClass(W(at, 2)) || (op == kOpTypeForwardPointer && W(at, 2) == kUniformConstant))
            return Bad(at, kBadStorageClass, W(at, 2));
          if (op == kOpTypePointer) {
            KILN_RETURN_IF_ERROR(Define(at, 1));
            KILN_RETURN_IF_ERROR(IdOk(at, W(at, 3)));
          }
          break;
        case kOpConstant: case kOpSpecConstant: case kOpConstantComposite:
        case kOpSpecConstantComposite:
          KILN_RETURN_IF_ERROR(Define(at, 2));
          break;
        case kOpVariable:
          if (!AllowedStorageClass(W(at, 3))) return Bad(at, kBadStorageClass, W(at, 3));
          KILN_RETURN_IF_ERROR(IdOk(at, W(at, 1)));
          KILN_RETURN_IF_ERROR(Define(at, 2));
          if (W(at, 3) != kFunction) variables_.push_back(static_cast<uint32_t>(at));
          break;
        default:
          break;
      }
    }
    return OkStatus();
  }

  // The instruction defining `id` when it has opcode `op`, else 0.
  size_t DefOf(uint32_t id, uint32_t op) const {
    if (id == 0 || id >= ids_.size() || !ids_[id].def) return 0;
    return OpAt(ids_[id].def) == op ? ids_[id].def : 0;
  }

  // Byte size of a push-constant member type (scalars, vectors, strided
  // arrays, structs with member offsets).
  Status SizeOf(size_t at, uint32_t type, int depth, uint64_t* size) {
    if (depth > 4) return Bad(at, "push-constant types nest deeper than 4");
    if (size_t d = DefOf(type, kOpTypeInt) ? DefOf(type, kOpTypeInt) : DefOf(type, kOpTypeFloat)) {
      *size = W(d, 2) / 8;
      return OkStatus();
    }
    if (size_t d = DefOf(type, kOpTypeVector)) {
      uint64_t c = 0;
      KILN_RETURN_IF_ERROR(SizeOf(d, W(d, 2), depth + 1, &c));
      *size = c * W(d, 3);
      return OkStatus();
    }
    if (size_t d = DefOf(type, kOpTypeArray)) {
      size_t n = DefOf(W(d, 3), kOpConstant);
      if (!n || ids_[type].aux == UINT32_MAX) return Bad(d, "push-constant array without a constant length and ArrayStride");
      *size = static_cast<uint64_t>(W(n, 3)) * ids_[type].aux;
      return OkStatus();
    }
    if (size_t d = DefOf(type, kOpTypeStruct)) {
      if (Len(d) - 2 > 64) return Bad(d, "a push-constant struct of %u members", Len(d) - 2);
      *size = 0;
      for (uint32_t m = 0; m + 2 < Len(d); ++m) {
        uint64_t off = UINT64_MAX, msize = 0;
        for (uint32_t md : member_offsets_)
          if (W(md, 1) == type && W(md, 2) == m) off = W(md, 4);
        if (off == UINT64_MAX) return Bad(d, "push-constant member %u has no Offset", m);
        KILN_RETURN_IF_ERROR(SizeOf(d, W(d, 2 + m), depth + 1, &msize));
        if (off + msize > *size) *size = off + msize;
      }
      return OkStatus();
    }
    return Bad(at, "push-constant member type %u is not a scalar, vector, array or struct", type);
  }

  // A descriptor variable at `binding` of set `set` is in the declared layout.
  Status CheckDescriptor(size_t at, const char* what, uint32_t id, const IdInfo& v, BindingKind kind) {
    if (v.set != 0) return Bad(at, "%s %u is in descriptor set %d; the layout declares set 0 only", what, id,
                               v.set == UINT32_MAX ? -1 : static_cast<int>(v.set));
    if (v.binding >= min_bindings_)
      return Bad(at, "%s %u has binding %d; the layout declares bindings 0..%d", what, id,
                 v.binding == UINT32_MAX ? -1 : static_cast<int>(v.binding),
                 static_cast<int>(min_bindings_) - 1);
    for (const EntryPointInfo& e : entries_)
      if (e.kind(v.binding) != kind)
        return Bad(at, "%s %u is at binding %u, which entry point '%s' declares of kind %u", what, id,
                   v.binding, e.name.c_str(), static_cast<unsigned>(e.kind(v.binding)));
    return OkStatus();
  }

  // A texel buffer variable's type: a sampled image of a 32-bit float image
  // of dimension Buffer, not depth, arrayed or multisampled, sampled (1), of
  // format Unknown or Rgba32f (GLSL's samplerBuffer).
  Status CheckTexelType(size_t at, uint32_t id, uint32_t pointee) {
    size_t si = DefOf(pointee, kOpTypeSampledImage);
    size_t im = si && Len(si) >= 3 ? DefOf(W(si, 2), kOpTypeImage) : 0;
    size_t fl = im ? DefOf(W(im, 2), kOpTypeFloat) : 0;
    if (!fl || W(fl, 2) != 32 || W(im, 3) != 5 || W(im, 4) != 0 || W(im, 5) != 0 || W(im, 6) != 0 ||
        W(im, 7) != 1 || (W(im, 8) != 0 && W(im, 8) != 1))
      return Bad(at, "UniformConstant variable %u is not a 32-bit float sampled texel buffer", id);
    return OkStatus();
  }

  // Storage buffers, texel buffers and the push-constant block against the
  // declared layout.
  Status CheckVariables() {
    bool push_seen = false;
    for (uint32_t at : variables_) {
      uint32_t id = W(at, 2), sc = W(at, 3);
      size_t ptr = DefOf(W(at, 1), kOpTypePointer);
      if (!ptr || W(ptr, 2) != sc) return Bad(at, "variable %u's type is not a pointer of its storage class", id);
      uint32_t pointee = W(ptr, 3);
      const IdInfo& v = ids_[id];
      if (sc == kStorageBuffer) {
        size_t st = DefOf(pointee, kOpTypeStruct);
        if (!st || !(ids_[pointee].flags & kFlagBlock))
          return Bad(at, "storage buffer %u is not one Block struct (arrays of descriptors are not declared)", id);
        KILN_RETURN_IF_ERROR(CheckDescriptor(at, "storage buffer", id, v, BindingKind::kStorageBuffer));
        if (ReadOnly(v.binding)) {
          uint32_t members = Len(st) - 2, nonwritable = ids_[pointee].aux == UINT32_MAX ? 0 : ids_[pointee].aux;
          if (!(v.flags & kFlagNonWritable) && nonwritable < members)
            return Bad(at, "binding %u is declared read-only but its block is not NonWritable", v.binding);
          ids_[id].flags |= kFlagReadOnly;
          any_read_only_ = true;
        }
      } else if (sc == kUniformConstant) {
        KILN_RETURN_IF_ERROR(CheckTexelType(at, id, pointee));
        KILN_RETURN_IF_ERROR(CheckDescriptor(at, "texel buffer", id, v, BindingKind::kUniformTexelBuffer));
      } else if (sc == kPushConstant) {
        if (push_seen) return Bad(at, "a second push-constant block");
        push_seen = true;
        uint64_t size = 0;
        KILN_RETURN_IF_ERROR(SizeOf(at, pointee, 0, &size));
        if (size > min_push_)
          return Bad(at, "the push-constant block is %llu bytes; the layout declares %u",
                     static_cast<unsigned long long>(size), min_push_);
      } else if (sc == kInput && !(v.flags & kFlagBuiltIn)) {
        return Bad(at, "input variable %u is not a built-in", id);
      }
    }
    return OkStatus();
  }

  bool ReadOnly(uint32_t binding) const {
    for (const EntryPointInfo& e : entries_)
      if (binding < e.binding_readonly.size() && e.binding_readonly[binding]) return true;
    return false;
  }

  // No write reaches a read-only binding: pointers derived from it are
  // tainted (to a fixpoint, for phis ahead of their operands), and a
  // tainted pointer may not be a store target, an atomic write, a copy
  // target or a function argument.
  Status CheckWrites() {
    if (!any_read_only_) return OkStatus();
    auto tainted = [&](uint32_t id) { return id < ids_.size() && (ids_[id].flags & kFlagReadOnly); };
    for (int round = 0;; ++round) {
      if (round == 16) return Bad(0, "pointer derivations too deep to follow (16 rounds)");
      bool changed = false;
      for (size_t at = 5; at < n_; at += Len(at)) {
        uint32_t op = OpAt(at), len = Len(at), first = 0;
        switch (op) {
          case kOpAccessChain: case kOpInBoundsAccessChain: case kOpPtrAccessChain:
          case kOpInBoundsPtrAccessChain: case kOpCopyObject: case kOpBitcast:
            first = 3; len = 4; break;  // the base only; indices are not pointers
          case kOpSelect: first = 4; break;
          case kOpPhi: first = 3; break;
          default: continue;
        }
        if (Len(at) < 3) return Bad(at, kBadLength, op, Len(at));
        KILN_RETURN_IF_ERROR(IdOk(at, W(at, 2)));
        if (tainted(W(at, 2))) continue;
        for (uint32_t k = first; k < len; k += op == kOpPhi ? 2 : 1)
          if (tainted(W(at, k))) {
            ids_[W(at, 2)].flags |= kFlagReadOnly;
            changed = true;
            break;
          }
      }
      if (!changed) break;
    }
    for (size_t at = 5; at < n_; at += Len(at)) {
      uint32_t op = OpAt(at);
      uint32_t target = 0;
      if (op == kOpStore || op == kOpCopyMemory || op == kOpCopyMemorySized || op == kOpAtomicStore ||
          op == kOpAtomicFlagClear)
        target = W(at, 1);
      else if ((op >= kOpAtomicExchange && op <= kOpAtomicXor) || op == kOpAtomicFlagTestAndSet ||
               op == kOpAtomicFMinEXT || op == kOpAtomicFMaxEXT || op == kOpAtomicFAddEXT)
        target = W(at, 3);
      if (tainted(target)) return Bad(at, "opcode %u writes through a read-only binding", op);
      if (op == kOpFunctionCall)
        for (uint32_t k = 4; k < Len(at); ++k)
          if (tainted(W(at, k))) return Bad(at, "a read-only binding is passed to a function");
    }
    return OkStatus();
  }

  // A 32-bit constant's value with the entry point's specialization applied.
  Status ConstValue(size_t at, uint32_t id, const EntryPointInfo& e, uint32_t* value) {
    size_t d = DefOf(id, kOpConstant) ? DefOf(id, kOpConstant) : DefOf(id, kOpSpecConstant);
    if (!d || Len(d) < 4) return Bad(at, "workgroup size %u is not a 32-bit constant", id);
    *value = W(d, 3);
    uint32_t spec = ids_[id].aux;
    if (OpAt(d) == kOpSpecConstant && spec != UINT32_MAX && spec >= 1 && spec - 1 < e.specialization.size())
      *value = e.specialization[spec - 1];
    return OkStatus();
  }

  Status CheckEntryPoint(const EntryPointInfo& e, uint32_t* invocations) {
    size_t ep = 0;
    for (uint32_t at : entry_points_) {
      const char* name = reinterpret_cast<const char*>(&w_[at + 3]);
      size_t max = static_cast<size_t>(Len(at) - 3) * 4, len = strnlen(name, max);
      if (len == max) return Bad(at, "unterminated OpEntryPoint name");
      if (W(at, 1) == kGLCompute && len == e.name.size() && memcmp(name, e.name.data(), len) == 0) {
        ep = at;
        for (size_t k = 3 + (len + 4) / 4; k < Len(at); ++k) {  // the interface
          size_t var = DefOf(W(at, static_cast<uint32_t>(k)), kOpVariable);
          if (!var || W(var, 3) == kFunction) return Bad(at, "interface id %u is not a global variable", W(at, static_cast<uint32_t>(k)));
        }
        break;
      }
    }
    if (!ep) return Bad(0, "no GLCompute entry point '%s'", e.name.c_str());
    uint32_t size[3] = {0, 0, 0};
    bool found = false;
    if (workgroup_size_id_) {  // the built-in overrides any LocalSize
      size_t c = DefOf(workgroup_size_id_, kOpConstantComposite);
      if (!c) c = DefOf(workgroup_size_id_, kOpSpecConstantComposite);
      if (!c || Len(c) != 6) return Bad(0, "the WorkgroupSize built-in is not a 3-component constant");
      for (uint32_t d = 0; d < 3; ++d) KILN_RETURN_IF_ERROR(ConstValue(c, W(c, 3 + d), e, &size[d]));
      found = true;
    } else {
      for (uint32_t at : modes_) {
        if (W(at, 1) != W(ep, 2)) continue;
        for (uint32_t d = 0; d < 3; ++d) {
          if (W(at, 2) == kLocalSize) size[d] = W(at, 3 + d);
          else KILN_RETURN_IF_ERROR(ConstValue(at, W(at, 3 + d), e, &size[d]));
        }
        found = true;
      }
    }
    if (!found) return Bad(ep, "entry point '%s' declares no workgroup size", e.name.c_str());
    uint64_t total = 1;
    for (uint32_t d = 0; d < 3; ++d) {
      if (size[d] == 0 || size[d] > limits_.max_workgroup_size[d])
        return Bad(ep, "workgroup size %ux%ux%u of '%s' exceeds the device's %ux%ux%u", size[0], size[1],
                   size[2], e.name.c_str(), limits_.max_workgroup_size[0], limits_.max_workgroup_size[1],
                   limits_.max_workgroup_size[2]);
      total *= size[d];
    }
    if (total > limits_.max_workgroup_invocations)
      return Bad(ep, "workgroup of %llu invocations in '%s'; the device allows %u",
                 static_cast<unsigned long long>(total), e.name.c_str(), limits_.max_workgroup_invocations);
    *invocations = static_cast<uint32_t>(total);
    return OkStatus();
  }

  const uint32_t* w_;
  size_t n_;
  const HostVector<EntryPointInfo>& entries_;
  const SpirvLimits& limits_;
  HostVector<IdInfo> ids_;
  HostVector<uint32_t> entry_points_, modes_, variables_, member_offsets_;
  uint32_t workgroup_size_id_ = 0, min_bindings_ = 0, min_push_ = 0;
  bool any_read_only_ = false;
};

}  // namespace

Status CheckSpirvLayout(const uint32_t* words, size_t count,
                        const HostVector<EntryPointInfo>& entries, const SpirvLimits& limits,
                        HostVector<uint32_t>* invocations) {
  if (entries.empty()) return InvalidArgumentError("SPIR-V layout check: no entry points declared");
  return Checker(words, count, entries, limits).Run(invocations);
}

}  // namespace kiln::hal::vulkan
