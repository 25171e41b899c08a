#!/usr/bin/python3
"""E2E check for samples/wakeword/kiln-wakeword (ctest: samples.kiln_wakeword).

    check_wakeword.py KILN_COMPILE KILN_WAKEWORD REPO_ROOT WORK_DIR

Compiles the three openWakeWord stages with the fixed shapes the sample uses
(mel [1,1760], embedding [1,76,32,1], alexa_v0.1 head [1,16,96]), runs
kiln-wakeword on tests/golden/wakeword/alexa.wav and compares its
`frame <e> score <v>` lines with tests/golden/wakeword/expected.txt (the
output of `node scripts/wakeword_reference.mjs alexa.wav --head alexa_v0.1
--mode oww`): the same frames in the same order, each score within 1e-4.
Lines starting with '#' are ignored. Exits 77 (ctest SKIP) when a model file
is absent (scripts/setup.sh fetches them).
"""
import os
import subprocess
import sys

ATOL = 1e-4
STAGES = [  # (model, input name, dims, output)
    ('melspectrogram.onnx', 'input', '1x1760', 'mel.kiln'),
    ('embedding_model.onnx', 'input_1', '1x76x32x1', 'emb.kiln'),
    ('alexa_v0.1.onnx', 'onnx::Flatten_0', '1x16x96', 'alexa.kiln'),
]


def scores(text):
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith('#'):
            continue
        f = line.split()
        if len(f) != 4 or f[0] != 'frame' or f[2] != 'score':
            raise ValueError('unexpected line %r' % line)
        out.append((int(f[1]), float(f[3])))
    return out


def main():
    if len(sys.argv) != 5:
        sys.exit('usage: check_wakeword.py KILN_COMPILE KILN_WAKEWORD REPO_ROOT WORK_DIR')
    compile_bin, wakeword_bin, root, work = sys.argv[1:]
    models = os.path.join(root, '.cache', 'models')
    for model, _, _, _ in STAGES:
        if not os.path.exists(os.path.join(models, model)):
            print('SKIP: %s not found (run scripts/setup.sh to fetch the models)'
                  % os.path.join(models, model))
            return 77
    os.makedirs(work, exist_ok=True)
    kilns = []
    for model, name, dims, out in STAGES:
        kilns.append(os.path.join(work, out))
        subprocess.run([compile_bin, os.path.join(models, model),
                        '--input-shape=%s=%s' % (name, dims), '-o', kilns[-1]], check=True)

    golden = os.path.join(root, 'tests', 'golden', 'wakeword')
    run = subprocess.run([wakeword_bin] + kilns + [os.path.join(golden, 'alexa.wav')],
                         capture_output=True, text=True)
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    if run.returncode != 0:
        print('FAIL: kiln-wakeword exited with %d' % run.returncode)
        return 1
    with open(os.path.join(golden, 'expected.txt')) as f:
        want = scores(f.read())
    got = scores(run.stdout)
    if [e for e, _ in got] != [e for e, _ in want]:
        print('FAIL: frames differ: got %s, want %s' % ([e for e, _ in got], [e for e, _ in want]))
        return 1
    worst = max(abs(g - w) for (_, g), (_, w) in zip(got, want))
    bad = [(e, g, w) for (e, g), (_, w) in zip(got, want) if abs(g - w) > ATOL]
    for e, g, w in bad:
        print('FAIL: frame %d score %.6f, reference %.6f' % (e, g, w))
    print('%d scores, max |diff| %.3g (tol %g), max score %.6f (reference %.6f): %s' % (
        len(got), worst, ATOL, max(g for _, g in got), max(w for _, w in want),
        'FAIL' if bad else 'PASS'))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
