// CTS: device creation, selection by index and name, and DeviceInfo.
#include <algorithm>
#include <cctype>

#include "hal/cts/cts_test_base.h"

namespace kiln::hal::cts {
namespace {

class DeviceTest : public CtsTest {};

TEST_P(DeviceTest, InfoIsFilled) {
  const DeviceInfo& info = device()->info();
  EXPECT_FALSE(info.name.empty());
  EXPECT_EQ(std::string(info.driver), GetParam());
  EXPECT_GT(info.max_storage_buffer_range, 0u);
  const uint32_t alignment = info.min_storage_buffer_offset_alignment;
  EXPECT_GT(alignment, 0u);
  EXPECT_EQ(alignment & (alignment - 1), 0u) << "alignment must be a power of two";
  EXPECT_GE(info.max_push_constants_size, 128u);
  EXPECT_GE(info.max_bound_storage_buffers, 4u);
  EXPECT_GE(info.max_compute_workgroup_invocations, 128u);
  EXPECT_GE(info.max_compute_workgroup_count[0], 65535u);
}

TEST_P(DeviceTest, StatsStartAtZero) {
  const Stats& stats = device()->stats();
  EXPECT_EQ(stats.device_allocations, 0u);
  EXPECT_EQ(stats.device_bytes_live, 0u);
  EXPECT_EQ(stats.dispatches, 0u);
  EXPECT_EQ(stats.submissions, 0u);
  EXPECT_EQ(stats.barriers, 0u);
}

TEST_P(DeviceTest, EnumerateAndSelectByIndexAndName) {
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<std::string> names, EnumerateDevices(GetParam()));
  ASSERT_FALSE(names.empty());
  // The default device is the first one.
  EXPECT_EQ(std::string(device()->info().name), names[0]);

  DeviceOptions by_index;
  by_index.index = static_cast<int>(names.size()) - 1;
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Device> last, CreateDevice(GetParam(), by_index));
  EXPECT_EQ(std::string(last->info().name), names.back());

  // A case-flipped substring of the name selects the device.
  std::string fragment = names[0].substr(0, std::min<size_t>(names[0].size(), 4));
  for (char& c : fragment) {
    c = std::isupper(static_cast<unsigned char>(c)) ? std::tolower(static_cast<unsigned char>(c))
                                                    : std::toupper(static_cast<unsigned char>(c));
  }
  DeviceOptions by_name;
  by_name.name = fragment;
  by_name.index = 12345;  // name wins
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Device> named, CreateDevice(GetParam(), by_name));
  std::string lower_name(named->info().name), lower_fragment = fragment;
  for (char& c : lower_name) c = std::tolower(static_cast<unsigned char>(c));
  for (char& c : lower_fragment) c = std::tolower(static_cast<unsigned char>(c));
  EXPECT_NE(lower_name.find(lower_fragment), std::string::npos);
}

TEST_P(DeviceTest, BadSelectionIsNotFound) {
  DeviceOptions bad_name;
  bad_name.name = "no-such-gpu-kiln-xyz";
  KILN_EXPECT_CODE(CreateDevice(GetParam(), bad_name), kNotFound);
  auto status = CreateDevice(GetParam(), bad_name).status();
  EXPECT_NE(status.message().find("no-such-gpu-kiln-xyz"), std::string::npos)
      << status.ToString();
  DeviceOptions bad_index;
  bad_index.index = 1000;
  KILN_EXPECT_CODE(CreateDevice(GetParam(), bad_index), kNotFound);
}

TEST_P(DeviceTest, UnknownDriverIsNotFound) {
  KILN_EXPECT_CODE(CreateDevice("no-such-driver", DeviceOptions{}), kNotFound);
  KILN_EXPECT_CODE(EnumerateDevices("no-such-driver"), kNotFound);
}

KILN_CTS_INSTANTIATE(DeviceTest);

}  // namespace
}  // namespace kiln::hal::cts
