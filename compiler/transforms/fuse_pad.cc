// Pass: --fuse-pad (opt-in: kiln-compile --fuse-pad; off by default)
//
// Pad fusion, narrow (issue 13 item 4; the IREE discussion in PR #9194:
// fusing an insert into a dispatch widens what it touches, so only padded
// insertions qualify, and the host keeps every byte range). A constant-mode
// tensor.pad is today an anchor dispatch of its own (a copy kernel that
// reads the producer's whole result and writes the larger padded tensor).
// When the interior is one contiguous byte range of the target, this pass
// turns that dispatch into
//   - a stream.async.alloca of the padded tensor (the target),
//   - a stream.async.update of the producer's result into the interior
//     subrange of the target, and
//   - one stream.async.fill per border byte range (at most two: before and
//     after the interior), with the pad value's 32-bit pattern.
// --emplace-allocations (which runs next in the pipeline) then places the
// producer into the interior exactly as it places a concat's producers
// (compiler/transforms/emplace_allocations.cc step 2: the target becomes
// the producer's placement operand, with result_offsets / result_lengths /
// result_element_offsets, and the update goes). The pad then costs no
// dispatch and no copy: the producer writes the interior, two fill
// commands write only the border, and every command keeps its exact byte
// range, so --place-barriers needs no barrier between the producer and the
// fills (disjoint ranges).
//
// A strided interior (H/W padding of NCHW: each interior row is its own
// run of the target, the usual pad) becomes
//   - a stream.async.alloca of the target,
//   - ONE stream.async.fill of the whole target with the pad value, and
//   - a stream.async.update of the producer's result into the interior
//     with `strides` (the target's row-major element strides; offset and
//     length are the interior's hull, from its first element to its last),
// and --emplace-allocations places the producer with `result_strides`:
// the shader writes element (i0, ..., ik) of its result at
// result_element_offsets + sum(i_d * strides[d]) (codegen
// CodegenOptions::result_strides; every schedule stores results through
// one path, per element, so no schedule is excluded). A strided update
// exists only to be placed: it is no copy the runtime could run, so
// --emplace-allocations fails (kInternal) when it cannot place one, and
// this pass checks the same conditions first (one it does not check, that
// placing costs the result a consumed argument's storage, makes
// --emplace-allocations place it anyway with a remark).
//
// The border of a strided interior: why one whole-target fill. The border
// of an [N,C,H,W] pad on H and W is N*C*H + 1 separate byte runs (the
// right pad of a row and the left pad of the next one touch); one
// vkCmdFillBuffer per run is ~1,000 commands for 1x16x64x64. A border-only
// fill dispatch would write only the border bytes but its bound range (the
// target) overlaps the producer's bound range (the interior's hull) all
// the same: Vulkan and sync validation take every byte of a bound range
// as written, so a barrier between the two is needed either way (as it is
// between this fill and the producer), and the dispatch costs a shader, a
// descriptor set and a launch over the whole target. One fill is one
// transfer command with no shader; it rewrites the interior bytes once
// before the producer does (a memset of the target's bytes). Ordering:
// the fill runs before the producer (the chain alloca -> fill -> update;
// --emplace-allocations keeps leading fills before the placed producer),
// and --place-barriers puts one barrier (over the fill's bytes) between
// them: write after write. The producer's own binding is the interior's
// hull, so the barrier after it (before a reader) covers that hull only
// (e2e FusePadTest.StridedPlacementBarriersCoverTheFillThenTheHull).
//
// A contiguous interior (every dimension before the first padded one has
// extent 1 and no later dimension is padded: [2,3,4] padded on dim 0,
// [1,1,T] padded on T) keeps the exact border: two fills of the runs
// before and after the interior, which write bytes disjoint from it, after
// the producer.
//
// Acts on a stream.async.dispatch when all of these hold (else a remark
// says why; each case is a must-not-act test in
// compiler/test/transforms/fuse-pad.kir):
//  - its executable is only a tensor.pad of its one operand (a pad whose
//    elementwise consumers --fuse-dispatch-regions put in its dispatch as an
//    epilogue computes, it is not a copy: left alone), mode
//    "constant" (reflect/edge read the interior to fill the border), every
//    pad >= 0 (a negative pad crops: not an insertion), not read through a
//    coarse view (`element_offsets`), its result not tied;
//  - the pad value has a 32-bit fill pattern in the element type (f32,
//    f16, bf16 when exact, integers and bool when the value is one of
//    theirs, 64-bit types when both words are equal, e.g. 0), and the
//    filled ranges are whole 32-bit words (vkCmdFillBuffer: the border
//    runs of a contiguous interior, the whole target of a strided one);
//  - strided: the interior starts a whole number of elements past a
//    256-byte boundary (the producer is bound from there), and the
//    producer's result has the pad operand's shape (no reshape between:
//    the strides index the pad's dimensions);
//  - the padded operand is result r of a stream.async.dispatch in the same
//    block (not an import, a constant, a block argument, a call result, and
//    not across an scf region or loop body), used only by the pad, written
//    fresh (not in place), r's size being the whole operand.
//
// Preconditions: stream level, after the copy passes and before
// --emplace-allocations (which does the placement) and --resource-lifetime.
// Executables left without a dispatch are erased.
//
// Before (@pad: tensor.pad of tensor<2x3x4xf32> by [1,0,0,2,0,0], value 3.5):
//   %a = "stream.async.dispatch"(%x) {entry = @neg, sizes = [96], tied_operands = [-1]}
//   %y = "stream.async.dispatch"(%a) {entry = @pad, sizes = [240], tied_operands = [-1]}
// After --fuse-pad:
//   %a = "stream.async.dispatch"(%x) {entry = @neg, sizes = [96], tied_operands = [-1]}
//   %t = "stream.async.alloca"() {size = 240 : i64}
//   %t1 = "stream.async.update"(%t, %a) {length = 96 : i64, offset = 48 : i64, size = 240 : i64}
//   %t2 = "stream.async.fill"(%t1) {length = 48 : i64, offset = 0 : i64, pattern = 1080033280 : i64, size = 240 : i64}
//   %y = "stream.async.fill"(%t2) {length = 96 : i64, offset = 144 : i64, pattern = 1080033280 : i64, size = 240 : i64}
// After --emplace-allocations:
//   %t = "stream.async.alloca"() {size = 240 : i64}
//   %a = "stream.async.dispatch"(%x, %t) {entry = @neg, result_element_offsets = [12], result_lengths = [96],
//          result_offsets = [48], sizes = [240], tied_operands = [1]}
//   %t2 = "stream.async.fill"(%a) {length = 48 : i64, offset = 0 : i64, ...}
//   %y = "stream.async.fill"(%t2) {length = 96 : i64, offset = 144 : i64, ...}
// Strided (@pad: [1,2,3,4] f32 padded by 1 on H and W, value 0, [1,2,5,6]):
//   %t = "stream.async.alloca"() {size = 240 : i64}
//   %f = "stream.async.fill"(%t) {length = 240 : i64, offset = 0 : i64, pattern = 0 : i64, size = 240 : i64}
//   %y = "stream.async.update"(%f, %a) {length = 184 : i64, offset = 28 : i64, size = 240 : i64,
//          strides = [60, 30, 6, 1]}
// After --emplace-allocations:
//   %t = "stream.async.alloca"() {size = 240 : i64}
//   %f = "stream.async.fill"(%t) {length = 240 : i64, offset = 0 : i64, pattern = 0 : i64, size = 240 : i64}
//   %y = "stream.async.dispatch"(%x, %f) {entry = @neg, result_element_offsets = [7], result_lengths = [184],
//          result_offsets = [28], result_strides = [4, 60, 30, 6, 1], sizes = [240], tied_operands = [1]}
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/half.h"
#include "compiler/ir/op_traits.h"
#include "compiler/transforms/dispatch_executables.h"
#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

