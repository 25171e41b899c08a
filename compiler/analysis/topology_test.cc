// Tests of topology parsing, the module-level op and serialization (topology.h).
#include "compiler/analysis/topology.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "kiln_module_generated.h"

namespace kiln::analysis {
namespace {

TEST(TopologyTest, Presets) {
  Topology u = Topology::Unified();
  ASSERT_EQ(u.devices().size(), 2u);
  EXPECT_EQ(u.kind(), "unified");
  EXPECT_EQ(u.ToSpec(), "unified");
  int host = u.Resolve("host"), gpu = u.Resolve("gpu");
  EXPECT_EQ(u.devices()[host].kind, DeviceKind::kHost);
  EXPECT_EQ(u.devices()[gpu].kind, DeviceKind::kGpu);
  EXPECT_TRUE(u.SharesMemory(host, gpu));
  EXPECT_TRUE(u.RequiresUnifiedMemory());
  EXPECT_EQ(u.Resolve(""), gpu);  // the default device is the first gpu

  Topology d = Topology::Discrete();
  EXPECT_EQ(d.kind(), "discrete");
  EXPECT_FALSE(d.SharesMemory(d.Resolve("host"), d.Resolve("gpu")));
  EXPECT_TRUE(d.SharesMemory(d.Resolve("gpu"), d.Resolve("gpu")));
  EXPECT_FALSE(d.RequiresUnifiedMemory());
  EXPECT_EQ(d.Resolve("npu"), -1);
}

TEST(TopologyTest, ParsesFileFormat) {
  auto t = ParseTopology(
      "# a phone with an NPU-less SoC and an external accelerator\n"
      "device host kind=host\n"
      "device gpu0 kind=gpu   # integrated\n"
      "\n"
      "device gpu1 kind=gpu\n"
      "link host gpu0 unified\n"
      "link gpu1 host discrete\n",
      "soc.topo");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->devices().size(), 3u);
  EXPECT_EQ(t->kind(), "custom");
  EXPECT_TRUE(t->SharesMemory(t->Resolve("host"), t->Resolve("gpu0")));
  EXPECT_TRUE(t->SharesMemory(t->Resolve("gpu0"), t->Resolve("host")));
  EXPECT_FALSE(t->SharesMemory(t->Resolve("host"), t->Resolve("gpu1")));
  EXPECT_FALSE(t->SharesMemory(t->Resolve("gpu0"), t->Resolve("gpu1")));  // no link
  EXPECT_EQ(t->Resolve("gpu"), -1);  // two gpus: the kind name is ambiguous
  EXPECT_EQ(t->Resolve(""), t->Resolve("gpu0"));
  EXPECT_TRUE(t->RequiresUnifiedMemory());
  // The spec reads back to the same topology.
  auto again = ParseTopology(t->ToSpec(), "spec");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->ToSpec(), t->ToSpec());
}

TEST(TopologyTest, KindNameResolvesTheOnlyDeviceOfThatKind) {
  auto t = ParseTopology("device cpu kind=host; device gpu0 kind=gpu; link cpu gpu0 unified", "x");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->Resolve("gpu"), t->Resolve("gpu0"));
  EXPECT_EQ(t->Resolve("host"), t->Resolve("cpu"));
  EXPECT_EQ(t->kind(), "custom");
}

TEST(TopologyTest, FileEqualToAPresetIsThatPreset) {
  auto t = ParseTopology("device host kind=host\ndevice gpu kind=gpu\nlink gpu host unified\n", "f");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->kind(), "unified");
  auto p = ParseTopology("  discrete \n", "f");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->kind(), "discrete");
}

void ExpectError(const char* text, const char* message) {
  auto t = ParseTopology(text, "t.topo");
  ASSERT_FALSE(t.ok()) << text;
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t.status().message(), message);
}

TEST(TopologyTest, ErrorsNameFileAndLine) {
  ExpectError("device host kind=host\ndevice gpu kind=gpu\nlink host gpu1 unified\n",
              "t.topo:3: link names unknown device 'gpu1'");
  ExpectError("device host kind=cpu\n", "t.topo:1: bad device kind 'kind=cpu' (want kind=host or kind=gpu)");
  ExpectError("\n\ndevice a kind=gpu\ndevice a kind=gpu\n", "t.topo:4: device 'a' declared twice");
  ExpectError("device a kind=gpu\nlink a a unified\n", "t.topo:2: link joins device 'a' to itself");
  ExpectError("device a kind=gpu\ndevice b kind=host\nlink a b shared\n",
              "t.topo:3: bad link kind 'shared' (want unified or discrete)");
  ExpectError("device a kind=gpu\ndevice b kind=host\nlink a b unified\nlink b a discrete\n",
              "t.topo:4: second link between 'b' and 'a'");
  ExpectError("devices a\n", "t.topo:1: unknown statement 'devices' (want `device` or `link`)");
  ExpectError("device a\n", "t.topo:1: expected `device NAME kind=host|gpu`");
  ExpectError("device a b kind=gpu\n", "t.topo:1: expected `device NAME kind=host|gpu`");
  ExpectError("device a/b kind=gpu\n", "t.topo:1: bad device name 'a/b' (want [A-Za-z0-9_.-]+)");
  ExpectError("link a b\n", "t.topo:1: expected `link NAME NAME unified|discrete`");
  ExpectError("# nothing\n",
              "t.topo: topology declares no device (want `device NAME kind=host|gpu` lines, or the "
              "presets `unified` / `discrete`)");
}

