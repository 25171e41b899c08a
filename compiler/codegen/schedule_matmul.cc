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
  int opened = 0;
  Open("");
  const std::string k = OpenLoop(K, "k", K <= 8, &opened);
  std::vector<std::string> av(TM), bv(TN);
  for (int64_t i = 0; i < TM; ++i) {
    Idx ai{batch(as), "", {}};
    ai.d.push_back(ms[i]);
    ai.d.push_back(k);
    av[i] = Convert(Eval(a, ai), CTOf(a), ct);
  }
  for (int64_t j = 0; j < TN; ++j) {
    Idx bi{batch(bs), "", {}};
    bi.d.push_back(k);
    bi.d.push_back(ns[j]);
    bv[j] = Convert(Eval(b, bi), CTOf(b), ct);
  }
  for (int64_t i = 0; i < TM; ++i)
    for (int64_t j = 0; j < TN; ++j) Mac(acc[i][j], av[i], bv[j], ct);
  CloseN(opened);
  Close();
  for (int64_t i = 0; i < TM; ++i)
    for (int64_t j = 0; j < TN; ++j) {
      Idx idx{std::vector<std::string>(t.begin(), t.end() - 2), "", {}};
      idx.d.push_back(AddC(m0, i));
      idx.d.push_back(AddC(n0, j));
      std::string guard;
      if (M % TM && i > 0) guard = idx.d[r - 2] + " < " + std::to_string(M);
      if (N % TN && j > 0)
        guard += (guard.empty() ? "" : " && ") + idx.d[r - 1] + " < " + std::to_string(N);
      StoreAnchorElement(op, idx, acc[i][j], guard);
    }
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
