// ONNX ops whose output shape depends on input values: NonZero, Unique and
// NonMaxSuppression. Kiln compiles static shapes, so these are evaluated on
// the host at import when their inputs are constants (initializers, folded
// values, or graph inputs fixed with `kiln-compile --constant-input`); on
// runtime data they are rejected with an error that says so. The host
// algorithms follow the ONNX operator definitions:
//   NonZero: the indices of the non-zero elements, [rank, count] i64, in
//     row-major order.
//   Unique: the unique elements (axis absent: of the flattened input) or
//     slices along `axis`, sorted ascending (lexicographically for slices)
//     when sorted = 1, else in order of first occurrence; indices (first
//     occurrence), inverse_indices and counts are i64.
//   NonMaxSuppression: per batch and class, the boxes whose score is above
//     score_threshold, greedily by descending score (ties: lower box index
//     first), each suppressing the later ones whose IoU with it is above
//     iou_threshold, at most max_output_boxes_per_class; output [count, 3]
//     i64 (batch, class, box). Boxes are [y1, x1, y2, x2] (either corner
//     order) or, with center_point_box = 1, [x_center, y_center, w, h]; a
//     box pair with zero intersection or area never suppresses (ONNX
//     Runtime's rule).
#include <algorithm>
#include <array>
#include <numeric>

#include "compiler/import/onnx/onnx_importer_internal.h"

