#!/usr/bin/python3
"""E2E check of the multi-module wake word program (ctest: samples.kiln_wakeword_driver).

    check_wakeword_driver.py KILN_COMPILE KILN_WAKEWORD KILN_WAKEWORD_DRIVER KILN_RUN REPO_ROOT WORK_DIR

Compiles melspectrogram.onnx, embedding_model.onnx and alexa_v0.1.onnx as the
modules `mel`, `emb` and `head` (kiln-compile --module-name) and
samples/wakeword/driver.kir as `driver`, whose main runs mel -> glue ->
embedding -> head for one chunk in ONE invoke (importing mel.main, emb.main,
head.main). Then, on tests/golden/wakeword/alexa.wav:
  1. kiln-wakeword-driver (one invoke per chunk, state fed back consumed)
     must print exactly the `frame <e> score <v>` lines (%.6f) of the
     host-orchestrated kiln-wakeword run on the same three modules, and
     bit-identical scores (`# bits` lines) to its --host-stages mode (the
     same host orchestration as kiln-wakeword, in the same process);
  2. those scores must match tests/golden/wakeword/expected.txt (ONNX Runtime,
     scripts/wakeword_reference.mjs --mode oww) within 1e-4, frame for frame;
  3. the steady-state invoke (the last chunk) must make 0 device allocations,
     0 host allocations and 0 copies;
  4. kiln-run with the four modules (--module x4, --function=driver.main,
     state fed back with --feedback, --stats-steady) reports the same 0/0/0
     for the whole call tree.
Exits 77 (ctest SKIP) when a model file is absent (scripts/setup.sh).
"""
import os
import re
import subprocess
import sys

ATOL = 1e-4
STAGES = [  # (model, input name, dims, module name)
    ('melspectrogram.onnx', 'input', '1x1760', 'mel'),
    ('embedding_model.onnx', 'input_1', '1x76x32x1', 'emb'),
    ('alexa_v0.1.onnx', 'onnx::Flatten_0', '1x16x96', 'head'),
]


def score_lines(text):
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith('#'):
            continue
        f = line.split()
        if len(f) != 4 or f[0] != 'frame' or f[2] != 'score':
            raise ValueError('unexpected line %r' % line)
        out.append(line.strip())
    return out


def parse(lines):
    return [(int(l.split()[1]), float(l.split()[3])) for l in lines]


