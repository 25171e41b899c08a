// Pass: --fuse-dispatch-regions
//
// Groups the tensor-level ops of every function into flow.dispatch ops, each
// of which codegen turns into one compute shader. A group is either
//   - one "anchor" op (conv2d, matmul, reduce, pool2d, softmax, transpose,
//     slice, concat, pad, gather, expand, conv_transpose, resize; any non-elementwise
//     tensor op starts a group of its own) followed by elementwise consumers
//     (an epilogue: bias, activation, folded batch-norm, residual add), and
//     for conv2d and matmul optionally preceded by a short elementwise
//     prologue on a data or weight operand, or
//   - a chain of elementwise ops.
//
// Epilogue. An elementwise op joins its producer's group when
//   - one of its operands is the group's current output (the last op added),
//   - its result shape equals the group's output shape (the epilogue runs once
//     per output element; a broadcast that grows the shape would change the
//     grid and recompute the producer at many indices), and
//   - the dispatch stays within kMaxBindings storage buffers.
// An operand with one use is preferred; the producer may also have several
// uses when all of them are same-shaped elementwise ops that could join too
// (hard-swish: x * relu6(x + 3) / 6 uses x twice), so a group is a DAG. A
// value that an anchor also reads (a residual block's skip input) does not
// qualify: its residual add joins the branch's conv instead. When the groups are formed, each is cut back to
// its longest prefix in which only the last op's result is used outside the
// group (no intermediate is needed outside the dispatch); the ops cut off are
// grouped again by the same rules. Operands that broadcast into the output
// (a per-channel scale, a bias) are evaluated at the broadcast index in the
// epilogue and cost one load per element.
//
// Prologue. A group of elementwise ops only (at most kMaxPrologueOps of them,
// each one cheap: no transcendental) whose output is used once, as the data
// input of a conv2d (operand 0) or either operand of a matmul, is merged in
// front of that anchor: the anchor evaluates it at each input element it
// loads. The case this is for is the squeeze-excite multiply
// (x * s[c], s = hard_sigmoid(fc(avgpool(x)))): x also feeds the pooling, so
// the multiply cannot join x's epilogue, and s is [C,1,1], so joining s's
// producer would recompute the excite branch at every (h, w). In the next 1x1
// conv's input load it costs a load of s[c] and a multiply per input element
// loaded, and saves writing and re-reading the whole [C,H,W] product and one
// dispatch. A prologue that holds an anchor is never merged (the anchor would
// be recomputed for every element the consumer loads). The conv2d weight
// (operand 1) takes a prologue too: a QDQ model's dequantized 8-bit weight,
// f32(w_i8) * scale[o] (the importer keeps it unfolded, onnx_quantize.cc), so
// the weight stays 8-bit in the constant pool and is dequantized at each load.
//
// This is the producer-consumer elementwise fusion of XLA and IREE's
// dispatch-region formation, restricted to what needs no tiling analysis.
//
// tensor.constant and tensor.reshape stay outside dispatches: constants live
// in the module's constant pool and reshapes are free views, so the host knows
// every byte range a dispatch touches (seeds/03, slice subranges). The one
// exception is a one-element or splat constant: it is cloned into every
// dispatch that reads it (codegen makes it a literal) and costs no binding;
// the original is erased once nothing outside reads it.
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

#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

// Storage buffers per dispatch are a scarce resource on mobile GPUs
// (maxPerStageDescriptorStorageBuffers is 8 on many Mali/Adreno drivers):
// keep inputs + output within this.
constexpr size_t kMaxBindings = 8;
// Longest elementwise prologue merged in front of a conv2d / matmul.
constexpr size_t kMaxPrologueOps = 2;
// Most ops in one dispatch region. Real epilogues are short (hard-swish is
// 4 ops); the cap keeps fusion linear in the graph (each join tries a group
// of bounded size) and bounds the depth of codegen's expression evaluation
// (a 4,000-op chain in one region overflowed its recursion).
constexpr size_t kMaxGroupOps = 64;

struct Group {
  std::vector<ir::Operation*> ops;  // in program order; back() is the output
};

