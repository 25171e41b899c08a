// Host evaluation of tensor.gather_elements, tensor.scatter_elements and
// tensor.arg_reduce (const_eval.h): the constant folder's kernels and the importer tests'
// reference, written from the ONNX definitions (GatherElements,
// ScatterElements) with the IR's rules for bad indices (compiler/ir/ops.h:
// gather clamps, scatter ignores). Double precision, rounded to the result
// dtype once. Cost: O(elements of indices) (+ a copy of data for scatter).
#include <algorithm>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "compiler/import/onnx/const_eval.h"

namespace kiln::onnx_import {
namespace {

using Shape = std::vector<int64_t>;

std::vector<int64_t> Strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

}  // namespace

bool EvalIndexOp(const std::string& op, const std::vector<const ir::DenseElements*>& ops, const ir::Type& rt,
                 const std::map<std::string, ir::Attribute>& attrs, ir::DenseElements* out) {
  auto it = attrs.find("axis");
  if (it == attrs.end()) return false;
  auto* ax = std::get_if<int64_t>(&it->second.value);
  if (!ax) return false;
  if (op == "arg_reduce") {  // the index of the first (or last) extreme along axis
    if (ops.size() != 1) return false;
    const ir::DenseElements& x = *ops[0];
    const Shape& xs = x.type.shape;
    if (*ax < 0 || *ax >= static_cast<int64_t>(xs.size())) return false;
    auto kit = attrs.find("kind");
    auto* kind = kit == attrs.end() ? nullptr : std::get_if<std::string>(&kit->second.value);
    if (!kind || (*kind != "max" && *kind != "min")) return false;
    auto lit = attrs.find("select_last_index");
    bool last = false;
    if (lit != attrs.end()) {
      if (auto* b = std::get_if<bool>(&lit->second.value)) last = *b;
      else if (auto* i = std::get_if<int64_t>(&lit->second.value)) last = *i != 0;
    }
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < *ax; ++d) outer *= xs[d];
    for (size_t d = static_cast<size_t>(*ax) + 1; d < xs.size(); ++d) inner *= xs[d];
    const int64_t len = xs[*ax];
    if (rt.num_elements() != outer * inner || len <= 0) return false;
    std::vector<double> r;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t best = 0;
        double bv = ReadElementAsDouble(x, o * len * inner + i);
        for (int64_t k = 1; k < len; ++k) {
          double v = ReadElementAsDouble(x, (o * len + k) * inner + i);
          bool better = *kind == "max" ? (v > bv || (last && v == bv)) : (v < bv || (last && v == bv));
          if (better) {
            best = k;
            bv = v;
          }
        }
        r.push_back(static_cast<double>(best));
      }
    *out = MakeDenseFromDoubles(rt, r);
    return true;
  }
  const bool gather = op == "gather_elements";
  if (ops.size() != (gather ? 2u : 3u)) return false;
  const ir::DenseElements& data = *ops[0];
  const ir::DenseElements& ind = *ops[1];
  const Shape& ds = data.type.shape;
  const Shape& is = ind.type.shape;
  const int64_t axis = *ax;
  if (axis < 0 || axis >= static_cast<int64_t>(ds.size()) || is.size() != ds.size()) return false;
  if (gather ? rt.shape != is : (rt.shape != ds || ops[2]->type.shape != is)) return false;
  const std::vector<int64_t> dst = Strides(ds);
  const int64_t n = ind.type.num_elements(), len = ds[axis];
  std::vector<double> r;
  if (!gather) {
    r.resize(static_cast<size_t>(data.type.num_elements()));
    for (size_t i = 0; i < r.size(); ++i) r[i] = ReadElementAsDouble(data, static_cast<int64_t>(i));
  } else {
    r.resize(static_cast<size_t>(n));
  }
  std::string red = "none";
  if (!gather) {
    auto rit = attrs.find("reduction");
    if (rit != attrs.end()) {
      auto* s = std::get_if<std::string>(&rit->second.value);
      if (!s) return false;
      red = *s;
    }
  }
  std::vector<int64_t> idx(is.size(), 0);
  for (int64_t j = 0; j < n; ++j) {
    int64_t k = ReadElementAsInt(ind, j);
    if (k < 0) k += len;
    bool in_range = k >= 0 && k < len;
    if (gather) k = std::clamp<int64_t>(k, 0, len - 1);
    int64_t off = 0;
    for (size_t d = 0; d < is.size(); ++d) off += (static_cast<int64_t>(d) == axis ? k : idx[d]) * dst[d];
    if (gather) {
      r[static_cast<size_t>(j)] = ReadElementAsDouble(data, off);
    } else if (in_range) {
      const double u = ReadElementAsDouble(*ops[2], j);
      double& t = r[static_cast<size_t>(off)];
      if (red == "none") t = u;
      else if (red == "add") t += u;
      else if (red == "mul") t *= u;
      else if (red == "max") t = std::max(t, u);
      else if (red == "min") t = std::min(t, u);
      else return false;
    }
    for (size_t d = is.size(); d-- > 0;) {
      if (++idx[d] < is[d]) break;
      idx[d] = 0;
    }
  }
  *out = MakeDenseFromDoubles(rt, r);
  return true;
}

}  // namespace kiln::onnx_import
