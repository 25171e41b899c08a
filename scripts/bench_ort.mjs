#!/usr/bin/env node
// ONNX Runtime side of scripts/bench.sh: the latency of InferenceSession.run
// on one model, measured the way kiln-bench measures kiln_invoke.
//
//   node scripts/bench_ort.mjs MODEL.onnx --reps=N --min-time=S name=@in.npy ...
//
// onnxruntime-node (scripts/ort_loader.mjs: CPU, intraOpNumThreads 1). The
// session is created and run once (warm-up) before timing. Then N
// repetitions, each running run() back to back until at least S seconds have
// passed, give N means; the median of those is printed as JSON
// {"median_ms": M, "reps_ms": [...]} on stdout. (kiln-bench with
// --benchmark_repetitions=N --benchmark_min_time=S: N repetitions, each the
// mean over iterations filling S seconds; bench.sh takes their median.)
import { readNpy } from './npy.mjs';
import { loadOrt, SESSION_OPTIONS } from './ort_loader.mjs';

function fail(msg) {
  console.error(`bench_ort: ${msg}`);
  process.exit(1);
}

let model = null;
let reps = 5;
let minTime = 0.5;
const feedsSpec = [];
for (const a of process.argv.slice(2)) {
  if (a.startsWith('--reps=')) reps = Number(a.slice(7));
  else if (a.startsWith('--min-time=')) minTime = Number(a.slice(11));
  else if (a.includes('=@')) feedsSpec.push(a);
  else if (!model && !a.startsWith('--')) model = a;
  else fail(`unknown argument '${a}'`);
}
if (!model) fail('usage: bench_ort.mjs MODEL.onnx [--reps=N] [--min-time=S] name=@in.npy ...');
if (!(reps >= 1) || !(minTime >= 0)) fail('--reps must be >= 1 and --min-time >= 0');

let ort;
try {
  ort = loadOrt();
} catch (e) {
  fail(e.message);
}
const session = await ort.InferenceSession.create(model, SESSION_OPTIONS);
const feeds = {};
for (const spec of feedsSpec) {
  const eq = spec.indexOf('=@');
  const npy = readNpy(spec.slice(eq + 2));
  feeds[spec.slice(0, eq)] = new ort.Tensor(npy.dtype, npy.data, npy.shape);
}
for (const n of session.inputNames) if (!(n in feeds)) fail(`no input given for graph input '${n}'`);
await session.run(feeds);  // warm-up

const repsMs = [];
for (let r = 0; r < reps; ++r) {
  let iterations = 0;
  const start = process.hrtime.bigint();
  let elapsed = 0;
  do {
    await session.run(feeds);
    ++iterations;
    elapsed = Number(process.hrtime.bigint() - start) / 1e9;
  } while (elapsed < minTime);
  repsMs.push((elapsed * 1e3) / iterations);
}
const sorted = [...repsMs].sort((a, b) => a - b);
const n = sorted.length;
const median = n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
console.log(JSON.stringify({ median_ms: median, reps_ms: repsMs }));
