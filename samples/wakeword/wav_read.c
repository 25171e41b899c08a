/* Minimal 16 kHz mono PCM16 WAV reader; see wav_read.h. */
#include "wav_read.h"

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

static uint32_t le32(const unsigned char* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint16_t le16(const unsigned char* p) { return (uint16_t)(p[0] | (p[1] << 8)); }

int wav_read_pcm16_mono_16k(const char* path, int16_t** out_samples, size_t* out_count,
                            char* err, size_t err_size) {
  FILE* f;
  unsigned char* b = NULL;
  long file_size;
  size_t len, off;
  int have_fmt = 0, rc = 1;
  unsigned tag = 0, channels = 0, bits = 0;
  uint32_t rate = 0;

  *out_samples = NULL;
  *out_count = 0;
  f = fopen(path, "rb");
  if (!f) return fail(err, err_size, "%s: cannot open", path);
  if (fseek(f, 0, SEEK_END) != 0 || (file_size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return fail(err, err_size, "%s: cannot determine the file size", path);
  }
  len = (size_t)file_size;
  b = (unsigned char*)malloc(len ? len : 1);
  if (!b) {
    fclose(f);
    return fail(err, err_size, "%s: out of memory", path);
  }
  if (fread(b, 1, len, f) != len) {
    fclose(f);
    free(b);
    return fail(err, err_size, "%s: read error", path);
  }
  fclose(f);

  if (len < 12 || memcmp(b, "RIFF", 4) != 0 || memcmp(b + 8, "WAVE", 4) != 0) {
    fail(err, err_size, "%s: not a RIFF/WAVE file", path);
    goto done;
  }
  for (off = 12; off + 8 <= len;) {
    const unsigned char* id = b + off;
    uint32_t size = le32(b + off + 4);
    size_t body = off + 8;
    if (memcmp(id, "fmt ", 4) == 0) {
      if (size < 16 || body + 16 > len) {
        fail(err, err_size, "%s: fmt chunk too short", path);
        goto done;
      }
      tag = le16(b + body);
      channels = le16(b + body + 2);
      rate = le32(b + body + 4);
      bits = le16(b + body + 14);
      have_fmt = 1;
    } else if (memcmp(id, "data", 4) == 0) {
      size_t avail, n, i;
      int16_t* s;
      if (!have_fmt) {
        fail(err, err_size, "%s: data chunk before fmt chunk", path);
        goto done;
      }
      if (!(tag == 1 || tag == 0xFFFE) || bits != 16 || channels != 1 || rate != 16000) {
        fail(err, err_size,
             "%s: need PCM 16-bit mono 16000 Hz, got tag %u %u-bit %u ch %u Hz "
             "(convert with: sox IN -r 16000 -c 1 -b 16 -e signed-integer OUT.wav)",
             path, tag, bits, channels, (unsigned)rate);
        goto done;
      }
      avail = len - body;
      if ((size_t)size < avail) avail = size;
      n = avail / 2;
      s = (int16_t*)malloc(n ? n * sizeof(int16_t) : 1);
      if (!s) {
        fail(err, err_size, "%s: out of memory", path);
        goto done;
      }
      for (i = 0; i < n; ++i) s[i] = (int16_t)le16(b + body + 2 * i);
      *out_samples = s;
      *out_count = n;
      rc = 0;
      goto done;
    }
    off = body + (size_t)size + (size & 1);
  }
  fail(err, err_size, "%s: no data chunk", path);

done:
  free(b);
  return rc;
}
