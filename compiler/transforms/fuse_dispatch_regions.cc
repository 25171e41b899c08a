// Pass: --fuse-dispatch-regions
//
// Groups the tensor-level ops of every function into flow.dispatch ops, each
// of which codegen turns into one compute shader. A group is either
//   - one "anchor" op (conv2d, matmul, reduce, pool2d, softmax, transpose,
//     slice, concat, pad, gather, expand, conv_transpose, resize; any non-elementwise
//     tensor op starts a group of its own) followed by elementwise consumers
//     (an epilogue: bias, activation, folded batch-norm), or
//   - a chain of elementwise ops.
// An elementwise op joins its producer's group only when that producer is the
// group's current output, the producer's result has this op as its only use
// (so no intermediate is needed outside the dispatch), and the op's result
// shape equals the group's output shape (the epilogue runs one invocation per
// output element; a broadcast that grows the shape would change the grid).
// This is the producer-consumer elementwise fusion of XLA and IREE's
// dispatch-region formation, restricted to what needs no tiling analysis.
//
// tensor.constant and tensor.reshape stay outside dispatches: constants live
// in the module's constant pool and reshapes are free views, so the host knows
// every byte range a dispatch touches (seeds/03, slice subranges).
//
// Preconditions: tensor level, static shapes, single-block function bodies.
//
// Before:
//   %1 = "tensor.conv2d"(%x, %w) ...
//   %2 = "tensor.add"(%1, %b) ...
//   %3 = "tensor.relu"(%2) ...
// After:
//   %3 = "flow.dispatch"(%x, %w, %b) ({
//   ^bb0(%a0, %a1, %a2):
//     %c = "tensor.conv2d"(%a0, %a1) ...
//     %s = "tensor.add"(%c, %a2) ...
//     %r = "tensor.relu"(%s) ...
//     "flow.return"(%r) ...
//   }) {name = "dispatch_0_conv2d_add_relu", locs = [...]}
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/ops.h"
#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

// Storage buffers per dispatch are a scarce resource on mobile GPUs
// (maxPerStageDescriptorStorageBuffers is 8 on many Mali/Adreno drivers):
// keep inputs + output within this.
constexpr size_t kMaxBindings = 8;

struct Group {
  std::vector<ir::Operation*> ops;  // in program order; back() is the output
};

std::vector<ir::Value*> ExternalOperands(const Group& g) {
  std::set<ir::Operation*> members(g.ops.begin(), g.ops.end());
  std::vector<ir::Value*> out;
  for (ir::Operation* op : g.ops)
    for (ir::Value* v : op->operands()) {
      if (v->defining_op() && members.count(v->defining_op())) continue;
      bool seen = false;
      for (ir::Value* o : out) seen |= (o == v);
      if (!seen) out.push_back(v);
    }
  return out;
}

std::string ShortName(const std::string& op_name) {
  size_t dot = op_name.find('.');
  return dot == std::string::npos ? op_name : op_name.substr(dot + 1);
}

void Materialize(ir::Block* body, const Group& g, int ordinal) {
  ir::Operation* last = g.ops.back();
  std::vector<ir::Value*> externals = ExternalOperands(g);
  std::vector<ir::Type> result_types;
  for (ir::Value* r : last->results()) result_types.push_back(r->type());

  std::string name = "dispatch_" + std::to_string(ordinal);
  auto locs = std::make_shared<ir::AttrList>();
  for (size_t i = 0; i < g.ops.size(); ++i) {
    if (i < 5) name += "_" + ShortName(g.ops[i]->name());
    if (!g.ops[i]->loc().empty()) locs->push_back(ir::Attribute(g.ops[i]->loc()));
  }
  ir::Builder b = ir::Builder::Before(last);
  b.set_loc(last->loc());
  ir::Operation* dispatch = b.Create("flow.dispatch", externals, result_types,
                                     {{"name", ir::Attribute(name)}, {"locs", ir::Attribute(locs)}},
                                     /*num_regions=*/1);
  for (unsigned i = 0; i < last->num_results(); ++i)
    last->result(i)->ReplaceAllUsesWith(dispatch->result(i));

  ir::Block* inner = dispatch->region(0)->AddBlock();
  std::map<ir::Value*, ir::Value*> arg_of;
  for (ir::Value* v : externals) arg_of[v] = inner->AddArgument(v->type());
  for (ir::Operation* op : g.ops) {
    inner->Append(body->Remove(op));
    for (unsigned i = 0; i < op->num_operands(); ++i) {
      auto it = arg_of.find(op->operand(i));
      if (it != arg_of.end()) op->SetOperand(i, it->second);
    }
  }
  ir::Builder::AtEnd(inner).Create("flow.return", last->results(), {});
}

