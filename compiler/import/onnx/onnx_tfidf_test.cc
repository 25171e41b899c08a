// Tests for ONNX TfIdfVectorizer (onnx_tfidf.cc) against hand-derived
// counts, through the host interpreter; the ONNX node tests
// (test_tfidfvectorizer_*) check it on Vulkan.
#include <gtest/gtest.h>

#include "compiler/import/onnx/onnx_test_model.h"

namespace kiln::onnx_import::testing {
namespace {

constexpr int kI64 = onnx::TensorProto_DataType_INT64;
constexpr int kI32 = onnx::TensorProto_DataType_INT32;
constexpr int kF = onnx::TensorProto_DataType_FLOAT;

// X = [[1, 2, 1, 2], [2, 2, 2, 1]]; pool: unigrams 1, 2, bigrams (1,2),
// (2,1); ngram_indexes [3, 0, 1, 2]; lengths 1..2, max_skip_count 1.
//   row 0: 1 x2, 2 x2; distance 1: (1,2) (2,1) (1,2); distance 2: (1,1) (2,2)
//          → counts in pool order [2, 2, 2, 1]
//   row 1: 1 x1, 2 x3; distance 1: (2,2) (2,2) (2,1); distance 2: (2,2) (2,1)
//          → [1, 3, 0, 2]
// Output column c holds the pooled n-gram j with ngram_indexes[j] = c.
NodeModel Model(const std::string& mode) {
  NodeModel m("TfIdfVectorizer", {{kI64, {2, 4}, {1, 2, 1, 2, 2, 2, 2, 1}}}, 1);
  m.Str("mode", mode).Int("min_gram_length", 1).Int("max_gram_length", 2).Int("max_skip_count", 1);
  m.Ints("ngram_counts", {0, 2}).Ints("ngram_indexes", {3, 0, 1, 2}).Ints("pool_int64s", {1, 2, 1, 2, 2, 1});
  return m;
}

std::vector<double> Counts(const NodeModel& m) {
  std::string err;
  auto out = m.Run(&err);
  EXPECT_EQ(out.size(), 1u) << err;
  if (out.size() != 1) return {};
  EXPECT_EQ(out[0].type.dtype, DType::kF32);
  EXPECT_EQ(out[0].type.shape, (std::vector<int64_t>{2, 4}));
  return Values(out[0]);
}

TEST(OnnxTfIdf, TermFrequencyHandDerived) {
  EXPECT_EQ(Counts(Model("TF")), (std::vector<double>{2, 2, 1, 2, 3, 0, 2, 1}));
}

TEST(OnnxTfIdf, WeightsScaleTfIdfAndIdf) {
  // weights in pool order [0.5, 1, 2, 4].
  NodeModel tfidf = Model("TFIDF");
  tfidf.Floats("weights", {0.5f, 1, 2, 4});
  // scores [1, 2, 4, 4] and [0.5, 3, 0, 8]
  EXPECT_EQ(Counts(tfidf), (std::vector<double>{2, 4, 4, 1, 3, 0, 8, 0.5}));
  NodeModel idf = Model("IDF");
  idf.Floats("weights", {0.5f, 1, 2, 4});
  // present → the weight: [0.5, 1, 2, 4] and [0.5, 1, 0, 4]
  EXPECT_EQ(Counts(idf), (std::vector<double>{1, 2, 4, 0.5, 1, 0, 4, 0.5}));
  // IDF without weights: 1 where present.
  EXPECT_EQ(Counts(Model("IDF")), (std::vector<double>{1, 1, 1, 1, 1, 0, 1, 1}));
  // TF ignores the weights.
  NodeModel tf = Model("TF");
  tf.Floats("weights", {0.5f, 1, 2, 4});
  EXPECT_EQ(Counts(tf), (std::vector<double>{2, 2, 1, 2, 3, 0, 2, 1}));
}

TEST(OnnxTfIdf, OneDimensionalInputUnmappedColumnsAndLengthsOutsideRange) {
  // X = [7, 8, 7, 9, 7] (int32), pool unigrams 7, 9 → columns 0, 3; bigram
  // (7, 9) → column 4, but only bigrams are counted (min = max = 2), so the
  // unigram columns are 0 too; columns 1, 2 are mapped by nothing.
  // Distance 1: (7,8) (8,7) (7,9) (9,7); distance 2 (max_skip_count 1):
  // (7,7) (8,9) (7,7) → (7, 9) once.
  NodeModel m("TfIdfVectorizer", {{kI32, {5}, {7, 8, 7, 9, 7}}}, 1);
  m.Str("mode", "TF").Int("min_gram_length", 2).Int("max_gram_length", 2).Int("max_skip_count", 1);
  m.Ints("ngram_counts", {0, 2}).Ints("ngram_indexes", {0, 3, 4}).Ints("pool_int64s", {7, 9, 7, 9});
  std::string err;
  auto out = m.Run(&err);
  ASSERT_EQ(out.size(), 1u) << err;
  EXPECT_EQ(out[0].type.shape, (std::vector<int64_t>{5}));
  EXPECT_EQ(Values(out[0]), (std::vector<double>{0, 0, 0, 0, 1}));
}

TEST(OnnxTfIdf, BadAttributesAreClearErrors) {
  auto error = [](NodeModel m) {
    auto r = m.Import();
    return r.ok() ? std::string("ok") : r.status().message();
  };
  EXPECT_NE(error(Model("BM25")).find("node 'n' (TfIdfVectorizer): attribute 'mode' must be"), std::string::npos);
  NodeModel strings = Model("TF");
  strings.Strs("pool_strings", {"a"});
  EXPECT_NE(error(strings).find("'pool_strings'"), std::string::npos) << error(strings);
  NodeModel short_idx("TfIdfVectorizer", {{kI64, {4}, {1, 2, 3, 4}}}, 1);
  short_idx.Str("mode", "TF").Int("min_gram_length", 1).Int("max_gram_length", 1);
  short_idx.Ints("ngram_counts", {0}).Ints("ngram_indexes", {0}).Ints("pool_int64s", {1, 2});
  EXPECT_NE(error(short_idx).find("ngram_indexes has 1 entries for 2 pooled n-grams"), std::string::npos)
      << error(short_idx);
  NodeModel floats("TfIdfVectorizer", {{kF, {2}, {1, 2}}}, 1);
  floats.Str("mode", "TF").Int("min_gram_length", 1).Int("max_gram_length", 1);
  floats.Ints("ngram_counts", {0}).Ints("ngram_indexes", {0}).Ints("pool_int64s", {1});
  EXPECT_NE(error(floats).find("input X must be int32 or int64"), std::string::npos) << error(floats);
}

}  // namespace
}  // namespace kiln::onnx_import::testing
