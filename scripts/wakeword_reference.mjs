#!/usr/bin/env node
// Reference wake word pipeline (openWakeWord's 3 ONNX stages) on onnxruntime-node.
// samples/wakeword (the C sample) implements the SAME definition and is compared
// line by line with this script's output.
//
//   node scripts/wakeword_reference.mjs IN.wav [--head NAME|PATH.onnx] [--mode simple|oww]
//                                                [--models DIR]
//
// Default head: alexa_v0.1 (a NAME is looked up as DIR/NAME.onnx; DIR defaults to
// <repo>/.cache/models or KILN_MODELS_DIR). ORT location: KILN_ORT_DIR (ort_loader.mjs).
//
// ---- Pipeline definition (simplified streaming; exactly reproducible) -------------
// Input: a RIFF WAV, PCM 16-bit, mono, 16000 Hz. Sample values are the int16 values
//   converted to float32 WITHOUT scaling (range [-32768, 32767]), as openWakeWord does.
// Stage 1, mel (melspectrogram.onnx, input "input" [1,1280] f32 -> output [1,1,5,32]):
//   Split the audio into consecutive NON-overlapping chunks of 1280 samples (80 ms);
//   chunk c covers samples [1280c, 1280c + 1280). A trailing partial chunk is dropped.
//   For each chunk: run mel, transform every value v -> v / 10 + 2, and append the 5
//   frames (32 values each, in time order) to the frame list M.
//   --mode oww (openWakeWord's own streaming front end; same rules otherwise): the mel
//   input for chunk c is [1,1760] = samples [1280c - 480, 1280c + 1280), samples before
//   0 read as 0, giving [1,1,8,32]: 8 frames per chunk instead of 5. The default
//   (simple) mode loses 3 of every 8 frames' worth of time (speech looks 1.6x faster
//   to the embedding model), so detection depends on alignment: espeak-ng "Alexa"
//   (make_speech.sh, lead-in 2..4 s) peaks at 0.0005..0.86 for alexa_v0.1 in simple
//   mode but 0.48..0.99 in oww mode; "set a timer..." 0.00..0.07 vs 0.9996+.
// Stage 2, embedding (embedding_model.onnx, input "input_1" [1,76,32,1] -> [1,1,1,96]):
//   Embedding windows end at mel frame e = 76, 84, 92, ... (76 + 8j, exclusive end).
//   After appending a chunk's frames, for each window end e <= |M| not yet done, in
//   increasing order: run the embedding on M[e-76 .. e-1] (frame-major, 32 values per
//   frame) and append its 96 values to the embedding list E.
// Stage 3, head (e.g. alexa_v0.1.onnx, input [1,L,96] -> [1,1]):
//   L is the head's input dim 1 (16; weather_v0.1: 22; timer_v0.1: 34). Each time an
//   embedding is appended and |E| >= L, run the head on the last L embeddings (oldest
//   first) and print one line:
//       frame <e> score <v>
//   e: the window end (in mel frames) of the embedding just appended.
//   v: printf("%.6f") of the head's output; for a multi-class head (timer_v0.1, [1,7]
//   softmax with class 0 = background) v = max over classes 1..N-1.
//   The first score comes at e = 76 + 8(L-1) frames (L=16: e=196, i.e. after chunk 39
//   = 3.2 s in simple mode, after chunk 24 = 2.0 s in oww mode). No buffer is prefilled.
// Lines starting with '#' are informational (shapes, counts) and not part of the
// comparison.
// -----------------------------------------------------------------------------------
import fs from 'node:fs';
import path from 'node:path';
import { loadOrt, REPO_ROOT, SESSION_OPTIONS } from './ort_loader.mjs';

export const CHUNK = 1280;
export const OWW_CONTEXT = 480; // --mode oww: extra past samples per mel call (3 hops)
export const MEL_BINS = 32;
export const EMB_WINDOW = 76;
export const EMB_STEP = 8;
export const EMB_DIM = 96;

