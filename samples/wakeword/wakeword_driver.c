/* kiln-wakeword-driver: openWakeWord's streaming pipeline with ONE invoke per
 * 1280-sample chunk: a driver module (samples/wakeword/driver.kir) imports the
 * mel, emb and head modules and does the glue on the device. Public C API
 * only (C99).
 *
 *   kiln-wakeword-driver MEL.kiln EMB.kiln HEAD.kiln DRIVER.kiln IN.wav [--repeat=N]
 *
 * The four modules are linked in one context in that order (each import
 * "mel.main" etc. resolves against a module compiled with --module-name=mel,
 * emb, head; the driver with --module-name=driver). Per chunk c:
 *
 *   (score, frames, embs) = driver.main(frames, embs, audio_c)   all consumed
 *
 * where audio_c = samples [1280c-480, 1280c+1280) (zeros before sample 0) as
 * a fresh [1,1760] f32 tensor, and frames/embs start as zeros and are the
 * previous call's results. Output lines are those of kiln-wakeword
 * (samples/wakeword/wakeword.c) so the two can be diffed:
 *     frame <e> score <v>        (printf "%.6f")
 * printed from the chunk where the state has filled (the frame window holds
 * F rows: the first embedding is at chunk F/8-1, frame e = 76 + 8k; the
 * embedding window holds L-1 rows, L from head.main's [1,L,96] argument).
 * Each score is followed by `# bits frame <e> 0x<IEEE-754 bits>` (both modes),
 * so the two can be compared bit for bit. Lines starting with '#' report the device counters of one invoke in the
 * steady state (the last chunk), per-invoke wall time, and totals.
 * --repeat=N runs the whole clip N times (timing; output printed once).
 * --host-stages runs the same clip the host-orchestrated way instead (as
 * kiln-wakeword does: mel.main, emb.main and head.main invoked separately
 * from the same context, glue on the host) and reports its time per chunk
 * (every invoke, tensor upload and readback of the chunk), for comparison.
 * Env KILN_DEVICE_NAME: case-insensitive substring of the Vulkan device name.
 * Exits 1 with `error: ...` on stderr on any failure.
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln/kiln.h"
#include "wav_read.h"

enum { kChunk = 1280, kContext = 480, kMelInput = kChunk + kContext, kEmbWindow = 76, kEmbStep = 8 };

static int report(kiln_status_t status, const char* what) {
  fprintf(stderr, "error: %s: %s (%s)\n", what, kiln_status_message(status),
          kiln_status_code_name(kiln_status_code(status)));
  kiln_status_free(status);
  return 1;
}

/* Process CPU time (all threads: lavapipe's too), ms. */
static double cpu_ms(void) { return (double)clock() * 1e3 / (double)CLOCKS_PER_SEC; }

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The IEEE-754 bits of `f` (for bit-exact comparisons of the two modes). */
static uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* Median of the `n` per-chunk times in `t` (sorted in place); 0 when n is 0. */
static double median_ms(double* t, size_t n) {
  if (n == 0) return 0.0;
  qsort(t, n, sizeof(double), cmp_double);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* Runs function `name` of `context` on one f32 input (`in`, shape `dims`) and
 * copies `out_count` floats of its only result to `out`. */
static int run_stage(kiln_device_t device, kiln_context_t context, kiln_function_t fn, size_t rank,
                     const int64_t* dims, const float* in, size_t in_count, float* out, size_t out_count) {
  kiln_tensor_t x = NULL, y = NULL;
  kiln_status_t status;
  int rc = 1;
  if ((status = kiln_tensor_create(device, KILN_DTYPE_F32, rank, dims, in, in_count * sizeof(float), &x))) {
    rc = report(status, "creating a stage input");
  } else if ((status = kiln_invoke(context, fn, &x, 1, &y, 1))) {
    rc = report(status, "running a stage");
  } else if ((status = kiln_tensor_read(y, out, out_count * sizeof(float)))) {
    rc = report(status, "reading a stage output");
  } else {
    rc = 0;
  }
  kiln_tensor_release(y);
  kiln_tensor_release(x);
  return rc;
}

/* The host-orchestrated pipeline of samples/wakeword/wakeword.c on the same
 * context (mel.main [1,1760] -> 8x32, emb.main [1,76,32,1] -> 96, head.main
 * [1,16,96] -> 1), timed per chunk. */
static int run_host_stages(kiln_device_t device, kiln_context_t context, const int16_t* pcm, size_t chunks,
                           long repeat) {
  static const int64_t kMelDims[2] = {1, kMelInput};
  static const int64_t kEmbDims[4] = {1, kEmbWindow, 32, 1};
  static const int64_t kHeadDims[3] = {1, 16, 96};
  kiln_function_t mel, emb, head;
  kiln_status_t status;
  float* frames = (float*)malloc((chunks * 8 + 1) * 32 * sizeof(float));
  float* embs = (float*)malloc((chunks + 1) * 96 * sizeof(float));
  float audio[kMelInput], mel_out[8 * 32], score;
  size_t c, i, frame_count, emb_count, next_end;
  long r;
  double t0, c0, total = 0.0, steady_cpu = 0.0;
  double* steady = (double*)malloc((chunks * (size_t)repeat + 1) * sizeof(double));
  size_t n_steady = 0;
  int rc = 1;
  if (!frames || !embs || !steady) {
    fprintf(stderr, "error: out of memory\n");
    goto out;
  }
  if ((status = kiln_context_lookup_function(context, "mel.main", &mel)) ||
      (status = kiln_context_lookup_function(context, "emb.main", &emb)) ||
      (status = kiln_context_lookup_function(context, "head.main", &head))) {
    rc = report(status, "looking up the stages");
    goto out;
  }
  printf("# host-orchestrated: mel.main, emb.main, head.main invoked separately, glue on the host\n");
  for (r = 0; r < repeat; ++r) {
    frame_count = emb_count = 0;
    next_end = kEmbWindow;
    for (c = 0; c < chunks; ++c) {
      for (i = 0; i < kMelInput; ++i) {
        long k = (long)(c * kChunk) - kContext + (long)i;
        audio[i] = k >= 0 ? (float)pcm[k] : 0.0f;
      }
      t0 = now_ms();
      c0 = cpu_ms();
      if (run_stage(device, context, mel, 2, kMelDims, audio, kMelInput, mel_out, 8 * 32)) goto out;
      for (i = 0; i < 8 * 32; ++i) frames[frame_count * 32 + i] = (float)((double)mel_out[i] / 10.0 + 2.0);
      frame_count += 8;
      while (next_end <= frame_count) {
        if (run_stage(device, context, emb, 4, kEmbDims, frames + (next_end - kEmbWindow) * 32, kEmbWindow * 32,
                      embs + emb_count * 96, 96))
          goto out;
        ++emb_count;
        if (emb_count >= 16) {
          if (run_stage(device, context, head, 3, kHeadDims, embs + (emb_count - 16) * 96, 16 * 96, &score, 1))
            goto out;
          if (r == 0) {
            printf("frame %zu score %.6f\n", next_end, (double)score);
            printf("# bits frame %zu 0x%08lx\n", next_end, (unsigned long)float_bits(score));
          }
        }
        next_end += kEmbStep;
      }
      total += now_ms() - t0;
      if (emb_count >= 16) {  /* mel + emb + head ran */
        steady[n_steady++] = now_ms() - t0;
        steady_cpu += cpu_ms() - c0;
      }
    }
  }
  printf("# host-orchestrated time: %.3f ms per chunk (mean of %zu chunks)\n",
         total / (double)(chunks * (size_t)repeat), chunks * (size_t)repeat);
  printf("# host-orchestrated steady chunks (mel + emb + head + glue): median %.3f ms per chunk, "
         "CPU %.3f ms per chunk (%zu chunks)\n",
         median_ms(steady, n_steady), n_steady ? steady_cpu / (double)n_steady : 0.0, n_steady);
  rc = 0;
out:
  free(steady);
  free(frames);
  free(embs);
  return rc;
}

int main(int argc, char** argv) {
  kiln_instance_t instance = NULL;
  kiln_device_t device = NULL;
  kiln_module_t modules[4] = {NULL, NULL, NULL, NULL};
  kiln_context_t context = NULL;
  kiln_function_t driver = NULL, head = NULL;
  kiln_tensor_signature_t sig_frames, sig_embs, sig_audio, sig_head;
  kiln_tensor_t frames = NULL, embs = NULL;
  kiln_status_t status;
  kiln_device_stats_t st, steady;
  int16_t* pcm = NULL;
  size_t pcm_count = 0, chunks, c, i, m, first_emb_chunk, L, printed = 0;
  long repeat = 1, r;
  float audio[kMelInput];
  float score, max_score = 0.0f;
  size_t max_frame = 0;
  double invoke_ms = 0.0, chunk_ms = 0.0;
  double* steady_ms = NULL;
  double steady_cpu = 0.0;
  size_t n_steady = 0;
  size_t invokes = 0;
  char err[512];
  int rc = 1, host_stages = 0;

  memset(&steady, 0, sizeof(steady));
  while (argc > 6) {
    if (strncmp(argv[argc - 1], "--repeat=", 9) == 0) {
      repeat = strtol(argv[argc - 1] + 9, NULL, 10);
      if (repeat < 1) {
        fprintf(stderr, "error: bad %s (want --repeat=N, N >= 1)\n", argv[argc - 1]);
        return 2;
      }
    } else if (strcmp(argv[argc - 1], "--host-stages") == 0) {
      host_stages = 1;
    } else {
      break;
    }
    --argc;
  }
  if (argc != 6) {
    fprintf(stderr,
            "usage: kiln-wakeword-driver MEL.kiln EMB.kiln HEAD.kiln DRIVER.kiln IN.wav [--repeat=N]\n"
            "                            [--host-stages]\n"
            "  MEL/EMB/HEAD.kiln: the stages compiled as in kiln-wakeword, with\n"
            "                     --module-name=mel / emb / head\n"
            "  DRIVER.kiln:       samples/wakeword/driver.kir compiled with --module-name=driver\n"
            "  IN.wav:            16 kHz mono 16-bit PCM\n");
    return 2;
  }
  if (wav_read_pcm16_mono_16k(argv[5], &pcm, &pcm_count, err, sizeof(err)) != 0) {
    fprintf(stderr, "error: %s\n", err);
    goto done;
  }
  if ((status = kiln_instance_create(&instance))) {
    rc = report(status, "creating the instance");
    goto done;
  }
  if ((status = kiln_device_create(instance, "vulkan", getenv("KILN_DEVICE_NAME"), -1, &device))) {
    rc = report(status, "creating the Vulkan device");
    goto done;
  }
  for (m = 0; m < 4; ++m)
    if ((status = kiln_module_load_from_file(instance, argv[1 + m], &modules[m]))) {
      fprintf(stderr, "error: loading %s: %s\n", argv[1 + m], kiln_status_message(status));
      kiln_status_free(status);
      goto done;
    }
  if ((status = kiln_context_create(device, modules, 4, &context))) {
    rc = report(status, "linking mel, emb, head and driver");
    goto done;
  }
  if ((status = kiln_context_lookup_function(context, "driver.main", &driver)) ||
      (status = kiln_context_lookup_function(context, "head.main", &head))) {
    rc = report(status, "looking up driver.main / head.main");
    goto done;
  }
  if (kiln_function_arg_count(driver) != 3 || kiln_function_result_count(driver) != 3) {
    fprintf(stderr, "error: driver.main must be (frames, embs, audio) -> (score, frames, embs)\n");
    goto done;
  }
  if ((status = kiln_function_arg(driver, 0, &sig_frames)) ||
      (status = kiln_function_arg(driver, 1, &sig_embs)) ||
      (status = kiln_function_arg(driver, 2, &sig_audio)) ||
      (status = kiln_function_arg(head, 0, &sig_head))) {
    rc = report(status, "reading signatures");
    goto done;
  }
  if (sig_audio.rank != 2 || sig_audio.dims[1] != kMelInput || sig_frames.rank != 2 ||
      sig_frames.dims[0] % kEmbStep != 0 || sig_frames.dims[0] < kEmbWindow + 4 ||
      sig_embs.rank != 2 || sig_head.rank != 3 || sig_head.dims[1] != sig_embs.dims[0] + 1) {
    fprintf(stderr, "error: unexpected driver/head signatures (want audio [1,%d], frames [F,32], "
                    "embs [L-1,96], head [1,L,96])\n", kMelInput);
    goto done;
  }
  first_emb_chunk = (size_t)sig_frames.dims[0] / kEmbStep - 1;
  L = (size_t)sig_head.dims[1];
  chunks = pcm_count / kChunk;
  printf("# wav %s: %zu samples, %zu chunks of %d\n", argv[5], pcm_count, chunks, kChunk);
  printf("# device %s\n# one invoke of driver.main per chunk (mel, emb, head and the glue on the device)\n",
         kiln_device_name(device));

  if (host_stages) {
    rc = run_host_stages(device, context, pcm, chunks, repeat);
    goto done;
  }
  steady_ms = (double*)malloc((chunks * (size_t)repeat + 1) * sizeof(double));
  if (!steady_ms) {
    fprintf(stderr, "error: out of memory\n");
    goto done;
  }
  for (r = 0; r < repeat; ++r) {
    if ((status = kiln_tensor_create(device, sig_frames.dtype, sig_frames.rank, sig_frames.dims, NULL, 0,
                                     &frames)) ||
        (status = kiln_tensor_create(device, sig_embs.dtype, sig_embs.rank, sig_embs.dims, NULL, 0, &embs))) {
      rc = report(status, "creating the initial state");
      goto done;
    }
    for (c = 0; c < chunks; ++c) {
      kiln_tensor_t in = NULL, out[3] = {NULL, NULL, NULL};
      kiln_invoke_arg_t args[3];
      double t0, tc = now_ms(), cc = cpu_ms();
      for (i = 0; i < kMelInput; ++i) {
        long k = (long)(c * kChunk) - kContext + (long)i;
        audio[i] = k >= 0 ? (float)pcm[k] : 0.0f;
      }
      if ((status = kiln_tensor_create(device, KILN_DTYPE_F32, sig_audio.rank, sig_audio.dims, audio,
                                       sizeof(audio), &in))) {
        rc = report(status, "creating the audio window");
        goto done;
      }
      args[0].tensor = frames; args[0].flags = KILN_ARG_CONSUME; args[0].result_index = 0;
      args[1].tensor = embs;   args[1].flags = KILN_ARG_CONSUME; args[1].result_index = 0;
      args[2].tensor = in;     args[2].flags = KILN_ARG_CONSUME; args[2].result_index = 0;
      frames = embs = NULL;  /* handed over, released by the call in every case */
      if ((status = kiln_device_stats_reset(device))) {
        rc = report(status, "resetting the stats");
        goto done;
      }
      t0 = now_ms();
      status = kiln_invoke_ex(context, driver, args, 3, out, 3);
      invoke_ms += now_ms() - t0;
      ++invokes;
      if (status) {
        rc = report(status, "running driver.main");
        goto done;
      }
      if ((status = kiln_device_stats(device, &st))) {
        kiln_tensor_release(out[0]);
        kiln_tensor_release(out[1]);
        kiln_tensor_release(out[2]);
        rc = report(status, "reading the stats");
        goto done;
      }
      steady = st;
      status = kiln_tensor_read(out[0], &score, sizeof(score));
      kiln_tensor_release(out[0]);
      frames = out[1];
      embs = out[2];
      chunk_ms += now_ms() - tc;
      if (c >= first_emb_chunk + L - 1) {
        steady_ms[n_steady++] = now_ms() - tc;
        steady_cpu += cpu_ms() - cc;
      }
      if (status) {
        rc = report(status, "reading the score");
        goto done;
      }
      if (r == 0 && c >= first_emb_chunk + L - 1) {
        size_t frame = kEmbWindow + kEmbStep * (c - first_emb_chunk);
        printf("frame %zu score %.6f\n", frame, (double)score);
        printf("# bits frame %zu 0x%08lx\n", frame, (unsigned long)float_bits(score));
        if (printed == 0 || score > max_score) {
          max_score = score;
          max_frame = frame;
        }
        ++printed;
      }
    }
    kiln_tensor_release(frames);
    kiln_tensor_release(embs);
    frames = embs = NULL;
  }
  printf("# %zu scores", printed);
  if (printed) printf(", max score %.6f at frame %zu", (double)max_score, max_frame);
  printf("\n# steady state, last invoke: device_allocations %llu host_allocations_invoke %llu copies %llu "
         "dispatches %llu submissions %llu peak_bytes %llu\n",
         (unsigned long long)steady.device_allocations, (unsigned long long)steady.host_allocations_invoke,
         (unsigned long long)steady.copies, (unsigned long long)steady.dispatches,
         (unsigned long long)steady.submissions, (unsigned long long)steady.device_peak_bytes);
  printf("# invoke time: %.3f ms per chunk (mean of %zu invokes); with the audio upload and the score "
         "readback: %.3f ms per chunk\n",
         invokes ? invoke_ms / (double)invokes : 0.0, invokes, invokes ? chunk_ms / (double)invokes : 0.0);
  printf("# one-invoke steady chunks (scored; audio upload + invoke + score readback): median %.3f ms per chunk, "
         "CPU %.3f ms per chunk (%zu chunks)\n",
         median_ms(steady_ms, n_steady), n_steady ? steady_cpu / (double)n_steady : 0.0, n_steady);
  rc = 0;

done:
  fflush(stdout);
  kiln_tensor_release(frames);
  kiln_tensor_release(embs);
  kiln_context_release(context);
  for (m = 0; m < 4; ++m) kiln_module_release(modules[m]);
  kiln_device_release(device);
  kiln_instance_release(instance);
  free(pcm);
  free(steady_ms);
  return rc;
}