TEST(TopologyTest, FlagReadsPresetsAndFiles) {
  EXPECT_EQ(ParseTopologyFlag("unified")->kind(), "unified");
  EXPECT_EQ(ParseTopologyFlag("discrete")->kind(), "discrete");
  auto missing = ParseTopologyFlag("/nonexistent/kiln.topo");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  std::string path = ::testing::TempDir() + "kiln_topology_test.topo";
  {
    std::ofstream out(path);
    out << "device host kind=host\ndevice gpu0 kind=gpu\nlink host gpu0 bogus\n";
  }
  auto bad = ParseTopologyFlag(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind(path + ":3: ", 0), 0u) << bad.status().message();
  std::remove(path.c_str());
}

TEST(TopologyTest, ModuleOpRoundTrip) {
  auto parsed = ir::ParseModule(
      "\"func.func\"() ({\n  \"func.return\"() : () -> ()\n}) {sym_name = \"f\"} : () -> ()\n", "m.kir");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ir::Module& m = **parsed;
  EXPECT_EQ(GetModuleTopology(m).status().code(), StatusCode::kNotFound);

  SetModuleTopology(m, Topology::Unified());
  std::string text = ir::PrintModule(m);
  EXPECT_EQ(text.rfind("\"kiln.topology\"() {spec = \"unified\"} : () -> ()\n", 0), 0u) << text;
  auto t = GetModuleTopology(m);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->kind(), "unified");

  // Replacing keeps one op; a custom topology is written as statements.
  auto custom = ParseTopology("device cpu kind=host; device gpu0 kind=gpu; link cpu gpu0 discrete", "c");
  ASSERT_TRUE(custom.ok());
  SetModuleTopology(m, *custom);
  auto reparsed = ir::ParseModule(ir::PrintModule(m), "again.kir");
  ASSERT_TRUE(reparsed.ok()) << reparsed.status().message();
  auto t2 = GetModuleTopology(**reparsed);
  ASSERT_TRUE(t2.ok()) << t2.status().message();
  EXPECT_EQ(t2->ToSpec(), "device cpu kind=host; device gpu0 kind=gpu; link cpu gpu0 discrete");
  EXPECT_EQ((*reparsed)->functions().size(), 1u);

  // A malformed spec is an error naming the op.
  auto bad = ir::ParseModule("\"kiln.topology\"() {spec = \"device x\"} : () -> ()\n", "b.kir");
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(GetModuleTopology(**bad).status().message(),
            "kiln.topology:1: expected `device NAME kind=host|gpu`");
}

TEST(TopologyTest, SerializesToTheSchema) {
  auto t = ParseTopology("device host kind=host\ndevice gpu0 kind=gpu\ndevice gpu1 kind=gpu\n"
                         "link host gpu0 unified\nlink host gpu1 discrete\n",
                         "s");
  ASSERT_TRUE(t.ok());
  flatbuffers::FlatBufferBuilder fbb;
  auto off = SerializeTopology(fbb, *t);
  fbb.Finish(off);
  auto* topo = flatbuffers::GetRoot<format::Topology>(fbb.GetBufferPointer());
  EXPECT_EQ(topo->kind()->str(), "custom");
  ASSERT_EQ(topo->devices()->size(), 3u);
  EXPECT_EQ(topo->devices()->Get(0)->name()->str(), "host");
  EXPECT_EQ(topo->devices()->Get(0)->kind(), format::DeviceKind::host);
  EXPECT_EQ(topo->devices()->Get(2)->kind(), format::DeviceKind::gpu);
  ASSERT_EQ(topo->links()->size(), 2u);
  EXPECT_EQ(topo->links()->Get(0)->a(), 0);
  EXPECT_EQ(topo->links()->Get(0)->b(), 1);
  EXPECT_TRUE(topo->links()->Get(0)->unified());
  EXPECT_FALSE(topo->links()->Get(1)->unified());
}

}  // namespace
}  // namespace kiln::analysis
