#!/usr/bin/python3
"""f32 vs --precision=f16 (and the int8 QDQ embedding model) on the real models.

    scripts/precision_report.py [--rounds=5] [--min-time=0.3] [--build=build/default]
                                [--models=cls,embedding,rec,embedding_int8]

For each model: compiles it with kiln-compile at the golden input shapes
(tests/golden/<dir>/inputs.txt), once per precision (--report: module bytes),
runs it once with kiln-run --stats (peak device bytes; the output compared
with ONNX Runtime's golden: max |kiln - ort|), then times it with kiln-bench
(synchronous kiln_invoke, Google Benchmark, --min-time seconds per
measurement) in --rounds rounds that interleave the variants (f32, f16, f32,
f16, ...) so that both see the same machine load; the median of the rounds is
reported. The f32 and f16 rows compare with ORT fp32; the int8 row
(embedding_int8 vs embedding f32) compares with ORT running the same int8
model. Needs a built tree and the models (scripts/setup.sh). Timings on a
shared machine drift 20-40% between runs: compare only rows of one run.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name -> (golden dir, [(variant, model file, kiln-compile flags[, golden dir of its reference])])
MODELS = {
    'cls': ('cls_rotated', [('f32', 'ch_ppocr_mobile_v2.0_cls_infer.onnx', []),
                            ('f16', 'ch_ppocr_mobile_v2.0_cls_infer.onnx', ['--precision=f16'])]),
    'embedding': ('embedding_model', [('f32', 'embedding_model.onnx', []),
                                      ('f16', 'embedding_model.onnx', ['--precision=f16'])]),
    'rec': ('rec_line', [('f32', 'ch_PP-OCRv4_rec_infer.onnx', []),
                         ('f16', 'ch_PP-OCRv4_rec_infer.onnx', ['--precision=f16'])]),
    # Same input; the f32 row compares with ORT fp32 (embedding_model's golden).
    'embedding_int8': ('embedding_int8', [('f32', 'embedding_model.onnx', [], 'embedding_model'),
                                          ('int8', 'embedding_model_int8.onnx', [])]),
}


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit('precision_report: %s failed:\n%s%s' % (' '.join(cmd), r.stdout, r.stderr))
    return r.stdout


def shapes(golden):
    flags = []
    for line in open(os.path.join(golden, 'inputs.txt')):
        name, shape = line.split()[:2]
        if shape != '[]':
            flags.append('--input-shape=%s=%s' % (name, shape.strip('[]').replace(',', 'x')))
    return flags


def main(argv):
    opts = {'rounds': 5, 'min-time': 0.3, 'build': os.path.join(ROOT, 'build', 'default'),
            'models': 'cls,embedding,rec,embedding_int8'}
    for a in argv[1:]:
        k, _, v = a.lstrip('-').partition('=')
        if k not in opts or not v:
            sys.exit(__doc__)
        opts[k] = v
    rounds, min_time = int(opts['rounds']), float(opts['min-time'])
    tools = {t: os.path.join(opts['build'], d, t) for t, d in
             [('kiln-compile', 'compiler/tools'), ('kiln-run', 'tools'), ('kiln-bench', 'tools')]}
    work = tempfile.mkdtemp(prefix='kiln-precision-')
    print('%-15s %-5s %12s %12s %10s %12s %10s' % ('model', 'prec', 'module_B', 'peak_dev_B', 'ms', 'max|d|', 'max|ort|'))
    for name in opts['models'].split(','):
        gdir, variants = MODELS[name]
        golden = os.path.join(ROOT, 'tests', 'golden', gdir)
        inputs = sorted(f for f in os.listdir(golden) if f.startswith('input_'))
        in_args = ['--input=@' + os.path.join(golden, f) for f in inputs]
        rows = []
        for variant, model, flags, *ref_dir in variants:
            ref_golden = os.path.join(ROOT, 'tests', 'golden', ref_dir[0]) if ref_dir else golden
            ref = np.load(os.path.join(ref_golden, 'output_0.npy')).astype(np.float64)
            path = os.path.join(ROOT, '.cache', 'models', model)
            if not os.path.exists(path):
                sys.exit('precision_report: %s missing (run scripts/setup.sh)' % path)
            kiln = os.path.join(work, '%s_%s.kiln' % (name, variant))
            rep = run([tools['kiln-compile'], path, '-o', kiln, '--report'] + shapes(golden) + flags)
            size = int([l for l in rep.splitlines() if l.startswith('module_bytes:')][0].split()[1])
            out = os.path.join(work, '%s_%s.npy' % (name, variant))
            stats = run([tools['kiln-run'], '--module=' + kiln, '--output=@' + out, '--stats'] + in_args)
            peak = int([l for l in stats.splitlines() if l.startswith('device_peak_bytes:')][0].split()[1])
            diff = float(np.abs(np.load(out).astype(np.float64) - ref).max())
            rows.append([variant, kiln, size, peak, diff, [], float(np.abs(ref).max())])
        for _ in range(rounds):
            for row in rows:  # interleaved: every variant once per round
                j = json.loads(run([tools['kiln-bench'], '--module=' + row[1],
                                    '--benchmark_filter=^invoke/[^/]*/main/real_time$',
                                    '--benchmark_min_time=%g' % min_time, '--benchmark_format=json'] + in_args))
                b = [x for x in j['benchmarks'] if x.get('run_type', 'iteration') == 'iteration'][0]
                scale = {'ms': 1.0, 'us': 1e-3, 'ns': 1e-6, 's': 1e3}[b['time_unit']]
                row[5].append(b['real_time'] * scale)
        for variant, _, size, peak, diff, times, ref_max in rows:
            print('%-15s %-5s %12d %12d %10.3f %12.4g %10.4g' % (name, variant, size, peak, statistics.median(times),
                                                             diff, ref_max))
        sys.stdout.flush()
    print('(%d interleaved rounds, kiln-bench >= %g s each; max|d| vs ORT: fp32 ORT for f32/f16 rows, '
          'ORT on the int8 model for the int8 row)' % (rounds, min_time))


if __name__ == '__main__':
    main(sys.argv)
