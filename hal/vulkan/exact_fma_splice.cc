#include "hal/vulkan/exact_fma_splice.h"

#include <cstring>
#include <initializer_list>

#include "hal/vulkan/spirv_layout_check.h"

namespace kiln::hal::vulkan {
namespace {

// SPIR-V opcodes, decorations and capabilities (SPIR-V 1.6 spec, 3.32, 3.20,
// 3.31) and GLSL.std.450 instruction numbers.
enum : uint32_t {
  kOpUndef = 1, kOpExtInstImport = 11, kOpExtInst = 12, kOpCapability = 17, kOpTypeVoid = 19,
  kOpTypeBool = 20, kOpTypeInt = 21, kOpTypeFloat = 22, kOpTypeFunction = 33,
  kOpTypeForwardPointer = 39, kOpConstantTrue = 41, kOpConstant = 43, kOpSpecConstantOp = 52,
  kOpFunction = 54, kOpFunctionParameter = 55, kOpFunctionEnd = 56, kOpFunctionCall = 57,
  kOpVariable = 59, kOpDecorate = 71, kOpGroupMemberDecorate = 75, kOpFConvert = 115,
  kOpBitcast = 124, kOpIAdd = 128, kOpFAdd = 129, kOpFSub = 131, kOpFMul = 133,
  kOpLogicalEqual = 164, kOpLogicalAnd = 167, kOpSelect = 169, kOpFOrdEqual = 180,
  kOpFOrdLessThan = 184, kOpFOrdGreaterThan = 186, kOpLabel = 248, kOpReturnValue = 254,
  kOpDecorateId = 332, kOpDecorateString = 5632, kOpMemberDecorateString = 5633,
};
constexpr uint32_t kDecorationNoContraction = 42;
constexpr uint32_t kCapabilityFloat64 = 10;
constexpr uint32_t kGlslFAbs = 4, kGlslFma = 50;

uint32_t OpOf(uint32_t w) { return w & 0xffffu; }
uint32_t LenOf(uint32_t w) { return w >> 16; }

bool IsAnnotation(uint32_t op) {
  return (op >= kOpDecorate && op <= kOpGroupMemberDecorate) || op == kOpDecorateId ||
         op == kOpDecorateString || op == kOpMemberDecorateString;
}
bool IsGlobalDeclaration(uint32_t op) {
  return (op >= kOpTypeVoid && op <= kOpTypeForwardPointer) ||
         (op >= kOpConstantTrue && op <= kOpSpecConstantOp) || op == kOpVariable || op == kOpUndef;
}

// Appends one instruction.
void Emit(HostVector<uint32_t>* v, uint32_t op, std::initializer_list<uint32_t> operands) {
  v->push_back(static_cast<uint32_t>((operands.size() + 1) << 16) | op);
  for (uint32_t w : operands) v->push_back(w);
}

// Ids of the module's types (0: absent) and of what the splice adds.
struct Ids {
  uint32_t f32 = 0, f64 = 0, u32 = 0, boolean = 0, fn_type = 0, glsl = 0;
  uint32_t next = 0;  // the next free id
  uint32_t Fresh() { return next++; }
};

// Constants the bodies use.
struct Constants {
  uint32_t f_zero = 0, d_zero = 0, d_half = 0, u_one = 0, u_minus_one = 0;  // kFloat64
  uint32_t f_split = 0, f_inf = 0;                                          // kFloat32
};

// Appends the body of the exact function (after its OpLabel) for parameters
// a, b, c: see the header for the algorithms. Ids of floating-point
// arithmetic results go to `exact` (decorated NoContraction).
class BodyWriter {
 public:
  BodyWriter(Ids* ids, HostVector<uint32_t>* body, HostVector<uint32_t>* exact)
      : ids_(ids), body_(body), exact_(exact) {}
  // An instruction with a result: `type result operands...`.
  uint32_t Op(uint32_t opcode, uint32_t type, std::initializer_list<uint32_t> operands) {
    const uint32_t r = ids_->Fresh();
    body_->push_back(static_cast<uint32_t>((operands.size() + 3) << 16) | opcode);
    body_->push_back(type);
    body_->push_back(r);
    for (uint32_t w : operands) body_->push_back(w);
    return r;
  }
  // The same, decorated NoContraction.
  uint32_t Exact(uint32_t opcode, uint32_t type, uint32_t x, uint32_t y) {
    const uint32_t r = Op(opcode, type, {x, y});
    exact_->push_back(r);
    return r;
  }
  void Return(uint32_t value) { Emit(body_, kOpReturnValue, {value}); }

