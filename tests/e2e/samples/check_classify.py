#!/usr/bin/python3
"""E2E check for samples/c_api/kiln-classify (ctest: samples.kiln_classify).

    check_classify.py KILN_COMPILE KILN_CLASSIFY REPO_ROOT WORK_DIR

Compiles .cache/models/ch_ppocr_mobile_v2.0_cls_infer.onnx for x=1x3x48x192,
runs kiln-classify on tests/golden/cls_{upright,rotated}/input_0.npy and
checks each printed line: label 0 / 180, and both probabilities within 1e-4
of the ONNX Runtime golden (output_0.npy). Exits 77 (ctest SKIP) when the
model file is absent (scripts/setup.sh fetches it).
"""
import os
import re
import subprocess
import sys

import numpy as np

ATOL = 1e-4
MODEL = 'ch_ppocr_mobile_v2.0_cls_infer.onnx'
LINE = re.compile(r'^(?P<file>.+): 0=(?P<p0>\S+) 180=(?P<p1>\S+) -> (?P<label>\S+)$')


def main():
    if len(sys.argv) != 5:
        sys.exit('usage: check_classify.py KILN_COMPILE KILN_CLASSIFY REPO_ROOT WORK_DIR')
    compile_bin, classify_bin, root, work = sys.argv[1:]
    model = os.path.join(root, '.cache', 'models', MODEL)
    if not os.path.exists(model):
        print('SKIP: %s not found (run scripts/setup.sh to fetch the models)' % model)
        return 77
    os.makedirs(work, exist_ok=True)
    kiln = os.path.join(work, 'cls.kiln')
    subprocess.run([compile_bin, model, '--input-shape=x=1x3x48x192', '-o', kiln], check=True)

    cases = [('cls_upright', '0'), ('cls_rotated', '180')]
    inputs = [os.path.join(root, 'tests', 'golden', d, 'input_0.npy') for d, _ in cases]
    run = subprocess.run([classify_bin, kiln] + inputs, capture_output=True, text=True)
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    if run.returncode != 0:
        print('FAIL: kiln-classify exited with %d' % run.returncode)
        return 1
    lines = run.stdout.splitlines()
    if not lines or not lines[0].startswith('device: '):
        print('FAIL: first line must be "device: <name>"')
        return 1
    results = [LINE.match(l) for l in lines[1:]]
    if len(results) != len(cases) or not all(results):
        print('FAIL: expected %d lines "<file>: 0=<p0> 180=<p1> -> <label>"' % len(cases))
        return 1
    ok = True
    for (d, want_label), m, path in zip(cases, results, inputs):
        golden = np.load(os.path.join(root, 'tests', 'golden', d, 'output_0.npy')).reshape(-1)
        got = np.array([float(m.group('p0')), float(m.group('p1'))])
        err = np.abs(got - golden.astype(np.float64))
        line_ok = (m.group('file') == path and m.group('label') == want_label
                   and bool(np.all(err <= ATOL)))
        print('%s %s: label %s (want %s), p=%s golden=%s max|diff|=%.3g (tol %g)' % (
            'ok  ' if line_ok else 'FAIL', d, m.group('label'), want_label,
            np.array2string(got, precision=7), np.array2string(golden, precision=7),
            float(err.max()), ATOL))
        ok = ok and line_ok
    print('PASS' if ok else 'FAIL')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
