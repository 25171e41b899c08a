// Op checks, result stores, the workgroup grid, the pointwise schedule (one
// invocation per output element) and the anchor-element epilogue store.
#include "compiler/codegen/generator.h"

#include "compiler/codegen/conv_transpose_schedule.h"
#include "compiler/codegen/resize_schedule.h"

#include <algorithm>

namespace kiln::codegen::detail {

// ---------------------------------------------------------------------------

Status Generator::CheckOps() {
  auto check_type = [&](Value* v, Operation* op) -> Status {
    const ir::Type& t = v->type();
    if (!t.is_tensor()) return Unsupported(op, "non-tensor value " + t.ToString());
    if (!SupportedDType(t.dtype)) return Unsupported(op, std::string("dtype ") + DTypeName(t.dtype));
    for (int64_t d : t.shape)
      if (d < 0) return Unsupported(op, "dynamic shape " + t.ToString());
    return OkStatus();
  };
  for (auto& owned : block_->ops()) {
    Operation* op = owned.get();
    const ir::OpCode n = op->code();
    if (op == block_->terminator()) continue;
    if (op->num_regions() != 0 || op->num_results() != 1) return Unsupported(op);
    if (!ir::Traits(op).is_elementwise() && !IsAnchorOp(op) && n != ir::OpCode::kTensorReshape &&
        n != ir::OpCode::kTensorConstant)
      return Unsupported(op);
    KILN_RETURN_IF_ERROR(check_type(op->result(), op));
    for (Value* v : op->operands()) KILN_RETURN_IF_ERROR(check_type(v, op));
    DType dt = op->result()->type().dtype;
    if (IsFloatOnlyOp(op) && ComputeType(dt) != CT::kF32)
      return Unsupported(op, std::string("dtype ") + DTypeName(dt));
    // Max pooling only compares, so it runs in any non-bool compute type
    // (integers stay exact); average pooling divides and stays f32.
    const bool int_max_pool = n == ir::OpCode::kTensorPool2d && op->str_attr("kind", "max") == "max" &&
                              ComputeType(dt) != CT::kBool;
    if ((n == ir::OpCode::kTensorConv2d || n == ir::OpCode::kTensorPool2d || n == ir::OpCode::kTensorSoftmax ||
         n == ir::OpCode::kTensorConvTranspose) &&
        ComputeType(dt) != CT::kF32 && !int_max_pool)
      return Unsupported(op, std::string("dtype ") + DTypeName(dt));
    if ((n == ir::OpCode::kTensorConv2d || n == ir::OpCode::kTensorPool2d) &&
        (op->operand(0)->type().rank() != 4 || op->result()->type().rank() != 4 ||
         (n == ir::OpCode::kTensorConv2d && op->operand(1)->type().rank() != 4)))
      return Unsupported(op, "expects NCHW rank-4 tensors");
    if (n == ir::OpCode::kTensorReduce) {
      std::string k = op->str_attr("kind", "sum");
      static const std::set<std::string> kinds = {"sum", "mean", "max", "min", "prod",
                                                  "sum_square", "l2", "log_sum_exp"};
      if (!kinds.count(k)) return Unsupported(op, "reduce kind '" + k + "'");
    }
    if ((n == ir::OpCode::kTensorGather || n == ir::OpCode::kTensorGatherElements) &&
        ComputeType(op->operand(1)->type().dtype) == CT::kF32)
      return Unsupported(op, "float indices");
    if (n == ir::OpCode::kTensorResize) {
      Status s = CheckResize(op);
      if (!s.ok()) return Unsupported(op, s.message());
    }
  }
  for (Value* a : block_->arguments()) KILN_RETURN_IF_ERROR(check_type(a, dispatch_));
  return OkStatus();
}

void Generator::StoreResults(const Idx& idx, const Shape& shape) {
  for (size_t k = 0; k < results_.size(); ++k) {
    Value* v = results_[k];
    if (ShapeOf(v) != shape) continue;
    std::string e = Eval(v, idx);
    // The result starts result_element_offsets[k] elements into its binding
    // (a producer placed into its concat's target, emplace_allocations.cc).
    const int64_t base = k < options_.result_element_offsets.size() ? options_.result_element_offsets[k] : 0;
    // A strided placement (result_strides[k]): the index in the target is
    // base + sum(i_d * stride_d), not the row-major one.
    const std::vector<int64_t>* strides =
        k < options_.result_strides.size() && !options_.result_strides[k].empty() ? &options_.result_strides[k]
                                                                                  : nullptr;
    std::string index = Offset(idx, shape);
    if (strides && strides->size() != shape.size())
      Fail(InvalidArgumentError("codegen: result %zu has %zu strides for rank %zu", k, strides->size(), shape.size()));
    if (strides && strides->size() == shape.size()) {
      index = "0";
      for (size_t d = 0; d < shape.size(); ++d)
        if (shape[d] != 1) index = AddE(index, MulC(idx.d[d], (*strides)[d]));
    }
    const std::string at = base == 0 ? index : "(" + index + ") + " + std::to_string(base);
    DType dt = dispatch_->result(static_cast<unsigned>(k))->type().dtype;
    if (CTOf(v) == CT::kF16 && dt == DType::kF16) {  // f16 arithmetic: stored as computed
      Line("out" + std::to_string(k) + "[" + at + "] = " + e + ";");
      continue;
    }
    e = Convert(e, CTOf(v), ComputeType(dt));
    switch (dt) {
      case DType::kI8: e = "int8_t(" + e + ")"; break;
      case DType::kU8: e = "uint8_t(" + e + ")"; break;
      case DType::kBool: e = "uint8_t(" + e + " ? 1u : 0u)"; break;
      case DType::kI16: e = "int16_t(" + e + ")"; break;
      case DType::kU16: e = "uint16_t(" + e + ")"; break;
      case DType::kF16: e = "float16_t(" + e + ")"; break;
      case DType::kBF16:
        helpers_.insert(kToBF16Helper);
        e = "uint16_t(kiln_to_bf16(" + e + "))";
        break;
      default: break;
    }
    Line("out" + std::to_string(k) + "[" + at + "] = " + e + ";");
  }
}

Status Generator::Grid(uint64_t groups, uint32_t* wx, uint32_t* wy) {
  uint64_t maxc = std::max<uint32_t>(options_.max_workgroup_count, 1);
  if (groups == 0) groups = 1;
  if (groups <= maxc) {
    *wx = static_cast<uint32_t>(groups);
    *wy = 1;
    return OkStatus();
  }
  uint64_t y = (groups + maxc - 1) / maxc;
  if (y > maxc) return UnimplementedError("codegen: grid of %llu workgroups is too large",
                                          static_cast<unsigned long long>(groups));
  *wy = static_cast<uint32_t>(y);
  *wx = static_cast<uint32_t>((groups + y - 1) / y);
  return OkStatus();
}

void Generator::EmitPointwiseMain(uint32_t wx, uint32_t wy) {
  Line("uint gid = " + WorkgroupIndex(wx, wy) + " * " + std::to_string(kWorkgroupSize) +
       "u + gl_LocalInvocationID.x;");
  Line("if (gid >= " + std::to_string(PointwiseElements()) + "u) return;");
  EmitPointwiseStores();
}

int64_t Generator::PointwiseElements() {
  int64_t total = 0;
  for (Value* v : results_) total = std::max(total, NumElements(ShapeOf(v)));
  return total;
}

void Generator::EmitPointwiseStores() {
  // Results grouped by shape, in order of first appearance.
  std::vector<Shape> shapes;
  for (Value* v : results_)
    if (std::find(shapes.begin(), shapes.end(), ShapeOf(v)) == shapes.end())
      shapes.push_back(ShapeOf(v));
  const int64_t total = PointwiseElements();
  for (const Shape& s : shapes) {
    bool guard = NumElements(s) < total;
    Open(guard ? "if (gid < " + std::to_string(NumElements(s)) + "u)" : "");
    // Decompose into a side buffer so unused indices can be dropped.
    std::string saved = std::move(body_);
    body_.clear();
    std::vector<std::string> d = Decompose("gid", s);
    std::string decomp = std::move(body_);
    body_.clear();
    Line("int gi = int(gid);");
    Idx idx{d, "gi", s};
    StoreResults(idx, s);
    std::string rest = std::move(body_);
    bool used = false;
    for (const auto& n : d)
      if (IsIdentifier(n) && UsesIdent(rest, n)) used = true;
    body_ = std::move(saved) + (used ? decomp : "") + rest;
    Close();
  }
}

void Generator::StoreAnchorElement(Operation* anchor, const Idx& idx, const std::string& value,
                                   const std::string& guard) {
  Open(guard.empty() ? "" : "if (" + guard + ")");
  cache_.back()[Key(anchor->result(), idx)] = value;
  StoreResults(idx, ShapeOf(anchor->result()));
  Close();
}

}  // namespace kiln::codegen::detail
