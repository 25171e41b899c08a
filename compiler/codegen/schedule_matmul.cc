// matmul-tiled and matmul-splitk: tensor.matmul schedules (see codegen.cc).
#include "compiler/codegen/generator.h"

#include <algorithm>

namespace kiln::codegen::detail {

void Generator::EmitMatmulTiledMain(Operation* op, int64_t TM, int64_t TN, uint32_t wx,
                                    uint32_t wy) {
  Value* a = op->operand(0);
  Value* b = op->operand(1);
  const Shape &as = ShapeOf(a), &bs = ShapeOf(b), &os = ShapeOf(op->result());
  const size_t r = os.size();
  const int64_t M = os[r - 2], N = os[r - 1], K = as.back();
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
  std::vector<std::string> ms(TM), ns(TN);
  for (int64_t i = 0; i < TM; ++i)
    ms[i] = M % TM ? DeclI("min(" + AddC(m0, i) + ", " + I(M - 1) + ")", "m") : AddC(m0, i);
  for (int64_t j = 0; j < TN; ++j)
    ns[j] = N % TN ? DeclI("min(" + AddC(n0, j) + ", " + I(N - 1) + ")", "n") : AddC(n0, j);
  std::vector<std::vector<std::string>> acc(TM, std::vector<std::string>(TN));
  for (auto& row : acc)
    for (auto& e : row) {
      e = Fresh("acc");
      Line(std::string(CTName(ct)) + " " + e + " = " + Literal(ct, 0) + ";");
    }
  auto batch = [&](const Shape& s) {
    std::vector<std::string> d;
    size_t br = s.size() - 2, off = (r - 2) - br;
    for (size_t i = 0; i < br; ++i) d.push_back(s[i] == 1 ? "0" : t[off + i]);
    return d;
  };
  // vec4 operands (f32 block arguments): A along K when K % 4 == 0, B along
  // N when N % 4 == 0 and the tile is a multiple of 4 columns wide. Both keep
  // 16-byte alignment in every row; a B vec4 past the last column reads the
  // last aligned one (its stores are guarded).
  const std::string av4 = ct == CT::kF32 && K % 4 == 0 ? Vec4View(a) : "";
  const std::string bv4 = ct == CT::kF32 && N % 4 == 0 && TN % 4 == 0 ? Vec4View(b) : "";
  // With A as vec4 the K loop steps by 4 and an inner loop of 4 trips picks
  // component kk of each A vector; that loop is left to the driver to unroll
  // (no [[unroll]]): the SPIR-V keeps one copy of the TM x TN multiply-adds.
  const int64_t KS = av4.empty() ? 1 : 4;
  static const char* kComp[4] = {".x", ".y", ".z", ".w"};
  int opened = 0;
  Open("");
  std::string k = "0";
  if (K / KS > 1) {
    k = Fresh("k");
    const bool unroll = KS == 1 && K <= 8;
    if (unroll) uses_ctrl_attr_ = true;
    Open(std::string(unroll ? "[[unroll]] " : "") + "for (int " + k + " = 0; " + k + " < " +
         std::to_string(K) + "; " + k + " = " + k + " + " + std::to_string(KS) + ")");
    ++opened;
  }
  std::vector<std::string> aq(TM);
  for (int64_t i = 0; i < TM && !av4.empty(); ++i) {
    Idx ai{batch(as), "", {}};
    ai.d.push_back(ms[i]);
    ai.d.push_back(k);
    aq[i] = Fresh("aq");
    Line("vec4 " + aq[i] + " = " + av4 + "[" + DivC(Offset(ai, as), 4) + "];");
  }
  std::string kx = k, kk;
  if (KS > 1) {
    kk = Fresh("kk");
    Open("for (int " + kk + " = 0; " + kk + " < " + std::to_string(KS) + "; ++" + kk + ")");
    ++opened;
    kx = DeclI(AddE(k, kk), "k");
  }
  std::vector<std::string> av(TM), bv(TN);
  for (int64_t i = 0; i < TM; ++i) {
    if (!av4.empty()) {
      av[i] = aq[i] + "[" + kk + "]";
      continue;
    }
    Idx ai{batch(as), "", {}};
    ai.d.push_back(ms[i]);
    ai.d.push_back(kx);
    av[i] = Convert(Eval(a, ai), CTOf(a), ct);
  }
  for (int64_t j = 0; j < TN; ++j) {
    if (!bv4.empty()) {
      if (j % 4 == 0) {
        Idx bi{batch(bs), "", {}};
        bi.d.push_back(kx);
        bi.d.push_back(N % TN ? "min(" + AddC(n0, j) + ", " + I(N - 4) + ")" : AddC(n0, j));
        std::string q = Fresh("bq");
        Line("vec4 " + q + " = " + bv4 + "[" + DivC(Offset(bi, bs), 4) + "];");
        for (int64_t jj = 0; jj < 4; ++jj) bv[j + jj] = q + kComp[jj];
      }
      continue;
    }
    Idx bi{batch(bs), "", {}};
    bi.d.push_back(kx);
    bi.d.push_back(ns[j]);
    bv[j] = Convert(Eval(b, bi), CTOf(b), ct);
  }
  for (int64_t i = 0; i < TM; ++i)
    for (int64_t j = 0; j < TN; ++j) Mac(acc[i][j], av[i], bv[j], ct);
  CloseN(opened);
  Close();
  StoreAnchorBlock(
      op, acc,
      [&](const std::string& i, const std::string& j) {
        Idx idx{std::vector<std::string>(t.begin(), t.end() - 2), "", {}};
        idx.d.push_back(AddE(m0, i));
        idx.d.push_back(AddE(n0, j));
        return idx;
      },
      [&](const std::string& i, const std::string& j) {
        std::string guard;
        if (M % TM) guard = AddE(m0, i) + " < " + std::to_string(M);
        if (N % TN) guard += (guard.empty() ? "" : " && ") + AddE(n0, j) + " < " + std::to_string(N);
        return guard;
      },
      BlockFn());
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