def main():
    if len(sys.argv) != 7:
        sys.exit('usage: check_wakeword_driver.py KILN_COMPILE KILN_WAKEWORD KILN_WAKEWORD_DRIVER '
                 'KILN_RUN REPO_ROOT WORK_DIR')
    compile_bin, host_bin, driver_bin, run_bin, root, work = sys.argv[1:]
    models = os.path.join(root, '.cache', 'models')
    for model, _, _, _ in STAGES:
        if not os.path.exists(os.path.join(models, model)):
            print('SKIP: %s not found (run scripts/setup.sh to fetch the models)'
                  % os.path.join(models, model))
            return 77
    os.makedirs(work, exist_ok=True)
    kilns = []
    for model, name, dims, module in STAGES:
        kilns.append(os.path.join(work, module + '.kiln'))
        subprocess.run([compile_bin, os.path.join(models, model), '--input-shape=%s=%s' % (name, dims),
                        '--module-name=' + module, '-o', kilns[-1]], check=True)
    driver = os.path.join(work, 'driver.kiln')
    subprocess.run([compile_bin, os.path.join(root, 'samples', 'wakeword', 'driver.kir'),
                    '--module-name=driver', '-o', driver], check=True)

    golden = os.path.join(root, 'tests', 'golden', 'wakeword')
    wav = os.path.join(golden, 'alexa.wav')
    host = subprocess.run([host_bin] + kilns + [wav], capture_output=True, text=True)
    if host.returncode != 0:
        sys.stderr.write(host.stderr)
        print('FAIL: kiln-wakeword exited with %d' % host.returncode)
        return 1
    run = subprocess.run([driver_bin] + kilns + [driver, wav], capture_output=True, text=True)
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    if run.returncode != 0:
        print('FAIL: kiln-wakeword-driver exited with %d' % run.returncode)
        return 1

    stages = subprocess.run([driver_bin] + kilns + [driver, wav, '--host-stages'], capture_output=True, text=True)
    if stages.returncode != 0:
        sys.stderr.write(stages.stderr)
        print('FAIL: kiln-wakeword-driver --host-stages exited with %d' % stages.returncode)
        return 1

    failures = 0
    bits = lambda text: [l for l in text.splitlines() if l.startswith('# bits ')]
    if not bits(run.stdout) or bits(run.stdout) != bits(stages.stdout):
        failures += 1
        print('FAIL: scores are not bit-identical to the host-orchestrated stages:')
        for a, b in zip(bits(run.stdout), bits(stages.stdout)):
            if a != b:
                print('  driver %r, host stages %r' % (a, b))
    else:
        print('driver == host stages bit for bit: %d scores' % len(bits(run.stdout)))
    got, host_lines = score_lines(run.stdout), score_lines(host.stdout)
    if got != host_lines:
        failures += 1
        print('FAIL: the one-invoke driver differs from the host-orchestrated pipeline')
        for i, (g, h) in enumerate(zip(got, host_lines)):
            if g != h:
                print('  line %d: driver %r, host %r' % (i, g, h))
        if len(got) != len(host_lines):
            print('  %d lines vs %d' % (len(got), len(host_lines)))
    else:
        print('driver == host orchestration: %d identical score lines' % len(got))

    with open(os.path.join(golden, 'expected.txt')) as f:
        want = parse(score_lines(f.read()))
    mine = parse(got)
    if [e for e, _ in mine] != [e for e, _ in want]:
        failures += 1
        print('FAIL: frames differ from expected.txt: got %s, want %s' % ([e for e, _ in mine], [e for e, _ in want]))
    else:
        worst = max(abs(g - w) for (_, g), (_, w) in zip(mine, want))
        bad = [(e, g, w) for (e, g), (_, w) in zip(mine, want) if abs(g - w) > ATOL]
        for e, g, w in bad:
            print('FAIL: frame %d score %.6f, reference %.6f' % (e, g, w))
        failures += len(bad)
        print('%d scores vs ONNX Runtime: max |diff| %.3g (tol %g)' % (len(mine), worst, ATOL))

    m = re.search(r'^# steady state, last invoke: device_allocations (\d+) host_allocations_invoke (\d+) '
                  r'copies (\d+)', run.stdout, re.M)
    if not m:
        failures += 1
        print('FAIL: no steady-state stats line')
    elif any(int(x) != 0 for x in m.groups()):
        failures += 1
        print('FAIL: steady-state invoke: device_allocations %s host_allocations_invoke %s copies %s '
              '(want 0 0 0)' % m.groups())
    # kiln-run: the same program, one chunk repeated with the state fed back
    # (results 1, 2 -> arguments 0, 1, consumed); counters of the last invoke.
    krun = subprocess.run([run_bin] + ['--module=' + k for k in kilns + [driver]] + [
        '--function=driver.main', '--input=80x32xf32=0', '--input=15x96xf32=0', '--input=1x1760xf32=100',
        '--feedback=1:0', '--feedback=2:1', '--repeat=4', '--stats-steady'], capture_output=True, text=True)
    sys.stdout.write(krun.stdout)
    if krun.returncode != 0:
        sys.stderr.write(krun.stderr)
        failures += 1
        print('FAIL: kiln-run exited with %d' % krun.returncode)
    else:
        stats = dict(l.split(': ', 1) for l in krun.stdout.splitlines() if ': ' in l and not l.startswith('result'))
        for key in ('device_allocations', 'host_allocations_invoke', 'copies'):
            if stats.get(key) != '0':
                failures += 1
                print('FAIL: kiln-run --stats-steady %s = %s (want 0)' % (key, stats.get(key)))
    print('FAIL' if failures else 'PASS')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
