// Pass: --slice-views
//
// Keeps slices outside dispatches so the host knows the subrange of each
// resource that every dispatch reads ("coarse subrange outside, tight
// indexing inside, rebased": seed 03, IREE issue #7729 and PR #9194).
//
// 1. A dispatch that only copies one contiguous byte range of its operand (a
//    tensor.slice anchored in a dispatch of its own) becomes a view of that
//    range: stream.async.slice {offset, length}, with no dispatch, no copy
//    and no storage of its own. The consumers then read the producer's bytes
//    in place (IREE keeps such slices as stream.async.slice views for the
//    same reason).
//    - At a byte offset that is a multiple of 256 (the largest
//      minStorageBufferOffsetAlignment Vulkan allows) the view is the slice
//      itself and may go anywhere (a dispatch operand, a function result, a
//      call argument): it can be bound on any device.
//    - At another offset the view cannot be bound as it is. When every use
//      of the slice is a dispatch operand that the dispatch only reads (not
//      tied to a result), each use is replaced by a coarse view that starts
//      at the offset aligned down to 256 and ends where the slice ends, and
//      the consumer indexes the slice inside it: its `element_offsets`
//      attribute (one signed element count per operand) says the tensor
//      starts that many elements into the binding.
//    A slice of a row-major tensor is one contiguous range when, with k the
//    first dimension the slice narrows, every dimension before k keeps one
//    index and every dimension after k is taken whole (step 1 where more
//    than one index is kept). Split's pieces along the leading dimensions
//    are such slices, so a Split becomes views.
// 2. Any other dispatch operand that the dispatch's body reads only through
//    tensor.slice ops (a strided slice, a column, an N-D box) is narrowed to
//    the minimal contiguous byte range those slices read: the operand
//    becomes a coarse view from that range's first byte aligned down to 256
//    to its last byte, and `element_offsets` holds minus the view's first
//    element, so the body's indices into the whole tensor are rebased to
//    the view. The dispatch stays; the host now knows the exact subrange it
//    reads (barriers can cover only that range).
//
// Why the element offset is baked into the shader and not a push constant:
// it is known at compile time, so a constant costs nothing at run time (no
// push-constant command per dispatch), and call sites whose shaders differ
// only in it (or in shapes) still share one SPIR-V module through
// specialization constants (compiler/backend/shader_dedupe.h). The emitter
// passes `element_offsets` to codegen (CodegenOptions::
// operand_element_offsets) and checks that each such binding starts on a
// 256-byte boundary. Every allocation the views start from is 256-aligned
// (arena slots, the constant pool, globals; kiln_tensor_create_view rejects
// other offsets for arguments).
//
// Must not act (each tested):
//  - rule 1: a dispatch whose body does anything besides the one slice of
//    its operand (a fused epilogue, a second result): rule 2 may narrow it;
//  - rule 1 at an unaligned offset: a use that is not a read-only dispatch
//    operand (a function result, a call argument, a tied operand). (A slice
//    of such a slice acts: its range is taken inside the coarse view its
//    operand became, at its element offset.)
//  - rule 2: an operand the body reads other than through tensor.slice, an
//    operand tied to a result, an operand already indexed at an offset, and
//    slices that read the whole operand (nothing to narrow).
//
// The executable is erased when no other dispatch uses it.
//
// Preconditions: stream level (after --convert-to-stream), before the copy
// passes, which treat a view as an alias of its source (a write through it
// is a write of the source).
//
// Before:
//   %s = "stream.async.dispatch"(%x) {entry = @slice_rows, sizes = [512], tied_operands = [-1]}
//          : (!stream.resource<external>) -> !stream.resource<transient>
//   (@slice_rows: tensor.slice of tensor<4x64xf32> {starts = [1, 0]} -> tensor<2x64xf32>)
// After:
//   %s = "stream.async.slice"(%x) {offset = 256 : i64, length = 512 : i64}
//          : (!stream.resource<external>) -> !stream.resource<external>
// Unaligned (rows 1 and 2 of tensor<4x40xf32>, bytes [160, 480)), read by
// a dispatch:
//   %c = "stream.async.slice"(%x) {offset = 0 : i64, length = 480 : i64}
//   %y = "stream.async.dispatch"(%c) {element_offsets = [40], entry = @add, ...}
#include <algorithm>
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

