// tensor.conv_transpose codegen (conv_transpose_schedule.h).
#include "compiler/codegen/conv_transpose_schedule.h"

#include <cstdint>
#include <numeric>

namespace kiln::codegen {
namespace {

std::string Int(int64_t v) { return v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v); }

// `a + c` without a "+ 0".
std::string Plus(const std::string& a, int64_t c) { return c == 0 ? a : "(" + a + " + " + Int(c) + ")"; }

// `a * c` without a "* 1".
std::string Times(const std::string& a, int64_t c) { return c == 1 ? a : "(" + a + " * " + Int(c) + ")"; }

// x with (a * x) % m == 1, for gcd(a, m) == 1 and m >= 1 (m is a stride:
// small, so the search is cheap).
int64_t InverseMod(int64_t a, int64_t m) {
  if (m == 1) return 0;
  for (int64_t x = 1; x < m; ++x)
    if ((a % m) * x % m == 1) return x;
  return 0;  // unreachable for coprime a, m
}

}  // namespace

std::string FirstTapExpr(const std::string& t, int64_t stride, int64_t dilation) {
  const int64_t g = std::gcd(stride, dilation), step = stride / g;
  if (step == 1) return "0";
  const int64_t inv = InverseMod(dilation / g, step);
  std::string q = g > 1 ? "(" + t + " / " + std::to_string(g) + ")" : t;
  // (q mod step) * inv < step^2: no 32-bit overflow for any real stride.
  return "(" + Times("(" + q + " % " + std::to_string(step) + ")", inv) + " % " + std::to_string(step) + ")";
}

std::string EmitConvTransposeElement(const ir::Operation& op, const ir::ConvTransposeParams& p,
                                     const std::vector<std::string>& out_idx,
                                     ConvTransposeEmitter& e) {
  const std::vector<int64_t>& xs = op.operand(0)->type().shape;
  const std::vector<int64_t>& ws = op.operand(1)->type().shape;
  const int k = p.spatial;
  const int64_t Cg = xs[1] / p.group;  // input channels per group
  const int64_t Mg = ws[1];            // output channels per group
  const std::string& n = out_idx[0];
  const std::string& m = out_idx[1];

  std::string acc = e.Fresh("acc");
  std::string note = "// tensor.conv_transpose";
  if (!op.loc().empty()) {
    std::string safe;
    for (char c : op.loc()) safe += (c >= 32 && c < 127) ? c : '?';
    note += " [" + safe + "]";
  }
  e.Line("float " + acc + " = 0.0;  " + note + " group=" + std::to_string(p.group));
  e.Open("");
  int opened = 1;
  // The group's first input channel, and m's index inside its group.
  std::string cbase = "0", mg = m;
  if (p.group > 1) {
    cbase = e.Fresh("cb");
    e.Line("int " + cbase + " = (" + m + " / " + std::to_string(Mg) + ") * " + std::to_string(Cg) + ";");
    mg = e.Fresh("mg");
    e.Line("int " + mg + " = " + m + " % " + std::to_string(Mg) + ";");
  }
  std::vector<std::string> taps(k), ins(k);
  for (int j = 0; j < k; ++j) {
    const int64_t s = p.strides[j], d = p.dilations[j], K = ws[2 + j], D = xs[2 + j];
    const int64_t g = std::gcd(s, d), step = s / g;
    std::string t = e.Fresh("t");
    e.Line("int " + t + " = " + Plus(out_idx[2 + j], p.pads[j]) + ";");
    if (g > 1) {
      e.Open("if (" + t + " % " + std::to_string(g) + " == 0)");
      ++opened;
    }
    // First tap with (t - k*d) % s == 0.
    std::string k0 = FirstTapExpr(t, s, d);
    if (k0 != "0") {
      std::string k0v = e.Fresh("k0_");
      e.Line("int " + k0v + " = " + k0 + ";");
      k0 = k0v;
    }
    std::string kv = e.Fresh("k");
    e.Open("for (int " + kv + " = " + k0 + "; " + kv + " < " + std::to_string(K) + "; " + kv +
           (step == 1 ? "++" : " += " + std::to_string(step)) + ")");
    ++opened;
    std::string u = e.Fresh("u");
    e.Line("int " + u + " = " + t + " - " + Times(kv, d) + ";");
    e.Line("if (" + u + " < 0) break;");
    std::string iv = u;
    if (s > 1) {
      iv = e.Fresh("i");
      e.Line("int " + iv + " = " + u + " / " + std::to_string(s) + ";");
    }
    e.Open("if (" + iv + " < " + std::to_string(D) + ")");
    ++opened;
    taps[j] = kv;
    ins[j] = iv;
  }
  // One GEMM column: the dot product over the group's input channels.
  std::string dot = e.Fresh("dot");
  e.Line("float " + dot + " = 0.0;");
  std::string c = "0";
  if (Cg > 1) {
    c = e.Fresh("c");
    e.Open("for (int " + c + " = 0; " + c + " < " + std::to_string(Cg) + "; ++" + c + ")");
  } else {
    e.Open("");
  }
  std::string ch = cbase == "0" ? c : (c == "0" ? cbase : "(" + cbase + " + " + c + ")");
  std::vector<std::string> xi = {n, ch}, wi = {ch, mg};
  for (int j = 0; j < k; ++j) {
    xi.push_back(ins[j]);
    wi.push_back(taps[j]);
  }
  std::string xv = e.Operand(0, xi);
  std::string wv = e.Operand(1, wi);
  e.Mac(dot, xv, wv);
  e.Close();
  e.Line(acc + " += " + dot + ";");
  for (int i = 0; i < opened; ++i) e.Close();
  if (op.num_operands() > 2) e.Line(acc + " += " + e.Operand(2, {m}) + ";");
  return acc;
}

}  // namespace kiln::codegen
