#include "compiler/codegen/f16_arithmetic.h"

namespace kiln::codegen {

namespace {

bool IsF16Tensor(const ir::Value* v) {
  return v->type().is_tensor() && v->type().dtype == DType::kF16;
}

// What an op contributes to an f16-arithmetic region: kComputes (f16
// arithmetic the variant emits in float16_t), kMoves (no arithmetic: a
// constant, a broadcast or a reshape), or kUnsupported.
enum class F16Role { kUnsupported, kComputes, kMoves };

F16Role RoleOf(const ir::Operation* op) {
  using ir::OpCode;
  switch (op->code()) {
    case OpCode::kTensorAdd: case OpCode::kTensorSub: case OpCode::kTensorMul:
    case OpCode::kTensorDiv: case OpCode::kTensorMin: case OpCode::kTensorMax:
    case OpCode::kTensorNeg: case OpCode::kTensorAbs: case OpCode::kTensorRelu:
    case OpCode::kTensorClamp:
      return F16Role::kComputes;
    case OpCode::kTensorConstant: case OpCode::kTensorExpand: case OpCode::kTensorReshape:
      return F16Role::kMoves;
    default:
      return F16Role::kUnsupported;
  }
}

}  // namespace

bool F16ArithmeticApplies(const ir::Operation* dispatch) {
  if (!dispatch || dispatch->num_regions() != 1 || dispatch->region(0)->num_blocks() != 1)
    return false;
  const ir::Block* block = dispatch->region(0)->block(0);
  for (const ir::Value* a : block->arguments())
    if (!IsF16Tensor(a)) return false;
  bool computes = false;
  for (const auto& owned : block->ops()) {
    const ir::Operation* op = owned.get();
    if (op == block->terminator()) continue;
    F16Role role = RoleOf(op);
    if (role == F16Role::kUnsupported) return false;
    for (const ir::Value* r : op->results())
      if (!IsF16Tensor(r)) return false;
    computes |= role == F16Role::kComputes;
  }
  return computes;
}

}  // namespace kiln::codegen
