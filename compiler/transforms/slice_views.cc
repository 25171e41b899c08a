// Pass: --slice-views
//
// Turns a dispatch that only copies one contiguous byte range of its operand
// (a tensor.slice anchored in a dispatch of its own) into a view of that
// range: stream.async.slice {offset, length}, with no dispatch, no copy and
// no storage of its own. The consumers then read the producer's bytes in
// place (IREE keeps such slices as stream.async.slice views for the same
// reason: the host still knows the exact subrange each later dispatch reads).
//
// A slice of a row-major tensor is one contiguous range when, with k the
// first dimension the slice narrows, every dimension before k keeps one index
// and every dimension after k is taken whole (step 1 where more than one
// index is kept). Its byte offset must be a multiple of 256, the largest
// minStorageBufferOffsetAlignment Vulkan allows, so the view can be bound as
// a dispatch operand on any device.
//
// Must not act (each tested):
//  - a slice that is not one contiguous range (a column, a strided slice);
//  - an offset that is not a multiple of 256 bytes;
//  - a dispatch whose body does anything besides the one slice of its
//    operand (a fused epilogue, a second result).
//
// The executable is erased when no other dispatch uses it.
//
// Preconditions: stream level (after --convert-to-stream), before the copy
// passes, which treat the view as an alias of its source (a write through it
// is a write of the source).
//
// Before:
//   %s = "stream.async.dispatch"(%x) {entry = @slice_rows, sizes = [512], tied_operands = [-1]}
//          : (!stream.resource<external>) -> !stream.resource<transient>
//   (@slice_rows: tensor.slice of tensor<4x64xf32> {starts = [1, 0]} -> tensor<2x64xf32>)
// After:
//   %s = "stream.async.slice"(%x) {offset = 256 : i64, length = 512 : i64}
//          : (!stream.resource<external>) -> !stream.resource<external>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/op_traits.h"
#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

using ir::OpCode;

// The largest minStorageBufferOffsetAlignment the Vulkan spec allows.
constexpr int64_t kViewAlignment = 256;

// The slice a dispatch body is made of alone: flow.dispatch whose block is
// `%r = tensor.slice(%arg0)` and `flow.return(%r)`; nullptr otherwise.
ir::Operation* OnlySlice(ir::Operation* executable) {
  if (executable->num_regions() != 1 || executable->region(0)->empty()) return nullptr;
  ir::Block* outer = executable->region(0)->block(0);
  if (outer->ops().size() != 1) return nullptr;
  ir::Operation* dispatch = outer->ops().front().get();
  if (!dispatch->is(OpCode::kFlowDispatch) || dispatch->num_regions() != 1 || dispatch->region(0)->empty())
    return nullptr;
  ir::Block* body = dispatch->region(0)->block(0);
  if (body->num_arguments() != 1 || body->ops().size() != 2) return nullptr;
  ir::Operation* slice = body->ops().front().get();
  ir::Operation* ret = body->terminator();
  if (!slice->is(OpCode::kTensorSlice) || !ret || !ret->is(OpCode::kFlowReturn) || ret->num_operands() != 1 ||
      ret->operand(0) != slice->result(0) || slice->operand(0) != body->argument(0))
    return nullptr;
  return slice;
}

// The byte range of `slice`'s source it keeps, when that is one contiguous
// range; false otherwise. Leading dimensions that keep one index (any
// index) may be dropped; of the rest, the first keeps a run of indices with
// step 1 and every later one is kept whole.
bool ContiguousRange(ir::Operation* slice, int64_t* offset, int64_t* length) {
  const ir::Type& src = slice->operand(0)->type();
  const ir::Type& dst = slice->result(0)->type();
  const size_t rank = src.shape.size();
  if (dst.shape.size() != rank || src.dtype != dst.dtype) return false;
  std::vector<int64_t> starts = slice->ints_attr("starts"), steps = slice->ints_attr("strides");
  if (starts.size() != rank) starts.assign(rank, 0);
  if (steps.size() != rank) steps.assign(rank, 1);
  size_t j = 0;
  while (j < rank && dst.shape[j] == 1) ++j;
  for (size_t d = 0; d < rank; ++d) {
    if (starts[d] < 0 || dst.shape[d] < 1 || starts[d] + dst.shape[d] > src.shape[d]) return false;
    if (d == j && steps[d] != 1) return false;
    if (d > j && (dst.shape[d] != src.shape[d] || starts[d] != 0)) return false;
  }
  int64_t elements = 0, stride = 1;
  for (size_t d = rank; d-- > 0;) {
    elements += starts[d] * stride;
    stride *= src.shape[d];
  }
  if (stride <= 0) return false;
  *offset = elements * (src.byte_size() / stride);
  *length = dst.byte_size();
  return true;
}

class SliceViewsPass : public ir::Pass {
 public:
  const char* flag() const override { return "slice-views"; }
  const char* description() const override {
    return "Turn dispatches that copy one contiguous, 256-byte-aligned range of their operand into stream.async.slice views";
  }

  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    std::map<std::string, ir::Operation*> executables;
    for (auto& top : module.body()->ops())
      if (top->is(OpCode::kFlowExecutable)) executables.emplace(top->str_attr("sym_name"), top.get());
    std::map<std::string, int> users;
    std::vector<ir::Operation*> dispatches;
    for (ir::Operation* func : module.functions())
      func->Walk([&](ir::Operation* op) {
        if (!op->is(OpCode::kStreamAsyncDispatch)) return;
        dispatches.push_back(op);
        if (const ir::Attribute* a = op->attr("entry"))
          if (const ir::SymbolRef* s = std::get_if<ir::SymbolRef>(&a->value)) ++users[s->name];
      });
    for (ir::Operation* op : dispatches) {
      const ir::Attribute* a = op->attr("entry");
      const ir::SymbolRef* entry = a ? std::get_if<ir::SymbolRef>(&a->value) : nullptr;
      if (!entry || op->num_operands() != 1 || op->num_results() != 1) continue;
      if (ir::TiedOperandIndex(*op, 0) >= 0) continue;
      auto exe = executables.find(entry->name);
      if (exe == executables.end()) continue;
      ir::Operation* slice = OnlySlice(exe->second);
      int64_t offset = 0, length = 0;
      if (!slice || !ContiguousRange(slice, &offset, &length)) continue;
      if (offset % kViewAlignment != 0) {
        ctx.Remark(op, "slice kept as a dispatch: its byte offset " + std::to_string(offset) +
                           " is not a multiple of 256");
        continue;
      }
      const std::string name = entry->name;  // `op` (which holds it) is erased below
      ir::Value* source = op->operand(0);
      ir::Operation* view = ir::Builder::Before(op).Create(
          "stream.async.slice", {source}, {source->type()},
          {{"offset", ir::Attribute(offset)}, {"length", ir::Attribute(length)}});
      view->set_loc(op->loc());
      op->result(0)->ReplaceAllUsesWith(view->result(0));
      op->Erase();
      if (--users[name] == 0) {
        exe->second->Erase();
        executables.erase(exe);
      }
    }
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<ir::Pass> CreateSliceViewsPass() { return std::make_unique<SliceViewsPass>(); }

}  // namespace kiln::transforms
