// workgroup-staged: a dispatch that --fuse-workgroup-stages formed from a
// chain of small dispatches (compiler/transforms/fuse_workgroup_stages.cc;
// the squeeze-excite block: pool, squeeze, excite). One workgroup of
// kWorkgroupSize invocations runs it. Each value marked `workgroup_stage`
// is a stage, in program order: the invocations stride over its elements
// (element e on invocation e % 64), evaluate each the way the pointwise
// schedule would, and write it into a shared array of the value's compute
// type; a workgroup barrier then makes the whole value visible, and later
// stages read it from there instead of recomputing it. The results follow
// the same way into their storage buffers.
//
// The arithmetic per element is the pointwise schedule's: a convolution or
// matrix product sums its terms in k order with fma() and adds its bias
// last, as the conv-tiled and matmul-tiled schedules do, so the squeeze and
// excite values are those of the separate dispatches bit for bit; a
// reduction sums its elements in order on one invocation (the reduce-group
// schedule splits a long one over lanes, a different order), reading its
// input as vec4 texels where the emitter admits them (EmitStageReduceTexels).
#include "compiler/codegen/generator.h"

#include <set>

namespace kiln::codegen::detail {

bool Generator::HasStages() const {
  for (auto& owned : block_->ops())
    if (owned->bool_attr("workgroup_stage")) return true;
  return false;
}

void Generator::EmitStageReduceTexels(Value* v, const Idx& idx) {
  // The reductions this stage's value is computed from (through
  // same-shaped elementwise ops), up to values of earlier stages.
  std::vector<Operation*> work = {v->defining_op()};
  std::set<Operation*> seen;
  while (!work.empty()) {
    Operation* op = work.back();
    work.pop_back();
    if (!op || staged_.count(op->result()) || !seen.insert(op).second) continue;
    if (ir::Traits(op).is_elementwise()) {
      for (Value* o : op->operands())
        if (ShapeOf(o) == ShapeOf(v)) work.push_back(o->defining_op());
      continue;
    }
    if (!op->is(ir::OpCode::kTensorReduce) || ShapeOf(op->result()) != ShapeOf(v)) continue;
    Value* x = op->operand(0);
    const std::string kind = op->str_attr("kind", "sum");
    const int binding = TexelEligibleBinding(x);
    const Shape& xs = ShapeOf(x);
    const std::vector<int64_t> axes = ReduceAxes(op);
    int64_t count = 1;
    bool suffix = true;
    for (size_t i = 0; i < axes.size(); ++i) {
      count *= xs[static_cast<size_t>(axes[i])];
      suffix &= axes[axes.size() - 1 - i] == static_cast<int64_t>(xs.size() - 1 - i);
    }
    const CT ct = CTOf(op->result());
    if (binding < 0 || !suffix || count % 4 != 0 || ct != CT::kF32 || CTOf(x) != CT::kF32 ||
        ReducePasses(kind, ct, {}).size() != 1)
      continue;
    // Row `gi` of the input is `count` consecutive elements: count / 4
    // texels, combined in element order (the order of EvalReduce's loop).
    const ReducePass pass = ReducePasses(kind, ct, {})[0];
    const std::string tex = UseTexels(binding);
    const std::string acc = Fresh("acc");
    Line("float " + acc + " = " + pass.init + ";  // " + Comment(op) + " " + kind + " over " +
         std::to_string(count) + " elements, as vec4 texels");
    const std::string base = DeclI(MulC(idx.flat, count / 4), "tb");
    const std::string q = Fresh("q");
    Open("for (int " + q + " = 0; " + q + " < " + std::to_string(count / 4) + "; ++" + q + ")");
    const std::string t = Fresh("t");
    Line("vec4 " + t + " = texelFetch(" + tex + ", " + base + " + " + q + ");");
    for (const char* c : {".x", ".y", ".z", ".w"})
      Line(acc + " = " + Combine(pass.combine, acc, pass.map(t + c)) + ";");
    Close();
    cache_.back()[Key(op->result(), idx)] = Decl(ct, ReduceFinal(kind, ct, {acc}, count));
  }
}

void Generator::EmitStagedMain() {
  const std::string W = std::to_string(kWorkgroupSize) + "u";
  Line("uint lid = gl_LocalInvocationID.x;");
  int k = 0;
  for (auto& owned : block_->ops()) {
    Operation* op = owned.get();
    if (!op->bool_attr("workgroup_stage")) continue;
    Value* v = op->result();
    const Shape& s = ShapeOf(v);
    const std::string n = std::to_string(NumElements(s)) + "u";
    const std::string array = "st" + std::to_string(k++);
    globals_ += "shared " + std::string(CTName(CTOf(v))) + " " + array + "[" +
                std::to_string(NumElements(s)) + "];\n";
    Line("// stage " + array + ": " + Comment(op) + " -> " + v->type().ToString());
    Open("for (uint e = lid; e < " + n + "; e += " + W + ")");
    cache_.emplace_back();
    std::vector<std::string> d = Decompose("e", s);
    Line("int gi = int(e);");
    const Idx idx{d, "gi", s};
    EmitStageReduceTexels(v, idx);
    const std::string value = Eval(v, idx);
    Line(array + "[e] = " + value + ";");
    cache_.pop_back();
    Close();
    Line("memoryBarrierShared();");
    Line("barrier();");
    staged_[v] = array;
  }
  Open("for (uint gid = lid; gid < " + std::to_string(PointwiseElements()) + "u; gid += " + W + ")");
  cache_.emplace_back();
  EmitPointwiseStores();
  cache_.pop_back();
  Close();
}

}  // namespace kiln::codegen::detail
