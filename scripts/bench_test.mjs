#!/usr/bin/env node
// Tests of scripts/bench.sh: the parsing and summary logic on fixed inputs,
// then one short end-to-end run on a tiny model (tests/golden/conv_transpose)
// whose TSV is checked for structure and internal consistency, never for
// speed. Exit 77 (ctest: skipped) for the end-to-end part when
// onnxruntime-node is not installed.
//
//   node scripts/bench_test.mjs BUILD_DIR
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { median, parseKilnBenchJson, parsePerDispatchTsv, summarize, toTsv, formatTable, parseInputShape, TSV_COLUMNS } from './bench.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const build = path.resolve(process.argv[2] || path.join(ROOT, 'build', 'default'));

// --- parsing, on fixed inputs -------------------------------------------------
assert.equal(median([3, 1, 2]), 2);
assert.equal(median([4, 1, 2, 3]), 2.5);
// kiln-bench JSON (Google Benchmark 1.7, repetitions, aggregates only): the
// median aggregate of the synchronous benchmark, converted to ms.
const json = JSON.stringify({ benchmarks: [
  { name: 'invoke/m.kiln/main/real_time_mean', run_name: 'invoke/m.kiln/main/real_time', run_type: 'aggregate', aggregate_name: 'mean', real_time: 2500, time_unit: 'us', dispatches: 7 },
  { name: 'invoke/m.kiln/main/real_time_median', run_name: 'invoke/m.kiln/main/real_time', run_type: 'aggregate', aggregate_name: 'median', real_time: 2000, time_unit: 'us', dispatches: 7 },
  { name: 'invoke/m.kiln/main/async/real_time_median', run_name: 'invoke/m.kiln/main/async/real_time', run_type: 'aggregate', aggregate_name: 'median', real_time: 1, time_unit: 'us' },
] });
assert.deepEqual(parseKilnBenchJson(json), { ms: 2, dispatches: 7 });
// One repetition: no aggregates, the iteration row.
assert.equal(parseKilnBenchJson(JSON.stringify({ benchmarks: [
  { name: 'invoke/m.kiln/main/real_time', run_name: 'invoke/m.kiln/main/real_time', run_type: 'iteration', real_time: 3.5, time_unit: 'ms' }] })).ms, 3.5);
assert.throws(() => parseKilnBenchJson('{"benchmarks": []}'), /no invoke benchmark/);
// Bare NaN/inf (Google Benchmark's cv of an all-zero counter) are tolerated.
assert.equal(parseKilnBenchJson('{"benchmarks": [{"name": "invoke/m.kiln/main/real_time_cv", "run_name": ' +
  '"invoke/m.kiln/main/real_time", "aggregate_name": "cv", "real_time": 0.1, "copies": NaN, "time_unit": "ms"},\n' +
  '{"name": "invoke/m.kiln/main/real_time_median", "run_name": "invoke/m.kiln/main/real_time", "aggregate_name": ' +
  '"median", "real_time": 4, "copies": -inf, "time_unit": "ms"}]}').ms, 4);

const tsv = ['kind\tms\tcalls\tmacs\tgmac_s\tname\tnodes',
  'dispatch\t2.0\t1\t1000000\t0.5\tdispatch_0_conv2d\tConv_0',
  'dispatch\t1.0\t2\t0\t0\tdispatch_1_add\tAdd_1, Relu_2',
  'all\t3.0\t3\t1000000\t0.3333\t-\t-',
  'conv_matmul\t2.0\t1\t1000000\t0.5\t-\t-',
  'invoke\t3.5\t1\t0\t0\t-\t-', ''].join('\n');
const p = parsePerDispatchTsv(tsv);
assert.equal(p.rows.length, 2);
assert.equal(p.rows[1].nodes, 'Add_1, Relu_2');
assert.equal(p.all.calls, 3);
assert.equal(p.convMatmul.gmacs, 0.5);
assert.throws(() => parsePerDispatchTsv('ms\tkind\n'), /bad header/);
assert.throws(() => parsePerDispatchTsv(tsv.split('\n').slice(0, 4).join('\n')), /totals missing/);

