// Pass: --fuse-pad (opt-in: kiln-compile --fuse-pad; off by default)
//
// Pad fusion, narrow (issue 13 item 4; the IREE discussion in PR #9194:
// fusing an insert into a dispatch widens what it touches, so only padded
// insertions qualify, and the host keeps every byte range). A constant-mode
// tensor.pad is today an anchor dispatch of its own (a copy kernel that
// reads the producer's whole result and writes the larger padded tensor).
// This pass turns that dispatch into
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
// Scope of v1: the interior must be ONE contiguous byte range of the
// target. That holds when every dimension before the first padded one has
// extent 1 and no dimension after it is padded (e.g. [2,3,4] padded on
// dim 0; [1,1,T] padded on T). The border is then two contiguous runs, and
// stream.async.fill writes them exactly. A pad whose interior is strided
// in the target (H/W padding of NCHW: each interior row is its own run)
// is left alone: the producer would have to write with an output stride,
// which codegen does not do today (it only adds a constant element offset
// to every index it writes, CodegenOptions::result_element_offsets), and
// the border would need a fill dispatch. None of Kiln's real models has a
// constant Pad that qualifies either way (docs/architecture.md "Pad
// fusion"), so v1 stays the contiguous case.
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
//  - the interior is one contiguous range (above);
//  - the pad value has a 32-bit fill pattern in the element type (f32,
//    f16, bf16 when exact, integers and bool when the value is one of
//    theirs, 64-bit types when both words are equal, e.g. 0), and the
//    border ranges are whole 32-bit words (vkCmdFillBuffer);
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

// A constant pad whose interior is one contiguous range of the target.
struct PadPlan {
  int64_t size = 0;             // the target's bytes
  int64_t interior_offset = 0;  // bytes before the interior
  int64_t interior_length = 0;  // the operand's bytes
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
    for (size_t d = 0; d < k; ++d)
      if (dst.shape[d] != 1)
        return "the interior is strided in the target (dimension " + std::to_string(d) + " before the padded one has extent " +
               std::to_string(dst.shape[d]) + "): v1 places only a contiguous interior";
    for (size_t d = k + 1; d < r; ++d)
      if (pads[d] != 0 || pads[r + d] != 0)
        return "the interior is strided in the target (dimensions " + std::to_string(k) + " and " + std::to_string(d) +
               " are padded): v1 places only a contiguous interior";
    const int64_t eb = static_cast<int64_t>(DTypeSize(dst.dtype));
    int64_t inner = 1;
    for (size_t d = k + 1; d < r; ++d) inner *= dst.shape[d];
    plan->size = dst.byte_size();
    plan->interior_offset = pads[k] * inner * eb;
    plan->interior_length = src.byte_size();
    if (eb == 0 || plan->interior_length <= 0) return "an empty operand";
    if (plan->size % 4 != 0 || plan->interior_offset % 4 != 0 || plan->interior_length % 4 != 0)
      return "a border range is not whole 32-bit words (a fill writes 32-bit words)";
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
    if (why.empty()) why = WhyNotPlaceable(dispatch, plan.interior_length);
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
