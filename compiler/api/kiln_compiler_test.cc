// The compiler library's C API (include/kiln/kiln_compiler.h), used as an
// app uses it: libkiln_compiler.so compiles an ONNX model built here, and the
// runtime (libkiln.so) runs it on Vulkan (validation and synchronization
// validation on) against hand-derived values. Errors: unknown and bad
// flags, malformed bytes, missing files, NULL arguments.
#include "kiln/kiln_compiler.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace {

// y = Sqrt(a) + b for f32 inputs a:[N], b:[4] (N is a dynamic dim).
std::string AddSqrtModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("g");
  auto tensor = [](onnx::ValueInfoProto* v, const char* name, const char* dim_param) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto_DataType_FLOAT);
    auto* d = tt->mutable_shape()->add_dim();
    if (dim_param) d->set_dim_param(dim_param); else d->set_dim_value(4);
  };
  tensor(g->add_input(), "a", "N");
  tensor(g->add_input(), "b", nullptr);
  tensor(g->add_output(), "y", nullptr);
  onnx::NodeProto* sqrt = g->add_node();
  sqrt->set_op_type("Sqrt");
  sqrt->set_name("root");
  sqrt->add_input("a");
  sqrt->add_output("s");
  onnx::NodeProto* add = g->add_node();
  add->set_op_type("Add");
  add->set_name("sum");
  add->add_input("s");
  add->add_input("b");
  add->add_output("y");
  return m.SerializeAsString();
}

std::string Str(kiln_status_t s) {
  std::string r = kiln_status_code_name(kiln_status_code(s));
  if (s) r += std::string(": ") + kiln_status_message(s);
  kiln_status_free(s);
  return r;
}

TEST(KilnCompilerTest, CompiledModelRunsOnTheRuntime) {
  std::string onnx = AddSqrtModel();
  const char* flags[] = {"--input-shape=a=4", "--module-name=addsqrt"};
  kiln_compile_output_t out = {};
  ASSERT_EQ(kiln_compile_onnx(onnx.data(), onnx.size(), flags, 2, &out), 0) << out.error;
  ASSERT_NE(out.module, nullptr);
  EXPECT_EQ(out.error, nullptr);
  ASSERT_GT(out.module_size, 0u);

  kiln_instance_t instance = nullptr;
  kiln_device_t device = nullptr;
  kiln_module_t module = nullptr;
  kiln_context_t context = nullptr;
  kiln_function_t fn = nullptr;
  ASSERT_EQ(Str(kiln_instance_create(&instance)), "OK");
  ASSERT_EQ(Str(kiln_device_create(instance, "vulkan", nullptr, -1, &device)), "OK");
  ASSERT_EQ(Str(kiln_module_load_from_memory(instance, out.module, out.module_size, &module)), "OK");
  EXPECT_STREQ(kiln_module_name(module), "addsqrt");
  ASSERT_EQ(Str(kiln_context_create(device, &module, 1, &context)), "OK");
  ASSERT_EQ(Str(kiln_context_lookup_function(context, "main", &fn)), "OK");
  const float a[4] = {0.0f, 1.0f, 2.25f, 16.0f}, b[4] = {10.0f, -1.0f, 0.5f, 0.25f};
  int64_t dims[1] = {4};
  kiln_tensor_t args[2] = {}, y = nullptr;
  ASSERT_EQ(Str(kiln_tensor_create(device, KILN_DTYPE_F32, 1, dims, a, sizeof(a), &args[0])), "OK");
  ASSERT_EQ(Str(kiln_tensor_create(device, KILN_DTYPE_F32, 1, dims, b, sizeof(b), &args[1])), "OK");
  ASSERT_EQ(Str(kiln_invoke(context, fn, args, 2, &y, 1)), "OK");
  float got[4] = {};
  ASSERT_EQ(Str(kiln_tensor_read(y, got, sizeof(got))), "OK");
  const float want[4] = {10.0f, 0.0f, 2.0f, 4.25f};  // sqrt(a) + b, exact in f32
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got[i], want[i]) << i;
  kiln_tensor_release(y);
  kiln_tensor_release(args[0]);
  kiln_tensor_release(args[1]);
  kiln_context_release(context);
  kiln_module_release(module);
  kiln_device_release(device);
  kiln_instance_release(instance);
  kiln_compile_output_free(&out);  // the module used the bytes in place
  EXPECT_EQ(out.module, nullptr);
}

