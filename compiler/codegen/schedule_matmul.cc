// matmul-tiled and matmul-splitk: tensor.matmul schedules (see codegen.cc).
#include "compiler/codegen/generator.h"

#include <algorithm>
#include <functional>

namespace kiln::codegen::detail {

void Generator::EmitMatmulTiledMain(Operation* op, const MatmulTile& tile, uint32_t wx, uint32_t wy) {
  Value* a = op->operand(0);
  Value* b = op->operand(1);
  const Shape &as = ShapeOf(a), &bs = ShapeOf(b), &os = ShapeOf(op->result());
  const size_t r = os.size();
  const int64_t M = os[r - 2], N = os[r - 1], K = as.back();
  const int64_t TM = tile.rows, TN = tile.columns;
  CT ct = CTOf(op->result());
  Shape ts = os;
  ts[r - 2] = (M + TM - 1) / TM;
  ts[r - 1] = (N + TN - 1) / TN;
  Line("uint gid = " + WorkgroupIndex(wx, wy) + " * " + std::to_string(kWorkgroupSize) +
       "u + gl_LocalInvocationID.x;");
  Line("if (gid >= " + std::to_string(NumElements(ts)) + "u) return;");
  Line("// " + Comment(op) + " K=" + std::to_string(K) + ": each invocation computes a " +
       std::to_string(TM) + "x" + std::to_string(TN) + " tile");
  std::vector<std::string> t = Decompose("gid", ts);
  const std::string m0 = DeclI(MulC(t[r - 2], TM), "m"), n0 = DeclI(MulC(t[r - 1], TN), "n");
  // The TM x TN accumulators are one array and every loop over the block is
  // an [[unroll]] loop (as conv-tiled): the module holds the block's code,
  // the epilogue's included, once.
  const std::string acc = DeclareAccumulators(TM * TN, ct);
  auto at = [&](const std::string& i, const std::string& j) { return acc + "[" + AddE(MulC(i, TN), j) + "]"; };
  // Row m0 + i and column n0 + j, clamped into the matrix for a ragged last
  // block (those outputs are computed and not stored).
  auto row = [&](const std::string& i) {
    return M % TM ? DeclI("min(" + AddE(m0, i) + ", " + I(M - 1) + ")", "m") : AddE(m0, i);
  };
  auto col = [&](const std::string& j) {
    return N % TN ? DeclI("min(" + AddE(n0, j) + ", " + I(N - 1) + ")", "n") : AddE(n0, j);
  };
  // An operand's batch indices (broadcast dims read index 0), and their
  // linear index within the operand's batch dims.
  auto batch = [&](const Shape& s) {
    std::vector<std::string> d;
    size_t br = s.size() - 2, off = (r - 2) - br;
    for (size_t i = 0; i < br; ++i) d.push_back(s[i] == 1 ? "0" : t[off + i]);
    return d;
  };
  auto batch_linear = [&](const Shape& s) {
    std::vector<std::string> d = batch(s);
    std::string lin = "0";
    for (size_t i = 0; i < d.size(); ++i) lin = AddE(MulC(lin, s[i]), d[i]);
    return lin;
  };
  const std::string at_tex = tile.a_texels ? UseTexels(arg_binding_.at(a)) : "";
  const std::string bt_tex = tile.b_texels ? UseTexels(arg_binding_.at(b)) : "";
  int opened = 0;
  Open("");
  // B's TN values at depth k: vec4 texels along N (TN / 4 of them, clamped
  // to the last texel of the row) or TN loads; returns the accessor of
  // column j.
  auto load_b = [&](const std::string& k) -> std::function<std::string(const std::string&)> {
    if (tile.b_texels) {
      const std::string bw = Fresh("bw");
      Line("vec4 " + bw + "[" + I(TN / 4) + "];");
      const std::string base = DeclI(MulC(AddE(MulC(batch_linear(bs), K), k), N / 4), "bt");
      int o = 0;
      const std::string jj = OpenUnrolled(TN / 4, "jj", &o);
      const std::string tex = AddE(DivC(n0, 4), jj);
      Line(bw + "[" + jj + "] = texelFetch(" + bt_tex + ", " + AddE(base, N % TN ? "min(" + tex + ", " + I(N / 4 - 1) + ")" : tex) + ");");
      CloseN(o);
      return [bw](const std::string& j) { return bw + "[(" + j + ") >> 2][(" + j + ") & 3]"; };
    }
    const std::string bv = Fresh("bv");
    Line(std::string(CTName(ct)) + " " + bv + "[" + I(TN) + "];");
    int o = 0;
    const std::string j = OpenUnrolled(TN, "j", &o);
    Idx bi{batch(bs), "", {}};
    bi.d.push_back(k);
    bi.d.push_back(col(j));
    Line(bv + "[" + j + "] = " + Convert(Eval(b, bi), CTOf(b), ct) + ";");
    CloseN(o);
    return [bv](const std::string& j) { return bv + "[" + j + "]"; };
  };
  auto macs = [&](const std::function<std::string(const std::string&)>& av,
                  const std::function<std::string(const std::string&)>& bv) {
    int o = 0;
    const std::string i = OpenUnrolled(TM, "i", &o);
    const std::string j = OpenUnrolled(TN, "j", &o);
    Mac(at(i, j), av(i), bv(j), ct);
    CloseN(o);
  };
  if (tile.a_texels) {
    // Per 4 k: A's TM rows as one texel each, then B per k.
    const std::string k4 = OpenLoop(K / 4, "k", false, &opened);
    const std::string av = Fresh("av");
    Line("vec4 " + av + "[" + I(TM) + "];");
    const std::string abase = DeclI(MulC(batch_linear(as), M), "ab");
    int o = 0;
    const std::string i = OpenUnrolled(TM, "i", &o);
    Line(av + "[" + i + "] = texelFetch(" + at_tex + ", " + AddE(MulC(AddE(abase, row(i)), K / 4), k4) + ");");
    CloseN(o);
    const std::string q = OpenUnrolled(4, "q", &opened);
    const std::string k = DeclI(AddE(MulC(k4, 4), q), "k");
    auto bv = load_b(k);
    macs([&](const std::string& ii) { return av + "[" + ii + "][" + q + "]"; }, bv);
  } else {
    const std::string k = OpenLoop(K, "k", K <= 8, &opened);
    const std::string av = Fresh("av");
    Line(std::string(CTName(ct)) + " " + av + "[" + I(TM) + "];");
    int o = 0;
    const std::string i = OpenUnrolled(TM, "i", &o);
    Idx ai{batch(as), "", {}};
    ai.d.push_back(row(i));
    ai.d.push_back(k);
    Line(av + "[" + i + "] = " + Convert(Eval(a, ai), CTOf(a), ct) + ";");
    CloseN(o);
    auto bv = load_b(k);
    macs([&](const std::string& ii) { return av + "[" + ii + "]"; }, bv);
  }
  CloseN(opened);
  Close();
  int o = 0;
  const std::string i = OpenUnrolled(TM, "i", &o);
  const std::string j = OpenUnrolled(TN, "j", &o);
  Idx idx{std::vector<std::string>(t.begin(), t.end() - 2), "", {}};
  idx.d.push_back(DeclI(AddE(m0, i), "m"));
  idx.d.push_back(DeclI(AddE(n0, j), "n"));
  std::string guard;
  if (M % TM) guard = idx.d[r - 2] + " < " + std::to_string(M);
  if (N % TN) guard += (guard.empty() ? "" : " && ") + idx.d[r - 1] + " < " + std::to_string(N);
  StoreAnchorElement(op, idx, at(i, j), guard);
  CloseN(o);
}

void Generator::EmitMatmulSplitKMain(Operation* op, uint32_t wx, uint32_t wy) {
  Value* a = op->operand(0);
  Value* b = op->operand(1);
  const Shape &as = ShapeOf(a), &bs = ShapeOf(b), &os = ShapeOf(op->result());
  const size_t r = os.size();
  const int64_t K = as.back();
  CT ct = CTOf(op->result());
  shared_ct_ = ct;
  Line("uint row = " + WorkgroupIndex(wx, wy) + ";");
  Line("if (row >= " + std::to_string(NumElements(os)) + "u) return;  // uniform per workgroup");
  Line("uint lid = gl_LocalInvocationID.x;");
  Line("// " + Comment(op) + " K=" + std::to_string(K) +
       ": one workgroup per output element, lanes split K");
  std::vector<std::string> od = Decompose("row", os);
  Line("int gi = int(row);");
  Idx oidx{od, "gi", os};
  auto batch = [&](const Shape& s) {
    std::vector<std::string> d;
    size_t br = s.size() - 2, off = (r - 2) - br;
    for (size_t i = 0; i < br; ++i) d.push_back(s[i] == 1 ? "0" : od[off + i]);
    return d;
  };
  std::string acc = Fresh("acc");
  Line(std::string(CTName(ct)) + " " + acc + " = " + Literal(ct, 0) + ";");
  std::string kk = Fresh("kk");
  Open("for (uint " + kk + " = lid; " + kk + " < " + std::to_string(K) + "u; " + kk + " += " +
       std::to_string(kWorkgroupSize) + "u)");
  std::string k = DeclI("int(" + kk + ")", "k");
  Idx ai{batch(as), "", {}}, bi{batch(bs), "", {}};
  ai.d.push_back(od[r - 2]);
  ai.d.push_back(k);
  bi.d.push_back(k);
  bi.d.push_back(od[r - 1]);
  std::string av = Convert(Eval(a, ai), CTOf(a), ct);
  std::string bv = Convert(Eval(b, bi), CTOf(b), ct);
  Mac(acc, av, bv, ct);
  Close();
  EmitSharedReduce(acc, '+', false);
  Open("if (lid == 0u)");
  StoreAnchorElement(op, oidx, acc, "");
  Close();
}

}  // namespace kiln::codegen::detail