 private:
  Ids* ids_;
  HostVector<uint32_t>* body_;
  HostVector<uint32_t>* exact_;
};

void EmitFloat64Body(uint32_t a, uint32_t b, uint32_t c, bool exact, Ids* ids,
                     const Constants& k, BodyWriter* w) {
  const uint32_t f = ids->f32, d = ids->f64, u = ids->u32, bl = ids->boolean;
  const uint32_t xy = w->Exact(kOpFMul, d, w->Op(kOpFConvert, d, {a}), w->Op(kOpFConvert, d, {b}));
  const uint32_t dc = w->Op(kOpFConvert, d, {c});
  const uint32_t s = w->Exact(kOpFAdd, d, xy, dc);  // the one f64 rounding (a*b is exact)
  const uint32_t r = w->Op(kOpFConvert, f, {s});    // RN32(s)
  if (!exact) return w->Return(r);
  const uint32_t rd = w->Op(kOpFConvert, d, {r});
  // `other`: r's f32 neighbour on s's side; m: their midpoint (exact in f64).
  const uint32_t up = w->Op(kOpFOrdGreaterThan, bl, {s, rd});
  const uint32_t grow = w->Op(kOpLogicalEqual, bl, {up, w->Op(kOpFOrdGreaterThan, bl, {r, k.f_zero})});
  const uint32_t step = w->Op(kOpSelect, u, {grow, k.u_one, k.u_minus_one});
  const uint32_t other =
      w->Op(kOpBitcast, f, {w->Op(kOpIAdd, u, {w->Op(kOpBitcast, u, {r}), step})});
  const uint32_t m =
      w->Exact(kOpFMul, d, w->Exact(kOpFAdd, d, rd, w->Op(kOpFConvert, d, {other})), k.d_half);
  // The sign of the f64 sum's error (0 when it was exact).
  const uint32_t e1 = w->Exact(kOpFSub, d, dc, w->Exact(kOpFSub, d, s, xy));
  const uint32_t e2 = w->Exact(kOpFSub, d, xy, w->Exact(kOpFSub, d, s, dc));
  const uint32_t e = w->Exact(kOpFAdd, d, e1, e2);
  // s on the midpoint and the exact value beyond it: `other` is the rounding.
  const uint32_t beyond = w->Op(kOpSelect, bl, {up, w->Op(kOpFOrdGreaterThan, bl, {e, k.d_zero}),
                                                w->Op(kOpFOrdLessThan, bl, {e, k.d_zero})});
  const uint32_t fix = w->Op(kOpLogicalAnd, bl, {w->Op(kOpFOrdEqual, bl, {s, m}), beyond});
  w->Return(w->Op(kOpSelect, f, {fix, other, r}));
}

void EmitFloat32Body(uint32_t a, uint32_t b, uint32_t c, Ids* ids, const Constants& k,
                     BodyWriter* w) {
  const uint32_t f = ids->f32;
  auto x = [&](uint32_t opcode, uint32_t p, uint32_t q) { return w->Exact(opcode, f, p, q); };
  const uint32_t p = x(kOpFMul, a, b);
  const uint32_t ca = x(kOpFMul, k.f_split, a);
  const uint32_t ah = x(kOpFSub, ca, x(kOpFSub, ca, a));
  const uint32_t al = x(kOpFSub, a, ah);
  const uint32_t cb = x(kOpFMul, k.f_split, b);
  const uint32_t bh = x(kOpFSub, cb, x(kOpFSub, cb, b));
  const uint32_t bl = x(kOpFSub, b, bh);
  uint32_t pe = x(kOpFSub, x(kOpFMul, ah, bh), p);
  pe = x(kOpFAdd, pe, x(kOpFMul, ah, bl));
  pe = x(kOpFAdd, pe, x(kOpFMul, al, bh));
  pe = x(kOpFAdd, pe, x(kOpFMul, al, bl));
  const uint32_t s = x(kOpFAdd, p, c);
  const uint32_t z = x(kOpFSub, s, p);
  const uint32_t se = x(kOpFAdd, x(kOpFSub, p, x(kOpFSub, s, z)), x(kOpFSub, c, z));
  const uint32_t r = x(kOpFAdd, s, x(kOpFAdd, se, pe));
  const uint32_t ar = w->Op(kOpExtInst, f, {ids->glsl, kGlslFAbs, r});
  const uint32_t finite = w->Op(kOpFOrdLessThan, ids->boolean, {ar, k.f_inf});
  w->Return(w->Op(kOpSelect, f, {finite, r, s}));  // not finite: a * b + c rounded twice
}

bool IsFmaF32(const uint32_t* w, size_t i, const Ids& ids) {
  return OpOf(w[i]) == kOpExtInst && LenOf(w[i]) == 8 && w[i + 1] == ids.f32 && ids.f32 &&
         w[i + 3] == ids.glsl && ids.glsl && w[i + 4] == kGlslFma;
}

}  // namespace

Status SpliceExactFma(const uint32_t* w, size_t count, ExactFmaBody body,
                      HostVector<uint32_t>* out, uint32_t* spliced) {
  out->clear();
  *spliced = 0;
  if (count < 5 || w[0] != 0x07230203u)
    return InvalidArgumentError("SpliceExactFma: not a SPIR-V module");
  Ids ids;
  ids.next = w[3];
  bool has_float64 = false;
  size_t first_cap_end = 0, first_annotation = 0, first_global = 0, first_function = 0;
  uint32_t sites = 0;
  for (size_t i = 5; i < count;) {
    const uint32_t op = OpOf(w[i]), len = LenOf(w[i]);
    if (len == 0 || i + len > count)
      return InvalidArgumentError("SpliceExactFma: bad instruction length at word %zu", i);
    if (op == kOpCapability && len == 2) {
      if (!first_cap_end) first_cap_end = i + len;
      if (w[i + 1] == kCapabilityFloat64) has_float64 = true;
    } else if (op == kOpExtInstImport && len >= 3) {
      static const char kGlsl[] = "GLSL.std.450";
      if ((len - 2) * 4 >= sizeof(kGlsl) && std::memcmp(&w[i + 2], kGlsl, sizeof(kGlsl)) == 0)
        ids.glsl = w[i + 1];
    } else if (IsAnnotation(op)) {
      if (!first_annotation) first_annotation = i;
    } else if (op == kOpFunction) {
      if (!first_function) first_function = i;
    } else if (first_function) {
      sites += IsFmaF32(w, i, ids);
    } else if (IsGlobalDeclaration(op)) {
      if (!first_global) first_global = i;
      if (op == kOpTypeFloat && len >= 3 && w[i + 2] == 32) ids.f32 = w[i + 1];
      if (op == kOpTypeFloat && len >= 3 && w[i + 2] == 64) ids.f64 = w[i + 1];
      if (op == kOpTypeInt && len == 4 && w[i + 2] == 32 && w[i + 3] == 0) ids.u32 = w[i + 1];
      if (op == kOpTypeBool && len == 2) ids.boolean = w[i + 1];
      if (op == kOpTypeFunction && len == 6 && ids.f32 && w[i + 2] == ids.f32 &&
          w[i + 3] == ids.f32 && w[i + 4] == ids.f32 && w[i + 5] == ids.f32)
        ids.fn_type = w[i + 1];
    }
    i += len;
  }
  // Nothing to do, or not a shader module of the expected layout.
  if (!sites || !first_cap_end || !first_global || !first_function) return OkStatus();
  const size_t decorations_at = first_annotation ? first_annotation : first_global;

  // New types and constants, declared before the first function.
  HostVector<uint32_t> globals;
  const bool f64 = body != ExactFmaBody::kFloat32;
  if (!ids.boolean) Emit(&globals, kOpTypeBool, {ids.boolean = ids.Fresh()});
  if (!ids.fn_type)
    Emit(&globals, kOpTypeFunction, {ids.fn_type = ids.Fresh(), ids.f32, ids.f32, ids.f32, ids.f32});
  Constants k;
  if (f64) {
    if (!ids.f64) Emit(&globals, kOpTypeFloat, {ids.f64 = ids.Fresh(), 64});
    if (!ids.u32) Emit(&globals, kOpTypeInt, {ids.u32 = ids.Fresh(), 32, 0});
    Emit(&globals, kOpConstant, {ids.f32, k.f_zero = ids.Fresh(), 0});
    Emit(&globals, kOpConstant, {ids.f64, k.d_zero = ids.Fresh(), 0, 0});
    Emit(&globals, kOpConstant, {ids.f64, k.d_half = ids.Fresh(), 0, 0x3fe00000u});  // 0.5
    Emit(&globals, kOpConstant, {ids.u32, k.u_one = ids.Fresh(), 1});
    Emit(&globals, kOpConstant, {ids.u32, k.u_minus_one = ids.Fresh(), 0xffffffffu});
  } else {
    Emit(&globals, kOpConstant, {ids.f32, k.f_split = ids.Fresh(), 0x45800800u});  // 4097.0
    Emit(&globals, kOpConstant, {ids.f32, k.f_inf = ids.Fresh(), 0x7f800000u});    // +inf
  }
  // The exact function, appended after the module's last function.
  HostVector<uint32_t> function, exact;
  const uint32_t fn = ids.Fresh(), a = ids.Fresh(), b = ids.Fresh(), c = ids.Fresh();
  Emit(&function, kOpFunction, {ids.f32, fn, 0, ids.fn_type});
  for (uint32_t p : {a, b, c}) Emit(&function, kOpFunctionParameter, {ids.f32, p});
  Emit(&function, kOpLabel, {ids.Fresh()});
  BodyWriter writer(&ids, &function, &exact);
  if (f64)
    EmitFloat64Body(a, b, c, body == ExactFmaBody::kFloat64Exact, &ids, k, &writer);
  else
    EmitFloat32Body(a, b, c, &ids, k, &writer);
  Emit(&function, kOpFunctionEnd, {});
  if (ids.next > kMaxSpirvIdBound)
    return InvalidArgumentError("SpliceExactFma: id bound %u exceeds %u", ids.next, kMaxSpirvIdBound);

  out->reserve(count + globals.size() + 3 * exact.size() + 2 + function.size());
  for (size_t i = 0; i < count;) {
    if (i == first_cap_end && f64 && !has_float64) Emit(out, kOpCapability, {kCapabilityFloat64});
    if (i == decorations_at)
      for (uint32_t id : exact) Emit(out, kOpDecorate, {id, kDecorationNoContraction});
    if (i == first_function) out->insert(out->end(), globals.begin(), globals.end());
    if (i >= first_function && IsFmaF32(w, i, ids)) {
      // %r = OpExtInst %float %glsl Fma %x %y %z -> %r = OpFunctionCall %float %fn %x %y %z
      Emit(out, kOpFunctionCall, {ids.f32, w[i + 2], fn, w[i + 5], w[i + 6], w[i + 7]});
      i += 8;
      continue;
    }
    const size_t len = i < 5 ? 1 : LenOf(w[i]);
    out->insert(out->end(), w + i, w + i + len);
    i += len;
  }
  out->insert(out->end(), function.begin(), function.end());
  (*out)[3] = ids.next;
  *spliced = sites;
  return OkStatus();
}

}  // namespace kiln::hal::vulkan
