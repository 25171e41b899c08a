#!/usr/bin/env node
// Streaming reference for silero_vad (ONNX Runtime, CPU): runs N consecutive
// 512-sample chunks of a 16 kHz mono PCM16 WAV, feeding hn/cn back as h/c.
//
//   node scripts/silero_stream_reference.mjs IN.wav OUTDIR [--chunks=100]
//
// The audio is samples / 32768, zero-padded to N*512. Writes OUTDIR/output.npy
// ([N,1] f32, the speech probability per chunk) and OUTDIR/hn.npy,
// OUTDIR/cn.npy ([N,2,1,64] f32: the state after each chunk). The initial
// h and c are zeros; sr is 16000. The Kiln test (tests/e2e/silero_stream_test.cc)
// runs the same chunks and compares chunk by chunk.
import fs from 'node:fs';
import path from 'node:path';
import { writeNpy } from './npy.mjs';
import { loadOrt, REPO_ROOT, SESSION_OPTIONS } from './ort_loader.mjs';

const [wavPath, outDir, ...rest] = process.argv.slice(2);
if (!wavPath || !outDir) {
  console.error('usage: silero_stream_reference.mjs IN.wav OUTDIR [--chunks=100]');
  process.exit(2);
}
let chunks = 100;
for (const a of rest) if (a.startsWith('--chunks=')) chunks = parseInt(a.slice(9), 10);

function readWav16k(p) {
  const b = fs.readFileSync(p);
  if (b.toString('ascii', 0, 4) !== 'RIFF' || b.toString('ascii', 8, 12) !== 'WAVE') throw new Error(`${p}: not a WAV file`);
  let off = 12, fmt = null;
  while (off + 8 <= b.length) {
    const id = b.toString('ascii', off, off + 4), size = b.readUInt32LE(off + 4);
    if (id === 'fmt ') fmt = { channels: b.readUInt16LE(off + 10), rate: b.readUInt32LE(off + 12), bits: b.readUInt16LE(off + 22) };
    if (id === 'data') {
      if (!fmt || fmt.channels !== 1 || fmt.rate !== 16000 || fmt.bits !== 16) throw new Error(`${p}: need 16 kHz mono PCM16`);
      const n = size / 2, out = new Float32Array(n);
      for (let i = 0; i < n; ++i) out[i] = b.readInt16LE(off + 8 + 2 * i) / 32768;
      return out;
    }
    off += 8 + size + (size & 1);
  }
  throw new Error(`${p}: no data chunk`);
}

const ort = loadOrt();
const samples = readWav16k(wavPath);
const session = await ort.InferenceSession.create(path.join(REPO_ROOT, '.cache', 'models', 'silero_vad.onnx'), SESSION_OPTIONS);
const audio = new Float32Array(chunks * 512);
audio.set(samples.subarray(0, Math.min(samples.length, chunks * 512)));
let h = new ort.Tensor('float32', new Float32Array(128), [2, 1, 64]);
let c = new ort.Tensor('float32', new Float32Array(128), [2, 1, 64]);
const sr = new ort.Tensor('int64', BigInt64Array.from([16000n]), []);
const prob = new Float32Array(chunks), hs = new Float32Array(chunks * 128), cs = new Float32Array(chunks * 128);
for (let k = 0; k < chunks; ++k) {
  const input = new ort.Tensor('float32', audio.slice(k * 512, (k + 1) * 512), [1, 512]);
  const r = await session.run({ input, sr, h, c });
  prob[k] = r.output.data[0];
  hs.set(r.hn.data, k * 128);
  cs.set(r.cn.data, k * 128);
  h = r.hn;
  c = r.cn;
}
fs.mkdirSync(outDir, { recursive: true });
writeNpy(path.join(outDir, 'output.npy'), 'float32', [chunks, 1], prob);
writeNpy(path.join(outDir, 'hn.npy'), 'float32', [chunks, 2, 1, 64], hs);
writeNpy(path.join(outDir, 'cn.npy'), 'float32', [chunks, 2, 1, 64], cs);
console.log(`silero stream: ${chunks} chunks, max prob ${Math.max(...prob).toFixed(4)}`);
