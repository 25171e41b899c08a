#!/usr/bin/env node
// Driver of scripts/bench.sh (see there for usage): Kiln (kiln-bench) and ONNX
// Runtime (scripts/bench_ort.mjs) interleaved on every real model, plus any
// .onnx given on the command line. The parsing and summary functions are
// exported for scripts/bench_test.mjs.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { writeNpy } from './npy.mjs';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// The project's real models: name -> golden directory (tests/golden/<dir>:
// model.txt, inputs.txt, input_<i>.npy, the same inputs the golden tests use).
export const MODELS = [
  ['cls', 'cls_upright'],
  ['embedding', 'embedding_model'],
  ['rec', 'rec_line'],
  ['det', 'det_text'],
  ['melspectrogram', 'melspectrogram'],
  ['alexa', 'alexa_v0.1'],
  ['hey_jarvis', 'hey_jarvis_v0.1'],
  ['hey_mycroft', 'hey_mycroft_v0.1'],
  ['hey_rhasspy', 'hey_rhasspy_v0.1'],
  ['timer', 'timer_v0.1'],
  ['weather', 'weather_v0.1'],
  ['silero_vad', 'silero_vad'],
];

export function median(xs) {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

const UNIT_MS = { ns: 1e-6, us: 1e-3, ms: 1, s: 1e3 };

// kiln-bench --benchmark_format=json with repetitions: the median aggregate
// of the synchronous invoke benchmark ("invoke/<module>/<function>"), in ms.
export function parseKilnBenchJson(text) {
  // Google Benchmark writes bare NaN/inf for counters whose aggregate is
  // undefined (the cv of an all-zero counter): not JSON.
  const doc = JSON.parse(text.replace(/:\s*-?(nan|inf|infinity)\s*([,}\n])/gi, ': null$2'));
  // "invoke/<module>/<function>/real_time" (UseRealTime); ".../async" is the other one.
  const rows = (doc.benchmarks || []).filter((b) => /^invoke\/[^/]+\/[^/]+(\/real_time)?$/.test(b.run_name || b.name));
  let row = rows.find((b) => b.aggregate_name === 'median');
  if (!row) row = rows.find((b) => b.run_type === 'iteration' || !b.run_type);
  if (!row) throw new Error('kiln-bench JSON has no invoke benchmark');
  if (row.error_occurred) throw new Error(`kiln-bench: ${row.error_message}`);
  const unit = UNIT_MS[row.time_unit || 'ns'];
  if (unit === undefined) throw new Error(`kiln-bench JSON: unknown time_unit ${row.time_unit}`);
  return { ms: row.real_time * unit, dispatches: row.dispatches };
}

// kiln-bench --per-dispatch --per-dispatch-format=tsv.
export function parsePerDispatchTsv(text) {
  const lines = text.split('\n').filter((l) => l.length);
  const header = lines.shift();
  if (header !== 'kind\tms\tcalls\tmacs\tgmac_s\tname\tnodes') throw new Error(`per-dispatch TSV: bad header '${header}'`);
  const out = { rows: [], all: null, convMatmul: null, invoke: null };
  for (const line of lines) {
    const f = line.split('\t');
    if (f.length !== 7) throw new Error(`per-dispatch TSV: ${f.length} fields in '${line}'`);
    const r = { kind: f[0], ms: Number(f[1]), calls: Number(f[2]), macs: Number(f[3]), gmacs: Number(f[4]), name: f[5], nodes: f[6] };
    if (r.kind === 'dispatch') out.rows.push(r);
    else if (r.kind === 'all') out.all = r;
    else if (r.kind === 'conv_matmul') out.convMatmul = r;
    else if (r.kind === 'invoke') out.invoke = r;
    else throw new Error(`per-dispatch TSV: unknown kind '${r.kind}'`);
  }
  if (!out.all || !out.convMatmul || !out.invoke) throw new Error('per-dispatch TSV: totals missing');
  return out;
}

// One result row of the harness.
export function summarize(model, kilnRoundsMs, ortRoundsMs, profile) {
  const kiln = median(kilnRoundsMs);
  const ort = median(ortRoundsMs);
  return {
    model,
    kiln_ms: kiln,
    ort_ms: ort,
    ratio: kiln / ort,
    dispatches: profile ? profile.all.calls : NaN,
    conv_matmul_dispatches: profile ? profile.convMatmul.calls : NaN,
    conv_matmul_mmac: profile ? profile.convMatmul.macs / 1e6 : NaN,
    conv_matmul_ms: profile ? profile.convMatmul.ms : NaN,
    conv_matmul_gmac_s: profile ? profile.convMatmul.gmacs : NaN,
    dispatch_ms: profile ? profile.all.ms : NaN,
    rounds: kilnRoundsMs.length,
    kiln_rounds_ms: kilnRoundsMs,
    ort_rounds_ms: ortRoundsMs,
  };
}

