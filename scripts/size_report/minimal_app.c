/* The minimal app of scripts/size_report.sh: loads a module, creates a
 * Vulkan device and a context, invokes "main" on one f32 input of the
 * argument's shape (zeros) and reads the first result back. Built twice:
 * with KILN_SIZE_BASELINE (no Kiln call; the same file I/O and libc use) and
 * without; the size difference is what the runtime adds. */
#include <stdio.h>
#include <stdlib.h>

#ifndef KILN_SIZE_BASELINE
#include "kiln/kiln.h"
#endif

int main(int argc, char** argv) {
  float out[64];
  if (argc != 2) {
    fprintf(stderr, "usage: minimal_app MODULE.kiln\n");
    return 2;
  }
#ifdef KILN_SIZE_BASELINE
  FILE* f = fopen(argv[1], "rb");
  if (!f) return 1;
  out[0] = (float)fgetc(f);
  fclose(f);
  printf("%f\n", out[0]);
  return 0;
#else
  kiln_instance_t inst = NULL;
  kiln_device_t dev = NULL;
  kiln_module_t mod = NULL;
  kiln_context_t ctx = NULL;
  kiln_function_t fn = NULL;
  kiln_tensor_t x = NULL, y = NULL;
  kiln_tensor_signature_t sig;
  kiln_status_t st;
  if ((st = kiln_instance_create(&inst)) || (st = kiln_device_create(inst, "vulkan", NULL, -1, &dev)) ||
      (st = kiln_module_load_from_file(inst, argv[1], &mod)) || (st = kiln_context_create(dev, &mod, 1, &ctx)) ||
      (st = kiln_context_lookup_function(ctx, "main", &fn)) || (st = kiln_function_arg(fn, 0, &sig)) ||
      (st = kiln_tensor_create(dev, sig.dtype, sig.rank, sig.dims, NULL, 0, &x)) ||
      (st = kiln_invoke(ctx, fn, &x, 1, &y, 1)) ||
      (st = kiln_tensor_read(y, out, kiln_tensor_byte_size(y) < sizeof(out) ? kiln_tensor_byte_size(y) : sizeof(out)))) {
    fprintf(stderr, "error: %s\n", kiln_status_message(st));
    kiln_status_free(st);
    return 1;
  }
  printf("%f\n", out[0]);
  kiln_tensor_release(y);
  kiln_tensor_release(x);
  kiln_context_release(ctx);
  kiln_module_release(mod);
  kiln_device_release(dev);
  kiln_instance_release(inst);
  return 0;
#endif
}