class FuseDispatchRegionsPass : public ir::Pass {
 public:
  const char* flag() const override { return "fuse-dispatch-regions"; }
  const char* description() const override {
    return "Group tensor ops into flow.dispatch regions (anchor + elementwise epilogue)";
  }

  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    for (ir::Operation* func : module.functions()) {
      if (func->num_regions() == 0 || func->region(0)->empty()) continue;
      if (func->region(0)->num_blocks() != 1) {
        // Conservative: multi-block bodies come with control flow, which this
        // pass does not form regions across yet.
        ctx.Remark(func, "not fused: function body has more than one block");
        continue;
      }
      // Every block of the body, including the blocks of scf regions (each
      // block is fused on its own: a dispatch never spans a region boundary).
      std::vector<ir::Block*> blocks;
      CollectBlocks(func->region(0)->block(0), &blocks);
      int ordinal = 0;
      for (ir::Block* block : blocks) {
        std::vector<Group> groups;
        std::map<ir::Operation*, size_t> group_of;
        for (auto& owned : block->ops()) {
          ir::Operation* op = owned.get();
          const std::string& n = op->name();
          // tensor.extract reads one element on the host (a branch condition).
          if (ir::IsHostSideOp(n) || n == "tensor.extract" || op->dialect() != "tensor") continue;
          if (ir::IsElementwiseOp(n)) {
            int target = FindProducerGroup(op, groups, group_of);
            if (target >= 0) {
              groups[target].ops.push_back(op);
              group_of[op] = static_cast<size_t>(target);
              continue;
            }
          }
          group_of[op] = groups.size();
          groups.push_back(Group{{op}});
        }
        for (const Group& g : groups) Materialize(block, g, ordinal++);
      }
    }
    return OkStatus();
  }

 private:
  static void CollectBlocks(ir::Block* block, std::vector<ir::Block*>* out) {
    out->push_back(block);
    for (auto& op : block->ops()) {
      if (op->is("flow.dispatch")) continue;
      for (unsigned r = 0; r < op->num_regions(); ++r)
        for (auto& b : op->region(r)->blocks()) CollectBlocks(b.get(), out);
    }
  }

  static int FindProducerGroup(ir::Operation* op, const std::vector<Group>& groups,
                               const std::map<ir::Operation*, size_t>& group_of) {
    for (ir::Value* v : op->operands()) {
      ir::Operation* producer = v->defining_op();
      if (!producer) continue;
      auto it = group_of.find(producer);
      if (it == group_of.end()) continue;
      const Group& g = groups[it->second];
      if (g.ops.back() != producer) continue;          // not the group's output
      if (v->uses().size() != 1) continue;              // needed outside too
      if (op->result(0)->type().shape != v->type().shape) continue;  // grows the grid
      Group trial = g;
      trial.ops.push_back(op);
      if (ExternalOperands(trial).size() + op->num_results() > kMaxBindings) continue;
      return static_cast<int>(it->second);
    }
    return -1;
  }
};

}  // namespace

std::unique_ptr<ir::Pass> CreateFuseDispatchRegionsPass() {
  return std::make_unique<FuseDispatchRegionsPass>();
}

}  // namespace kiln::transforms
