// tensor.resize → GLSL (resize_schedule.h).
#include "compiler/codegen/resize_schedule.h"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace kiln::codegen {
namespace {

std::string Int(int64_t v) { return v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v); }

// An exact f32 literal.
std::string FloatLiteral(double v) {
  float f = static_cast<float>(v);
  if (!std::isfinite(f)) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    char buf[40];
    std::snprintf(buf, sizeof(buf), "uintBitsToFloat(0x%08xu)", bits);
    return buf;
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(f));
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return f < 0 ? "(" + s + ")" : s;
}

}  // namespace

Status CheckResize(ir::Operation* op) {
  if (op->num_operands() != 2 && op->num_operands() != 3)
    return InvalidArgumentError("tensor.resize takes x, index and optional weight");
  const ir::Type& xt = op->operand(0)->type();
  const ir::Type& it = op->operand(1)->type();
  const ir::Type& yt = op->result()->type();
  std::vector<int64_t> taps = op->ints_attr("taps");
  if (taps.size() != xt.shape.size() || yt.shape.size() != xt.shape.size())
    return InvalidArgumentError("tensor.resize taps must have one entry per axis");
  int64_t total = 0;
  for (size_t d = 0; d < taps.size(); ++d) {
    if (taps[d] < 0 || (taps[d] == 0 && xt.shape[d] != yt.shape[d]))
      return InvalidArgumentError("tensor.resize taps do not match the shapes");
    total += taps[d] * yt.shape[d];
  }
  if (it.dtype != DType::kI32 || it.shape.size() != 1 || it.shape[0] != total)
    return InvalidArgumentError("tensor.resize index must be i32 with %lld elements",
                                static_cast<long long>(total));
  if (op->num_operands() == 3) {
    const ir::Type& wt = op->operand(2)->type();
    if (wt.dtype != DType::kF32 || wt.shape != it.shape)
      return InvalidArgumentError("tensor.resize weight must be f32 shaped like index");
    if (xt.dtype != DType::kF32 || yt.dtype != DType::kF32)
      return InvalidArgumentError("weighted tensor.resize is f32 only");
  } else {
    if (xt.dtype != yt.dtype) return InvalidArgumentError("tensor.resize result dtype differs from x");
    for (int64_t t : taps)
      if (t > 1) return InvalidArgumentError("tensor.resize with several taps needs weights");
  }
  return OkStatus();
}

std::string EmitResizeElement(ir::Operation* op, const std::vector<std::string>& out_idx,
                              const ResizeEmitter& e) {
  ir::Value* x = op->operand(0);
  ir::Value* index = op->operand(1);
  ir::Value* weight = op->num_operands() > 2 ? op->operand(2) : nullptr;
  const std::vector<int64_t>& xs = x->type().shape;
  const std::vector<int64_t>& ys = op->result()->type().shape;
  std::vector<int64_t> taps = op->ints_attr("taps");
  const size_t rank = taps.size();
  const std::string type = weight ? "float" : e.type_name(x);
  const double ext = op->float_attr("extrapolation_value", 0.0);
  std::string ext_lit = FloatLiteral(ext);
  if (type != "float") ext_lit = type + "(" + ext_lit + ")";

  std::string r = e.fresh("rs");
  std::string what = "tensor.resize";
  if (!op->loc().empty()) {
    std::string loc;
    for (char c : op->loc()) loc += (c >= 32 && c < 127) ? c : '?';
    what += " [" + loc + "]";
  }
  std::string tap_str;
  for (size_t d = 0; d < rank; ++d) tap_str += (d ? "," : "") + std::to_string(taps[d]);
  e.line(type + " " + r + " = " + ext_lit + ";  // " + what + " taps=[" + tap_str + "]");
  e.open("");
  // Row base and first index of every resized axis.
  std::vector<std::string> base(rank), first(rank);
  std::string inside;
  int64_t off = 0;
  for (size_t d = 0; d < rank; ++d) {
    if (taps[d] == 0) continue;
    base[d] = e.fresh("rb");
    std::string row = out_idx[d];
    e.line("int " + base[d] + " = " + Int(off) + " + " + row + " * " + Int(taps[d]) + ";");
    first[d] = e.eval(index, {base[d]});
    inside += std::string(inside.empty() ? "" : " && ") + first[d] + " >= 0";
    off += taps[d] * ys[d];
  }
  if (!inside.empty()) e.open("if (" + inside + ")");
  // Nested loops over the taps, outermost axis first; partial sums per axis.
  std::vector<std::string> src(out_idx);
  std::vector<std::string> sum(rank);
  std::vector<std::string> w(rank);
  std::vector<size_t> order;
  for (size_t d = 0; d < rank; ++d)
    if (taps[d] > 0) order.push_back(d);
  for (size_t k = 0; k < order.size(); ++k) {
    size_t d = order[k];
    if (weight) {
      sum[d] = e.fresh("rsum");
      e.line("float " + sum[d] + " = 0.0;");
    }
    std::string t = "0";
    if (taps[d] > 1) {
      t = e.fresh("rt");
      e.open(std::string(taps[d] <= 16 ? "[[unroll]] " : "") + "for (int " + t + " = 0; " + t +
             " < " + Int(taps[d]) + "; ++" + t + ")");
    } else {
      e.open("");
    }
    std::string at = t == "0" ? base[d] : "(" + base[d] + " + " + t + ")";
    // Clamped, so that a bad table can never read outside x's binding.
    src[d] = e.fresh("ri");
    e.line("int " + src[d] + " = clamp(" + (t == "0" ? first[d] : e.eval(index, {at})) + ", 0, " +
           Int(xs[d] - 1) + ");");
    if (weight) w[d] = e.eval(weight, {at});
  }
  std::string v = e.eval(x, src);
  if (!weight) {
    e.line(r + " = " + v + ";");
    for (size_t k = 0; k < order.size(); ++k) e.close();
  } else {
    // Innermost: s += w * v; closing each axis folds its sum into the outer one.
    std::string acc = v;
    for (size_t k = order.size(); k-- > 0;) {
      size_t d = order[k];
      e.line(sum[d] + " += " + w[d] + " * " + acc + ";");
      e.close();
      acc = sum[d];
    }
    e.line(r + " = " + acc + ";");
  }
  if (!inside.empty()) e.close();
  e.close();
  return r;
}

}  // namespace kiln::codegen
