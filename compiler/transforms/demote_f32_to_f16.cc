// Pass: --demote-f32-to-f16 (kiln-compile --precision=f16)
//
// Stores a model's weights and activations in f16 while arithmetic and
// accumulation stay f32. Every f32 tensor produced inside a function by a
// tensor-level op becomes f16:
//   - an f32 tensor.constant (a weight, a bias, a folded scale) is rewritten
//     to f16 (round to nearest even; a finite value beyond the f16 range,
//     |x| > 65504, saturates to +-65504 with a remark, as ONNX converters do
//     for attention masks such as -1e9, instead of becoming an infinity);
//   - the f32 result of any other tensor.* op is retyped f16.
// Codegen computes f16 tensors in f32 registers and rounds only at the store
// (compiler/codegen/codegen.cc, "Element types": f16 is float / float16_t), so
// conv2d and matmul accumulate in f32 and each dispatch rounds its result to
// f16 once. The module's ABI does not change: an f32 function argument is
// cast to f16 once, where a tensor op first reads it, and an f16 value that
// reaches an op outside the tensor dialect (func.return, scf.yield, a global
// store, a call) is cast back to f32 just before it.
//
// This is the storage half of mixed precision (IREE's
// --iree-input-demote-f32-to-f16, ncnn's fp16 storage): half the bytes for
// constants, activations and memory traffic, at about 3 decimal digits per
// stored value (docs/precision.md gives the error a user should expect).
//
// Must not act (each tested):
//  - values of other dtypes (integers, bool, f64, f16, bf16) and ops
//    outside the tensor dialect (their results keep their types);
//  - the function's signature: arguments and results keep their dtype;
//  - the operand of a tensor.cast (a cast reads any dtype: an f32 argument
//    cast to an integer is not rounded through f16 first);
//  - function declarations (`import = true`, no body);
//  - a function that holds 8-bit (u8/i8) tensors: a quantized model is
//    already stored in 8 bits, and its f32 values include the integer sums of
//    its QDQ convolutions (compiler/import/onnx/onnx_qdq_conv.cc), exact in
//    f32 up to 2^24 but beyond f16's range (65504) and precision (remark).
//
// Preconditions: tensor level, before --fuse-dispatch-regions.
//
// Before:
//   ^bb0(%x: tensor<1x4xf32>):
//     %w = "tensor.constant"() {value = dense<...> : tensor<4x2xf32>}
//     %y = "tensor.matmul"(%x, %w) : (...) -> tensor<1x2xf32>
//     "func.return"(%y)
// After:
//   ^bb0(%x: tensor<1x4xf32>):
//     %x16 = "tensor.cast"(%x) : (tensor<1x4xf32>) -> tensor<1x4xf16>
//     %w = "tensor.constant"() {value = dense<...> : tensor<4x2xf16>}
//     %y = "tensor.matmul"(%x16, %w) : (...) -> tensor<1x2xf16>
//     %y32 = "tensor.cast"(%y) : (tensor<1x2xf16>) -> tensor<1x2xf32>
//     "func.return"(%y32)
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

bool IsF32Tensor(const ir::Type& t) { return t.is_tensor() && t.dtype == DType::kF32; }
bool Is8Bit(const ir::Type& t) { return t.is_tensor() && (t.dtype == DType::kU8 || t.dtype == DType::kI8); }
bool IsTensorOp(const ir::Operation* op) { return ir::Traits(op).level == ir::OpLevel::kTensor; }

ir::Type AsF16(const ir::Type& t) { return ir::Type::Tensor(DType::kF16, t.shape); }

// `d` (f32) as f16, finite values saturated to the f16 range; *saturated
// counts the values that were out of range.
ir::DenseElements DemoteDense(const ir::DenseElements& d, int64_t* saturated) {
  const int64_t n = d.type.num_elements();
  std::vector<uint8_t> bytes(static_cast<size_t>(n) * 2);
  for (int64_t i = 0; i < n; ++i) {
    float f;
    std::memcpy(&f, d.bytes() + i * 4, 4);
    if (std::isfinite(f) && std::fabs(f) > 65504.0f) {
      f = std::copysign(65504.0f, f);
      ++*saturated;
    }
    uint16_t h = ir::FloatToHalf(f);
    std::memcpy(bytes.data() + i * 2, &h, 2);
  }
  return ir::MakeDense(AsF16(d.type), std::move(bytes));
}

