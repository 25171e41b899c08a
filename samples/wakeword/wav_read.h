/* Minimal RIFF/WAVE reader for the wake word sample (C99, no dependencies).
 *
 * Accepts exactly what scripts/wakeword_reference.mjs accepts: PCM 16-bit
 * (format tag 1 or WAVE_FORMAT_EXTENSIBLE 0xFFFE), mono, 16000 Hz. Anything
 * else fails with a message naming what was found and how to convert it.
 * A data chunk that claims more bytes than the file holds is cut to the file.
 *
 * Ownership: on success *out_samples is malloc()ed (free() it); on failure it
 * is NULL.
 */
#ifndef KILN_SAMPLES_WAV_READ_H_
#define KILN_SAMPLES_WAV_READ_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Returns 0 and the samples (int16, native order) on success; otherwise
 * non-zero with a NUL-terminated message in `err`. */
int wav_read_pcm16_mono_16k(const char* path, int16_t** out_samples, size_t* out_count,
                            char* err, size_t err_size);

#ifdef __cplusplus
}
#endif

#endif /* KILN_SAMPLES_WAV_READ_H_ */