export const TSV_COLUMNS = ['model', 'kiln_ms', 'ort_ms', 'ratio', 'dispatches', 'conv_matmul_dispatches',
  'conv_matmul_mmac', 'conv_matmul_ms', 'conv_matmul_gmac_s', 'dispatch_ms', 'rounds', 'kiln_rounds_ms', 'ort_rounds_ms'];

const fmt = (v, d) => (Number.isFinite(v) ? v.toFixed(d) : '-');

export function toTsv(rows) {
  const cell = (r, c) => (Array.isArray(r[c]) ? r[c].map((v) => v.toFixed(4)).join(',')
    : typeof r[c] === 'number' ? (Number.isInteger(r[c]) ? String(r[c]) : r[c].toFixed(4)) : String(r[c]));
  return [TSV_COLUMNS.join('\t'), ...rows.map((r) => TSV_COLUMNS.map((c) => cell(r, c)).join('\t'))].join('\n') + '\n';
}

export function formatTable(rows) {
  const head = ['model', 'kiln ms', 'ORT ms', 'Kiln/ORT', 'dispatches', 'conv+mm GMAC/s', 'conv+mm ms', 'conv+mm share'];
  const body = rows.map((r) => [r.model, fmt(r.kiln_ms, 3), fmt(r.ort_ms, 3), `${fmt(r.ratio, 1)}x`, fmt(r.dispatches, 0),
    fmt(r.conv_matmul_gmac_s, 2), fmt(r.conv_matmul_ms, 3),
    Number.isFinite(r.conv_matmul_ms / r.dispatch_ms) ? `${(100 * r.conv_matmul_ms / r.dispatch_ms).toFixed(0)}%` : '-']);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells) => cells.map((c, i) => (i ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ');
  return [line(head), ...body.map(line)].join('\n') + '\n';
}

// "name=1x3x224x224" -> {name, shape}
export function parseInputShape(spec) {
  const eq = spec.lastIndexOf('=');
  if (eq <= 0) throw new Error(`--input-shape '${spec}': want NAME=D0xD1x...`);
  const dims = spec.slice(eq + 1).split('x').map(Number);
  if (!dims.length || dims.some((d) => !Number.isInteger(d) || d < 0)) throw new Error(`--input-shape '${spec}': bad dims`);
  return { name: spec.slice(0, eq), shape: dims };
}

export function readGolden(dir) {
  const gdir = path.join(REPO_ROOT, 'tests', 'golden', dir);
  const modelFile = fs.readFileSync(path.join(gdir, 'model.txt'), 'utf8').split('\n')[0].trim();
  const modelsDir = process.env.KILN_MODELS_DIR || path.join(REPO_ROOT, '.cache', 'models');
  const model = fs.existsSync(path.join(gdir, modelFile)) ? path.join(gdir, modelFile) : path.join(modelsDir, modelFile);
  const inputs = fs.readFileSync(path.join(gdir, 'inputs.txt'), 'utf8').split('\n').filter((l) => l.trim())
    .map((line, i) => {
      const open = line.lastIndexOf('[');
      const name = line.slice(0, open - 1);
      const dims = line.slice(open + 1, line.lastIndexOf(']'));
      return { name, shape: dims ? dims.split(',').map(Number) : [], file: path.join(gdir, `input_${i}.npy`) };
    });
  return { model, inputs };
}

// Deterministic inputs for a model that is not in the repository: uniform in
// [-1, 1] (mulberry32, seed 1 + input index), float32.
function writeRandomInputs(inputs, dir) {
  inputs.forEach((inp, i) => {
    let a = (1 + i) >>> 0;
    const rand = () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const n = inp.shape.reduce((x, y) => x * y, 1);
    const data = new Float32Array(n);
    for (let k = 0; k < n; ++k) data[k] = 2 * rand() - 1;
    inp.file = path.join(dir, `input_${i}.npy`);
    writeNpy(inp.file, 'float32', inp.shape, data);
  });
}

function parseArgs(argv) {
  const o = { rounds: 5, reps: 3, minTime: 0.3, profileInvokes: 10, models: null, out: null,
    build: process.env.KILN_BUILD || path.join(REPO_ROOT, 'build', 'default'), extra: [], profile: true };
  for (const a of argv) {
    const v = a.slice(a.indexOf('=') + 1);
    if (a.startsWith('--rounds=')) o.rounds = Number(v);
    else if (a.startsWith('--reps=')) o.reps = Number(v);
    else if (a.startsWith('--min-time=')) o.minTime = Number(v);
    else if (a.startsWith('--profile-invokes=')) o.profileInvokes = Number(v);
    else if (a === '--no-profile') o.profile = false;
    else if (a.startsWith('--models=')) o.models = v === 'none' ? [] : v.split(',');
    else if (a.startsWith('--out=')) o.out = v;
    else if (a.startsWith('--build=')) o.build = v;
    else if (a.startsWith('--input-shape=')) {
      if (!o.extra.length) throw new Error(`${a}: give the .onnx model first`);
      o.extra[o.extra.length - 1].shapes.push(parseInputShape(v));
    } else if (a.endsWith('.onnx') && !a.startsWith('--')) o.extra.push({ model: path.resolve(a), shapes: [] });
    else throw new Error(`unknown argument '${a}' (scripts/bench.sh --help)`);
  }
  if (!(o.rounds >= 1) || !(o.reps >= 1) || !(o.minTime > 0) || !(o.profileInvokes >= 1)) {
    throw new Error('--rounds, --reps and --profile-invokes must be >= 1 and --min-time > 0');
  }
  if (o.models) {
    const known = new Set(MODELS.map((m) => m[0]));
    for (const m of o.models) if (!known.has(m)) throw new Error(`--models: unknown model '${m}' (known: ${[...known].join(', ')})`);
  }
  return o;
}

// Runs `cmd` with `args`; its stdout, or an Error naming the tool, its exit
// status and the last lines of its stderr.
export function run(cmd, args) {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    throw new Error(`${path.basename(cmd)} failed (exit ${e.status}): ${String(e.stderr || e.message).trim().split('\n').slice(-5).join('\n')}`);
  }
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const tools = { compile: path.join(o.build, 'compiler', 'tools', 'kiln-compile'), bench: path.join(o.build, 'tools', 'kiln-bench') };
  for (const t of Object.values(tools)) if (!fs.existsSync(t)) throw new Error(`${t} not found: build first (cmake --build --preset default)`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-bench-'));
  const cases = [];
  for (const [name, dir] of MODELS) {
    if (o.models && !o.models.includes(name)) continue;
    const g = readGolden(dir);
    if (!fs.existsSync(g.model)) {
      console.error(`bench: skipping ${name}: ${g.model} not fetched (scripts/setup.sh)`);
      continue;
    }
    cases.push({ name, ...g });
  }
  if (o.extra.length) {
    const { loadOrt, SESSION_OPTIONS } = await import('./ort_loader.mjs');
    const ort = loadOrt();
    for (const [i, e] of o.extra.entries()) {
      if (!fs.existsSync(e.model)) throw new Error(`${e.model} not found`);
      const session = await ort.InferenceSession.create(e.model, SESSION_OPTIONS);
      const inputs = session.inputNames.map((n) => {
        const s = e.shapes.find((x) => x.name === n);
        if (!s) throw new Error(`${e.model}: graph input '${n}' needs --input-shape=${n}=D0xD1x... (float32 inputs only)`);
        return { name: n, shape: s.shape };
      });
      const dir = path.join(work, `extra${i}`);
      fs.mkdirSync(dir);
      writeRandomInputs(inputs, dir);
      cases.push({ name: path.basename(e.model, '.onnx'), model: e.model, inputs });
    }
  }
  const rows = [];
  for (const c of cases) {
    const kiln = path.join(work, `${c.name}.kiln`);
    const shapes = c.inputs.filter((i) => i.shape.length).map((i) => `--input-shape=${i.name}=${i.shape.join('x')}`);
    run(tools.compile, [c.model, '-o', kiln, ...shapes]);
    const inputArgs = c.inputs.map((i) => `--input=@${i.file}`);
    let profile = null;
    if (o.profile) {
      try {
        profile = parsePerDispatchTsv(run(tools.bench, [`--module=${kiln}`, ...inputArgs, '--per-dispatch',
          '--per-dispatch-format=tsv', `--per-dispatch-invokes=${o.profileInvokes}`]));
      } catch (e) {
        console.error(`bench: ${c.name}: no per-dispatch profile: ${e.message}`);
      }
    }
    const kilnRounds = [];
    const ortRounds = [];
    for (let r = 0; r < o.rounds; ++r) {
      kilnRounds.push(parseKilnBenchJson(run(tools.bench, [`--module=${kiln}`, ...inputArgs,
        '--benchmark_filter=^invoke/[^/]*/main/real_time$', `--benchmark_repetitions=${o.reps}`,
        `--benchmark_min_time=${o.minTime}`, '--benchmark_report_aggregates_only=true',
        '--benchmark_format=json'])).ms);
      ortRounds.push(JSON.parse(run(process.execPath, [path.join(REPO_ROOT, 'scripts', 'bench_ort.mjs'), c.model,
        `--reps=${o.reps}`, `--min-time=${o.minTime}`, ...c.inputs.map((i) => `${i.name}=@${i.file}`)])).median_ms);
    }
    const row = summarize(c.name, kilnRounds, ortRounds, profile);
    rows.push(row);
    console.error(`bench: ${c.name}: kiln ${fmt(row.kiln_ms, 3)} ms, ORT ${fmt(row.ort_ms, 3)} ms (${o.rounds} rounds)`);
  }
  process.stdout.write(`Kiln vs ONNX Runtime (1 thread), ${o.rounds} interleaved rounds x ${o.reps} repetitions of >= ${o.minTime} s; medians\n`);
  process.stdout.write(formatTable(rows));
  const out = o.out || path.join(o.build, 'bench', 'bench.tsv');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, toTsv(rows));
  process.stdout.write(`TSV: ${out}\n`);
  fs.rmSync(work, { recursive: true, force: true });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    console.error(`bench: ${e.message}`);
    process.exit(1);
  });
}
