/* kiln-wakeword: openWakeWord's three-stage wake word pipeline
 * (melspectrogram -> embedding -> head) on a Kiln device, through the public
 * C API only (C99).
 *
 *   kiln-wakeword MEL.kiln EMB.kiln HEAD.kiln IN.wav
 *
 * Implements scripts/wakeword_reference.mjs --mode oww exactly, so the two
 * outputs can be diffed line by line (lines starting with '#' are
 * informational):
 *   - IN.wav: RIFF PCM 16-bit mono 16 kHz; samples are the int16 values as
 *     float32, unscaled.
 *   - mel (MEL.kiln compiled for input [1,1760]): chunk c (1280 samples, a
 *     trailing partial chunk is dropped) feeds samples [1280c-480, 1280c+1280),
 *     zeros before sample 0; every output value v becomes v/10 + 2; its frames
 *     (32 values each, 8 per call) are appended to the frame list.
 *   - embedding (EMB.kiln, [1,76,32,1] -> 96 values): windows end at frame
 *     e = 76, 84, 92, ... (exclusive); each is run as soon as e <= #frames.
 *   - head (HEAD.kiln, [1,L,96]; L read from its signature): once there are
 *     >= L embeddings, each new one runs the head on the last L and prints
 *         frame <e> score <v>      (printf "%.6f"; multi-class heads: the max
 *                                   over classes 1..N-1, class 0 = background)
 * Env KILN_DEVICE_NAME: case-insensitive substring of the Vulkan device name.
 * Exits 1 with `error: ...` on stderr on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"
#include "wav_read.h"

enum {
  kChunk = 1280,       /* new samples per mel call (80 ms) */
  kContext = 480,      /* past samples per mel call (--mode oww) */
  kMelInput = kChunk + kContext,
  kMelBins = 32,
  kEmbWindow = 76,     /* mel frames per embedding */
  kEmbStep = 8,        /* frames between embedding windows */
  kEmbDim = 96,
};

/* One compiled stage: its context, function and fixed signature. */
typedef struct stage {
  const char* path;
  kiln_module_t module;
  kiln_context_t context;
  kiln_function_t function;
  kiln_tensor_signature_t arg;
  size_t arg_elements;
  size_t result_elements;
} stage;

static int report(kiln_status_t status, const char* what, const char* path) {
  if (path)
    fprintf(stderr, "error: %s %s: %s (%s)\n", what, path, kiln_status_message(status),
            kiln_status_code_name(kiln_status_code(status)));
  else
    fprintf(stderr, "error: %s: %s (%s)\n", what, kiln_status_message(status),
            kiln_status_code_name(kiln_status_code(status)));
  kiln_status_free(status);
  return 1;
}

static size_t elements(const int64_t* dims, size_t rank) {
  size_t n = 1, i;
  for (i = 0; i < rank; ++i) n *= (size_t)dims[i];
  return n;
}

static void format_sig(char* buf, size_t size, const kiln_tensor_signature_t* s) {
  size_t i, used = 0;
  used += (size_t)snprintf(buf, size, "[");
  for (i = 0; i < s->rank; ++i)
    used += (size_t)snprintf(buf + used, used < size ? size - used : 0, i ? ",%lld" : "%lld",
                             (long long)s->dims[i]);
  snprintf(buf + used, used < size ? size - used : 0, "] %s", kiln_dtype_name(s->dtype));
}

/* Loads `st->path`, links it in its own context (every stage exports "main")
 * and checks its signature: one f32 argument, one f32 result. When `want_dims`
 * is non-NULL the argument must have exactly those dims (a negative entry
 * matches any extent). Returns 0 on success. */
static int stage_open(kiln_instance_t instance, kiln_device_t device, stage* st,
                      const int64_t* want_dims, size_t want_rank, const char* how_to_compile) {
  kiln_status_t status;
  kiln_tensor_signature_t result;
  char got[128];
  size_t i;

  if ((status = kiln_module_load_from_file(instance, st->path, &st->module)))
    return report(status, "loading", st->path);
  if ((status = kiln_context_create(device, &st->module, 1, &st->context)))
    return report(status, "creating the context for", st->path);
  if ((status = kiln_context_lookup_function(st->context, "main", &st->function)))
    return report(status, "looking up 'main' in", st->path);
  if (kiln_function_arg_count(st->function) != 1 || kiln_function_result_count(st->function) != 1) {
    fprintf(stderr, "error: %s: expected 1 input and 1 output, 'main' has %zu and %zu\n", st->path,
            kiln_function_arg_count(st->function), kiln_function_result_count(st->function));
    return 1;
  }
  if ((status = kiln_function_arg(st->function, 0, &st->arg)))
    return report(status, "reading the input signature of", st->path);
  if ((status = kiln_function_result(st->function, 0, &result)))
    return report(status, "reading the output signature of", st->path);
  format_sig(got, sizeof(got), &st->arg);
  if (st->arg.dtype != KILN_DTYPE_F32 || result.dtype != KILN_DTYPE_F32) {
    fprintf(stderr, "error: %s: input and output must be f32 (input is %s)\n", st->path, got);
    return 1;
  }
  if (want_dims) {
    int ok = st->arg.rank == want_rank;
    for (i = 0; ok && i < want_rank; ++i)
      if (want_dims[i] >= 0 && st->arg.dims[i] != want_dims[i]) ok = 0;
    if (!ok) {
      fprintf(stderr, "error: %s: input is %s; compile it with %s\n", st->path, got, how_to_compile);
      return 1;
    }
  }
  st->arg_elements = elements(st->arg.dims, st->arg.rank);
  st->result_elements = elements(result.dims, result.rank);
  if (st->result_elements == 0) {
    fprintf(stderr, "error: %s: the output is empty\n", st->path);
    return 1;
  }
  return 0;
}

