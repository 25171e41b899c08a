// reduce-group and softmax-rows: workgroup reductions through shared memory
// (see codegen.cc).
#include "compiler/codegen/generator.h"

namespace kiln::codegen::detail {

void Generator::EmitReduceGroupMain(Operation* op, uint32_t wx, uint32_t wy) {
  Value* x = op->operand(0);
  const Shape& xs = ShapeOf(x);
  const Shape& os = ShapeOf(op->result());
  std::vector<int64_t> axes = ReduceAxes(op);
  std::string kind = op->str_attr("kind", "sum");
  CT ct = CTOf(op->result());
  int64_t count = 1;
  Shape red_shape;
  for (int64_t a : axes) {
    count *= xs[a];
    red_shape.push_back(xs[a]);
  }
  // Reduced axes form a suffix: the input offset is row * count + r.
  bool suffix = true;
  for (size_t i = 0; i < axes.size(); ++i)
    suffix &= axes[axes.size() - 1 - i] == static_cast<int64_t>(xs.size() - 1 - i);
  uses_shared_ = true;
  shared_ct_ = ct;
  Line("uint row = " + WorkgroupIndex(wx, wy) + ";");
  Line("if (row >= " + std::to_string(NumElements(os)) + "u) return;  // uniform per workgroup");
  Line("uint lid = gl_LocalInvocationID.x;");
  Line("// " + Comment(op) + " " + kind + " axes=" + ShapeStr(axes) + " over " +
       std::to_string(count) + " elements: one workgroup per output element");
  std::vector<std::string> od = Decompose("row", os);
  Line("int gi = int(row);");
  Idx oidx{od, "gi", os};
  std::vector<std::string> accs;
  size_t npasses = ReducePasses(kind, ct, {}).size();
  for (size_t p = 0; p < npasses; ++p) {
    ReducePass pass = ReducePasses(kind, ct, accs)[p];
    std::string acc = Fresh("acc");
    Line(std::string(CTName(ct)) + " " + acc + " = " + pass.init + ";");
    std::string rv = Fresh("rr");
    Open("for (uint " + rv + " = lid; " + rv + " < " + std::to_string(count) + "u; " + rv +
         " += " + std::to_string(kWorkgroupSize) + "u)");
    std::vector<std::string> red = Decompose(rv, red_shape);
    Idx in = ReduceInputIdx(op, oidx, red);
    if (suffix) {
      in.flat = DeclI(AddE(MulC("gi", count), "int(" + rv + ")"), "f");
      in.flat_shape = xs;
    }
    std::string v = Convert(Eval(x, in), CTOf(x), ct);
    Line(acc + " = " + Combine(pass.combine, acc, pass.map(v)) + ";");
    Close();
    EmitSharedReduce(acc, pass.combine, p + 1 < npasses);
    accs.push_back(acc);
  }
  Open("if (lid == 0u)");
  std::string r = Decl(ct, ReduceFinal(kind, ct, accs, count), Comment(op));
  StoreAnchorElement(op, oidx, r, "");
  Close();
}

void Generator::EmitSoftmaxRowsMain(Operation* op, int lanes, uint32_t wx, uint32_t wy) {
  Value* x = op->operand(0);
  const Shape& xs = ShapeOf(x);
  int64_t axis = op->int_attr("axis", static_cast<int64_t>(xs.size()) - 1);
  if (axis < 0) axis += static_cast<int64_t>(xs.size());
  bool log = op->bool_attr("log", false);
  int64_t S = xs[axis];
  Shape row_shape = xs;
  row_shape.erase(row_shape.begin() + axis);
  int64_t rows = NumElements(row_shape);
  if (lanes > 1) {
    uses_shared_ = true;
    shared_ct_ = CT::kF32;
    Line("uint row = " + WorkgroupIndex(wx, wy) + ";");
    Line("if (row >= " + std::to_string(rows) + "u) return;  // uniform per workgroup");
    Line("uint lid = gl_LocalInvocationID.x;");
  } else {
    Line("uint row = " + WorkgroupIndex(wx, wy) + " * " + std::to_string(kWorkgroupSize) +
         "u + gl_LocalInvocationID.x;");
    Line("if (row >= " + std::to_string(rows) + "u) return;");
  }
  Line("// " + Comment(op) + (log ? " (log)" : "") + " axis=" + std::to_string(axis) +
       " extent=" + std::to_string(S) + ": one " + (lanes > 1 ? "workgroup" : "invocation") +
       " per row");
  std::vector<std::string> rd = Decompose("row", row_shape);
  auto idx_at = [&](const std::string& j) {
    Idx i;
    i.d = rd;
    i.d.insert(i.d.begin() + axis, j);
    return i;
  };
  std::string start = lanes > 1 ? "lid" : "0u";
  std::string step = std::to_string(lanes) + "u";
  std::string m = Fresh("mx"), s = Fresh("sum");
  Line("float " + m + " = " + Lowest(CT::kF32) + ";");
  Line("float " + s + " = 0.0;");
  for (int pass = 0; pass < 2; ++pass) {
    std::string jv = Fresh("j");
    Open("for (uint " + jv + "u = " + start + "; " + jv + "u < " + std::to_string(S) + "u; " + jv +
         "u += " + step + ")");
    Line("int " + jv + " = int(" + jv + "u);");
    std::string v = Eval(x, idx_at(jv));
    if (pass == 0) Line(m + " = max(" + m + ", " + v + ");");
    else Line(s + " += exp(" + v + " - " + m + ");");
    Close();
    if (lanes > 1) EmitSharedReduce(pass == 0 ? m : s, pass == 0 ? 'M' : '+', true);
  }
  if (log) Line(s + " = log(" + s + ");");
  std::string jv = Fresh("j");
  Open("for (uint " + jv + "u = " + start + "; " + jv + "u < " + std::to_string(S) + "u; " + jv +
       "u += " + step + ")");
  Line("int " + jv + " = int(" + jv + "u);");
  Idx idx = idx_at(jv);
  std::string v = Eval(x, idx);
  std::string y = Decl(CT::kF32, log ? "(" + v + " - " + m + " - " + s + ")"
                                     : "(exp(" + v + " - " + m + ") / " + s + ")", Comment(op));
  StoreAnchorElement(op, idx, y, "");
  Close();
}

void Generator::EmitSharedReduce(const std::string& acc, char combine, bool reuse_after) {
  uses_shared_ = true;
  uses_ctrl_attr_ = true;
  Line("sh[lid] = " + acc + ";");
  Line("memoryBarrierShared();");
  Line("barrier();");
  Open("[[unroll]] for (uint s = " + std::to_string(kWorkgroupSize / 2) + "u; s > 0u; s >>= 1u)");
  Line("if (lid < s) sh[lid] = " + Combine(combine, "sh[lid]", "sh[lid + s]") + ";");
  Line("memoryBarrierShared();");
  Line("barrier();");
  Close();
  Line(acc + " = sh[0];");
  if (reuse_after) Line("barrier();  // everyone has read sh[0] before it is reused");
}

}  // namespace kiln::codegen::detail
