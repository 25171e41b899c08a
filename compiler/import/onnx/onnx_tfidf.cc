// ONNX TfIdfVectorizer (ai.onnx opset 9) → tensor.slice / tensor.equal /
// tensor.and / tensor.cast / tensor.reduce / tensor.concat / tensor.gather
// (compiler/ir/ops.h). Every op runs on the device; nothing is evaluated at
// import unless X itself is a constant.
//
// Input X: int32 or int64, [L] or [B, L] (each row is a separate text; an
// n-gram never crosses rows). Output Y: f32, [C] or [B, C] with
// C = max(ngram_indexes) + 1.
//
// Attributes (all handled): mode ("TF", "IDF", "TFIDF"), min_gram_length,
// max_gram_length, max_skip_count, ngram_counts, ngram_indexes, pool_int64s,
// weights. pool_strings (string tensors) is rejected.
//   * The pool lists the n-grams of each length back to back: the n-grams of
//     length n start at pool_int64s[ngram_counts[n-1]] and run to the next
//     level's start (or the end of the pool), n ints each. ngram_indexes gives
//     the output column of each pooled n-gram, in pool order.
//   * An n-gram of length n with skip s is x[i], x[i+d], ..., x[i+(n-1)d]
//     with d = s + 1, for every start i where it fits in the row and every
//     s in [0, max_skip_count]. Unigrams are counted once (not once per skip).
//     Only lengths in [min_gram_length, max_gram_length] are counted; pooled
//     n-grams of other lengths give 0.
//   * TF: the count. IDF: weights[j] when the count is > 0 (1 without
//     weights), else 0. TFIDF: count * weights[j] (the count without weights).
// These are the semantics of ONNX's reference implementation
// (onnx/reference/ops/op_tfidf_vectorizer.py) and of ONNX Runtime's kernel.
//
// Lowering, per length n and distance d: the n shifted views
// G_k = X[:, k*d : k*d + M] (M = L - (n-1)d starts) are compared with the
// k-th element of every pooled n-gram of that length ([B, M, 1] vs
// [1, 1, P_n] → [B, M, P_n]), the comparisons are and-ed, cast to f32 and
// summed over the starts. Device work is O(B * L * pool ints * skips).
// The per-n-gram scores [B, P] get a zero column appended, and a gather with
// a constant index per output column (the pooled n-gram mapped to it, or the
// zero column) scatters them to Y.
//
// Example: X = [1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8], bigrams only,
// pool (5,6) (7,8) (6,7) → columns 0 1 2, max_skip_count 5, TF: (7,8)
// occurs at distances 1, 3 and 6 → Y = [1, 3, 1].
#include <algorithm>
#include <limits>

#include "compiler/import/onnx/onnx_importer_internal.h"

namespace kiln::onnx_import::detail {

Status Importer::TfIdfVectorizer(const onnx::NodeProto& n, const std::vector<Value*>& in,
                                 std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  const DType xdt = x->type().dtype;
  if (HasAttr("pool_strings")) return Unimpl("attribute 'pool_strings': string tensors are not supported");
  if (xdt != DType::kI32 && xdt != DType::kI64)
    return Invalid(std::string("input X must be int32 or int64, got ") + DTypeName(xdt));
  const Shape xs = x->type().shape;
  if (xs.size() != 1 && xs.size() != 2)
    return Invalid("input X must be [L] or [B, L], got " + ShapeStr(xs));

  const std::string mode = AttrStr("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    return Invalid("attribute 'mode' must be \"TF\", \"IDF\" or \"TFIDF\", got \"" + mode + "\"");
  const int64_t min_n = AttrInt("min_gram_length", 0);
  const int64_t max_n = AttrInt("max_gram_length", 0);
  const int64_t max_skip = AttrInt("max_skip_count", 0);
  if (min_n < 1 || max_n < min_n)
    return Invalid("min_gram_length (" + std::to_string(min_n) + ") and max_gram_length (" +
                   std::to_string(max_n) + ") must satisfy 1 <= min <= max");
  if (max_skip < 0) return Invalid("max_skip_count must be >= 0, got " + std::to_string(max_skip));
  const Shape counts = AttrInts("ngram_counts");
  const Shape indexes = AttrInts("ngram_indexes");
  const Shape pool = AttrInts("pool_int64s");
  std::vector<double> weights;
  if (const auto* w = FindAttr("weights")) weights.assign(w->floats().begin(), w->floats().end());
  if (indexes.empty()) return Invalid("attribute 'ngram_indexes' is empty");

  // Levels: [begin, end) of the pool for each length n = level + 1.
  const int64_t pool_size = static_cast<int64_t>(pool.size());
  struct Level {
    int64_t n, begin, count;  // count: n-grams in the level
  };
  std::vector<Level> levels;
  int64_t total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const int64_t b = counts[i];
    const int64_t e = i + 1 < counts.size() ? counts[i + 1] : pool_size;
    const int64_t len = static_cast<int64_t>(i) + 1;
    if (b < 0 || e < b || e > pool_size)
      return Invalid("ngram_counts must be non-decreasing starts within pool_int64s (" +
                     std::to_string(pool_size) + " ints)");
    if ((e - b) % len != 0)
      return Invalid("the pooled " + std::to_string(len) + "-grams (" + std::to_string(e - b) +
                     " ints) are not a multiple of " + std::to_string(len));
    levels.push_back({len, b, (e - b) / len});
    total += (e - b) / len;
  }
  if (total != static_cast<int64_t>(indexes.size()))
    return Invalid("ngram_indexes has " + std::to_string(indexes.size()) + " entries for " +
                   std::to_string(total) + " pooled n-grams");
  if (!weights.empty() && static_cast<int64_t>(weights.size()) != total)
    return Invalid("weights has " + std::to_string(weights.size()) + " entries for " +
                   std::to_string(total) + " pooled n-grams");
  int64_t cols = 0;
  for (int64_t i : indexes) {
    if (i < 0 || i >= kMaxDim) return Invalid("ngram_indexes entry " + std::to_string(i) + " out of range");
    cols = std::max(cols, i + 1);
  }