TEST(KilnCompilerTest, FileCompileNamesTheModuleAfterTheFile) {
  std::string onnx = AddSqrtModel();
  std::string path = ::testing::TempDir() + "/add_sqrt.v1.onnx";
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(onnx.data(), 1, onnx.size(), f), onnx.size());
  std::fclose(f);
  const char* flags[] = {"--input-shape=a=4"};
  kiln_compile_output_t out = {};
  ASSERT_EQ(kiln_compile_onnx_file(path.c_str(), flags, 1, &out), 0) << out.error;
  kiln_instance_t instance = nullptr;
  kiln_module_t module = nullptr;
  ASSERT_EQ(Str(kiln_instance_create(&instance)), "OK");
  ASSERT_EQ(Str(kiln_module_load_from_memory(instance, out.module, out.module_size, &module)), "OK");
  EXPECT_STREQ(kiln_module_name(module), "add_sqrt");
  kiln_module_release(module);
  kiln_instance_release(instance);
  kiln_compile_output_free(&out);
  std::remove(path.c_str());
}

// Every failure returns nonzero with a message that says what to fix, and
// no module.
TEST(KilnCompilerTest, ErrorsSayWhatIsWrong) {
  std::string onnx = AddSqrtModel();
  struct Case {
    std::vector<const char*> flags;
    const char* want;
  } cases[] = {
      {{}, "'a'"},  // the dynamic dim N needs --input-shape
      {{"--inptu-shape=a=4"}, "unknown compile flag '--inptu-shape=a=4'"},
      {{"--input-shape=a=4x"}, "--input-shape"},
      {{"--input-shape=a=4", "--topology=nowhere"}, "--topology"},
      {{"--input-shape=a=4", "--consume=zz"}, "mark-consumed-arguments=zz: no function argument is named 'zz'"},
      {{"--input-shape=a=4", "--module-name=a b"}, "bad --module-name"},
  };
  for (const Case& c : cases) {
    kiln_compile_output_t out = {};
    EXPECT_NE(kiln_compile_onnx(onnx.data(), onnx.size(), c.flags.data(), c.flags.size(), &out), 0)
        << c.want;
    ASSERT_NE(out.error, nullptr) << c.want;
    EXPECT_NE(std::string(out.error).find(c.want), std::string::npos) << out.error;
    EXPECT_EQ(out.module, nullptr);
    kiln_compile_output_free(&out);
    EXPECT_EQ(out.error, nullptr);
  }
  kiln_compile_output_t out = {};
  const char garbage[] = "not an onnx model at all";
  EXPECT_NE(kiln_compile_onnx(garbage, sizeof(garbage), nullptr, 0, &out), 0);
  ASSERT_NE(out.error, nullptr);
  kiln_compile_output_free(&out);
  EXPECT_NE(kiln_compile_onnx_file("/nonexistent/model.onnx", nullptr, 0, &out), 0);
  ASSERT_NE(out.error, nullptr);
  EXPECT_NE(std::string(out.error).find("/nonexistent/model.onnx"), std::string::npos) << out.error;
  kiln_compile_output_free(&out);
  const char* null_flag[] = {nullptr};
  EXPECT_NE(kiln_compile_onnx(onnx.data(), onnx.size(), null_flag, 1, &out), 0);
  EXPECT_NE(std::string(out.error).find("flags[0] is NULL"), std::string::npos) << out.error;
  kiln_compile_output_free(&out);
  EXPECT_NE(kiln_compile_onnx(nullptr, 0, nullptr, 0, &out), 0);
  kiln_compile_output_free(&out);
  EXPECT_NE(kiln_compile_onnx(onnx.data(), onnx.size(), nullptr, 0, nullptr), 0);
  kiln_compile_output_free(nullptr);
}

TEST(KilnCompilerTest, VersionMatchesTheRuntime) {
  EXPECT_STREQ(kiln_compiler_version(), kiln_version());
}

}  // namespace
