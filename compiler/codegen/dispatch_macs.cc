#include "compiler/codegen/dispatch_macs.h"

#include <vector>

namespace kiln::codegen {
namespace {

uint64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  uint64_t p = 1;
  for (size_t i = begin; i < end && i < dims.size(); ++i) {
    if (dims[i] < 0) return 0;
    p *= static_cast<uint64_t>(dims[i]);
  }
  return p;
}

}  // namespace

uint64_t OpMacs(const ir::Operation& op) {
  if (op.num_operands() < 2 || op.num_results() < 1) return 0;
  const std::vector<int64_t>& x = op.operand(0)->type().shape;
  const std::vector<int64_t>& w = op.operand(1)->type().shape;
  const std::vector<int64_t>& y = op.result()->type().shape;
  if (op.is(ir::OpCode::kTensorConv2d)) {
    // y [N, O, OH, OW]; w [O, C/group, KH, KW].
    if (y.size() != 4 || w.size() != 4) return 0;
    return Product(y, 0, 4) * Product(w, 1, 4);
  }
  if (op.is(ir::OpCode::kTensorConvTranspose)) {
    // x [N, C, D...]; w [C, M/group, K...]: each input element feeds
    // (M/group) * prod(K) outputs.
    if (x.size() < 3 || w.size() != x.size()) return 0;
    return Product(x, 0, x.size()) * Product(w, 1, w.size());
  }
  if (op.is(ir::OpCode::kTensorMatmul)) {
    // y [..., M, N]; x [..., M, K].
    if (x.empty() || y.empty()) return 0;
    return Product(y, 0, y.size()) * Product(x, x.size() - 1, x.size());
  }
  return 0;
}

uint64_t DispatchMacs(ir::Operation* dispatch) {
  uint64_t total = 0;
  dispatch->Walk([&](ir::Operation* op) {
    if (op != dispatch) total += OpMacs(*op);
  });
  return total;
}

}  // namespace kiln::codegen