namespace kiln::onnx_import::detail {
namespace {

std::vector<double> ValuesOf(const DenseElements& d) {
  std::vector<double> r(static_cast<size_t>(d.type.num_elements()));
  for (size_t i = 0; i < r.size(); ++i) r[i] = ReadElementAsDouble(d, static_cast<int64_t>(i));
  return r;
}

}  // namespace

Status Importer::DataDependent(const onnx::NodeProto& n, const std::vector<Value*>& in,
                               std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(op_type_ == "NonMaxSuppression" ? 2 : 1);
  std::vector<const DenseElements*> c(in.size(), nullptr);
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i]) continue;
    c[i] = GetConst(in[i]);
    if (!c[i])
      return Unimpl("input " + std::to_string(i) + " ('" + n.input(static_cast<int>(i)) +
                    "') is a runtime value, but the output's shape depends on it: fix it at compile time "
                    "(kiln-compile --constant-input)");
  }
  if (op_type_ == "NonZero") {
    const DenseElements& x = *c[0];
    const Shape& xs = x.type.shape;
    const int64_t total = x.type.num_elements(), rank = static_cast<int64_t>(xs.size());
    std::vector<int64_t> hits;
    for (int64_t i = 0; i < total; ++i)
      if (ReadElementAsDouble(x, i) != 0) hits.push_back(i);
    const int64_t cnt = static_cast<int64_t>(hits.size());
    std::vector<double> r(static_cast<size_t>(std::max<int64_t>(rank, 1) * cnt));
    for (int64_t k = 0; k < cnt; ++k) {
      int64_t rem = hits[k];
      for (int64_t d = rank - 1; d >= 0; --d) {
        r[d * cnt + k] = static_cast<double>(rem % xs[d]);
        rem /= xs[d];
      }
    }
    out[0] = Constant(MakeDenseFromDoubles(Type::Tensor(DType::kI64, {rank, cnt}), r));
    return OkStatus();
  }
  if (op_type_ == "Unique") {
    const DenseElements& x = *c[0];
    const std::vector<double> v = ValuesOf(x);
    Shape xs = x.type.shape;
    int64_t axis = 0;
    if (HasAttr("axis")) {
      KILN_ASSIGN_OR_RETURN(axis, NormAxis(AttrInt("axis", 0), static_cast<int64_t>(xs.size())));
    } else {
      xs = {static_cast<int64_t>(v.size())};
    }
    // Slice k along `axis`: outer x len x inner.
    const int64_t len = xs[axis], outer = Product(xs, 0, axis), inner = Product(xs, axis + 1);
    auto slice = [&](int64_t k) {
      std::vector<double> s;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) s.push_back(v[(o * len + k) * inner + i]);
      return s;
    };
    std::vector<std::vector<double>> slices;
    for (int64_t k = 0; k < len; ++k) slices.push_back(slice(k));
    std::vector<int64_t> first;  // index of the first occurrence of each unique slice
    std::vector<int64_t> inverse(len), counts;
    for (int64_t k = 0; k < len; ++k) {
      auto it = std::find_if(first.begin(), first.end(), [&](int64_t f) { return slices[f] == slices[k]; });
      if (it == first.end()) {
        first.push_back(k);
        counts.push_back(1);
      } else {
        ++counts[it - first.begin()];
      }
    }
    std::vector<size_t> order(first.size());
    std::iota(order.begin(), order.end(), 0);
    if (AttrInt("sorted", 1) != 0)
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return slices[first[a]] < slices[first[b]]; });
    std::vector<int64_t> rank_of(first.size());
    for (size_t j = 0; j < order.size(); ++j) rank_of[order[j]] = static_cast<int64_t>(j);
    for (int64_t k = 0; k < len; ++k) {
      for (size_t u = 0; u < first.size(); ++u)
        if (slices[first[u]] == slices[k]) inverse[k] = rank_of[u];
    }
    const int64_t nu = static_cast<int64_t>(first.size());
    Shape ys = xs;
    ys[axis] = nu;
    std::vector<double> y(static_cast<size_t>(Product(ys)));
    for (int64_t j = 0; j < nu; ++j) {
      const std::vector<double>& s = slices[first[order[j]]];
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) y[(o * nu + j) * inner + i] = s[o * inner + i];
    }
    std::vector<double> idx, cnt, inv(inverse.begin(), inverse.end());
    for (size_t j : order) {
      idx.push_back(static_cast<double>(first[j]));
      cnt.push_back(static_cast<double>(counts[j]));
    }
    out[0] = Constant(MakeDenseFromDoubles(Type::Tensor(x.type.dtype, ys), y));
    if (out.size() > 1) out[1] = Constant(MakeDenseFromDoubles(Type::Tensor(DType::kI64, {nu}), idx));
    if (out.size() > 2) out[2] = Constant(MakeDenseFromDoubles(Type::Tensor(DType::kI64, {len}), inv));
    if (out.size() > 3) out[3] = Constant(MakeDenseFromDoubles(Type::Tensor(DType::kI64, {nu}), cnt));
    return OkStatus();
  }
  // NonMaxSuppression.
  const Shape& bs = c[0]->type.shape;
  const Shape& ss = c[1]->type.shape;
  if (bs.size() != 3 || bs[2] != 4 || ss.size() != 3 || ss[0] != bs[0] || ss[2] != bs[1])
    return Invalid("boxes must be [B, N, 4] and scores [B, C, N]; got " + ShapeStr(bs) + " and " + ShapeStr(ss));
  const std::vector<double> boxes = ValuesOf(*c[0]), scores = ValuesOf(*c[1]);
  auto scalar = [&](size_t i, double def) {
    return i < c.size() && c[i] && c[i]->type.num_elements() > 0 ? ReadElementAsDouble(*c[i], 0) : def;
  };
  const int64_t max_out = static_cast<int64_t>(scalar(2, 0));
  const double iou_th = scalar(3, 0);
  const bool has_score_th = c.size() > 4 && c[4];
  const double score_th = scalar(4, 0);
  const int64_t cpb = AttrInt("center_point_box", 0);
  if (cpb != 0 && cpb != 1) return Invalid("center_point_box must be 0 or 1");
  const int64_t B = bs[0], N = bs[1], C = ss[1];
  // [ymin, xmin, ymax, xmax] of box i of batch b.
  auto corners = [&](int64_t b, int64_t i) {
    const double* p = &boxes[(b * N + i) * 4];
    if (cpb == 1)
      return std::array<double, 4>{p[1] - p[3] / 2, p[0] - p[2] / 2, p[1] + p[3] / 2, p[0] + p[2] / 2};
    return std::array<double, 4>{std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]),
                                 std::max(p[1], p[3])};
  };
  auto suppresses = [&](int64_t b, int64_t i, int64_t j) {
    auto a = corners(b, i), o = corners(b, j);
    double ih = std::min(a[2], o[2]) - std::max(a[0], o[0]);
    double iw = std::min(a[3], o[3]) - std::max(a[1], o[1]);
    if (ih <= 0 || iw <= 0) return false;
    double inter = ih * iw;
    double area_a = (a[2] - a[0]) * (a[3] - a[1]), area_o = (o[2] - o[0]) * (o[3] - o[1]);
    double uni = area_a + area_o - inter;
    if (area_a <= 0 || area_o <= 0 || uni <= 0) return false;
    return inter / uni > iou_th;
  };
  std::vector<double> sel;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < C; ++k) {
      const double* s = &scores[(b * C + k) * N];
      std::vector<int64_t> cand;
      for (int64_t i = 0; i < N; ++i)
        if (!has_score_th || s[i] > score_th) cand.push_back(i);
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t x, int64_t y) { return s[x] > s[y]; });
      std::vector<int64_t> kept;
      for (int64_t i : cand) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        bool drop = false;
        for (int64_t j : kept) drop = drop || suppresses(b, j, i);
        if (!drop) kept.push_back(i);
      }
      for (int64_t i : kept) sel.insert(sel.end(), {double(b), double(k), double(i)});
    }
  out[0] = Constant(MakeDenseFromDoubles(Type::Tensor(DType::kI64, {static_cast<int64_t>(sel.size() / 3), 3}), sel));
  return OkStatus();
}

}  // namespace kiln::onnx_import::detail
