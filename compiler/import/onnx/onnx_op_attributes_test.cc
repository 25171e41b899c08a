// The importer's attribute table (onnx_op_attributes.h) against ONNX's own
// operator schemas (onnx::OpSchemaRegistry of Debian's libonnx, ONNX 1.12,
// every version of each op), and the errors a node with an unhandled
// attribute gets.
#include "compiler/import/onnx/onnx_op_attributes.h"

#include <gtest/gtest.h>
#include <onnx/defs/schema.h>

#include <map>
#include <set>
#include <string>

#include "compiler/import/onnx/onnx_importer.h"
#include "compiler/import/onnx/onnx_test_model.h"

namespace kiln::onnx_import {
namespace {

// Attributes added after ONNX 1.12 (so absent from libonnx's schemas) that
// the importer handles: op → {attribute: opset that added it}.
const std::map<std::string, std::map<std::string, int>>& NewerAttributes() {
  static const auto* m = [] {
    auto* r = new std::map<std::string, std::map<std::string, int>>{
        {"AveragePool", {{"dilations", 19}}},
        {"Cast", {{"saturate", 19}}},
        {"CastLike", {{"saturate", 19}}},
        {"DequantizeLinear", {{"block_size", 21}}},
        {"QuantizeLinear", {{"block_size", 21}, {"output_dtype", 21}, {"saturate", 19}}},
        {"Resize", {{"antialias", 18}, {"axes", 18}, {"keep_aspect_ratio_policy", 18}}},
        {"Split", {{"num_outputs", 18}}},
    };
    for (const char* op : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
                           "ReduceMin", "ReduceProd", "ReduceSumSquare"})
      (*r)[op]["noop_with_empty_axes"] = 18;
    return r;
  }();
  return *m;
}

// Op → the attributes of every version of its default-domain schema.
std::map<std::string, std::set<std::string>> SchemaAttributes() {
  std::map<std::string, std::set<std::string>> r;
  for (const auto& s : onnx::OpSchemaRegistry::get_all_schemas_with_history()) {
    if (!s.domain().empty() && s.domain() != "ai.onnx") continue;
    auto& attrs = r[s.Name()];
    for (const auto& kv : s.attributes()) attrs.insert(kv.first);
  }
  return r;
}

TEST(OnnxOpAttributes, EveryClaimedOpHasAnEntryAndNoOther) {
  const auto& table = OnnxOpAttributeTable();
  std::set<std::string> claimed;
  for (const std::string& op : SupportedOnnxOps()) {
    claimed.insert(op);
    EXPECT_TRUE(table.count(op)) << op << " is claimed but has no row in the attribute table";
  }
  for (const auto& kv : table) EXPECT_TRUE(claimed.count(kv.first)) << kv.first << " has a row but is not claimed";
}

TEST(OnnxOpAttributes, EverySchemaAttributeIsAcceptedOrRejectedWithAReason) {
  const auto schemas = SchemaAttributes();
  for (const auto& [op, rules] : OnnxOpAttributeTable()) {
    auto s = schemas.find(op);
    ASSERT_NE(s, schemas.end()) << op << " has no schema in ONNX 1.12";
    for (const std::string& a : s->second)
      EXPECT_TRUE(rules.accepted.count(a) || rules.rejected.count(a))
          << op << " attribute '" << a << "' (ONNX schema) is neither accepted nor rejected";
    // No typos: every listed attribute is ONNX's (or newer than 1.12, listed above).
    auto newer = NewerAttributes().find(op);
    auto known = [&](const std::string& a) {
      return s->second.count(a) || (newer != NewerAttributes().end() && newer->second.count(a));
    };
    for (const std::string& a : rules.accepted) EXPECT_TRUE(known(a)) << op << " accepts unknown attribute '" << a << "'";
    for (const auto& [a, why] : rules.rejected) {
      EXPECT_TRUE(known(a)) << op << " rejects unknown attribute '" << a << "'";
      EXPECT_FALSE(rules.accepted.count(a)) << op << " '" << a << "' is both accepted and rejected";
      EXPECT_FALSE(why.empty()) << op << " '" << a << "' is rejected without a reason";
    }
  }
}

TEST(OnnxOpAttributes, AcceptedListsOfSomeOps) {
  const auto& table = OnnxOpAttributeTable();
  EXPECT_EQ(table.at("Conv").accepted,
            (std::set<std::string>{"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}));
  EXPECT_EQ(table.at("MaxPool").accepted, (std::set<std::string>{"auto_pad", "ceil_mode", "dilations", "kernel_shape",
                                                                  "pads", "storage_order", "strides"}));
  EXPECT_EQ(table.at("AveragePool").accepted, (std::set<std::string>{"auto_pad", "ceil_mode", "count_include_pad",
                                                                      "dilations", "kernel_shape", "pads", "strides"}));
  EXPECT_TRUE(table.at("Relu").accepted == std::set<std::string>{"consumed_inputs"});
  EXPECT_TRUE(table.at("MatMul").accepted.empty());
  EXPECT_EQ(table.at("Constant").rejected.count("value_strings"), 1u);
}

using testing::NodeModel;
using testing::TestTensor;
constexpr int kF = onnx::TensorProto_DataType_FLOAT;

std::string ImportError(const NodeModel& m) {
  auto r = m.Import();
  return r.ok() ? "ok" : r.status().ToString();
}

TEST(OnnxOpAttributes, AnAttributeTheTableDoesNotListIsAnErrorNamingItTheOpAndTheNode) {
  NodeModel m("Relu", {{kF, {2}, {1, -1}}}, 1);
  m.Int("alpha", 1);  // not Relu's
  EXPECT_NE(ImportError(m).find("node 'n' (Relu): attribute 'alpha' is not handled (Relu accepts: consumed_inputs)"),
            std::string::npos)
      << ImportError(m);
}

TEST(OnnxOpAttributes, ARejectedAttributeIsAnErrorWithTheReason) {
  NodeModel m("Constant", {}, 1);
  m.Strs("value_strings", {"a"});
  EXPECT_NE(ImportError(m).find("node 'n' (Constant): attribute 'value_strings' is not supported: string tensors"),
            std::string::npos)
      << ImportError(m);
  NodeModel rnn("RNN", {{kF, {1, 1, 1}, {1}}, {kF, {1, 1, 1}, {1}}, {kF, {1, 1, 1}, {1}}}, 2);
  rnn.Int("hidden_size", 1).Floats("activation_alpha", {0.5f});
  EXPECT_NE(ImportError(rnn).find("node 'n' (RNN): attribute 'activation_alpha' is not supported"), std::string::npos)
      << ImportError(rnn);
}

TEST(OnnxOpAttributes, AnUnhandledAttributeValueIsAnErrorNamingTheNode) {
  // Conv with an auto_pad value ONNX does not define.
  NodeModel conv("Conv", {{kF, {1, 1, 3, 3}, std::vector<double>(9, 1)}, {kF, {1, 1, 2, 2}, {1, 1, 1, 1}}}, 1);
  conv.Str("auto_pad", "SAME_BOTH");
  EXPECT_NE(ImportError(conv).find("node 'n' (Conv): auto_pad 'SAME_BOTH' is not supported"), std::string::npos)
      << ImportError(conv);
  // BatchNormalization spatial = 0 (per-element statistics, opsets 1-8).
  NodeModel bn("BatchNormalization",
               {{kF, {1, 2, 1, 1}, {1, 2}}, {kF, {2}, {1, 1}}, {kF, {2}, {0, 0}}, {kF, {2}, {0, 0}}, {kF, {2}, {1, 1}}},
               1, 7);
  bn.Int("spatial", 0);
  EXPECT_NE(ImportError(bn).find("node 'n' (BatchNormalization): attribute 'spatial' = 0"), std::string::npos)
      << ImportError(bn);
  // And the same node with an accepted value imports.
  NodeModel ok("Conv", {{kF, {1, 1, 3, 3}, std::vector<double>(9, 1)}, {kF, {1, 1, 2, 2}, {1, 1, 1, 1}}}, 1);
  ok.Str("auto_pad", "SAME_UPPER");
  EXPECT_EQ(ImportError(ok), "ok");
}

}  // namespace
}  // namespace kiln::onnx_import
