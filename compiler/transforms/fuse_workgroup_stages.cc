// Pass: --fuse-workgroup-stages (after --fuse-dispatch-regions)
//
// Merges a chain of small dispatches into one dispatch that a single
// workgroup runs in stages, the intermediate values kept in workgroup shared
// memory between them (codegen's workgroup-staged schedule, codegen.cc).
//
// Why. A dispatch has a fixed cost that does not depend on its size: on a
// GPU the launch and the barrier after it (a few microseconds), on lavapipe
// the wake-up of its worker threads (about 40 us per dispatch on this
// project's 2-core machine, `kiln-bench --per-dispatch`). The squeeze-excite
// block of MobileNetV3-style models (PP-OCR cls and det) is three such
// dispatches per block on [C,1,1] values:
//   s = hard_sigmoid(conv1x1(relu(conv1x1(GlobalAveragePool(x)))))
// and the two 1x1 convolutions of it hold a few thousand multiply-adds each.
// One workgroup computes the pooled [C] vector into shared memory, then the
// squeezed [C/4] vector, then s, with a workgroup barrier between stages:
// one dispatch instead of three, and no [C] or [C/4] buffer in the arena.
// This is producer-consumer fusion through on-chip memory, the way fused
// attention and fused MLP kernels keep their intermediates in shared memory;
// it is restricted here to chains small enough for one workgroup.
//
// Rule. A flow.dispatch P merges into a flow.dispatch C when
//   - P has one result and every use of it is an operand of C, both in the
//     same block;
//   - P's result has at most kMaxStageElements elements, and all values
//     staged in the merged dispatch together fit kMaxStageBytes of shared
//     memory (4 bytes per element: stages hold their compute type, f32 or
//     narrower);
//   - the merged dispatch does at most kMaxStagedWork units of work (below),
//     since one workgroup runs all of it;
//   - every op of both is elementwise, tensor.conv2d, tensor.matmul,
//     tensor.reduce, tensor.softmax, tensor.reshape or a constant
//     (evaluated element by element inside a stage; other anchors keep their
//     own schedules);
// A tensor.reshape between P and C (its only user C) moves into the merged
// dispatch: a classifier's pool -> flatten -> fully connected -> softmax.
//   - the merged dispatch keeps within kMaxBindings storage buffers and
//     kMaxRegionOps ops (fuse-dispatch-regions' own bounds).
// The op that computes P's result is marked `workgroup_stage` (a bool
// attribute): codegen computes that value over all its elements into shared
// memory before any later stage reads it. The merged dispatch is P's ops
// followed by C's, with C's results; it is named after both. A merged
// dispatch is tried again as a consumer, so a chain of three becomes one.
//
// Work units (a bound on one workgroup's arithmetic, not a cost model):
// multiply-adds of conv2d / matmul, the elements read by reduce, twice the
// row per element of softmax, and one per result element of every other op.
//
// Must not act: a producer whose result has another user (it is materialized
// anyway); a consumer that is large (its work would lose the device's
// parallelism); a producer in another block; an anchor outside the list; a
// producer that reads a `consume` argument of its function (directly or
// through slices, reshapes and dispatches of one slice). The last keeps a donation: the consumer's
// result may be placed into that argument's buffer (emplace-allocations,
// analysis/donation.h), which needs its producer not to read those bytes,
// as the merged dispatch would.
//
// Before:
//   %s = "flow.dispatch"(%x) ({ reduce ... flow.return }) {name = "dispatch_3_reduce"}
//   %t = "flow.dispatch"(%s, %w) ({ conv2d, relu ... }) {name = "dispatch_4_conv2d_relu"}
// After:
//   %t = "flow.dispatch"(%x, %w) ({
//     %r = "tensor.reduce"(...) {workgroup_stage = true}
//     %c = "tensor.conv2d"(%r, ...) ...
//     ... "flow.return"
//   }) {name = "dispatch_3_reduce_conv2d_relu"}
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

