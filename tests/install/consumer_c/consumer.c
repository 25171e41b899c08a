/* A C99 app built against an installed Kiln (tests/install/consumer_test.sh):
 * it links libvulkan itself and calls vkEnumerateInstanceVersion before and
 * after using Kiln (an app whose Vulkan symbols Kiln must not shadow), then
 * runs a one-input, one-output model and compares the result with a golden.
 *
 *   kiln-consumer-c MODEL.kiln INPUT.npy GOLDEN.npy
 *   kiln-consumer-c MODEL.onnx INPUT.npy GOLDEN.npy [COMPILE FLAG...]
 *
 * The second form (built with KILN_WITH_COMPILER, linking Kiln::compiler)
 * compiles the ONNX model in process with the compiler library first.
 *
 * Tolerance (as tests/e2e/model_golden_test.cc): 1e-4 absolute, or 1e-3
 * relative where |golden| > 1. Prints "ok: N values match" and exits 0;
 * exits 1 with "error: ..." on any failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>

#include <kiln/kiln.h>
#ifdef KILN_WITH_COMPILER
#include <kiln/kiln_compiler.h>
#endif
#include <vulkan/vulkan.h>

#include "npy_read.h"

static int fail(kiln_status_t status, const char* what) {
  fprintf(stderr, "error: %s: %s\n", what, kiln_status_message(status));
  kiln_status_free(status);
  return 1;
}

static int check_app_vulkan(const char* when) {
  uint32_t version = 0;
  if (vkEnumerateInstanceVersion(&version) != VK_SUCCESS || version < VK_API_VERSION_1_1) {
    fprintf(stderr, "error: the app's own vkEnumerateInstanceVersion failed %s\n", when);
    return 1;
  }
  printf("app vulkan %s: %u.%u\n", when, VK_API_VERSION_MAJOR(version),
         VK_API_VERSION_MINOR(version));
  return 0;
}

int main(int argc, char** argv) {
  kiln_instance_t instance = NULL;
  kiln_device_t device = NULL;
  kiln_module_t module = NULL;
  kiln_context_t context = NULL;
  kiln_function_t function = NULL;
  kiln_tensor_t input = NULL, output = NULL;
  kiln_status_t status;
  npy_array x = {0}, golden = {0};
  float* result = NULL;
  char err[512];
  size_t i, bad = 0;
  int rc = 1;
#ifdef KILN_WITH_COMPILER
  kiln_compile_output_t compiled = {0};
#endif

  size_t name_len = argc > 1 ? strlen(argv[1]) : 0;
  int from_onnx = name_len > 5 && strcmp(argv[1] + name_len - 5, ".onnx") == 0;
  if (argc < 4 || (argc > 4 && !from_onnx)) {
    fprintf(stderr, "usage: %s MODEL.kiln|MODEL.onnx INPUT.npy GOLDEN.npy [COMPILE FLAG...]\n",
            argv[0]);
    return 2;
  }
  if (check_app_vulkan("before kiln")) return 1;
  if (!KILN_API_VERSION_OK()) {
    fprintf(stderr, "error: libkiln %s implements API %u, this app needs %d\n", kiln_version(),
            kiln_api_version(), KILN_API_VERSION);
    return 1;
  }
  if (npy_read_f32(argv[2], &x, err, sizeof(err)) || npy_read_f32(argv[3], &golden, err, sizeof(err))) {
    fprintf(stderr, "error: %s\n", err);
    goto done;
  }
  if ((status = kiln_instance_create(&instance))) { rc = fail(status, "instance"); goto done; }
  if ((status = kiln_device_create(instance, "vulkan", NULL, -1, &device))) {
    rc = fail(status, "device");
    goto done;
  }
  if (from_onnx) {
#ifdef KILN_WITH_COMPILER
    if (kiln_compile_onnx_file(argv[1], (const char* const*)(argv + 4), (size_t)(argc - 4),
                               &compiled) != 0) {
      fprintf(stderr, "error: compile: %s\n", compiled.error);
      goto done;
    }
    printf("compiled in process by libkiln_compiler %s: %zu bytes\n", kiln_compiler_version(),
           compiled.module_size);
    /* Zero-copy: the bytes stay alive until the module is released. */
    status = kiln_module_load_from_memory(instance, compiled.module, compiled.module_size, &module);
#else
    fprintf(stderr, "error: built without KILN_WITH_COMPILER: compile %s first\n", argv[1]);
    goto done;
#endif
  } else {
    status = kiln_module_load_from_file(instance, argv[1], &module);
  }
  if (status) {
    rc = fail(status, "module");
    goto done;
  }
  if ((status = kiln_context_create(device, &module, 1, &context))) {
    rc = fail(status, "context");
    goto done;
  }
  if ((status = kiln_context_lookup_function(context, "main", &function))) {
    rc = fail(status, "lookup");
    goto done;
  }
  if ((status = kiln_tensor_create(device, KILN_DTYPE_F32, (size_t)x.rank, x.shape, x.data,
                                   x.element_count * sizeof(float), &input))) {
    rc = fail(status, "input");
    goto done;
  }
  if ((status = kiln_invoke(context, function, &input, 1, &output, 1))) {
    rc = fail(status, "invoke");
    goto done;
  }
  if (kiln_tensor_byte_size(output) != golden.element_count * sizeof(float)) {
    fprintf(stderr, "error: result has %zu bytes, golden %zu\n", kiln_tensor_byte_size(output),
            golden.element_count * sizeof(float));
    goto done;
  }
  result = (float*)malloc(golden.element_count * sizeof(float));
  if (!result) goto done;
  if ((status = kiln_tensor_read(output, result, golden.element_count * sizeof(float)))) {
    rc = fail(status, "read");
    goto done;
  }
  for (i = 0; i < golden.element_count; ++i) {
    double want = golden.data[i], got = result[i];
    double tol = fabs(want) > 1 ? 1e-3 * fabs(want) : 1e-4;
    if (!(fabs(got - want) <= tol)) {
      if (bad++ < 5) fprintf(stderr, "error: element %zu: got %.7g, golden %.7g\n", i, got, want);
    }
  }
  if (bad) goto done;
  if (check_app_vulkan("after kiln")) goto done;
  printf("ok: %zu values match the golden (device: %s)\n", golden.element_count,
         kiln_device_name(device));
  rc = 0;

done:
  free(result);
  kiln_tensor_release(output);
  kiln_tensor_release(input);
  kiln_context_release(context);
  kiln_module_release(module);
#ifdef KILN_WITH_COMPILER
  kiln_compile_output_free(&compiled);
#endif
  kiln_device_release(device);
  kiln_instance_release(instance);
  npy_array_free(&golden);
  npy_array_free(&x);
  return rc;
}
