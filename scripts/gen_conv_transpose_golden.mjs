#!/usr/bin/env node
// Builds tests/golden/conv_transpose/model.onnx, a small ONNX model of
// ConvTranspose nodes, with deterministic inputs, and records ONNX Runtime's
// outputs for it (onnxruntime-node, CPU, one thread; see ort_loader.mjs).
//
//   node scripts/gen_conv_transpose_golden.mjs
//
// The model (opset 11, f32):
//   x [1,24,10,12], z [1,4,7]
//   up1   = Relu(ConvTranspose(x, W0 [24,24,2,2], B0, strides 2))      [1,24,20,24]
//   y_det = Sigmoid(ConvTranspose(up1, W1 [24,1,2,2], B1, strides 2))  [1,1,40,48]
//           (PaddleOCR PP-OCRv4 det's two upsampling ConvTransposes, at a
//            smaller resolution: 2x2 kernels, stride 2, group 1)
//   y_grp = ConvTranspose(x, W2 [24,2,3,3], group 12, strides [2,3],
//           dilations [2,1], pads [1,0,2,1], output_padding [1,2])      [1,24,21,37]
//   y_dw  = ConvTranspose(x, W3 [24,1,3,3], B3, group 24 (depthwise),
//           strides 2, auto_pad SAME_LOWER)                           [1,24,20,24]
//   y_1d  = ConvTranspose(z, W4 [4,3,4], strides 3, dilations 2,
//           auto_pad SAME_UPPER, output_shape [24])                    [1,3,24]
// The ONNX protobuf is written by hand (a few message types), so no Python
// onnx package is needed; ORT parsing it and running it is the check.
import fs from 'node:fs';
import path from 'node:path';
import { writeNpy } from './npy.mjs';
import { loadOrt, REPO_ROOT, SESSION_OPTIONS } from './ort_loader.mjs';

const OUT_DIR = path.join(REPO_ROOT, 'tests', 'golden', 'conv_transpose');

// ---- protobuf wire format (varint = 0, length-delimited = 2, fixed32 = 5) ----
function varint(n) {
  let v = BigInt(n);
  if (v < 0n) v += 1n << 64n;  // two's complement, 10 bytes
  const out = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) b |= 0x80;
    out.push(b);
  } while (v !== 0n);
  return out;
}
const key = (field, wire) => varint((field << 3) | wire);
const bytesOf = (s) => (typeof s === 'string' ? [...Buffer.from(s, 'utf8')] : [...s]);
const fInt = (field, n) => [...key(field, 0), ...varint(n)];
const fLen = (field, payload) => [...key(field, 2), ...varint(payload.length), ...payload];
const fStr = (field, s) => fLen(field, bytesOf(s));
const packedInts = (field, list) => fLen(field, list.flatMap((v) => varint(v)));

// onnx.proto field numbers (onnx 1.12).
const FLOAT = 1;
function tensor(name, dims, data) {  // TensorProto: dims 1, data_type 2, name 8, raw_data 9
  const raw = Buffer.from(new Float32Array(data).buffer);
  return [...packedInts(1, dims), ...fInt(2, FLOAT), ...fStr(8, name), ...fLen(9, [...raw])];
}
function attrInts(name, list) {  // AttributeProto: name 1, ints 8, type 20 (INTS = 7)
  return [...fStr(1, name), ...list.flatMap((v) => fInt(8, v)), ...fInt(20, 7)];
}
function attrInt(name, v) {  // i 3, type INT = 2
  return [...fStr(1, name), ...fInt(3, v), ...fInt(20, 2)];
}
function attrStr(name, s) {  // s 4, type STRING = 3
  return [...fStr(1, name), ...fStr(4, s), ...fInt(20, 3)];
}
function node(opType, name, inputs, outputs, attrs = []) {  // NodeProto: input 1, output 2, name 3, op_type 4, attribute 5
  return [...inputs.flatMap((i) => fStr(1, i)), ...outputs.flatMap((o) => fStr(2, o)), ...fStr(3, name),
    ...fStr(4, opType), ...attrs.flatMap((a) => fLen(5, a))];
}
function valueInfo(name, dims) {  // ValueInfoProto: name 1, type 2; TypeProto.tensor_type 1; elem_type 1, shape 2; dim 1; dim_value 1
  const shape = dims.flatMap((d) => fLen(1, fInt(1, d)));
  return [...fStr(1, name), ...fLen(2, fLen(1, [...fInt(1, FLOAT), ...fLen(2, shape)]))];
}
function model(nodes, name, initializers, inputs, outputs) {
  // GraphProto: node 1, name 2, initializer 5, input 11, output 12.
  const graph = [...nodes.flatMap((n) => fLen(1, n)), ...fStr(2, name), ...initializers.flatMap((t) => fLen(5, t)),
    ...inputs.flatMap((v) => fLen(11, v)), ...outputs.flatMap((v) => fLen(12, v))];
  // ModelProto: ir_version 1, producer_name 2, graph 7, opset_import 8 (domain 1, version 2).
  return Buffer.from([...fInt(1, 7), ...fStr(2, 'kiln gen_conv_transpose_golden.mjs'), ...fLen(7, graph),
    ...fLen(8, [...fStr(1, ''), ...fInt(2, 11)])]);
}

