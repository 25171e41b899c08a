/* Minimal .npy reader for the C samples (C99, no dependencies).
 *
 * Reads NumPy format 1.0/2.0/3.0 files holding a little-endian float32 array
 * ('<f4') in C order. Anything else (other dtypes, big-endian, Fortran order,
 * truncated data) is rejected with a message in `err`.
 *
 * Ownership: on success, *out owns `data` and `shape`; release with
 * npy_array_free(). On failure *out is zeroed and nothing needs freeing.
 */
#ifndef KILN_SAMPLES_NPY_READ_H_
#define KILN_SAMPLES_NPY_READ_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NPY_READ_MAX_RANK 8

typedef struct npy_array {
  int rank;                          /* 0 for a scalar */
  int64_t shape[NPY_READ_MAX_RANK];  /* dims, outermost first */
  size_t element_count;              /* product of shape (1 for a scalar) */
  float* data;                       /* element_count floats, C order; owned */
} npy_array;

/* Reads `path` into *out. Returns 0 on success; otherwise non-zero with a
 * NUL-terminated message (at most err_size bytes) in `err`. */
int npy_read_f32(const char* path, npy_array* out, char* err, size_t err_size);

/* Frees what npy_read_f32 allocated; safe on a zeroed array. */
void npy_array_free(npy_array* array);

#ifdef __cplusplus
}
#endif

#endif /* KILN_SAMPLES_NPY_READ_H_ */