// The block of the flow.dispatch a flow.executable is made of, when its
// arguments mirror the executable's (one per dispatch operand); nullptr
// otherwise.
ir::Block* DispatchBlock(ir::Operation* executable) {
  if (executable->num_regions() != 1 || executable->region(0)->empty()) return nullptr;
  ir::Block* outer = executable->region(0)->block(0);
  if (outer->ops().size() != 1) return nullptr;
  ir::Operation* dispatch = outer->ops().front().get();
  if (!dispatch->is(OpCode::kFlowDispatch) || dispatch->num_regions() != 1 || dispatch->region(0)->empty())
    return nullptr;
  ir::Block* body = dispatch->region(0)->block(0);
  if (body->num_arguments() != outer->num_arguments() || dispatch->num_operands() != outer->num_arguments())
    return nullptr;
  for (unsigned i = 0; i < dispatch->num_operands(); ++i)
    if (dispatch->operand(i) != outer->argument(i)) return nullptr;
  return body;
}

// The slice a dispatch body is made of alone: flow.dispatch whose block is
// `%r = tensor.slice(%arg0)` and `flow.return(%r)`; nullptr otherwise.
ir::Operation* OnlySlice(ir::Operation* executable) {
  ir::Block* body = DispatchBlock(executable);
  if (!body || body->num_arguments() != 1 || body->ops().size() != 2) return nullptr;
  ir::Operation* slice = body->ops().front().get();
  ir::Operation* ret = body->terminator();
  if (!slice->is(OpCode::kTensorSlice) || !ret || !ret->is(OpCode::kFlowReturn) || ret->num_operands() != 1 ||
      ret->operand(0) != slice->result(0) || slice->operand(0) != body->argument(0))
    return nullptr;
  return slice;
}

// Byte size of one element of `t`, when every element has a whole number of
// bytes (0 otherwise).
int64_t ElementBytes(const ir::Type& t) {
  const int64_t n = t.num_elements();
  return n > 0 && t.byte_size() % n == 0 ? t.byte_size() / n : 0;
}

// `slice`'s starts and strides, one per dimension; false when the slice is
// not a same-rank, same-dtype selection that stays inside its source.
bool SliceBox(ir::Operation* slice, std::vector<int64_t>* starts, std::vector<int64_t>* steps) {
  const ir::Type& src = slice->operand(0)->type();
  const ir::Type& dst = slice->result(0)->type();
  const size_t rank = src.shape.size();
  if (!src.is_tensor() || !dst.is_tensor() || dst.shape.size() != rank || src.dtype != dst.dtype) return false;
  *starts = slice->ints_attr("starts");
  *steps = slice->ints_attr("strides");
  if (starts->size() != rank) starts->assign(rank, 0);
  if (steps->size() != rank) steps->assign(rank, 1);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t first = (*starts)[d], last = first + (dst.shape[d] - 1) * (*steps)[d];
    if (dst.shape[d] < 1 || std::min(first, last) < 0 || std::max(first, last) >= src.shape[d]) return false;
  }
  return true;
}

// The byte range of `slice`'s source it keeps, when that is one contiguous
// range; false otherwise. Leading dimensions that keep one index (any
// index) may be dropped; of the rest, the first keeps a run of indices with
// step 1 and every later one is kept whole.
bool ContiguousRange(ir::Operation* slice, int64_t* offset, int64_t* length) {
  std::vector<int64_t> starts, steps;
  if (!SliceBox(slice, &starts, &steps)) return false;
  const ir::Type& src = slice->operand(0)->type();
  const ir::Type& dst = slice->result(0)->type();
  const size_t rank = src.shape.size();
  const int64_t bytes = ElementBytes(src);
  if (bytes == 0) return false;
  size_t j = 0;
  while (j < rank && dst.shape[j] == 1) ++j;
  for (size_t d = j; d < rank; ++d) {
    if (d == j && steps[d] != 1) return false;
    if (d > j && (dst.shape[d] != src.shape[d] || starts[d] != 0 || steps[d] != 1)) return false;
  }
  int64_t elements = 0, stride = 1;
  for (size_t d = rank; d-- > 0;) {
    elements += starts[d] * stride;
    stride *= src.shape[d];
  }
  *offset = elements * bytes;
  *length = dst.byte_size();
  return true;
}

