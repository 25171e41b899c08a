#include "compiler/codegen/f16_arithmetic.h"

#include <set>
#include <string>

namespace kiln::codegen {

namespace {

bool IsF16Tensor(const ir::Value* v) {
  return v->type().is_tensor() && v->type().dtype == DType::kF16;
}

}  // namespace

bool F16ArithmeticApplies(const ir::Operation* dispatch) {
  static const std::set<std::string> kOps = {
      "tensor.add", "tensor.sub", "tensor.mul",  "tensor.div",   "tensor.min",
      "tensor.max", "tensor.neg", "tensor.abs",  "tensor.relu",  "tensor.clamp",
      "tensor.constant", "tensor.expand", "tensor.reshape"};
  if (!dispatch || dispatch->num_regions() != 1 || dispatch->region(0)->num_blocks() != 1)
    return false;
  const ir::Block* block = dispatch->region(0)->block(0);
  for (const ir::Value* a : block->arguments())
    if (!IsF16Tensor(a)) return false;
  bool computes = false;
  for (const auto& owned : block->ops()) {
    const ir::Operation* op = owned.get();
    if (op == block->terminator()) continue;
    if (!kOps.count(op->name())) return false;
    for (const ir::Value* r : op->results())
      if (!IsF16Tensor(r)) return false;
    computes |= op->name() != "tensor.constant" && op->name() != "tensor.expand" &&
                op->name() != "tensor.reshape";
  }
  return computes;
}

}  // namespace kiln::codegen
