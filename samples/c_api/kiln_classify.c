/* kiln-classify: PaddleOCR's text-direction classifier (ch_ppocr_mobile_v2.0_cls)
 * on a Kiln device, through the public C API only (C99).
 *
 *   kiln-classify CLS.kiln IMG1.npy [IMG2.npy ...]
 *
 * CLS.kiln: the classifier compiled for x=[1,3,48,192]
 *   (kiln-compile ch_ppocr_mobile_v2.0_cls_infer.onnx --input-shape=x=1x3x48x192 -o CLS.kiln)
 * IMGn.npy: float32 [1,3,48,192] tensors preprocessed as scripts/preprocess_cls.py does.
 * Env KILN_DEVICE_NAME: case-insensitive substring of the Vulkan device to use.
 *
 * Prints `device: <name>`, then one line per image:
 *   <file>: 0=<P(0 deg)> 180=<P(180 deg)> -> <label>
 * with the label of the larger probability ("0" or "180"). Exits 1 with
 * `error: ...` on stderr on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"
#include "npy_read.h"

/* Prints `error: <what>: <status message>`, frees the status, returns 1. */
static int report(kiln_status_t status, const char* what) {
  fprintf(stderr, "error: %s: %s (%s)\n", what, kiln_status_message(status),
          kiln_status_code_name(kiln_status_code(status)));
  kiln_status_free(status);
  return 1;
}

static size_t element_count(const int64_t* dims, size_t rank) {
  size_t n = 1, i;
  for (i = 0; i < rank; ++i) n *= (size_t)dims[i];
  return n;
}

static void format_shape(char* buf, size_t size, const int64_t* dims, size_t rank) {
  size_t i, used = 0;
  buf[0] = '\0';
  used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "[");
  for (i = 0; i < rank; ++i)
    used += (size_t)snprintf(buf + used, used < size ? size - used : 0, i ? ",%lld" : "%lld",
                             (long long)dims[i]);
  snprintf(buf + used, used < size ? size - used : 0, "]");
}

/* Classifies one image; prints its line. Returns 0 on success. */
static int classify(kiln_device_t device, kiln_context_t context, kiln_function_t function,
                    const kiln_tensor_signature_t* arg_sig, const char* path) {
  npy_array img;
  char err[512], want[96], got[96];
  kiln_tensor_t input = NULL, output = NULL;
  kiln_status_t status;
  float probs[2];
  int rc = 1;

  if (npy_read_f32(path, &img, err, sizeof(err)) != 0) {
    fprintf(stderr, "error: %s\n", err);
    return 1;
  }
  /* Check the shape here for a friendlier message than kiln_invoke's. */
  format_shape(want, sizeof(want), arg_sig->dims, arg_sig->rank);
  format_shape(got, sizeof(got), img.shape, (size_t)img.rank);
  if ((size_t)img.rank != arg_sig->rank || strcmp(want, got) != 0) {
    fprintf(stderr, "error: %s: shape %s does not match the module's input %s %s\n", path, got,
            arg_sig->name ? arg_sig->name : "", want);
    goto done;
  }

  status = kiln_tensor_create(device, KILN_DTYPE_F32, (size_t)img.rank, img.shape, img.data,
                              img.element_count * sizeof(float), &input);
  if (status) {
    rc = report(status, "creating the input tensor");
    goto done;
  }
  status = kiln_invoke(context, function, &input, 1, &output, 1);
  if (status) {
    rc = report(status, "invoke");
    goto done;
  }
  if (kiln_tensor_dtype(output) != KILN_DTYPE_F32 ||
      element_count(kiln_tensor_dims(output), kiln_tensor_rank(output)) != 2) {
    format_shape(got, sizeof(got), kiln_tensor_dims(output), kiln_tensor_rank(output));
    fprintf(stderr, "error: expected a float32 output with 2 elements [P(0), P(180)], got %s %s\n",
            kiln_dtype_name(kiln_tensor_dtype(output)), got);
    goto done;
  }
  status = kiln_tensor_read(output, probs, sizeof(probs));
  if (status) {
    rc = report(status, "reading the output");
    goto done;
  }
  printf("%s: 0=%.6f 180=%.6f -> %s\n", path, probs[0], probs[1],
         probs[1] > probs[0] ? "180" : "0");
  fflush(stdout);
  rc = 0;

done:
  kiln_tensor_release(output);
  kiln_tensor_release(input);
  npy_array_free(&img);
  return rc;
}

int main(int argc, char** argv) {
  kiln_instance_t instance = NULL;
  kiln_device_t device = NULL;
  kiln_module_t module = NULL;
  kiln_context_t context = NULL;
  kiln_function_t function = NULL;
  kiln_tensor_signature_t arg_sig;
  kiln_status_t status;
  const char* device_name = getenv("KILN_DEVICE_NAME");
  int rc = 1, i;

  if (argc < 3) {
    fprintf(stderr,
            "usage: kiln-classify CLS.kiln IMG1.npy [IMG2.npy ...]\n"
            "  CLS.kiln: ch_ppocr_mobile_v2.0_cls compiled for x=1x3x48x192\n"
            "  IMG.npy:  float32 [1,3,48,192] (scripts/preprocess_cls.py)\n"
            "  env KILN_DEVICE_NAME: substring of the Vulkan device name\n");
    return 2;
  }

  if ((status = kiln_instance_create(&instance))) {
    rc = report(status, "creating the instance");
    goto done;
  }
  if ((status = kiln_module_load_from_file(instance, argv[1], &module))) {
    fprintf(stderr, "error: loading %s: %s (%s)\n", argv[1], kiln_status_message(status),
            kiln_status_code_name(kiln_status_code(status)));
    kiln_status_free(status);
    goto done;
  }
  if ((status = kiln_device_create(instance, "vulkan", device_name, -1, &device))) {
    rc = report(status, "creating the Vulkan device");
    goto done;
  }
  printf("device: %s\n", kiln_device_name(device));
  fflush(stdout);
  if ((status = kiln_context_create(device, &module, 1, &context))) {
    rc = report(status, "creating the context");
    goto done;
  }
  if ((status = kiln_context_lookup_function(context, "main", &function))) {
    rc = report(status, "looking up function 'main'");
    goto done;
  }
  if (kiln_function_arg_count(function) != 1 || kiln_function_result_count(function) != 1) {
    fprintf(stderr, "error: %s: expected 1 input and 1 output, the module's 'main' has %zu and %zu\n",
            argv[1], kiln_function_arg_count(function), kiln_function_result_count(function));
    goto done;
  }
  if ((status = kiln_function_arg(function, 0, &arg_sig))) {
    rc = report(status, "reading the input signature");
    goto done;
  }
  if (arg_sig.dtype != KILN_DTYPE_F32) {
    fprintf(stderr, "error: %s: input 0 must be f32, the module says %s\n", argv[1],
            kiln_dtype_name(arg_sig.dtype));
    goto done;
  }

  rc = 0;
  for (i = 2; i < argc && rc == 0; ++i) rc = classify(device, context, function, &arg_sig, argv[i]);

done:
  kiln_context_release(context);
  kiln_module_release(module);
  kiln_device_release(device);
  kiln_instance_release(instance);
  return rc;
}
