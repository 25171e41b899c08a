// Host evaluation of tensor.conv_transpose (const_eval.h): the constant
// folder's kernel and the importer tests' reference.
//
// Written as the scatter of the ONNX spec (and onnx/reference/ops/
// op_conv_transpose.py): every input element x[n, c, i] adds
// x * W[c, m', k] to y[n, g*M/group + m', i*s - pads_begin + k*d] for each tap
// k that lands inside the output, so it shares no index arithmetic with the
// gather that codegen emits (conv_transpose_schedule.h). Double precision,
// rounded to the result dtype once. Cost: O(N * C * M/group * D * K).
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "compiler/import/onnx/const_eval.h"

namespace kiln::onnx_import {
namespace {

using Shape = std::vector<int64_t>;

bool Ints(const std::map<std::string, ir::Attribute>& a, const char* n, size_t size, int64_t def, Shape* out) {
  auto it = a.find(n);
  if (it == a.end()) {
    out->assign(size, def);
    return true;
  }
  auto* v = std::get_if<std::vector<int64_t>>(&it->second.value);
  if (!v || v->size() != size) return false;
  *out = *v;
  return true;
}

// Advances the multi-index `idx` within `extent` (row-major); false after the last.
bool Next(Shape& idx, const Shape& extent) {
  for (size_t d = idx.size(); d-- > 0;) {
    if (++idx[d] < extent[d]) return true;
    idx[d] = 0;
  }
  return false;
}

int64_t Product(const Shape& s) {
  int64_t p = 1;
  for (int64_t v : s) p *= v;
  return p;
}

}  // namespace

bool EvalConvTranspose(const std::vector<const ir::DenseElements*>& ops, const ir::Type& rt,
                       const std::map<std::string, ir::Attribute>& attrs, ir::DenseElements* out) {
  if (ops.size() < 2 || ops.size() > 3) return false;
  const Shape& xs = ops[0]->type.shape;
  const Shape& ws = ops[1]->type.shape;
  const Shape& ys = rt.shape;
  if (xs.size() < 3 || ws.size() != xs.size() || ys.size() != xs.size()) return false;
  const size_t k = xs.size() - 2;
  Shape strides, dil, pads;
  if (!Ints(attrs, "strides", k, 1, &strides) || !Ints(attrs, "dilations", k, 1, &dil) ||
      !Ints(attrs, "pads", 2 * k, 0, &pads))
    return false;
  int64_t group = 1;
  if (auto it = attrs.find("group"); it != attrs.end()) {
    auto* g = std::get_if<int64_t>(&it->second.value);
    if (!g) return false;
    group = *g;
  }
  const int64_t N = xs[0], C = xs[1], Mg = ws[1];
  if (group < 1 || C % group != 0 || ws[0] != C || ys[0] != N || ys[1] != Mg * group) return false;
  const int64_t Cg = C / group, M = Mg * group;
  std::vector<double> x(Product(xs)), w(Product(ws)), y(Product(ys), 0.0);
  for (size_t i = 0; i < x.size(); ++i) x[i] = ReadElementAsDouble(*ops[0], static_cast<int64_t>(i));
  for (size_t i = 0; i < w.size(); ++i) w[i] = ReadElementAsDouble(*ops[1], static_cast<int64_t>(i));
  const Shape in_sp(xs.begin() + 2, xs.end()), ker(ws.begin() + 2, ws.end()), out_sp(ys.begin() + 2, ys.end());
  const int64_t in_size = Product(in_sp), ker_size = Product(ker), out_size = Product(out_sp);
  if (in_size == 0 || ker_size == 0 || out_size == 0) return false;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const int64_t g = c / Cg;
      Shape i(k, 0);
      do {
        int64_t i_flat = 0;
        for (size_t d = 0; d < k; ++d) i_flat = i_flat * in_sp[d] + i[d];
        const double xv = x[(n * C + c) * in_size + i_flat];
        Shape t(k, 0);
        do {
          int64_t o_flat = 0;
          bool inside = true;
          for (size_t d = 0; d < k && inside; ++d) {
            const int64_t o = i[d] * strides[d] - pads[d] + t[d] * dil[d];
            inside = o >= 0 && o < out_sp[d];
            o_flat = o_flat * out_sp[d] + o;
          }
          if (!inside) continue;
          int64_t t_flat = 0;
          for (size_t d = 0; d < k; ++d) t_flat = t_flat * ker[d] + t[d];
          for (int64_t mg = 0; mg < Mg; ++mg)
            y[(n * M + g * Mg + mg) * out_size + o_flat] += xv * w[(c * Mg + mg) * ker_size + t_flat];
        } while (Next(t, ker));
      } while (Next(i, in_sp));
    }
  if (ops.size() == 3) {
    if (Product(ops[2]->type.shape) != M) return false;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m) {
        const double b = ReadElementAsDouble(*ops[2], m);
        for (int64_t o = 0; o < out_size; ++o) y[(n * M + m) * out_size + o] += b;
      }
  }
  *out = MakeDenseFromDoubles(rt, y);
  return true;
}

}  // namespace kiln::onnx_import