// Reads a 16 kHz mono PCM16 WAV; returns Int16Array samples.
export function readWav16k(file) {
  const b = fs.readFileSync(file);
  if (b.toString('latin1', 0, 4) !== 'RIFF' || b.toString('latin1', 8, 12) !== 'WAVE') {
    throw new Error(`${file}: not a RIFF/WAVE file`);
  }
  let fmt = null;
  for (let off = 12; off + 8 <= b.length;) {
    const id = b.toString('latin1', off, off + 4);
    const size = b.readUInt32LE(off + 4);
    const body = off + 8;
    if (id === 'fmt ') {
      fmt = { tag: b.readUInt16LE(body), ch: b.readUInt16LE(body + 2), rate: b.readUInt32LE(body + 4), bits: b.readUInt16LE(body + 14) };
    } else if (id === 'data') {
      if (!fmt) throw new Error(`${file}: data chunk before fmt chunk`);
      if (!(fmt.tag === 1 || fmt.tag === 0xfffe) || fmt.bits !== 16 || fmt.ch !== 1 || fmt.rate !== 16000) {
        throw new Error(`${file}: need PCM 16-bit mono 16000 Hz, got tag ${fmt.tag} ${fmt.bits}-bit ${fmt.ch} ch ${fmt.rate} Hz ` +
          '(convert with: sox IN -r 16000 -c 1 -b 16 -e signed-integer OUT.wav)');
      }
      const n = Math.floor(Math.min(size, b.length - body) / 2);
      const out = new Int16Array(n);
      for (let i = 0; i < n; ++i) out[i] = b.readInt16LE(body + 2 * i);
      return out;
    }
    off = body + size + (size & 1);
  }
  throw new Error(`${file}: no data chunk`);
}

function parseArgs(argv) {
  const a = { wav: null, head: 'alexa_v0.1', mode: 'simple', models: process.env.KILN_MODELS_DIR || path.join(REPO_ROOT, '.cache', 'models') };
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === '--head') a.head = argv[++i];
    else if (argv[i] === '--models') a.models = argv[++i];
    else if (argv[i] === '--mode') a.mode = argv[++i];
    else if (!a.wav && !argv[i].startsWith('--')) a.wav = argv[i];
    else throw new Error(`unknown argument '${argv[i]}'`);
  }
  if (!a.wav) throw new Error('usage: wakeword_reference.mjs IN.wav [--head NAME|PATH.onnx] [--mode simple|oww] [--models DIR]');
  if (a.mode !== 'simple' && a.mode !== 'oww') throw new Error(`--mode must be simple or oww, got '${a.mode}'`);
  return a;
}