// A one-element or splat tensor.constant: cloned into each dispatch that
// reads it, where codegen makes it a literal, instead of a binding (the
// scalars of hard-swish, of PP-LCNet's learnable affine blocks, eps).
bool IsInlinableConstant(ir::Value* v) {
  ir::Operation* def = v->defining_op();
  if (!def || !def->is(ir::OpCode::kTensorConstant) || !v->type().is_tensor()) return false;
  const ir::DenseElements* d = def->dense_attr("value");
  if (!d || !d->data) return false;
  const int64_t n = d->type.num_elements();
  if (n < 1) return false;
  for (int64_t i = 1; i < n; ++i)
    if (d->GetDouble(i) != d->GetDouble(0)) return false;
  return true;
}

std::vector<ir::Value*> ExternalOperands(const Group& g) {
  std::set<ir::Operation*> members(g.ops.begin(), g.ops.end());
  std::vector<ir::Value*> out;
  for (ir::Operation* op : g.ops)
    for (ir::Value* v : op->operands()) {
      if (v->defining_op() && members.count(v->defining_op())) continue;
      if (IsInlinableConstant(v)) continue;
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

void Materialize(ir::Block* body, const Group& g, int ordinal,
                 std::set<ir::Operation*>* cloned_from) {
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
  for (ir::Operation* op : g.ops)
    for (ir::Value* v : op->operands())
      if (IsInlinableConstant(v) && !arg_of.count(v)) {
        std::map<ir::Value*, ir::Value*> none;
        arg_of[v] = inner->Append(v->defining_op()->Clone(none))->result();
        if (cloned_from) cloned_from->insert(v->defining_op());
      }
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
        std::vector<ir::Operation*> ops;
        for (auto& owned : block->ops()) {
          ir::Operation* op = owned.get();
          // tensor.extract reads one element on the host (a branch condition).
          const ir::OpInfo& traits = ir::Traits(op);
          if (traits.level != ir::OpLevel::kTensor || traits.has(ir::kHostSide) ||
              op->is(ir::OpCode::kTensorExtract))
            continue;
          ops.push_back(op);
        }
        std::vector<Group> groups = FormGroups(ops);
        MergePrologues(&groups);
        std::set<ir::Operation*> cloned_from;
        for (const Group& g : groups)
          if (!g.ops.empty()) Materialize(block, g, ordinal++, &cloned_from);
        // Constants now read only through their clones inside dispatches.
        for (ir::Operation* c : cloned_from)
          if (c->result()->use_empty()) c->Erase();
      }
    }
    return OkStatus();
  }

 private:
  static void CollectBlocks(ir::Block* block, std::vector<ir::Block*>* out) {
    out->push_back(block);
    for (auto& op : block->ops()) {
      if (op->is(ir::OpCode::kFlowDispatch)) continue;
      for (unsigned r = 0; r < op->num_regions(); ++r)
        for (auto& b : op->region(r)->blocks()) CollectBlocks(b.get(), out);
    }
  }

  // Epilogue fusion over `ops` (program order); every group is then cut back
  // to a prefix whose intermediates are used inside it only, and the ops cut
  // off are grouped again (they are fewer each round, so this ends).
  static std::vector<Group> FormGroups(const std::vector<ir::Operation*>& ops) {
    std::vector<Group> groups;
    std::map<ir::Operation*, size_t> group_of;
    for (ir::Operation* op : ops) {
      if (ir::Traits(op).is_elementwise()) {
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
    std::vector<Group> out;
    for (Group& g : groups) {
      size_t keep = ValidPrefix(g);
      if (keep == g.ops.size()) {
        out.push_back(std::move(g));
        continue;
      }
      std::vector<ir::Operation*> rest(g.ops.begin() + static_cast<long>(keep), g.ops.end());
      g.ops.resize(keep);
      out.push_back(std::move(g));
      for (Group& r : FormGroups(rest)) out.push_back(std::move(r));
    }
    return out;
  }

  // The longest prefix of `g` (at least its first op) in which every op but
  // the last has all its uses inside the prefix.
  static size_t ValidPrefix(const Group& g) {
    for (size_t n = g.ops.size(); n > 1; --n) {
      std::set<ir::Operation*> members(g.ops.begin(), g.ops.begin() + static_cast<long>(n));
      bool ok = true;
      for (size_t i = 0; i + 1 < n && ok; ++i)
        for (ir::Value* r : g.ops[i]->results())
          for (const ir::Use& u : r->uses()) ok = ok && members.count(u.user) != 0;
      if (ok) return n;
    }
    return 1;
  }

  static bool IsCheapElementwise(const ir::Operation* op) {
    using ir::OpCode;
    switch (op->code()) {
      case OpCode::kTensorAdd: case OpCode::kTensorSub: case OpCode::kTensorMul:
      case OpCode::kTensorDiv: case OpCode::kTensorNeg: case OpCode::kTensorRelu:
      case OpCode::kTensorClamp: case OpCode::kTensorMax: case OpCode::kTensorMin:
      case OpCode::kTensorCast:
        return true;
      default:
        return false;
    }
  }

  // Merges an elementwise-only group into the front of the conv2d / matmul
  // group that is its only consumer (see the header comment).
  static void MergePrologues(std::vector<Group>* groups) {
    std::map<ir::Operation*, size_t> group_of;
    for (size_t i = 0; i < groups->size(); ++i)
      for (ir::Operation* op : (*groups)[i].ops) group_of[op] = i;
    for (Group& g : *groups) {
      if (g.ops.empty()) continue;
      ir::Operation* anchor = g.ops.front();
      std::vector<unsigned> data_operands;
      if (anchor->is(ir::OpCode::kTensorConv2d)) data_operands = {0, 1};
      else if (anchor->is(ir::OpCode::kTensorMatmul)) data_operands = {0, 1};
      for (unsigned i : data_operands) {
        if (i >= anchor->num_operands()) continue;
        ir::Value* v = anchor->operand(i);
        ir::Operation* producer = v->defining_op();
        if (!producer) continue;
        auto it = group_of.find(producer);
        if (it == group_of.end()) continue;
        Group& p = (*groups)[it->second];
        if (&p == &g || p.ops.empty() || p.ops.back() != producer) continue;
        // Used elsewhere too: it must be materialized anyway.
        if (v->uses().size() != 1) continue;
        // Recomputed per element the anchor loads: only a few cheap ops.
        if (p.ops.size() > kMaxPrologueOps) continue;
        bool cheap = true;
        for (ir::Operation* op : p.ops) cheap = cheap && IsCheapElementwise(op);
        if (!cheap) continue;
        Group trial;
        trial.ops = p.ops;
        trial.ops.insert(trial.ops.end(), g.ops.begin(), g.ops.end());
        if (ExternalOperands(trial).size() + g.ops.back()->num_results() > kMaxBindings) continue;
        for (ir::Operation* op : p.ops) group_of[op] = static_cast<size_t>(&g - groups->data());
        g.ops = std::move(trial.ops);
        p.ops.clear();
      }
    }
  }

  // A multi-use value can only end up inside a group when every user could
  // join it: same-block elementwise ops of the value's shape (a DAG epilogue
  // such as hard-swish). A value also read by an anchor (the skip input of a
  // residual block) is materialized anyway.
  static bool UsersCanAllJoin(ir::Value* v) {
    for (const ir::Use& u : v->uses()) {
      ir::Operation* user = u.user;
      if (!ir::Traits(user).is_elementwise() || user->parent_block() != v->defining_op()->parent_block() ||
          user->num_results() != 1 || user->result(0)->type().shape != v->type().shape)
        return false;
    }
    return true;
  }

  // The group `op` joins as an epilogue, or -1. Operands whose value has one
  // use are preferred; a multi-use operand only qualifies by UsersCanAllJoin.
  static int FindProducerGroup(ir::Operation* op, const std::vector<Group>& groups,
                               const std::map<ir::Operation*, size_t>& group_of) {
    for (int pass = 0; pass < 2; ++pass)
      for (ir::Value* v : op->operands()) {
        ir::Operation* producer = v->defining_op();
        if (!producer) continue;
        auto it = group_of.find(producer);
        if (it == group_of.end()) continue;
        const Group& g = groups[it->second];
        if (g.ops.back() != producer) continue;          // not the group's output
        if (g.ops.size() >= kMaxGroupOps) continue;
        if (op->result(0)->type().shape != v->type().shape) continue;  // grows the grid
        if (pass == 0 ? v->uses().size() != 1 : !UsersCanAllJoin(v)) continue;
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