// Widens [*lo, *hi) (elements of the source, row-major) to cover every
// element `slice` reads.
void AddReadElements(ir::Operation* slice, const std::vector<int64_t>& starts, const std::vector<int64_t>& steps,
                     int64_t* lo, int64_t* hi) {
  const ir::Type& src = slice->operand(0)->type();
  const ir::Type& dst = slice->result(0)->type();
  int64_t first = 0, last = 0, stride = 1;
  for (size_t d = src.shape.size(); d-- > 0;) {
    const int64_t a = starts[d], b = starts[d] + (dst.shape[d] - 1) * steps[d];
    first += std::min(a, b) * stride;
    last += std::max(a, b) * stride;
    stride *= src.shape[d];
  }
  *lo = std::min(*lo, first);
  *hi = std::max(*hi, last + 1);
}

// True when operand `i` of `op` is written in place (tied to a result).
bool IsTiedOperand(ir::Operation* op, unsigned i) {
  for (unsigned r = 0; r < op->num_results(); ++r)
    if (ir::TiedOperandIndex(*op, r) == static_cast<int>(i)) return true;
  return false;
}

// A view of bytes [offset, offset + length) of `source`, placed before `at`.
ir::Value* ViewBefore(ir::Operation* at, ir::Value* source, int64_t offset, int64_t length) {
  ir::Operation* view = ir::Builder::Before(at).Create(
      "stream.async.slice", {source}, {source->type()},
      {{"offset", ir::Attribute(offset)}, {"length", ir::Attribute(length)}});
  view->set_loc(at->loc());
  return view->result(0);
}

// Sets `element_offsets[i]` of the dispatch `op` (0 for the other operands).
void SetElementOffset(ir::Operation* op, unsigned i, int64_t elements) {
  std::vector<int64_t> offsets = op->ints_attr("element_offsets");
  offsets.resize(op->num_operands(), 0);
  offsets[i] = elements;
  op->set_attr("element_offsets", ir::Attribute(offsets));
}

int64_t ElementOffsetOf(ir::Operation* op, unsigned i) {
  std::vector<int64_t> offsets = op->ints_attr("element_offsets");
  return i < offsets.size() ? offsets[i] : 0;
}

const ir::SymbolRef* EntryOf(ir::Operation* op) {
  const ir::Attribute* a = op->attr("entry");
  return a ? std::get_if<ir::SymbolRef>(&a->value) : nullptr;
}

