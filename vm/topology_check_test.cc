// Tests of the run-time topology check (topology_check.h).
#include "vm/topology_check.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kiln::vm {
namespace {

struct Dev {
  const char* name;
  format::DeviceKind kind;
};

// Builds a finished Module buffer holding only a name and a topology
// (`with_topology` false: no topology table at all).
std::vector<uint8_t> BuildModule(const std::vector<Dev>& devices,
                                 const std::vector<format::TopologyLink>& links,
                                 bool with_topology = true) {
  flatbuffers::FlatBufferBuilder fbb;
  auto name = fbb.CreateString("m");
  flatbuffers::Offset<format::Topology> topo;
  if (with_topology) {
    std::vector<flatbuffers::Offset<format::TopologyDevice>> ds;
    for (const Dev& d : devices) ds.push_back(format::CreateTopologyDevice(fbb, fbb.CreateString(d.name), d.kind));
    auto dv = fbb.CreateVector(ds);
    auto lv = fbb.CreateVectorOfStructs(links);
    topo = format::CreateTopology(fbb, fbb.CreateString("custom"), dv, lv);
  }
  format::ModuleBuilder mb(fbb);
  mb.add_name(name);
  if (with_topology) mb.add_topology(topo);
  fbb.Finish(mb.Finish(), format::ModuleIdentifier());
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

const format::Module* AsModule(const std::vector<uint8_t>& bytes) {
  flatbuffers::Verifier verifier(bytes.data(), bytes.size());
  EXPECT_TRUE(format::VerifyModuleBuffer(verifier));
  return format::GetModule(bytes.data());
}

hal::DeviceInfo Device(bool unified) {
  hal::DeviceInfo info;
  info.name = unified ? "Mali-G78" : "NVIDIA GeForce RTX";
  info.unified_memory = unified;
  return info;
}

const std::vector<Dev> kHostGpu = {{"host", format::DeviceKind::host}, {"gpu", format::DeviceKind::gpu}};

TEST(TopologyCheckTest, UnifiedModuleRunsOnUnifiedDevice) {
  auto bytes = BuildModule(kHostGpu, {format::TopologyLink(0, 1, true)});
  EXPECT_TRUE(CheckModuleTopology(AsModule(bytes), Device(true)).ok());
}

TEST(TopologyCheckTest, UnifiedModuleRefusedOnDiscreteDevice) {
  auto bytes = BuildModule(kHostGpu, {format::TopologyLink(0, 1, true)});
  Status st = CheckModuleTopology(AsModule(bytes), Device(false));
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("module 'm'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("host<->gpu"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("NVIDIA GeForce RTX"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("--topology=discrete"), std::string::npos) << st.message();
}

TEST(TopologyCheckTest, DiscreteModuleRunsAnywhere) {
  auto bytes = BuildModule(kHostGpu, {format::TopologyLink(0, 1, false)});
  EXPECT_TRUE(CheckModuleTopology(AsModule(bytes), Device(true)).ok());
  EXPECT_TRUE(CheckModuleTopology(AsModule(bytes), Device(false)).ok());
}

TEST(TopologyCheckTest, NoTopologyRunsAnywhere) {
  auto bytes = BuildModule({}, {}, /*with_topology=*/false);
  EXPECT_TRUE(CheckModuleTopology(AsModule(bytes), Device(false)).ok());
  EXPECT_TRUE(CheckTopology(nullptr, Device(false), nullptr).ok());
}

TEST(TopologyCheckTest, UnifiedLinkBetweenHostsNeedsNothing) {
  auto bytes = BuildModule({{"cpu0", format::DeviceKind::host}, {"cpu1", format::DeviceKind::host},
                            {"gpu", format::DeviceKind::gpu}},
                           {format::TopologyLink(0, 1, true), format::TopologyLink(1, 2, false)});
  EXPECT_TRUE(CheckModuleTopology(AsModule(bytes), Device(false)).ok());
}

TEST(TopologyCheckTest, MixedTopologyNamesTheUnifiedLink) {
  auto bytes = BuildModule({{"host", format::DeviceKind::host}, {"gpu0", format::DeviceKind::gpu},
                            {"gpu1", format::DeviceKind::gpu}},
                           {format::TopologyLink(0, 1, false), format::TopologyLink(0, 2, true)});
  Status st = CheckModuleTopology(AsModule(bytes), Device(false));
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("host<->gpu1"), std::string::npos) << st.message();
}

TEST(TopologyCheckTest, BadLinkIndexIsDataLoss) {
  auto bytes = BuildModule(kHostGpu, {format::TopologyLink(0, 7, false)});
  Status st = CheckModuleTopology(AsModule(bytes), Device(true));
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("device 7 of 2"), std::string::npos) << st.message();
  auto self = BuildModule(kHostGpu, {format::TopologyLink(1, 1, true)});
  EXPECT_EQ(CheckModuleTopology(AsModule(self), Device(true)).code(), StatusCode::kDataLoss);
}

TEST(TopologyCheckTest, LinksWithoutDevicesAreDataLoss) {
  auto bytes = BuildModule({}, {format::TopologyLink(0, 1, true)});
  EXPECT_EQ(CheckModuleTopology(AsModule(bytes), Device(true)).code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace kiln::vm
