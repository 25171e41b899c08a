#!/usr/bin/env node
// Golden data oracle: runs ONNX models with onnxruntime-node (CPU, 1 thread).
//
//   node scripts/gen_golden.mjs MODEL.onnx OUTDIR name=@in.npy [name=@in2.npy ...]
//       Runs MODEL with the given .npy inputs (every graph input must be given) and
//       writes OUTDIR/output_<i>.npy, one per graph output in graph order, with the
//       dtype ORT produced (f32, i64, ...).
//
//   node scripts/gen_golden.mjs --all [--outputs-only] [--only=DIR,DIR]
//       Regenerates every golden under tests/golden/ (the table GOLDENS below):
//       inputs (gen_golden_inputs.py, render_text.sh + preprocess_cls.py, and the
//       mel/embedding models for the embedding and head inputs), then outputs, inputs.txt,
//       outputs.txt and model.txt. --outputs-only keeps the committed inputs and
//       only reruns ORT. Also checks that the cls goldens classify right.
//       --only limits it to some directories (their inputs and outputs), e.g.
//       --only=det_text,rec_line for the PP-OCRv4 det and rec goldens.
//
// Env: KILN_ORT_DIR (where onnxruntime-node is installed, see ort_loader.mjs),
//      KILN_MODELS_DIR (default <repo>/.cache/models), KILN_PYTHON (default /usr/bin/python3).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { readNpy, writeNpy } from './npy.mjs';
import { loadOrt, REPO_ROOT, SESSION_OPTIONS } from './ort_loader.mjs';

let ort;
try {
  ort = loadOrt();
} catch (e) {
  console.error(`gen_golden: ${e.message}`);
  process.exit(1);
}
const MODELS_DIR = process.env.KILN_MODELS_DIR || path.join(REPO_ROOT, '.cache', 'models');
const GOLDEN_DIR = path.join(REPO_ROOT, 'tests', 'golden');
const PYTHON = process.env.KILN_PYTHON || '/usr/bin/python3';

// Wake word head -> blend factor t of noise vs real embeddings (see makeInputs).
const HEAD_BLEND = {
  'alexa_v0.1': 0.9, 'hey_mycroft_v0.1': 0.575, 'hey_rhasspy_v0.1': 0.85,
  'weather_v0.1': 0.75, 'timer_v0.1': 0.8, 'hey_jarvis_v0.1': 0.5,
};

// dir under tests/golden -> model file in MODELS_DIR. Inputs are input_<i>.npy in
// the session's input order.
const GOLDENS = [
  ['cls_upright', 'ch_ppocr_mobile_v2.0_cls_infer.onnx'],
  ['cls_rotated', 'ch_ppocr_mobile_v2.0_cls_infer.onnx'],
  ['melspectrogram', 'melspectrogram.onnx'],
  ['embedding_model', 'embedding_model.onnx'],
  // embedding_model quantized to int8 QDQ by scripts/setup.sh (quantize_qdq.py),
  // on embedding_model's input (its calibration input).
  ['embedding_int8', 'embedding_model_int8.onnx'],
  // ... and on other audio, outside its calibration set (activations may saturate).
  ['embedding_int8_other', 'embedding_model_int8.onnx'],
  ['alexa_v0.1', 'alexa_v0.1.onnx'],
  ['hey_mycroft_v0.1', 'hey_mycroft_v0.1.onnx'],
  ['hey_rhasspy_v0.1', 'hey_rhasspy_v0.1.onnx'],
  ['weather_v0.1', 'weather_v0.1.onnx'],
  ['timer_v0.1', 'timer_v0.1.onnx'],
  ['hey_jarvis_v0.1', 'hey_jarvis_v0.1.onnx'],
  ['silero_vad', 'silero_vad.onnx'],
  // PP-OCRv4 at small fixed shapes (the full 640x640 det / 48x320 rec tensors
  // would be MBs; samples/ocr's e2e test compares those live with ORT).
  ['det_text', 'ch_PP-OCRv4_det_infer.onnx'],
  ['rec_line', 'ch_PP-OCRv4_rec_infer.onnx'],
];