static void stage_close(stage* st) {
  kiln_context_release(st->context);
  kiln_module_release(st->module);
  st->context = NULL;
  st->module = NULL;
}

/* Runs `st` on `in` (st->arg_elements floats) and copies st->result_elements
 * floats to `out`. Returns 0 on success. */
static int stage_run(kiln_device_t device, const stage* st, const float* in, float* out) {
  kiln_tensor_t x = NULL, y = NULL;
  kiln_status_t status;
  int rc = 1;
  if ((status = kiln_tensor_create(device, KILN_DTYPE_F32, st->arg.rank, st->arg.dims, in,
                                   st->arg_elements * sizeof(float), &x))) {
    rc = report(status, "creating the input of", st->path);
    goto done;
  }
  if ((status = kiln_invoke(st->context, st->function, &x, 1, &y, 1))) {
    rc = report(status, "running", st->path);
    goto done;
  }
  if (kiln_tensor_byte_size(y) != st->result_elements * sizeof(float)) {
    fprintf(stderr, "error: %s: output has %zu bytes, the signature says %zu\n", st->path,
            kiln_tensor_byte_size(y), st->result_elements * sizeof(float));
    goto done;
  }
  if ((status = kiln_tensor_read(y, out, st->result_elements * sizeof(float)))) {
    rc = report(status, "reading the output of", st->path);
    goto done;
  }
  rc = 0;
done:
  kiln_tensor_release(y);
  kiln_tensor_release(x);
  return rc;
}

static const char* base_name(const char* path) {
  const char* s = strrchr(path, '/');
  return s ? s + 1 : path;
}

