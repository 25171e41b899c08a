#include "tools/npy.h"

#include <gtest/gtest.h>

#include <cstring>

namespace kiln::tools {
namespace {

TEST(NpyTest, RoundTripEveryDtype) {
  const kiln_dtype_t dtypes[] = {KILN_DTYPE_F32, KILN_DTYPE_F64, KILN_DTYPE_F16, KILN_DTYPE_I64,
                                 KILN_DTYPE_I32, KILN_DTYPE_I16, KILN_DTYPE_I8,  KILN_DTYPE_U8,
                                 KILN_DTYPE_BOOL, KILN_DTYPE_U16, KILN_DTYPE_U32, KILN_DTYPE_U64};
  for (kiln_dtype_t dt : dtypes) {
    NpyArray a;
    a.dtype = dt;
    a.shape = {2, 3};
    a.data.resize(6 * kiln_dtype_size(dt));
    for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = static_cast<uint8_t>(i % 2);
    std::vector<uint8_t> bytes;
    std::string error;
    ASSERT_TRUE(SerializeNpy(a, &bytes, &error)) << error;
    EXPECT_EQ((bytes.size() - a.data.size()) % 64, 0u);
    NpyArray b;
    ASSERT_TRUE(ParseNpy("x.npy", bytes, &b, &error)) << error;
    EXPECT_EQ(b.dtype, dt);
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.data, a.data);
  }
  NpyArray scalar;
  scalar.dtype = KILN_DTYPE_F32;
  scalar.data.resize(4);
  std::vector<uint8_t> bytes;
  std::string error;
  ASSERT_TRUE(SerializeNpy(scalar, &bytes, &error));
  NpyArray back;
  ASSERT_TRUE(ParseNpy("s.npy", bytes, &back, &error)) << error;
  EXPECT_TRUE(back.shape.empty());
}

std::vector<uint8_t> Make(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> b(10 + header.size() + data_bytes, 0);
  const uint8_t magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  std::memcpy(b.data(), magic, 8);
  b[8] = static_cast<uint8_t>(header.size());
  std::memcpy(b.data() + 10, header.data(), header.size());
  return b;
}

TEST(NpyTest, Errors) {
  NpyArray a;
  std::string error;
  EXPECT_FALSE(ParseNpy("f.npy", Make("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16), &a, &error));
  EXPECT_EQ(error, "f.npy: Fortran-order arrays are not supported (use C order)");
  EXPECT_FALSE(ParseNpy("b.npy", Make("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8), &a, &error));
  EXPECT_EQ(error, "b.npy: unsupported dtype '>f4' (big-endian); supported: f32, f64, f16, i64, i32, i16, i8, u8, bool, u16, u32, u64");
  EXPECT_FALSE(ParseNpy("c.npy", Make("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16), &a, &error));
  EXPECT_FALSE(ParseNpy("t.npy", Make("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", 15), &a, &error));
  EXPECT_EQ(error, "t.npy: expected 16 bytes of data, file has 15");
  EXPECT_FALSE(ParseNpy("m.npy", {1, 2, 3}, &a, &error));
  EXPECT_EQ(error, "m.npy: not a .npy file (bad magic)");
  auto big = Make("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", 16);
  big[8] = 0xFF;  // header length past the end
  EXPECT_FALSE(ParseNpy("h.npy", big, &a, &error));
  EXPECT_EQ(error, "h.npy: truncated .npy header");
  EXPECT_TRUE(ParseNpy("u.npy", Make("{'descr': '<u1', 'fortran_order': False, 'shape': (3,), }", 3), &a, &error)) << error;
  EXPECT_EQ(a.dtype, KILN_DTYPE_U8);
  EXPECT_FALSE(ReadNpy("/nonexistent/x.npy", &a, &error));
}

}  // namespace
}  // namespace kiln::tools
