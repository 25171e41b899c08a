// The one-run table of issue 13 item 5 (scripts/memory_report.sh): per model,
// what the compiler decided (kiln-compile --report) and what one steady
// invoke did (kiln-run --stats-steady), plus the latency on this machine
// (kiln-bench, models interleaved round by round).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { MODELS, median, parseKilnBenchJson, readGolden, run } from './bench.mjs';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// Issue 13 item 5's models (names of bench.mjs MODELS).
const DEFAULT_MODELS = ['det', 'rec', 'cls', 'embedding', 'melspectrogram'];

function parseArgs(argv) {
  const o = { rounds: 3, reps: 3, minTime: 0.2, models: DEFAULT_MODELS, build: path.join(REPO_ROOT, 'build', 'default'),
              compileFlags: [], latency: true };
  for (const a of argv) {
    const v = a.slice(a.indexOf('=') + 1);
    if (a.startsWith('--rounds=')) o.rounds = Number(v);
    else if (a.startsWith('--reps=')) o.reps = Number(v);
    else if (a.startsWith('--min-time=')) o.minTime = Number(v);
    else if (a.startsWith('--models=')) o.models = v.split(',');
    else if (a.startsWith('--build=')) o.build = path.resolve(v);
    else if (a.startsWith('--compile-flag=')) o.compileFlags.push(v);
    else if (a === '--no-latency') o.latency = false;
    else throw new Error(`unknown argument '${a}' (--help)`);
  }
  const known = new Set(MODELS.map((m) => m[0]));
  for (const m of o.models) if (!known.has(m)) throw new Error(`unknown model '${m}' (known: ${[...known].join(', ')})`);
  return o;
}


// "key: value" lines (kiln-compile --report, kiln-run --stats) -> numbers.
export function parseCounters(text) {
  const out = {};
  for (const line of text.split('\n')) {
    const m = /^([a-z_0-9]+): (-?\d+)$/.exec(line.trim());
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

const COLUMNS = [
  ['model', (r) => r.model],
  ['dispatches', (r) => r.run.dispatches],
  ['copies', (r) => r.run.copies],
  ['copy_bytes', (r) => r.run.copy_bytes],
  ['device_peak_bytes', (r) => r.run.device_peak_bytes],
  ['arena_bytes', (r) => r.report.transient_arena_bytes],
  ['live_peak_bytes', (r) => r.report.transient_live_peak_bytes],
  ['arena/bound', (r) => (r.report.transient_arena_bytes / r.report.transient_live_peak_bytes).toFixed(3)],
  ['barriers', (r) => r.run.barriers],
  ['barrier_bytes', (r) => r.report.barrier_bytes],
  ['whole_buf_ranges', (r) => r.report.barrier_whole_buffer_ranges],
  ['host_barriers', (r) => r.report.host_barriers ?? 'n/a'],
  ['host_barrier_bytes', (r) => r.report.host_barrier_bytes ?? 'n/a'],
  ['latency_ms', (r) => (Number.isFinite(r.ms) ? r.ms.toFixed(3) : 'n/a')],
];

function formatTable(rows) {
  const cells = [COLUMNS.map((c) => c[0]), ...rows.map((r) => COLUMNS.map((c) => String(c[1](r))))];
  const widths = COLUMNS.map((_, i) => Math.max(...cells.map((row) => row[i].length)));
  return cells.map((row) => row.map((c, i) => (i ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ')).join('\n') + '\n';
}

function main() {
  const o = parseArgs(process.argv.slice(2));
  const tools = { compile: path.join(o.build, 'compiler', 'tools', 'kiln-compile'),
                  run: path.join(o.build, 'tools', 'kiln-run'), bench: path.join(o.build, 'tools', 'kiln-bench') };
  for (const t of Object.values(tools)) if (!fs.existsSync(t)) throw new Error(`${t} not found: build first (cmake --build --preset default)`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-memory-report-'));
  const rows = [];
  for (const [name, dir] of MODELS) {
    if (!o.models.includes(name)) continue;
    const g = readGolden(dir);
    if (!fs.existsSync(g.model)) {
      console.error(`memory_report: skipping ${name}: ${g.model} not fetched (scripts/setup.sh)`);
      continue;
    }
    const kiln = path.join(work, `${name}.kiln`);
    const shapes = g.inputs.filter((i) => i.shape.length).map((i) => `--input-shape=${i.name}=${i.shape.join('x')}`);
    const report = parseCounters(run(tools.compile, [g.model, '-o', kiln, '--report', ...shapes, ...o.compileFlags]));
    const inputArgs = g.inputs.map((i) => `--input=@${i.file}`);
    // Two invokes, the counters of the second (the steady state).
    const stats = parseCounters(run(tools.run, [`--module=${kiln}`, ...inputArgs, '--repeat=2', '--stats-steady']));
    rows.push({ model: name, kiln, inputArgs, report, run: stats, rounds: [], ms: NaN });
  }
  if (o.latency) {
    for (let r = 0; r < o.rounds; ++r)
      for (const row of rows)  // interleaved: every model once per round
        row.rounds.push(parseKilnBenchJson(run(tools.bench, [`--module=${row.kiln}`, ...row.inputArgs,
          '--benchmark_filter=^invoke/[^/]*/main/real_time$', `--benchmark_repetitions=${o.reps}`,
          `--benchmark_min_time=${o.minTime}`, '--benchmark_report_aggregates_only=true',
          '--benchmark_format=json'])).ms);
    for (const row of rows) row.ms = median(row.rounds);
  }
  process.stdout.write(`Per model: kiln-compile --report ${o.compileFlags.join(' ')}; kiln-run --repeat=2 --stats-steady (the second invoke); ` +
                       (o.latency ? `latency: median of ${o.rounds} interleaved rounds of kiln-bench (${o.reps} x >= ${o.minTime} s)\n`
                                  : 'no latency (--no-latency)\n'));
  process.stdout.write(formatTable(rows));
  fs.rmSync(work, { recursive: true, force: true });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    main();
  } catch (e) {
    console.error(`memory_report: ${e.message}`);
    process.exit(1);
  }
}