int main(int argc, char** argv) {
  static const int64_t kMelDims[2] = {1, kMelInput};
  static const int64_t kEmbDims[4] = {1, kEmbWindow, kMelBins, 1};
  static const int64_t kHeadDims[3] = {1, -1, kEmbDim};
  kiln_instance_t instance = NULL;
  kiln_device_t device = NULL;
  kiln_status_t status;
  stage mel, emb, head;
  int16_t* pcm = NULL;
  size_t pcm_count = 0, chunks, c, i, frames_per_call, L;
  size_t frame_count = 0, emb_count = 0, invocations = 0, next_end = kEmbWindow;
  float* frames = NULL;  /* frame_count x kMelBins, transformed */
  float* embs = NULL;    /* emb_count x kEmbDim */
  float* mel_out = NULL;
  float* head_in = NULL;
  float* head_out = NULL;
  float mel_in[kMelInput];
  float emb_in[kEmbWindow * kMelBins];
  float max_score = 0.0f;
  size_t max_frame = 0;
  char err[512];
  int rc = 1;

  memset(&mel, 0, sizeof(mel));
  memset(&emb, 0, sizeof(emb));
  memset(&head, 0, sizeof(head));
  if (argc != 5) {
    fprintf(stderr,
            "usage: kiln-wakeword MEL.kiln EMB.kiln HEAD.kiln IN.wav\n"
            "  MEL.kiln:  melspectrogram.onnx compiled with --input-shape=input=1x1760\n"
            "  EMB.kiln:  embedding_model.onnx compiled with --input-shape=input_1=1x76x32x1\n"
            "  HEAD.kiln: a head (e.g. alexa_v0.1.onnx) compiled for [1,L,96]\n"
            "  IN.wav:    16 kHz mono 16-bit PCM\n"
            "  env KILN_DEVICE_NAME: substring of the Vulkan device name\n");
    return 2;
  }
  mel.path = argv[1];
  emb.path = argv[2];
  head.path = argv[3];

  if (wav_read_pcm16_mono_16k(argv[4], &pcm, &pcm_count, err, sizeof(err)) != 0) {
    fprintf(stderr, "error: %s\n", err);
    goto done;
  }
  if ((status = kiln_instance_create(&instance))) {
    rc = report(status, "creating the instance", NULL);
    goto done;
  }
  if ((status = kiln_device_create(instance, "vulkan", getenv("KILN_DEVICE_NAME"), -1, &device))) {
    rc = report(status, "creating the Vulkan device", NULL);
    goto done;
  }
  if (stage_open(instance, device, &mel, kMelDims, 2, "--input-shape=input=1x1760") ||
      stage_open(instance, device, &emb, kEmbDims, 4, "--input-shape=input_1=1x76x32x1") ||
      stage_open(instance, device, &head, kHeadDims, 3, "--input-shape=NAME=1xLx96"))
    goto done;
  if (mel.result_elements % kMelBins != 0) {
    fprintf(stderr, "error: %s: output has %zu values, not a multiple of %d mel bins\n", mel.path,
            mel.result_elements, kMelBins);
    goto done;
  }
  if (emb.result_elements != kEmbDim) {
    fprintf(stderr, "error: %s: output has %zu values, want %d\n", emb.path, emb.result_elements,
            kEmbDim);
    goto done;
  }
  frames_per_call = mel.result_elements / kMelBins;
  L = (size_t)head.arg.dims[1];
  if (L == 0) {
    fprintf(stderr, "error: %s: window length L is 0\n", head.path);
    goto done;
  }

  chunks = pcm_count / kChunk;
  printf("# wav %s: %zu samples, %zu chunks of %d", base_name(argv[4]), pcm_count, chunks, kChunk);
  if (pcm_count % kChunk) printf(" (last %zu samples dropped)", pcm_count % kChunk);
  printf("\n# mode oww\n# device %s\n# head %s input '%s' [1,%zu,%d]\n", kiln_device_name(device),
         base_name(head.path), head.arg.name ? head.arg.name : "", L, kEmbDim);
  printf("# mel output: %zu frames of %d per call\n", frames_per_call, kMelBins);

  frames = (float*)malloc((chunks * frames_per_call + 1) * kMelBins * sizeof(float));
  embs = (float*)malloc(((chunks * frames_per_call) / kEmbStep + 1) * kEmbDim * sizeof(float));
  mel_out = (float*)malloc(mel.result_elements * sizeof(float));
  head_in = (float*)malloc(L * kEmbDim * sizeof(float));
  head_out = (float*)malloc(head.result_elements * sizeof(float));
  if (!frames || !embs || !mel_out || !head_in || !head_out) {
    fprintf(stderr, "error: out of memory\n");
    goto done;
  }

  for (c = 0; c < chunks; ++c) {
    /* Samples [1280c - 480, 1280c + 1280); zeros before sample 0. */
    for (i = 0; i < kMelInput; ++i) {
      long k = (long)(c * kChunk) - kContext + (long)i;
      mel_in[i] = k >= 0 ? (float)pcm[k] : 0.0f;
    }
    if (stage_run(device, &mel, mel_in, mel_out)) goto done;
    /* v -> v / 10 + 2, computed in double and rounded to float, as the
     * reference does (JavaScript numbers stored into a Float32Array). */
    for (i = 0; i < mel.result_elements; ++i)
      frames[frame_count * kMelBins + i] = (float)((double)mel_out[i] / 10.0 + 2.0);
    frame_count += frames_per_call;

    while (next_end <= frame_count) {
      memcpy(emb_in, frames + (next_end - kEmbWindow) * kMelBins, sizeof(emb_in));
      if (stage_run(device, &emb, emb_in, embs + emb_count * kEmbDim)) goto done;
      ++emb_count;
      if (emb_count >= L) {
        float v;
        memcpy(head_in, embs + (emb_count - L) * kEmbDim, L * kEmbDim * sizeof(float));
        if (stage_run(device, &head, head_in, head_out)) goto done;
        if (head.result_elements == 1) {
          v = head_out[0];
        } else {
          v = head_out[1];
          for (i = 2; i < head.result_elements; ++i)
            if (head_out[i] > v) v = head_out[i];
        }
        printf("frame %zu score %.6f\n", next_end, (double)v);
        if (invocations == 0 || v > max_score) {
          max_score = v;
          max_frame = next_end;
        }
        ++invocations;
      }
      next_end += kEmbStep;
    }
  }
  printf("# %zu mel frames, %zu embeddings, %zu head invocations", frame_count, emb_count,
         invocations);
  if (invocations)
    printf(", max score %.6f at frame %zu\n", (double)max_score, max_frame);
  else
    printf(" (audio too short)\n");
  rc = 0;

done:
  fflush(stdout);
  free(head_out);
  free(head_in);
  free(mel_out);
  free(embs);
  free(frames);
  free(pcm);
  stage_close(&head);
  stage_close(&emb);
  stage_close(&mel);
  kiln_device_release(device);
  kiln_instance_release(instance);
  return rc;
}