// ---- deterministic data (mulberry32) ----
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
// Uniform in [-scale, scale], rounded to f32.
function uniform(seed, count, scale) {
  const r = rng(seed);
  return Float32Array.from({ length: count }, () => (2 * r() - 1) * scale);
}
const prod = (s) => s.reduce((a, b) => a * b, 1);

async function main() {
  const ort = loadOrt();
  const W = {
    W0: [[24, 24, 2, 2], 1 / Math.sqrt(24 * 4)], B0: [[24], 0.1],
    W1: [[24, 1, 2, 2], 1], B1: [[1], 0.1],
    W2: [[24, 2, 3, 3], 1 / Math.sqrt(2 * 9)],
    W3: [[24, 1, 3, 3], 1 / 3], B3: [[24], 0.1],
    W4: [[4, 3, 4], 0.5],
  };
  const inits = [];
  let seed = 100;
  for (const [name, [dims, scale]] of Object.entries(W)) inits.push(tensor(name, dims, uniform(seed++, prod(dims), scale)));
  const nodes = [
    node('ConvTranspose', 'up1', ['x', 'W0', 'B0'], ['up1_pre'], [attrInts('kernel_shape', [2, 2]), attrInts('strides', [2, 2]),
      attrInts('pads', [0, 0, 0, 0]), attrInts('dilations', [1, 1]), attrInt('group', 1)]),
    node('Relu', 'up1_relu', ['up1_pre'], ['up1']),
    node('ConvTranspose', 'up2', ['up1', 'W1', 'B1'], ['up2_pre'], [attrInts('strides', [2, 2])]),
    node('Sigmoid', 'up2_sigmoid', ['up2_pre'], ['y_det']),
    node('ConvTranspose', 'grouped', ['x', 'W2'], ['y_grp'], [attrInt('group', 12), attrInts('strides', [2, 3]),
      attrInts('dilations', [2, 1]), attrInts('pads', [1, 0, 2, 1]), attrInts('output_padding', [1, 2])]),
    node('ConvTranspose', 'depthwise', ['x', 'W3', 'B3'], ['y_dw'], [attrInt('group', 24), attrInts('strides', [2, 2]),
      attrStr('auto_pad', 'SAME_LOWER')]),
    node('ConvTranspose', 'one_d', ['z', 'W4'], ['y_1d'], [attrInts('strides', [3]), attrInts('dilations', [2]),
      attrStr('auto_pad', 'SAME_UPPER'), attrInts('output_shape', [24])]),
  ];
  const outputs = [['y_det', [1, 1, 40, 48]], ['y_grp', [1, 24, 21, 37]], ['y_dw', [1, 24, 20, 24]], ['y_1d', [1, 3, 24]]];
  const inputs = [['x', [1, 24, 10, 12]], ['z', [1, 4, 7]]];
  const bytes = model(nodes, 'conv_transpose', inits, inputs.map(([n, d]) => valueInfo(n, d)),
    outputs.map(([n, d]) => valueInfo(n, d)));
  fs.mkdirSync(OUT_DIR, { recursive: true });
  const modelPath = path.join(OUT_DIR, 'model.onnx');
  fs.writeFileSync(modelPath, bytes);

  const feeds = {};
  const inLines = [];
  inputs.forEach(([name, dims], i) => {
    const data = uniform(1 + i, prod(dims), 1);
    writeNpy(path.join(OUT_DIR, `input_${i}.npy`), 'float32', dims, data);
    feeds[name] = new ort.Tensor('float32', data, dims);
    inLines.push(`${name} [${dims.join(',')}] float32`);
  });
  const session = await ort.InferenceSession.create(modelPath, SESSION_OPTIONS);
  const res = await session.run(feeds);
  const outLines = [];
  session.outputNames.forEach((name, i) => {
    const t = res[name];
    const want = outputs[i][1];
    if (t.dims.join(',') !== want.join(',')) throw new Error(`${name}: ORT gives [${t.dims}], the comment says [${want}]`);
    writeNpy(path.join(OUT_DIR, `output_${i}.npy`), 'float32', [...t.dims], t.data);
    outLines.push(`[${t.dims.join(',')}] float32 ${name}`);
    let mn = Infinity, mx = -Infinity;
    for (const v of t.data) { mn = Math.min(mn, v); mx = Math.max(mx, v); }
    console.log(`${name} [${t.dims.join(',')}] min ${mn.toPrecision(5)} max ${mx.toPrecision(5)}`);
  });
  fs.writeFileSync(path.join(OUT_DIR, 'inputs.txt'), inLines.join('\n') + '\n');
  fs.writeFileSync(path.join(OUT_DIR, 'outputs.txt'), outLines.join('\n') + '\n');
  fs.writeFileSync(path.join(OUT_DIR, 'model.txt'), 'model.onnx\n');
}

main().catch((e) => {
  console.error(`gen_conv_transpose_golden: ${e.stack || e}`);
  process.exit(1);
});