class SliceViewsPass : public ir::Pass {
 public:
  const char* flag() const override { return "slice-views"; }
  const char* description() const override {
    return "Turn dispatches that copy one contiguous range of their operand into stream.async.slice views and "
           "narrow the operands other slices read to their minimal subrange";
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
        if (const ir::SymbolRef* s = EntryOf(op)) ++users[s->name];
      });
    // Rule 1, in program order (a slice's consumers come after it).
    std::vector<ir::Operation*> kept;
    for (ir::Operation* op : dispatches) {
      if (MakeView(op, executables, users, ctx)) continue;
      kept.push_back(op);
    }
    // Rule 2 on the dispatches that stay.
    for (ir::Operation* op : kept) NarrowOperands(op, executables, ctx);
    return OkStatus();
  }

 private:
  // Rule 1: replaces the slice dispatch `op` by a view; false when it stays.
  bool MakeView(ir::Operation* op, std::map<std::string, ir::Operation*>& executables,
                std::map<std::string, int>& users, ir::PassContext& ctx) {
    const ir::SymbolRef* entry = EntryOf(op);
    if (!entry || op->num_operands() != 1 || op->num_results() != 1) return false;
    if (ir::TiedOperandIndex(*op, 0) >= 0) return false;
    auto exe = executables.find(entry->name);
    if (exe == executables.end()) return false;
    ir::Operation* slice = OnlySlice(exe->second);
    int64_t offset = 0, length = 0;
    if (!slice || !ContiguousRange(slice, &offset, &length)) return false;
    ir::Value* source = op->operand(0);
    // A slice of a slice read inside a coarse view: its range starts that
    // many elements further into the view.
    offset += ElementOffsetOf(op, 0) * ElementBytes(slice->operand(0)->type());
    if (offset % kViewAlignment != 0) {
      for (const ir::Use& u : op->result(0)->uses()) {
        ir::Operation* user = u.user;
        if (!user->is(OpCode::kStreamAsyncDispatch) || IsTiedOperand(user, u.operand_index)) {
          ctx.Remark(op, "slice kept as a dispatch: its byte offset " + std::to_string(offset) +
                             " is not a multiple of 256 and '" + user->name() +
                             "' takes it (only a dispatch operand it reads can be indexed inside a coarse view)");
          return false;
        }
      }
      // Coarse view outside, element offset inside.
      const int64_t base = offset / kViewAlignment * kViewAlignment;
      const int64_t elements = (offset - base) / ElementBytes(slice->result(0)->type());
      ir::Value* coarse = ViewBefore(op, source, base, offset + length - base);
      std::vector<ir::Use> uses = op->result(0)->uses();
      for (const ir::Use& u : uses) {
        u.user->SetOperand(u.operand_index, coarse);
        SetElementOffset(u.user, u.operand_index, elements);
      }
    } else {
      ir::Value* view = ViewBefore(op, source, offset, length);
      op->result(0)->ReplaceAllUsesWith(view);
    }
    const std::string name = entry->name;  // `op` (which holds it) is erased below
    op->Erase();
    if (--users[name] == 0) {
      exe->second->Erase();
      executables.erase(exe);
    }
    return true;
  }

  // Rule 2: narrows each operand of `op` that its body reads only through
  // tensor.slice ops to the minimal subrange they read.
  void NarrowOperands(ir::Operation* op, const std::map<std::string, ir::Operation*>& executables,
                      ir::PassContext& ctx) {
    const ir::SymbolRef* entry = EntryOf(op);
    auto exe = entry ? executables.find(entry->name) : executables.end();
    if (exe == executables.end()) return;
    ir::Block* body = DispatchBlock(exe->second);
    if (!body || body->num_arguments() != op->num_operands()) return;
    for (unsigned i = 0; i < op->num_operands(); ++i) {
      ir::Value* arg = body->argument(i);
      const ir::Type& t = arg->type();
      const int64_t bytes = t.is_tensor() ? ElementBytes(t) : 0;
      if (bytes == 0 || arg->uses().empty()) continue;
      int64_t lo = t.num_elements(), hi = 0;
      bool only_slices = true;
      for (const ir::Use& u : arg->uses()) {
        std::vector<int64_t> starts, steps;
        if (!u.user->is(OpCode::kTensorSlice) || u.operand_index != 0 || !SliceBox(u.user, &starts, &steps)) {
          only_slices = false;
          break;
        }
        AddReadElements(u.user, starts, steps, &lo, &hi);
      }
      if (!only_slices) continue;  // another op reads the whole tensor
      const int64_t base = lo * bytes / kViewAlignment * kViewAlignment;
      const int64_t end = hi * bytes;
      if (base == 0 && end == t.byte_size()) continue;  // the slices reach both ends: nothing to narrow
      if (IsTiedOperand(op, i)) {
        ctx.Remark(op, "operand " + std::to_string(i) + " not narrowed: it is written in place");
        continue;
      }
      if (ElementOffsetOf(op, i) != 0) {
        ctx.Remark(op, "operand " + std::to_string(i) + " not narrowed: it is already indexed at an element offset");
        continue;
      }
      if (base % bytes != 0) continue;  // an element straddles the boundary (never for 1/2/4/8-byte elements)
      ir::Value* coarse = ViewBefore(op, op->operand(i), base, end - base);
      op->SetOperand(i, coarse);
      if (base != 0) SetElementOffset(op, i, -(base / bytes));
    }
  }
};

}  // namespace

std::unique_ptr<ir::Pass> CreateSliceViewsPass() { return std::make_unique<SliceViewsPass>(); }

}  // namespace kiln::transforms
