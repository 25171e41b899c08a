// A C++17 app built against an installed Kiln (tests/install/consumer_test.sh):
// RAII handles over the C API. It links libvulkan itself and calls
// vkEnumerateInstanceVersion before and after using Kiln, then runs a
// one-input, one-output model and compares with a golden.
//
//   kiln-consumer-cxx MODEL.kiln INPUT.npy GOLDEN.npy
//
// Tolerance (as tests/e2e/model_golden_test.cc): 1e-4 absolute, or 1e-3
// relative where |golden| > 1. Exit 0 with "ok: ..." or 1 with "error: ...".
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <kiln/kiln.h>
#include <vulkan/vulkan.h>

#include "npy_read.h"

namespace {

template <typename T, void (*Release)(T)>
struct Releaser {
  void operator()(T handle) const { Release(handle); }
};
using Instance = std::unique_ptr<kiln_instance_s, Releaser<kiln_instance_t, kiln_instance_release>>;
using Device = std::unique_ptr<kiln_device_s, Releaser<kiln_device_t, kiln_device_release>>;
using Module = std::unique_ptr<kiln_module_s, Releaser<kiln_module_t, kiln_module_release>>;
using Context = std::unique_ptr<kiln_context_s, Releaser<kiln_context_t, kiln_context_release>>;
using Tensor = std::unique_ptr<kiln_tensor_s, Releaser<kiln_tensor_t, kiln_tensor_release>>;

void Check(kiln_status_t status, const char* what) {
  if (!status) return;
  std::string message = std::string(what) + ": " + kiln_status_message(status);
  kiln_status_free(status);
  throw std::runtime_error(message);
}

struct Npy {
  npy_array array{};
  explicit Npy(const char* path) {
    char err[512];
    if (npy_read_f32(path, &array, err, sizeof(err)) != 0) throw std::runtime_error(err);
  }
  ~Npy() { npy_array_free(&array); }
};

void CheckAppVulkan(const char* when) {
  uint32_t version = 0;
  if (vkEnumerateInstanceVersion(&version) != VK_SUCCESS || version < VK_API_VERSION_1_1) {
    throw std::runtime_error(std::string("the app's own vkEnumerateInstanceVersion failed ") + when);
  }
  std::printf("app vulkan %s: %u.%u\n", when, VK_API_VERSION_MAJOR(version),
              VK_API_VERSION_MINOR(version));
}

int Run(const char* model_path, const char* input_path, const char* golden_path) {
  CheckAppVulkan("before kiln");
  Npy x(input_path), golden(golden_path);
  kiln_instance_t raw_instance = nullptr;
  Check(kiln_instance_create(&raw_instance), "instance");
  Instance instance(raw_instance);
  kiln_device_t raw_device = nullptr;
  Check(kiln_device_create(instance.get(), "vulkan", nullptr, -1, &raw_device), "device");
  Device device(raw_device);
  kiln_module_t raw_module = nullptr;
  Check(kiln_module_load_from_file(instance.get(), model_path, &raw_module), "module");
  Module module(raw_module);
  kiln_context_t raw_context = nullptr;
  kiln_module_t modules[] = {module.get()};
  Check(kiln_context_create(device.get(), modules, 1, &raw_context), "context");
  Context context(raw_context);
  kiln_function_t function = nullptr;
  Check(kiln_context_lookup_function(context.get(), "main", &function), "lookup");

  kiln_tensor_t raw_input = nullptr;
  Check(kiln_tensor_create(device.get(), KILN_DTYPE_F32, static_cast<size_t>(x.array.rank),
                           x.array.shape, x.array.data, x.array.element_count * sizeof(float),
                           &raw_input),
        "input");
  Tensor input(raw_input);
  kiln_tensor_t args[] = {input.get()};
  kiln_tensor_t raw_output = nullptr;
  Check(kiln_invoke(context.get(), function, args, 1, &raw_output, 1), "invoke");
  Tensor output(raw_output);

  std::vector<float> result(golden.array.element_count);
  if (kiln_tensor_byte_size(output.get()) != result.size() * sizeof(float)) {
    throw std::runtime_error("result has " + std::to_string(kiln_tensor_byte_size(output.get())) +
                             " bytes, golden " + std::to_string(result.size() * sizeof(float)));
  }
  Check(kiln_tensor_read(output.get(), result.data(), result.size() * sizeof(float)), "read");
  size_t bad = 0;
  for (size_t i = 0; i < result.size(); ++i) {
    double want = golden.array.data[i], got = result[i];
    double tol = std::abs(want) > 1 ? 1e-3 * std::abs(want) : 1e-4;
    if (!(std::abs(got - want) <= tol) && bad++ < 5) {
      std::fprintf(stderr, "error: element %zu: got %.7g, golden %.7g\n", i, got, want);
    }
  }
  if (bad) return 1;
  CheckAppVulkan("after kiln");
  std::printf("ok: %zu values match the golden (device: %s)\n", result.size(),
              kiln_device_name(device.get()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.kiln INPUT.npy GOLDEN.npy\n", argv[0]);
    return 2;
  }
  try {
    return Run(argv[1], argv[2], argv[3]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