// One stage value's elements: the squeeze-excite vectors of MobileNetV3
// (C up to 1,280) with room to spare.
constexpr int64_t kMaxStageElements = 2048;
// Shared memory for all staged values of one dispatch. Vulkan guarantees
// maxComputeSharedMemorySize >= 16 KiB; the reductions of the stages use
// another 256 B.
constexpr int64_t kMaxStageBytes = 12 * 1024;
// One workgroup's work (units above). About 40 us of one lavapipe thread,
// the cost of the dispatches a merge saves; a GPU's workgroup does it in a
// few microseconds.
constexpr int64_t kMaxStagedWork = 65536;
// As fuse-dispatch-regions: storage buffers per dispatch, and ops per region
// (which bounds codegen's recursive evaluation; a chain of 4,000 adds on
// [4] would otherwise merge into one region).
constexpr size_t kMaxBindings = 8;
constexpr size_t kMaxRegionOps = 64;
// Op names kept in a merged dispatch's name (the rest are in its locs).
constexpr int kMaxNameParts = 8;

int64_t Elements(const ir::Value* v) {
  const ir::Type& t = v->type();
  if (!t.is_tensor()) return -1;
  int64_t n = 1;
  for (int64_t d : t.shape) {
    if (d < 0) return -1;
    n *= d;
  }
  return n;
}

// Work units of one op, or -1 when the op may not run inside a stage.
int64_t OpWork(const ir::Operation* op) {
  using ir::OpCode;
  const int64_t out = op->num_results() == 1 ? Elements(op->result()) : -1;
  if (out < 0) return -1;
  if (ir::Traits(op).is_elementwise() || op->is(OpCode::kTensorReshape) || op->is(OpCode::kTensorConstant))
    return out;
  if (op->is(OpCode::kTensorReduce)) return Elements(op->operand(0));
  if (op->is(OpCode::kTensorSoftmax)) {  // each element scans its row twice
    const ir::Type& x = op->operand(0)->type();
    int64_t axis = op->int_attr("axis", static_cast<int64_t>(x.shape.size()) - 1);
    if (axis < 0) axis += static_cast<int64_t>(x.shape.size());
    if (axis < 0 || axis >= static_cast<int64_t>(x.shape.size())) return -1;
    return out * 2 * x.shape[static_cast<size_t>(axis)];
  }
  if (op->is(OpCode::kTensorConv2d)) {
    const ir::Type& w = op->operand(1)->type();
    if (w.shape.size() != 4) return -1;
    return out * w.shape[1] * w.shape[2] * w.shape[3];
  }
  if (op->is(OpCode::kTensorMatmul)) {
    const ir::Type& a = op->operand(0)->type();
    if (a.shape.empty()) return -1;
    return out * a.shape.back();
  }
  return -1;
}

// Work units of a dispatch's region, or -1 when an op may not be staged.
int64_t DispatchWork(ir::Operation* dispatch) {
  int64_t total = 0;
  ir::Block* body = dispatch->region(0)->block(0);
  for (auto& owned : body->ops()) {
    ir::Operation* op = owned.get();
    if (op == body->terminator()) continue;
    const int64_t w = OpWork(op);
    if (w < 0) return -1;
    total += w;
  }
  return total;
}

// Bytes of the values already staged in a dispatch's region.
int64_t StagedBytes(ir::Operation* dispatch) {
  int64_t bytes = 0;
  for (auto& owned : dispatch->region(0)->block(0)->ops())
    if (owned->bool_attr("workgroup_stage")) bytes += 4 * Elements(owned->result());
  return bytes;
}

// `link`: the consumer's operand that carries the producer's result (the
// result itself, or a tensor.reshape of it).
std::vector<ir::Value*> MergedOperands(ir::Operation* producer, ir::Operation* consumer, ir::Value* link) {
  std::vector<ir::Value*> out;
  auto add = [&](ir::Value* v) {
    for (ir::Value* o : out)
      if (o == v) return;
    out.push_back(v);
  };
  for (ir::Value* v : producer->operands()) add(v);
  for (ir::Value* v : consumer->operands())
    if (v != link) add(v);
  return out;
}