async function main() {
  process.stdout.on('error', (e) => { if (e.code === 'EPIPE') process.exit(0); throw e; });
  const args = parseArgs(process.argv.slice(2));
  const ort = loadOrt();
  const headPath = args.head.endsWith('.onnx') ? args.head : path.join(args.models, `${args.head}.onnx`);
  const mel = await ort.InferenceSession.create(path.join(args.models, 'melspectrogram.onnx'), SESSION_OPTIONS);
  const emb = await ort.InferenceSession.create(path.join(args.models, 'embedding_model.onnx'), SESSION_OPTIONS);
  const head = await ort.InferenceSession.create(headPath, SESSION_OPTIONS);

  // The head's window length L comes from its declared input shape [1, L, 96].
  const headIn = head.inputNames[0];
  const L = headWindow(headPath);

  const pcm = readWav16k(args.wav);
  const chunks = Math.floor(pcm.length / CHUNK);
  console.log(`# wav ${path.basename(args.wav)}: ${pcm.length} samples, ${chunks} chunks of ${CHUNK}` +
    (pcm.length % CHUNK ? ` (last ${pcm.length % CHUNK} samples dropped)` : ''));
  console.log(`# mode ${args.mode}`);
  console.log(`# head ${path.basename(headPath)} input '${headIn}' [1,${L},${EMB_DIM}]`);

  const frames = []; // Float32Array(32) per mel frame, already transformed
  const embs = []; // Float32Array(96) per embedding
  let nextEnd = EMB_WINDOW;
  let invocations = 0, maxScore = -Infinity, maxFrame = -1;
  for (let c = 0; c < chunks; ++c) {
    const ctx = args.mode === 'oww' ? OWW_CONTEXT : 0;
    const x = new Float32Array(ctx + CHUNK); // zeros before sample 0
    for (let i = 0; i < ctx + CHUNK; ++i) {
      const k = c * CHUNK - ctx + i;
      if (k >= 0) x[i] = pcm[k];
    }
    const out = (await mel.run({ [mel.inputNames[0]]: new ort.Tensor('float32', x, [1, x.length]) }))[mel.outputNames[0]];
    if (c === 0) console.log(`# mel output shape for [1,${x.length}]: [${out.dims.join(',')}] ${out.type}`);
    const nf = out.data.length / MEL_BINS;
    for (let f = 0; f < nf; ++f) {
      frames.push(Float32Array.from(out.data.subarray(f * MEL_BINS, (f + 1) * MEL_BINS), (v) => v / 10 + 2));
    }
    while (nextEnd <= frames.length) {
      const w = new Float32Array(EMB_WINDOW * MEL_BINS);
      for (let f = 0; f < EMB_WINDOW; ++f) w.set(frames[nextEnd - EMB_WINDOW + f], f * MEL_BINS);
      const e = (await emb.run({ [emb.inputNames[0]]: new ort.Tensor('float32', w, [1, EMB_WINDOW, MEL_BINS, 1]) }))[emb.outputNames[0]];
      embs.push(Float32Array.from(e.data));
      if (embs.length >= L) {
        const h = new Float32Array(L * EMB_DIM);
        for (let i = 0; i < L; ++i) h.set(embs[embs.length - L + i], i * EMB_DIM);
        const r = (await head.run({ [headIn]: new ort.Tensor('float32', h, [1, L, EMB_DIM]) }))[head.outputNames[0]].data;
        const v = r.length === 1 ? r[0] : Math.max(...r.subarray(1));
        console.log(`frame ${nextEnd} score ${v.toFixed(6)}`);
        ++invocations;
        if (v > maxScore) { maxScore = v; maxFrame = nextEnd; }
      }
      nextEnd += EMB_STEP;
    }
  }
  console.log(`# ${frames.length} mel frames, ${embs.length} embeddings, ${invocations} head invocations` +
    (invocations ? `, max score ${maxScore.toFixed(6)} at frame ${maxFrame}` : ' (audio too short)'));
}

// Reads dim 1 of the head's first graph input from the ONNX protobuf. onnxruntime-node
// 1.20 exposes no input shapes, so this walks ModelProto.graph.input[0].type
// .tensor_type.shape.dim[1].dim_value by hand (fields 7, 11, 2, 1, 2, 1, 1).
function headWindow(file) {
  const buf = fs.readFileSync(file);
  const varint = (b, p) => { let v = 0, m = 1, c; do { c = b[p.i++]; v += (c & 0x7f) * m; m *= 128; } while (c & 0x80); return v; };
  // Returns sub-buffers of every length-delimited field `num` in message b.
  const fields = (b, num) => {
    const res = [], p = { i: 0 };
    while (p.i < b.length) {
      const key = varint(b, p), f = Math.floor(key / 8), wt = key & 7;
      if (wt === 0) { const v = varint(b, p); if (f === num) res.push(v); }
      else if (wt === 1) p.i += 8;
      else if (wt === 5) p.i += 4;
      else if (wt === 2) { const n = varint(b, p); if (f === num) res.push(b.subarray(p.i, p.i + n)); p.i += n; }
      else throw new Error(`${file}: unsupported protobuf wire type ${wt}`);
    }
    return res;
  };
  const graph = fields(buf, 7)[0];
  const input = fields(graph, 11)[0];
  const tensor = fields(fields(input, 2)[0], 1)[0];
  const dims = fields(fields(tensor, 2)[0], 1);
  const L = dims.length === 3 ? fields(dims[1], 1)[0] : undefined;
  if (typeof L !== 'number' || !(L > 0)) throw new Error(`${file}: cannot read the input window length (want [1,L,96])`);
  return L;
}

main().catch((e) => { console.error(`wakeword_reference: ${e.message}`); process.exit(1); });