class DemoteF32ToF16Pass : public ir::Pass {
 public:
  const char* flag() const override { return "demote-f32-to-f16"; }
  const char* description() const override {
    return "Store f32 tensors (weights, activations) as f16; arithmetic stays f32; the ABI keeps its dtypes";
  }

  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    for (ir::Operation* func : module.functions()) {
      if (func->num_regions() == 0 || func->region(0)->blocks().empty()) continue;  // a declaration
      std::vector<ir::Operation*> ops;
      bool quantized = false;
      func->Walk([&](ir::Operation* op) {
        if (op != func && IsTensorOp(op)) ops.push_back(op);
        for (ir::Value* r : op->results()) quantized = quantized || Is8Bit(r->type());
      });
      for (ir::Value* a : func->region(0)->blocks().front()->arguments()) quantized = quantized || Is8Bit(a->type());
      if (quantized) {
        ctx.Remark(func, "holds 8-bit tensors (a quantized model): not demoted to f16");
        continue;
      }
      // 1. Retype: every f32 result of a tensor op becomes f16.
      std::set<ir::Value*> demoted;
      for (ir::Operation* op : ops) {
        for (ir::Value* r : op->results()) {
          if (!IsF32Tensor(r->type())) continue;
          if (op->is(ir::OpCode::kTensorConstant)) {
            const ir::DenseElements* d = op->dense_attr("value");
            if (!d || d->type.dtype != DType::kF32) continue;
            int64_t saturated = 0;
            op->set_attr("value", ir::Attribute(DemoteDense(*d, &saturated)));
            if (saturated)
              ctx.Remark(op, std::to_string(saturated) + " constant value(s) beyond the f16 range saturated to +-65504");
          }
          r->set_type(AsF16(r->type()));
          demoted.insert(r);
        }
      }
      // 2. f32 operands that a tensor op reads (function arguments, results
      //    of non-tensor ops) are cast to f16 once, after their definition.
      std::map<ir::Value*, ir::Value*> to_f16;
      for (ir::Operation* op : ops) {
        if (op->is(ir::OpCode::kTensorCast)) continue;  // reads any dtype
        for (unsigned i = 0; i < op->num_operands(); ++i) {
          ir::Value* v = op->operand(i);
          if (!IsF32Tensor(v->type())) continue;
          ir::Value*& cast = to_f16[v];
          if (!cast) {
            ir::Block* block = v->parent_block();
            ir::Operation* at = v->is_block_argument() ? block->ops().front().get() : v->defining_op()->next_op();
            ir::Builder b = at ? ir::Builder::Before(at) : ir::Builder::AtEnd(block);
            b.set_loc(op->loc());
            cast = b.Create("tensor.cast", {v}, {AsF16(v->type())})->result(0);
          }
          op->SetOperand(i, cast);
        }
      }
      // 3. f16 values read outside the tensor dialect are cast back to f32
      //    just before the reader (func.return keeps the declared result type).
      for (ir::Value* v : demoted) {
        std::vector<ir::Use> outside;
        for (const ir::Use& u : v->uses())
          if (!IsTensorOp(u.user)) outside.push_back(u);
        for (const ir::Use& u : outside) {
          ir::Builder b = ir::Builder::Before(u.user);
          b.set_loc(u.user->loc());
          ir::Value* back = b.Create("tensor.cast", {v}, {ir::Type::Tensor(DType::kF32, v->type().shape)})->result(0);
          u.user->SetOperand(u.operand_index, back);
        }
      }
    }
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<ir::Pass> CreateDemoteF32ToF16Pass() { return std::make_unique<DemoteF32ToF16Pass>(); }

}  // namespace kiln::transforms