// "dispatch_3_reduce" + "dispatch_4_conv2d_relu" -> "dispatch_3_reduce_conv2d_relu".
std::string MergedName(ir::Operation* producer, ir::Operation* consumer) {
  std::string p = producer->str_attr("name", "dispatch");
  std::string c = consumer->str_attr("name", "dispatch");
  // Drop "dispatch_<n>" from the consumer's name.
  size_t cut = 0;
  if (c.rfind("dispatch_", 0) == 0) {
    cut = c.find('_', 9);
    cut = cut == std::string::npos ? c.size() : cut;
  }
  std::string name = p + c.substr(cut);
  // At most "dispatch_<n>" plus kMaxNameParts op names.
  int parts = 0;
  for (size_t i = 0; i < name.size(); ++i)
    if (name[i] == '_' && ++parts > kMaxNameParts + 1) return name.substr(0, i);
  return name;
}

// Builds the merged dispatch before `consumer`, moves both regions' ops into
// it (and `reshape`, the tensor.reshape between them, if any), erases them
// and returns the merged dispatch.
ir::Operation* Merge(ir::Operation* producer, ir::Operation* consumer, ir::Operation* reshape) {
  ir::Value* link = reshape ? reshape->result() : producer->result(0);
  std::vector<ir::Value*> operands = MergedOperands(producer, consumer, link);
  std::vector<ir::Type> result_types;
  for (ir::Value* r : consumer->results()) result_types.push_back(r->type());
  auto locs = std::make_shared<ir::AttrList>();
  for (ir::Operation* d : {producer, consumer})
    if (const ir::AttrList* l = d->list_attr("locs"))
      locs->insert(locs->end(), l->begin(), l->end());
  ir::Builder b = ir::Builder::Before(consumer);
  b.set_loc(consumer->loc());
  ir::Operation* merged = b.Create("flow.dispatch", operands, result_types,
                                   {{"name", ir::Attribute(MergedName(producer, consumer))},
                                    {"locs", ir::Attribute(locs)}},
                                   /*num_regions=*/1);
  ir::Block* inner = merged->region(0)->AddBlock();
  std::vector<ir::Value*> args;
  for (ir::Value* v : operands) args.push_back(inner->AddArgument(v->type()));
  auto arg_for = [&](ir::Value* outer) -> ir::Value* {
    for (size_t i = 0; i < operands.size(); ++i)
      if (operands[i] == outer) return args[i];
    return nullptr;
  };

  // The producer's ops, its block arguments replaced by the merged ones.
  ir::Block* pbody = producer->region(0)->block(0);
  for (unsigned i = 0; i < pbody->num_arguments(); ++i)
    pbody->argument(i)->ReplaceAllUsesWith(arg_for(producer->operand(i)));
  ir::Operation* pret = pbody->terminator();
  ir::Value* staged = pret->operand(0);
  std::vector<ir::Operation*> pops;
  for (auto& owned : pbody->ops())
    if (owned.get() != pret) pops.push_back(owned.get());
  for (ir::Operation* op : pops) inner->Append(pbody->Remove(op));
  staged->defining_op()->set_attr("workgroup_stage", ir::Attribute(true));
  ir::Value* linked = staged;
  if (reshape) {
    std::map<ir::Value*, ir::Value*> map = {{reshape->operand(0), staged}};
    linked = inner->Append(reshape->Clone(map))->result();
  }

  // The consumer's ops; its argument for the producer's result reads the
  // staged value.
  ir::Block* cbody = consumer->region(0)->block(0);
  for (unsigned i = 0; i < cbody->num_arguments(); ++i)
    cbody->argument(i)->ReplaceAllUsesWith(consumer->operand(i) == link ? linked
                                                                        : arg_for(consumer->operand(i)));
  std::vector<ir::Operation*> cops;
  for (auto& owned : cbody->ops()) cops.push_back(owned.get());
  for (ir::Operation* op : cops) inner->Append(cbody->Remove(op));

  for (unsigned i = 0; i < consumer->num_results(); ++i)
    consumer->result(i)->ReplaceAllUsesWith(merged->result(i));
  consumer->Erase();
  if (reshape) reshape->Erase();
  producer->Erase();
  return merged;
}