const row = summarize('m', [3, 1, 2], [0.5, 1.5, 1], p);
assert.equal(row.kiln_ms, 2);
assert.equal(row.ort_ms, 1);
assert.equal(row.ratio, 2);
assert.equal(row.dispatches, 3);
assert.equal(row.conv_matmul_mmac, 1);
const out = toTsv([row]).split('\n');
assert.equal(out[0], TSV_COLUMNS.join('\t'));
assert.equal(out[1].split('\t').length, TSV_COLUMNS.length);
assert.match(formatTable([row]), /m +2\.000 +1\.000 +2\.0x +3 +0\.50/);
assert.deepEqual(parseInputShape('x.1=1x3x8x8'), { name: 'x.1', shape: [1, 3, 8, 8] });
assert.throws(() => parseInputShape('x=1x-3'), /bad dims/);
console.log('bench_test: parsing OK');

// --- end to end on a tiny model ----------------------------------------------
const ortDir = process.env.KILN_ORT_DIR || path.join(ROOT, '.cache', 'ort');
if (!fs.existsSync(path.join(ortDir, 'node_modules', 'onnxruntime-node')) &&
    !fs.existsSync(path.join(ortDir, 'onnxruntime-node'))) {
  console.log(`bench_test: SKIP end to end: onnxruntime-node not installed in ${ortDir} (scripts/setup.sh)`);
  process.exit(77);
}
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-bench-test-'));
const model = path.join(ROOT, 'tests', 'golden', 'conv_transpose', 'model.onnx');
const shapes = ['--input-shape=x=1x24x10x12', '--input-shape=z=1x4x7'];
const outTsv = path.join(work, 'out.tsv');
const stdout = execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'bench.mjs'), '--models=none', '--rounds=2', '--reps=1',
  '--min-time=0.01', '--profile-invokes=2', `--out=${outTsv}`, `--build=${build}`, model, ...shapes], { encoding: 'utf8' });
assert.match(stdout, /2 interleaved rounds/);
const lines = fs.readFileSync(outTsv, 'utf8').trim().split('\n');
assert.equal(lines.length, 2);
assert.equal(lines[0], TSV_COLUMNS.join('\t'));
const f = Object.fromEntries(lines[1].split('\t').map((v, i) => [TSV_COLUMNS[i], v]));
assert.equal(f.model, 'model');
assert.equal(f.rounds, '2');
const kr = f.kiln_rounds_ms.split(',').map(Number);
const orr = f.ort_rounds_ms.split(',').map(Number);
assert.equal(kr.length, 2);
assert.equal(orr.length, 2);
for (const v of [...kr, ...orr]) assert.ok(v > 0, `round time ${v}`);
const rel = (a, b) => Math.abs(a - b) / Math.max(Math.abs(b), 1e-9);
assert.ok(rel(Number(f.kiln_ms), median(kr)) < 1e-3, 'kiln_ms is the median of the rounds');
assert.ok(rel(Number(f.ort_ms), median(orr)) < 1e-3, 'ort_ms is the median of the rounds');
assert.ok(rel(Number(f.ratio), Number(f.kiln_ms) / Number(f.ort_ms)) < 1e-3, 'ratio = kiln / ort');
// Dispatches: the runtime's own counter for one invocation of the same module.
const kiln = path.join(work, 'm.kiln');
execFileSync(path.join(build, 'compiler', 'tools', 'kiln-compile'), [model, '-o', kiln, ...shapes]);
const g = path.join(ROOT, 'tests', 'golden', 'conv_transpose');
const stats = execFileSync(path.join(build, 'tools', 'kiln-run'), [`--module=${kiln}`, `--input=@${g}/input_0.npy`,
  `--input=@${g}/input_1.npy`, '--stats'], { encoding: 'utf8' });
assert.equal(f.dispatches, stats.match(/^dispatches: (\d+)$/m)[1]);
// 400656 MACs, derived by hand in tools/per_dispatch_test.sh.
assert.equal(f.conv_matmul_mmac, (400656 / 1e6).toFixed(4));
assert.ok(Number(f.conv_matmul_gmac_s) > 0);
fs.rmSync(work, { recursive: true, force: true });
console.log('bench_test: end to end OK');