using ir::OpCode;

// The 32-bit word that repeating one element of `dtype` holding `value`
// (as the pad shader converts it) fills memory with; false (with `why`)
// when the element's bytes do not repeat every 32 bits or `value` is not
// one of the dtype's values.
bool FillPattern(DType dtype, double value, uint32_t* pattern, std::string* why) {
  auto integral = [&](double lo, double hi) {
    if (value != std::floor(value) || value < lo || value > hi) {
      *why = "the pad value is not a " + std::string(DTypeName(dtype)) + " value";
      return false;
    }
    return true;
  };
  switch (dtype) {
    case DType::kF32: {
      float f = static_cast<float>(value);
      std::memcpy(pattern, &f, 4);
      return true;
    }
    case DType::kF16: {
      uint32_t h = FloatToHalf(static_cast<float>(value));
      *pattern = h | h << 16;
      return true;
    }
    case DType::kBF16: {
      float f = static_cast<float>(value);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      if (bits & 0xFFFFu) {
        *why = "the pad value is not exact in bf16 (the shader rounds it)";
        return false;
      }
      *pattern = (bits >> 16) | (bits & 0xFFFF0000u);
      return true;
    }
    case DType::kBool:
      *pattern = value != 0 ? 0x01010101u : 0;
      return true;
    case DType::kI8:
    case DType::kU8:
      if (!integral(dtype == DType::kI8 ? -128 : 0, dtype == DType::kI8 ? 127 : 255)) return false;
      *pattern = (static_cast<uint32_t>(static_cast<int64_t>(value)) & 0xFFu) * 0x01010101u;
      return true;
    case DType::kI16:
    case DType::kU16: {
      if (!integral(dtype == DType::kI16 ? -32768 : 0, dtype == DType::kI16 ? 32767 : 65535)) return false;
      uint32_t h = static_cast<uint32_t>(static_cast<int64_t>(value)) & 0xFFFFu;
      *pattern = h | h << 16;
      return true;
    }
    case DType::kI32:
    case DType::kU32:
      if (!integral(dtype == DType::kI32 ? -2147483648.0 : 0, dtype == DType::kI32 ? 2147483647.0 : 4294967295.0))
        return false;
      *pattern = static_cast<uint32_t>(static_cast<int64_t>(value));
      return true;
    case DType::kF64:
    case DType::kI64:
    case DType::kU64: {
      uint64_t bits = 0;
      if (dtype == DType::kF64) {
        std::memcpy(&bits, &value, 8);
      } else {
        if (!integral(dtype == DType::kI64 ? -9.2e18 : 0, dtype == DType::kI64 ? 9.2e18 : 1.8e19)) return false;
        bits = dtype == DType::kI64 ? static_cast<uint64_t>(static_cast<int64_t>(value))
                                    : static_cast<uint64_t>(value);
      }
      if ((bits >> 32) != (bits & 0xFFFFFFFFu)) {
        *why = "the pad value's 64-bit pattern does not repeat every 32 bits (a fill writes one 32-bit word)";
        return false;
      }
      *pattern = static_cast<uint32_t>(bits);
      return true;
    }
    default:
      *why = "no fill pattern for dtype " + std::string(DTypeName(dtype));
      return false;
  }
}