// Whether `v` is, or is a slice or reshape of, an argument of its function
// marked `consume` in arg_ownership.
bool ReadsConsumedArgument(ir::Value* v) {
  while (ir::Operation* def = v->defining_op()) {
    if (def->is(ir::OpCode::kFlowDispatch) && def->num_operands() >= 1) {
      // A dispatch of one slice (slice-views makes it a view later).
      ir::Block* body = def->region(0)->block(0);
      if (body->ops().size() != 2 || !body->ops().front()->is(ir::OpCode::kTensorSlice)) return false;
      v = def->operand(0);
      continue;
    }
    if (!def->is(ir::OpCode::kTensorSlice) && !def->is(ir::OpCode::kTensorReshape)) return false;
    v = def->operand(0);
  }
  ir::Block* block = v->parent_block();
  ir::Operation* func = block ? block->parent_op() : nullptr;
  if (!func || !func->is(ir::OpCode::kFuncFunc) || func->region(0)->block(0) != block) return false;
  const std::vector<std::string> ownership = func->strs_attr("arg_ownership");
  return v->index() < ownership.size() && ownership[v->index()] == "consume";
}

// Whether `producer` (the definer of one of `consumer`'s operands) may merge
// into `consumer`.
bool CanMerge(ir::Operation* producer, ir::Operation* consumer, ir::Operation* reshape) {
  if (!producer->is(ir::OpCode::kFlowDispatch) || producer->parent_block() != consumer->parent_block())
    return false;
  if (producer->num_results() != 1 || producer->num_regions() != 1 || producer->region(0)->num_blocks() != 1)
    return false;
  for (ir::Value* operand : producer->operands())
    if (ReadsConsumedArgument(operand)) return false;
  ir::Value* v = producer->result(0);
  ir::Operation* user = reshape ? reshape : consumer;
  for (const ir::Use& u : v->uses())
    if (u.user != user) return false;
  if (reshape)
    for (const ir::Use& u : reshape->result()->uses())
      if (u.user != consumer) return false;
  ir::Operation* pret = producer->region(0)->block(0)->terminator();
  if (!pret || pret->num_operands() != 1 || !pret->operand(0)->defining_op()) return false;
  const int64_t elements = Elements(v);
  if (elements < 0 || elements > kMaxStageElements) return false;
  if (StagedBytes(producer) + StagedBytes(consumer) + 4 * elements > kMaxStageBytes) return false;
  if (producer->region(0)->block(0)->ops().size() + consumer->region(0)->block(0)->ops().size() >
      kMaxRegionOps + 2)  // two terminators, one dropped
    return false;
  const int64_t pw = DispatchWork(producer), cw = DispatchWork(consumer);
  if (pw < 0 || cw < 0 || pw + cw > kMaxStagedWork) return false;
  return MergedOperands(producer, consumer, reshape ? reshape->result() : v).size() + consumer->num_results() <=
         kMaxBindings;
}

class FuseWorkgroupStagesPass : public ir::Pass {
 public:
  const char* flag() const override { return "fuse-workgroup-stages"; }
  const char* description() const override {
    return "Merge chains of small dispatches into one workgroup that runs them in stages";
  }

  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    (void)ctx;
    for (ir::Operation* func : module.functions()) {
      // In program order per block, so every producer is visited before its
      // consumer: only dispatches already passed are erased.
      std::vector<ir::Operation*> dispatches;
      func->Walk([&](ir::Operation* op) {
        if (op->is(ir::OpCode::kFlowDispatch)) dispatches.push_back(op);
      });
      for (ir::Operation* consumer : dispatches) {
        for (bool merged = true; merged;) {
          merged = false;
          for (ir::Value* v : consumer->operands()) {
            ir::Operation* producer = v->defining_op();
            ir::Operation* reshape = nullptr;
            if (producer && producer->is(ir::OpCode::kTensorReshape) &&
                producer->parent_block() == consumer->parent_block()) {
              reshape = producer;
              producer = producer->operand(0)->defining_op();
            }
            if (!producer || !CanMerge(producer, consumer, reshape)) continue;
            consumer = Merge(producer, consumer, reshape);
            merged = true;
            break;
          }
        }
      }
    }
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<ir::Pass> CreateFuseWorkgroupStagesPass() {
  return std::make_unique<FuseWorkgroupStagesPass>();
}

}  // namespace kiln::transforms
