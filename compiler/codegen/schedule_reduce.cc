// reduce-group and softmax-rows: parallel reductions through shared memory
// (see codegen.cc). Each output (a reduced row) gets a segment of `lanes`
// consecutive invocations of the 64-wide workgroup (64 / lanes outputs per
// workgroup); lanes stride over the row (consecutive lanes read consecutive
// elements) and combine with a shared-memory tree over the segment.
#include "compiler/codegen/generator.h"

namespace kiln::codegen::detail {

int Generator::ReduceLanes(int64_t count, int64_t outputs) {
  // Short rows (< 64 elements: a 7x7 or 1x1 GlobalAveragePool, a softmax over
  // a few classes) take one invocation per output: no barrier at all. Longer
  // rows: enough elements per lane to amortize the combine (>= 32 before a
  // doubling), then more lanes while the dispatch would otherwise have few
  // invocations (< 1024) and each lane keeps >= 8 elements. Powers of two up
  // to the workgroup size.
  if (count < 64) return 1;
  int lanes = 1;
  while (lanes < kWorkgroupSize && count >= 32 * lanes) lanes *= 2;
  while (lanes < kWorkgroupSize && count >= 16 * lanes && outputs * lanes < 1024) lanes *= 2;
  return lanes;
}

void Generator::EmitReduceGroupMain(Operation* op, int lanes, uint32_t wx, uint32_t wy) {
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
  const std::string L = std::to_string(lanes) + "u";
  const std::string rows = std::to_string(NumElements(os)) + "u";
  Line("uint lid = gl_LocalInvocationID.x;");
  Line("uint seg = lid / " + L + ", lane = lid % " + L + ";");
  Line("uint row = " + WorkgroupIndex(wx, wy) + " * " + std::to_string(kWorkgroupSize / lanes) +
       "u + seg;");
  // Rows past the end still take part in the barriers (uniform control flow).
  Line("bool live = row < " + rows + ";");
  Line("if (!live) row = 0u;");
  Line("// " + Comment(op) + " " + kind + " axes=" + ShapeStr(axes) + " over " +
       std::to_string(count) + " elements: " + std::to_string(lanes) + " lanes per output");
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
    Open("for (uint " + rv + " = lane; " + rv + " < " + std::to_string(count) + "u; " + rv +
         " += " + L + ")");
    std::vector<std::string> red = Decompose(rv, red_shape);
    Idx in = ReduceInputIdx(op, oidx, red);
    if (suffix) {
      in.flat = DeclI(AddE(MulC("gi", count), "int(" + rv + ")"), "f");
      in.flat_shape = xs;
    }
    std::string v = Convert(Eval(x, in), CTOf(x), ct);
    Line(acc + " = " + Combine(pass.combine, acc, pass.map(v)) + ";");
    Close();
    EmitSegmentedReduce(acc, pass.combine, lanes, p + 1 < npasses);
    accs.push_back(acc);
  }
  Open("if (live && lane == 0u)");
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
  const std::string L = std::to_string(lanes) + "u";
  if (lanes > 1) {
    uses_shared_ = true;
    shared_ct_ = CT::kF32;
    Line("uint lid = gl_LocalInvocationID.x;");
    Line("uint seg = lid / " + L + ", lane = lid % " + L + ";");
    Line("uint row = " + WorkgroupIndex(wx, wy) + " * " + std::to_string(kWorkgroupSize / lanes) +
         "u + seg;");
    // Rows past the end still take part in the barriers (uniform control flow).
    Line("bool live = row < " + std::to_string(rows) + "u;");
    Line("if (!live) row = 0u;");
  } else {
    Line("uint row = " + WorkgroupIndex(wx, wy) + " * " + std::to_string(kWorkgroupSize) +
         "u + gl_LocalInvocationID.x;");
    Line("if (row >= " + std::to_string(rows) + "u) return;");
  }
  Line("// " + Comment(op) + (log ? " (log)" : "") + " axis=" + std::to_string(axis) +
       " extent=" + std::to_string(S) + ": " +
       (lanes > 1 ? std::to_string(lanes) + " lanes" : std::string("one invocation")) +
       " per row");
  std::vector<std::string> rd = Decompose("row", row_shape);
  auto idx_at = [&](const std::string& j) {
    Idx i;
    i.d = rd;
    i.d.insert(i.d.begin() + axis, j);
    return i;
  };
  std::string start = lanes > 1 ? "lane" : "0u";
  std::string step = L;
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
    if (lanes > 1) EmitSegmentedReduce(pass == 0 ? m : s, pass == 0 ? 'M' : '+', lanes, true);
  }
  if (log) Line(s + " = log(" + s + ");");
  if (lanes > 1) Open("if (live)");
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
  if (lanes > 1) Close();
}

void Generator::EmitSegmentedReduce(const std::string& acc, char combine, int lanes,
                                    bool reuse_after) {
  if (lanes >= kWorkgroupSize) {
    EmitSharedReduce(acc, combine, reuse_after);
    return;
  }
  // Segments of `lanes` consecutive invocations, one per output: a tree over
  // each segment in shared memory (log2(lanes) steps instead of log2(64)).
  uses_shared_ = true;
  uses_ctrl_attr_ = true;
  Line("sh[lid] = " + acc + ";");
  Line("memoryBarrierShared();");
  Line("barrier();");
  Open("[[unroll]] for (uint s = " + std::to_string(lanes / 2) + "u; s > 0u; s >>= 1u)");
  Line("if (lane < s) sh[lid] = " + Combine(combine, "sh[lid]", "sh[lid + s]") + ";");
  Line("memoryBarrierShared();");
  Line("barrier();");
  Close();
  Line(acc + " = sh[seg * " + std::to_string(lanes) + "u];");
  if (reuse_after) Line("barrier();  // everyone has read sh before it is reused");
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