  // Compare in X's dtype unless a pooled value does not fit in it.
  DType dt = xdt;
  if (dt == DType::kI32)
    for (int64_t v : pool)
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) dt = DType::kI64;
  const int64_t B = xs.size() == 2 ? xs[0] : 1;
  const int64_t L = xs.back();
  Value* x2 = Reshape(Cast(x, dt), {B, L});

  auto zeros = [&](int64_t cols_) {
    return Constant(MakeDenseFromDoubles(Type::Tensor(DType::kF32, {B, cols_}),
                                         std::vector<double>(B * cols_, 0.0)));
  };
  std::vector<Value*> pieces;  // [B, P_level] per non-empty level, pool order
  for (const Level& lv : levels) {
    if (lv.count == 0) continue;
    const int64_t P = lv.count;
    Value* acc = nullptr;
    if (lv.n >= min_n && lv.n <= max_n) {
      const int64_t max_d = lv.n == 1 ? 1 : max_skip + 1;
      for (int64_t d = 1; d <= max_d; ++d) {
        const int64_t M = L - (lv.n - 1) * d;
        if (M <= 0) break;
        Value* all = nullptr;
        for (int64_t k = 0; k < lv.n; ++k) {
          Value* g = Reshape(SliceAxis(x2, 1, k * d, M), {B, M, 1});
          Shape pk(P);
          for (int64_t p = 0; p < P; ++p) pk[p] = pool[lv.begin + p * lv.n + k];
          Value* c = Constant(MakeDenseFromInts(Type::Tensor(dt, {1, 1, P}), pk));
          KILN_ASSIGN_OR_RETURN(Value* e, Binary("tensor.equal", g, c));
          if (all) { KILN_ASSIGN_OR_RETURN(all, Binary("tensor.and", all, e)); }
          else all = e;
        }
        Value* s = Emit("tensor.reduce", {Cast(all, DType::kF32)}, Type::Tensor(DType::kF32, {B, P}),
                        {{"kind", std::string("sum")}, {"axes", Shape{1}}, {"keepdims", false}});
        if (acc) { KILN_ASSIGN_OR_RETURN(acc, Binary("tensor.add", acc, s)); }
        else acc = s;
      }
    }
    pieces.push_back(acc ? acc : zeros(P));
  }
  pieces.push_back(zeros(1));  // column `total`: the value of unmapped output columns
  Value* scores = pieces.size() == 1
                      ? pieces[0]
                      : Emit("tensor.concat", pieces, Type::Tensor(DType::kF32, {B, total + 1}),
                             {{"axis", int64_t{1}}});
  if (mode == "IDF") { KILN_ASSIGN_OR_RETURN(scores, Binary("tensor.min", scores, ScalarConst(DType::kF32, 1.0))); }
  if (mode != "TF" && !weights.empty()) {
    weights.push_back(0.0);
    Value* w = Constant(MakeDenseFromDoubles(Type::Tensor(DType::kF32, {1, total + 1}), weights));
    KILN_ASSIGN_OR_RETURN(scores, Binary("tensor.mul", scores, w));
  }
  // Output column c takes the score of the last pooled n-gram mapped to it.
  Shape pick(cols, total);
  for (int64_t j = 0; j < total; ++j) pick[indexes[j]] = j;
  Value* idx = Constant(MakeDenseFromInts(Type::Tensor(DType::kI64, {cols}), pick));
  Value* y = Emit("tensor.gather", {scores, idx}, Type::Tensor(DType::kF32, {B, cols}), {{"axis", int64_t{1}}});
  out[0] = xs.size() == 1 ? Reshape(y, {cols}) : y;
  return OkStatus();
}

}  // namespace kiln::onnx_import::detail