// OCR goldens: det_text is two lines of text on a 160x96 canvas, rec_line one
// short line at 48x128 (T = 16 steps x 6625 classes out).
async function makeOcrInputs(tmp) {
  const det = path.join(GOLDEN_DIR, 'det_text');
  const rec = path.join(GOLDEN_DIR, 'rec_line');
  fs.mkdirSync(det, { recursive: true });
  fs.mkdirSync(rec, { recursive: true });
  const detPng = path.join(tmp, 'det_text.png');
  sh('convert', ['-size', '160x96', 'xc:white', '-font', 'DejaVu-Sans', '-fill', 'black',
    '-pointsize', '20', '-annotate', '+8+32', 'Kiln OCR', '-pointsize', '14', '-annotate', '+8+70', 'PP-OCRv4 det',
    '-alpha', 'off', '-type', 'TrueColor', '-strip', detPng]);
  sh(PYTHON, [path.join(REPO_ROOT, 'scripts', 'preprocess_cls.py'), detPng, path.join(det, 'input_0.npy'), '--det', '--shape=96x160']);
  const recDir = path.join(tmp, 'rec');
  sh(path.join(REPO_ROOT, 'scripts', 'render_text.sh'), [recDir, 'Kiln 26', '28']);
  sh(PYTHON, [path.join(REPO_ROOT, 'scripts', 'preprocess_cls.py'), path.join(recDir, 'upright.png'), path.join(rec, 'input_0.npy'), '--shape=48x128']);
}

function toTensor(npy) {
  // ORT wants bool as Uint8Array under type 'bool'; the other names match ours.
  return new ort.Tensor(npy.dtype, npy.data, npy.shape);
}

const sessions = new Map();
async function session(modelPath) {
  if (!sessions.has(modelPath)) {
    sessions.set(modelPath, await ort.InferenceSession.create(modelPath, SESSION_OPTIONS));
  }
  return sessions.get(modelPath);
}

// feeds: Map name -> npy. Returns [{name, dtype, shape, data}] in graph output order.
async function runModel(modelPath, feeds) {
  const s = await session(modelPath);
  const missing = s.inputNames.filter((n) => !feeds.has(n));
  const extra = [...feeds.keys()].filter((n) => !s.inputNames.includes(n));
  if (missing.length || extra.length) {
    throw new Error(`${modelPath}: inputs are ${JSON.stringify(s.inputNames)}; ` +
      `missing ${JSON.stringify(missing)}, unknown ${JSON.stringify(extra)}`);
  }
  const ortFeeds = {};
  for (const [n, v] of feeds) ortFeeds[n] = toTensor(v);
  const res = await s.run(ortFeeds);
  return s.outputNames.map((n) => ({ name: n, dtype: res[n].type, shape: [...res[n].dims], data: res[n].data }));
}

function writeOutputs(outDir, outputs) {
  fs.mkdirSync(outDir, { recursive: true });
  for (const f of fs.readdirSync(outDir)) {
    if (/^output_\d+\.npy$/.test(f)) fs.unlinkSync(path.join(outDir, f));
  }
  outputs.forEach((o, i) => writeNpy(path.join(outDir, `output_${i}.npy`), o.dtype, o.shape, o.data));
}

const shapeStr = (s) => `[${s.join(',')}]`;

function stats(data) {
  let mn = Infinity, mx = -Infinity;
  for (const v of data) { const x = Number(v); if (x < mn) mn = x; if (x > mx) mx = x; }
  return `min ${mn.toPrecision(5)} max ${mx.toPrecision(5)}`;
}

async function single(args) {
  const [model, outDir, ...specs] = args;
  const feeds = new Map();
  for (const spec of specs) {
    const m = /^(.+?)=@(.+)$/.exec(spec);
    if (!m) throw new Error(`bad input spec '${spec}', want name=@file.npy`);
    feeds.set(m[1], readNpy(m[2]));
  }
  const outputs = await runModel(model, feeds);
  writeOutputs(outDir, outputs);
  outputs.forEach((o, i) => console.log(`output_${i}.npy  ${o.name}  ${shapeStr(o.shape)} ${o.dtype}  ${stats(o.data)}`));
}

