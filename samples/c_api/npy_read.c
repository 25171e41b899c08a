/* Minimal .npy float32 reader; see npy_read.h. */
#include "npy_read.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char* err, size_t err_size, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (err && err_size) vsnprintf(err, err_size, fmt, ap);
  va_end(ap);
  return 1;
}

/* Finds the value text that follows 'key': in the header dict; returns a
 * pointer to its first non-space character or NULL. */
static const char* find_key(const char* header, const char* key) {
  const char* p = strstr(header, key);
  if (!p) return NULL;
  p += strlen(key);
  while (*p == ' ') ++p;
  if (*p != ':') return NULL;
  ++p;
  while (*p == ' ') ++p;
  return p;
}

void npy_array_free(npy_array* array) {
  if (!array) return;
  free(array->data);
  memset(array, 0, sizeof(*array));
}

int npy_read_f32(const char* path, npy_array* out, char* err, size_t err_size) {
  FILE* f = NULL;
  char* header = NULL;
  unsigned char preamble[12];
  size_t header_len, preamble_len, i;
  int major;
  const char* p;
  int rc = 1;

  memset(out, 0, sizeof(*out));
  f = fopen(path, "rb");
  if (!f) return fail(err, err_size, "%s: cannot open", path);

  if (fread(preamble, 1, 10, f) != 10 || memcmp(preamble, "\x93NUMPY", 6) != 0) {
    fail(err, err_size, "%s: not a .npy file (bad magic)", path);
    goto done;
  }
  major = preamble[6];
  if (major == 1) {
    header_len = (size_t)preamble[8] | ((size_t)preamble[9] << 8);
    preamble_len = 10;
  } else if (major == 2 || major == 3) {
    if (fread(preamble + 10, 1, 2, f) != 2) {
      fail(err, err_size, "%s: truncated header", path);
      goto done;
    }
    header_len = (size_t)preamble[8] | ((size_t)preamble[9] << 8) |
                 ((size_t)preamble[10] << 16) | ((size_t)preamble[11] << 24);
    preamble_len = 12;
  } else {
    fail(err, err_size, "%s: unsupported .npy version %d", path, major);
    goto done;
  }
  (void)preamble_len;
  if (header_len == 0 || header_len > (1u << 20)) {
    fail(err, err_size, "%s: bad header length %zu", path, header_len);
    goto done;
  }
  header = (char*)malloc(header_len + 1);
  if (!header) {
    fail(err, err_size, "%s: out of memory", path);
    goto done;
  }
  if (fread(header, 1, header_len, f) != header_len) {
    fail(err, err_size, "%s: truncated header", path);
    goto done;
  }
  header[header_len] = '\0';

  /* dtype: only little-endian float32. '<f4' (or '=f4' on LE hosts). */
  p = find_key(header, "'descr'");
  if (!p) {
    fail(err, err_size, "%s: header has no 'descr'", path);
    goto done;
  }
  if (strncmp(p, "'<f4'", 5) != 0 && strncmp(p, "'=f4'", 5) != 0) {
    const char* end = strchr(p + 1, '\'');
    int n = end ? (int)(end - p + 1) : 8;
    fail(err, err_size, "%s: dtype %.*s is not supported; need float32 '<f4' "
         "(convert with numpy: a.astype(np.float32))", path, n, p);
    goto done;
  }
  p = find_key(header, "'fortran_order'");
  if (!p) {
    fail(err, err_size, "%s: header has no 'fortran_order'", path);
    goto done;
  }
  if (strncmp(p, "False", 5) != 0) {
    fail(err, err_size, "%s: Fortran-order arrays are not supported; need C order "
         "(convert with numpy: np.ascontiguousarray(a))", path);
    goto done;
  }
  p = find_key(header, "'shape'");
  if (!p || *p != '(') {
    fail(err, err_size, "%s: header has no 'shape' tuple", path);
    goto done;
  }
  ++p;
  out->element_count = 1;
  for (;;) {
    char* end;
    long long d;
    while (*p == ' ' || *p == ',') ++p;
    if (*p == ')') break;
    d = strtoll(p, &end, 10);
    if (end == p || d < 0) {
      fail(err, err_size, "%s: bad shape in header", path);
      goto done;
    }
    if (out->rank >= NPY_READ_MAX_RANK) {
      fail(err, err_size, "%s: rank > %d not supported", path, NPY_READ_MAX_RANK);
      goto done;
    }
    out->shape[out->rank++] = d;
    if (d != 0 && out->element_count > ((size_t)-1 / 4) / (size_t)d) {
      fail(err, err_size, "%s: array too large", path);
      goto done;
    }
    out->element_count *= (size_t)d;
    p = end;
  }

  out->data = (float*)malloc(out->element_count ? out->element_count * sizeof(float) : 1);
  if (!out->data) {
    fail(err, err_size, "%s: out of memory (%zu floats)", path, out->element_count);
    goto done;
  }
  if (fread(out->data, sizeof(float), out->element_count, f) != out->element_count) {
    fail(err, err_size, "%s: truncated data (expected %zu float32 values)", path,
         out->element_count);
    goto done;
  }
  /* The format is little-endian; swap on a big-endian host. */
  {
    const uint16_t probe = 1;
    if (*(const unsigned char*)&probe == 0) {
      unsigned char* b = (unsigned char*)out->data;
      for (i = 0; i < out->element_count; ++i, b += 4) {
        unsigned char t0 = b[0], t1 = b[1];
        b[0] = b[3]; b[1] = b[2]; b[2] = t1; b[3] = t0;
      }
    }
  }
  rc = 0;

done:
  free(header);
  if (f) fclose(f);
  if (rc != 0) npy_array_free(out);
  return rc;
}