// Why a value cannot be the producer, by what defines it.
std::string SourceKind(ir::Value* v) {
  ir::Operation* def = v->defining_op();
  if (!def) return "a block argument";
  switch (def->code()) {
    case OpCode::kStreamTensorImport:
      return def->int_attr("consume") ? "an import (a consumed argument)" : "an import (a borrowed argument)";
    case OpCode::kStreamAsyncConstant: return "a constant";
    case OpCode::kFuncCall: return "a call result";
    default: return "'" + def->name() + "', not a dispatch";
  }
}

// A constant pad: its interior is one contiguous range of the target, or
// (strides non-empty) a strided box in it.
struct PadPlan {
  int64_t size = 0;             // the target's bytes
  int64_t interior_offset = 0;  // bytes before the interior's first element
  int64_t interior_length = 0;  // contiguous: the operand's bytes; strided: the interior's hull
  int64_t operand_bytes = 0;    // the operand's (the producer's result's) bytes
  std::vector<int64_t> strides; // strided: the target's element stride per dimension
  uint32_t pattern = 0;
};

class FusePadPass : public ir::Pass {
 public:
  const char* flag() const override { return "fuse-pad"; }
  const char* description() const override {
    return "Opt-in: a constant pad of a dispatch result becomes border fills, the producer writes the interior";
  }

  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    DispatchExecutables executables(module);
    executables_ = &executables;
    for (ir::Operation* func : module.functions()) {
      for (ir::Block* b : BlocksOf(func)) {
        std::vector<ir::Operation*> dispatches;
        for (auto& op : b->ops())
          if (op->is(OpCode::kStreamAsyncDispatch)) dispatches.push_back(op.get());
        for (ir::Operation* d : dispatches) Fuse(d, ctx);
      }
    }
    // Pad executables no dispatch calls any more.
    executables.EraseUncalled(module, fused_);
    executables_ = nullptr;
    return OkStatus();
  }

 private:
  // The tensor.pad `dispatch`'s executable is made of (pad of its one
  // operand, returned), nullptr otherwise (`why` set when the executable
  // holds a pad among other ops).
  ir::Operation* PadOf(ir::Operation* dispatch, std::string* why) {
    if (dispatch->num_results() != 1) return nullptr;
    ir::Operation* body = executables_->BodyOf(dispatch);
    if (!body || body->num_regions() != 1 || body->region(0)->empty()) return nullptr;
    ir::Block* block = body->region(0)->block(0);
    if (block->ops().size() != 2) {
      for (auto& op : block->ops())
        if (op->is(OpCode::kTensorPad)) *why = "the dispatch also computes (an epilogue fused after the pad): not a copy";
      return nullptr;
    }
    ir::Operation* pad = block->ops().front().get();
    ir::Operation* ret = block->terminator();
    if (!pad->is(OpCode::kTensorPad) || !ret || !ret->is(OpCode::kFlowReturn) || ret->num_operands() != 1 ||
        ret->operand(0) != pad->result(0))
      return nullptr;
    ir::Block* outer = body->parent_block();
    if (dispatch->num_operands() != 1 || body->num_operands() != 1 || outer->num_arguments() != 1 || body->operand(0) != outer->argument(0) ||
        pad->operand(0) != block->argument(0))
      return nullptr;
    return pad;
  }

  // The plan for `pad` (a tensor.pad) when it qualifies; "" or why not.
  std::string Plan(ir::Operation* pad, PadPlan* plan) {
    if (pad->str_attr("mode", "constant") != "constant")
      return "mode '" + pad->str_attr("mode") + "': the border reads the interior";
    const ir::Type& src = pad->operand(0)->type();
    const ir::Type& dst = pad->result(0)->type();
    const size_t r = src.shape.size();
    std::vector<int64_t> pads = pad->ints_attr("pads");
    if (pads.size() != 2 * r || dst.shape.size() != r) return "malformed pads";
    for (int64_t p : pads)
      if (p < 0) return "a negative pad crops the operand (not a padded insertion)";
    size_t k = r;  // the first padded dimension
    for (size_t d = 0; d < r && k == r; ++d)
      if (pads[d] != 0 || pads[r + d] != 0) k = d;
    if (k == r) return "nothing is padded";
    bool contiguous = true;
    for (size_t d = 0; d < k; ++d) contiguous = contiguous && dst.shape[d] == 1;
    for (size_t d = k + 1; d < r; ++d) contiguous = contiguous && pads[d] == 0 && pads[r + d] == 0;
    const int64_t eb = static_cast<int64_t>(DTypeSize(dst.dtype));
    plan->size = dst.byte_size();
    plan->operand_bytes = src.byte_size();
    if (eb == 0 || plan->operand_bytes <= 0) return "an empty operand";
    if (contiguous) {
      int64_t inner = 1;
      for (size_t d = k + 1; d < r; ++d) inner *= dst.shape[d];
      plan->interior_offset = pads[k] * inner * eb;
      plan->interior_length = src.byte_size();
    } else {
      // The interior is the box [pads_lo, pads_lo + src) of the target:
      // the producer writes element i at sum((pads_lo[d] + i_d) * T_d),
      // T the target's row-major strides; its hull runs from the first
      // interior element to the last.
      plan->strides.assign(r, 1);
      for (size_t d = r; d-- > 1;) plan->strides[d - 1] = plan->strides[d] * dst.shape[d];
      int64_t first = 0, last = 0;
      for (size_t d = 0; d < r; ++d) {
        first += pads[d] * plan->strides[d];
        last += (pads[d] + src.shape[d] - 1) * plan->strides[d];
      }
      plan->interior_offset = first * eb;
      plan->interior_length = (last - first + 1) * eb;
    }
    if (plan->strides.empty() &&
        (plan->size % 4 != 0 || plan->interior_offset % 4 != 0 || plan->interior_length % 4 != 0))
      return "a border range is not whole 32-bit words (a fill writes 32-bit words)";
    if (!plan->strides.empty() && plan->size % 4 != 0)
      return "the padded tensor is not whole 32-bit words (the border fill writes 32-bit words)";
    if (!plan->strides.empty() && (plan->interior_offset % 256) % eb != 0)
      return "the interior does not start on an element past a 256-byte boundary";
    std::string why;
    if (!FillPattern(dst.dtype, pad->float_attr("value", 0), &plan->pattern, &why)) return why;
    return "";
  }

  // Why the operand of `dispatch` cannot be placed into the interior ("" when it can).
  static std::string WhyNotPlaceable(ir::Operation* dispatch, int64_t length) {
    ir::Value* src = dispatch->operand(0);
    ir::Operation* def = src->defining_op();
    if (!def || !def->is(OpCode::kStreamAsyncDispatch)) return "the padded value is " + SourceKind(src);
    if (def->parent_block() != dispatch->parent_block())
      return "the producer is in another block (outside the region holding the pad)";
    if (src->uses().size() != 1) return "the padded value has other uses (placing it would widen what they see)";
    if (def->ints_attr("tied_operands").at(src->index()) >= 0) return "the producer writes that result in place";
    if (def->ints_attr("sizes").at(src->index()) != length) return "the producer's result is not the whole operand";
    return "";
  }

  void Fuse(ir::Operation* dispatch, ir::PassContext& ctx) {
    auto remark = [&](const std::string& why) { ctx.Remark(dispatch, "pad stays a dispatch: " + why); };
    std::string not_copy;
    ir::Operation* pad = PadOf(dispatch, &not_copy);
    if (!pad) {
      if (!not_copy.empty()) remark(not_copy);
      return;
    }
    for (int64_t e : dispatch->ints_attr("element_offsets"))
      if (e != 0) return remark("it reads its operand through a coarse view (element_offsets)");
    std::vector<int64_t> tied = dispatch->ints_attr("tied_operands");
    if (!tied.empty() && tied[0] >= 0) return remark("its result is written in place");
    PadPlan plan;
    std::string why = Plan(pad, &plan);
    if (why.empty()) why = WhyNotPlaceable(dispatch, plan.operand_bytes);
    if (why.empty() && !plan.strides.empty()) {
      // The strides index the producer's result by the pad operand's
      // dimensions: a reshape between them (folded away at the stream
      // level) would make them the wrong rank or order.
      ir::Value* src = dispatch->operand(0);
      ir::Operation* body = executables_->BodyOf(src->defining_op());
      const ir::Type* made = body && src->index() < body->num_results() ? &body->result(src->index())->type() : nullptr;
      if (!made || made->shape != pad->operand(0)->type().shape)
        why = "the producer's result is reshaped before the pad (a strided interior is written by the pad's dimensions)";
    }
    if (!why.empty()) return remark(why);
    if (dispatch->ints_attr("sizes").at(0) != plan.size) return remark("its result size is not the padded tensor's");

    ir::Builder b = ir::Builder::Before(dispatch);
    b.set_loc(dispatch->loc());
    const ir::Type transient = ir::Type::Resource(ir::Lifetime::kTransient);
    auto with_affinity = [&](std::map<std::string, ir::Attribute> attrs) {
      if (const ir::Attribute* aff = dispatch->attr("affinity")) attrs["affinity"] = *aff;
      return attrs;
    };
    ir::Value* cur = b.Create("stream.async.alloca", {}, {transient}, with_affinity({{"size", ir::Attribute(plan.size)}}))
                         ->result(0);
    if (!plan.strides.empty()) {
      // Strided: one fill of the whole target (the border, and the
      // interior the producer then overwrites), then a strided update of
      // the interior, which --emplace-allocations turns into the
      // producer's strided placement (result_strides).
      cur = b.Create("stream.async.fill", {cur}, {transient},
                     with_affinity({{"offset", ir::Attribute(int64_t{0})},
                                    {"length", ir::Attribute(plan.size)},
                                    {"size", ir::Attribute(plan.size)},
                                    {"pattern", ir::Attribute(static_cast<int64_t>(plan.pattern))}}))
                ->result(0);
      cur = b.Create("stream.async.update", {cur, dispatch->operand(0)}, {transient},
                     with_affinity({{"offset", ir::Attribute(plan.interior_offset)},
                                    {"length", ir::Attribute(plan.interior_length)},
                                    {"size", ir::Attribute(plan.size)},
                                    {"strides", ir::Attribute(plan.strides)}}))
                ->result(0);
      dispatch->result(0)->ReplaceAllUsesWith(cur);
      fused_.insert(std::get<ir::SymbolRef>(dispatch->attr("entry")->value).name);
      dispatch->Erase();
      return;
    }
    cur = b.Create("stream.async.update", {cur, dispatch->operand(0)}, {transient},
                   with_affinity({{"offset", ir::Attribute(plan.interior_offset)},
                                  {"length", ir::Attribute(plan.interior_length)},
                                  {"size", ir::Attribute(plan.size)}}))
              ->result(0);
    const int64_t end = plan.interior_offset + plan.interior_length;
    const std::pair<int64_t, int64_t> borders[2] = {{0, plan.interior_offset}, {end, plan.size - end}};
    for (const auto& [offset, length] : borders) {
      if (length == 0) continue;
      cur = b.Create("stream.async.fill", {cur}, {transient},
                     with_affinity({{"offset", ir::Attribute(offset)},
                                    {"length", ir::Attribute(length)},
                                    {"size", ir::Attribute(plan.size)},
                                    {"pattern", ir::Attribute(static_cast<int64_t>(plan.pattern))}}))
                ->result(0);
    }
    dispatch->result(0)->ReplaceAllUsesWith(cur);
    fused_.insert(std::get<ir::SymbolRef>(dispatch->attr("entry")->value).name);
    dispatch->Erase();
  }

  const DispatchExecutables* executables_ = nullptr;  // during Run
  std::set<std::string> fused_;  // entries of the pad dispatches rewritten
};

}  // namespace

std::unique_ptr<ir::Pass> CreateFusePadPass() { return std::make_unique<FusePadPass>(); }

}  // namespace kiln::transforms