function sh(cmd, args) {
  execFileSync(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'] });
}

async function makeInputs(tmp) {
  sh(PYTHON, [path.join(REPO_ROOT, 'scripts', 'gen_golden_inputs.py'), GOLDEN_DIR, tmp]);
  // cls: rendered text, upright and turned 180 degrees.
  const img = path.join(tmp, 'cls');
  sh(path.join(REPO_ROOT, 'scripts', 'render_text.sh'), [img]);
  for (const which of ['upright', 'rotated']) {
    const d = path.join(GOLDEN_DIR, `cls_${which}`);
    fs.mkdirSync(d, { recursive: true });
    sh(PYTHON, [path.join(REPO_ROOT, 'scripts', 'preprocess_cls.py'), path.join(img, `${which}.png`), path.join(d, 'input_0.npy')]);
  }
  // embedding_model: real mel frames, transformed as openWakeWord does (x/10 + 2).
  const mel = await melFrames(readNpy(path.join(tmp, 'embedding_audio.npy')));
  if (mel.length !== 76 * 32) throw new Error(`expected 76 mel frames, got ${mel.length / 32}`);
  fs.mkdirSync(path.join(GOLDEN_DIR, 'embedding_model'), { recursive: true });
  writeNpy(path.join(GOLDEN_DIR, 'embedding_model', 'input_0.npy'), 'float32', [1, 76, 32, 1], mel);
  fs.mkdirSync(path.join(GOLDEN_DIR, 'embedding_int8'), { recursive: true });
  writeNpy(path.join(GOLDEN_DIR, 'embedding_int8', 'input_0.npy'), 'float32', [1, 76, 32, 1], mel);

  // Heads: (1-t) * real embeddings + t * noise. Real embeddings of non-speech give
  // scores near 0 and pure noise saturates some heads at 1.0 (useless as a golden);
  // t was picked per head so the output lands mid-range (checked in all()).
  const headMel = await melFrames(readNpy(path.join(tmp, 'head_audio.npy')));
  // embedding_int8_other: the last 76 frames of the head audio.
  fs.mkdirSync(path.join(GOLDEN_DIR, 'embedding_int8_other'), { recursive: true });
  writeNpy(path.join(GOLDEN_DIR, 'embedding_int8_other', 'input_0.npy'), 'float32', [1, 76, 32, 1],
    headMel.slice(headMel.length - 76 * 32));
  const emb = await session(path.join(MODELS_DIR, 'embedding_model.onnx'));
  const frames = headMel.length / 32;
  const embs = [];
  for (let e = 76; e <= frames; e += 8) {
    const r = await emb.run({ [emb.inputNames[0]]: new ort.Tensor('float32', headMel.slice((e - 76) * 32, e * 32), [1, 76, 32, 1]) });
    embs.push(r[emb.outputNames[0]].data);
  }
  for (const [name, t] of Object.entries(HEAD_BLEND)) {
    const noise = readNpy(path.join(tmp, `${name}_noise.npy`));
    const L = noise.shape[1];
    if (embs.length < L) throw new Error(`need ${L} embeddings for ${name}, have ${embs.length}`);
    const x = new Float32Array(L * 96);
    for (let i = 0; i < L; ++i) {
      for (let j = 0; j < 96; ++j) x[i * 96 + j] = (1 - t) * embs[i][j] + t * noise.data[i * 96 + j];
    }
    fs.mkdirSync(path.join(GOLDEN_DIR, name), { recursive: true });
    writeNpy(path.join(GOLDEN_DIR, name, 'input_0.npy'), 'float32', [1, L, 96], x);
  }
}

// openWakeWord's feature front end on a whole buffer: mel, then x/10 + 2.
// Returns the frames as a flat Float32Array [frames * 32].
async function melFrames(audio) {
  const [mel] = await runModel(path.join(MODELS_DIR, 'melspectrogram.onnx'), new Map([['input', audio]]));
  if (mel.shape[3] !== 32) throw new Error(`unexpected mel shape ${shapeStr(mel.shape)}`);
  return Float32Array.from(mel.data, (v) => v / 10 + 2);
}

async function all(outputsOnly, only) {
  const ocrOnly = only && only.every((d) => d === 'det_text' || d === 'rec_line');
  if (!outputsOnly) {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-golden-'));
    try {
      if (!ocrOnly) await makeInputs(tmp);
      await makeOcrInputs(tmp);
    } finally { fs.rmSync(tmp, { recursive: true, force: true }); }
  }
  const results = {};
  for (const [dir, model] of GOLDENS) {
    if (only && !only.includes(dir)) continue;
    const d = path.join(GOLDEN_DIR, dir);
    const modelPath = path.join(MODELS_DIR, model);
    const s = await session(modelPath);
    const feeds = new Map();
    const inLines = [];
    s.inputNames.forEach((n, i) => {
      const v = readNpy(path.join(d, `input_${i}.npy`));
      feeds.set(n, v);
      inLines.push(`${n} ${shapeStr(v.shape)} ${v.dtype}`);
    });
    const outputs = await runModel(modelPath, feeds);
    writeOutputs(d, outputs);
    fs.writeFileSync(path.join(d, 'inputs.txt'), inLines.join('\n') + '\n');
    // Output names can contain spaces (timer_v0.1's is a JSON label map): name last.
    fs.writeFileSync(path.join(d, 'outputs.txt'),
      outputs.map((o) => `${shapeStr(o.shape)} ${o.dtype} ${o.name}`).join('\n') + '\n');
    fs.writeFileSync(path.join(d, 'model.txt'), model + '\n');
    results[dir] = outputs;
    console.log(`${dir}: ${inLines.join('; ')} -> ` +
      outputs.map((o) => `${shapeStr(o.shape)} ${o.dtype} (${stats(o.data)})`).join('; '));
  }
  if (results.rec_line) {
    const keys = ['', ...fs.readFileSync(path.join(MODELS_DIR, 'ppocr_keys_v1.txt'), 'utf8').split('\n'), ' '];
    const [o] = results.rec_line;
    const [, T, C] = o.shape;
    let text = '', prev = -1;
    for (let t = 0; t < T; ++t) {
      let best = 0;
      for (let c = 1; c < C; ++c) if (o.data[t * C + c] > o.data[t * C + best]) best = c;
      if (best !== 0 && best !== prev) text += keys[best];
      prev = best;
    }
    console.log(`rec_line decodes to '${text}'`);
    if (text !== 'Kiln 26') throw new Error(`rec_line decodes to '${text}', want 'Kiln 26'`);
  }
  if (!results.cls_upright) return;
  // The cls goldens are only useful if they classify right, with margin.
  const up = results.cls_upright[0].data, rot = results.cls_rotated[0].data;
  console.log(`cls_upright probs [0deg, 180deg] = [${up[0].toFixed(4)}, ${up[1].toFixed(4)}]`);
  console.log(`cls_rotated probs [0deg, 180deg] = [${rot[0].toFixed(4)}, ${rot[1].toFixed(4)}]`);
  if (!(up[0] > 0.7 && rot[1] > 0.7)) {
    throw new Error('cls goldens do not classify right with margin > 0.2; change the text or size in render_text.sh');
  }
  for (const name of Object.keys(HEAD_BLEND)) {
    const d = results[name][0].data;
    const top = Math.max(...d);
    if (!(top > 0.05 && top < 0.95)) console.warn(`warning: ${name} output ${top} is saturated; retune HEAD_BLEND`);
  }
}

async function main() {
  const args = process.argv.slice(2);
  const onlyArg = args.find((a) => a.startsWith('--only='));
  if (args[0] === '--all') return all(args.includes('--outputs-only'), onlyArg ? onlyArg.slice(7).split(',') : null);
  if (args.length < 2 || args[0].startsWith('-')) {
    console.error('usage: gen_golden.mjs MODEL.onnx OUTDIR name=@in.npy [...]\n' +
      '       gen_golden.mjs --all [--outputs-only]');
    process.exit(2);
  }
  return single(args);
}

main().catch((e) => { console.error(`gen_golden: ${e.message}`); process.exit(1); });
