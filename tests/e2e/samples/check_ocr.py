#!/usr/bin/python3
"""E2E checks for samples/ocr/kiln-ocr (ctest: samples.kiln_ocr*).

    check_ocr.py MODE KILN_COMPILE KILN_OCR REPO_ROOT WORK_DIR

Compiles the three PaddleOCR models into WORK_DIR (once; a lock serialises
parallel tests), renders the test pages with scripts/render_ocr.sh (demo,
serif, mono: 640x480, their text in NAME.txt), then by MODE:

  text      kiln-ocr (PaddleOCR's pre/post-processing, det on a 640x640 canvas,
            direction classifier on) reads every page; the lines must equal
            NAME.txt exactly, including the demo's line turned 180 degrees.
            demo_large (the demo page at 1.5x, scaled down into the canvas)
            must read the same, its boxes 1.5x the demo's within 4 px.
            With several pages in one process, pages after the first make no device
            allocation (kiln_device_stats through --stats). Bad input (the cls
            module given as det, an unreadable image) must fail with a clear
            message, exit status 1.
  ocr-node  kiln-ocr --preset=ocr-node (det compiled at the page size, 480x640,
            which is what ocr-node feeds ONNX Runtime, no classifier) and
            scripts/ocr_reference.mjs (@gutenye/ocr-node 1.4.8 unmodified) on
            the same pages: the same lines in the same order, the same text,
            every box corner within 3 px. Exits 77 when ocr-node is not
            installed.
  models    kiln-ocr --dump on the demo page writes the tensors it fed det, cls
            and rec and what Kiln returned; ONNX Runtime (scripts/gen_golden.mjs)
            runs the same inputs; every output must be within 1e-4. Exits 77
            when onnxruntime-node is not installed.

Exits 77 (ctest SKIP) when a model in .cache/models is absent.
"""
import fcntl
import glob
import os
import subprocess
import sys

import numpy as np

MODELS = {
    'det640': ('ch_PP-OCRv4_det_infer.onnx', 'x=1x3x640x640'),
    'det480': ('ch_PP-OCRv4_det_infer.onnx', 'x=1x3x480x640'),
    'cls': ('ch_ppocr_mobile_v2.0_cls_infer.onnx', 'x=1x3x48x192'),
    'rec': ('ch_PP-OCRv4_rec_infer.onnx', 'x=1x3x48x320'),
}
PAGES = ['demo', 'serif', 'mono']
BOX_TOL = 3
ATOL = 1e-4


def run(cmd, **kw):
    print('+ ' + ' '.join(cmd), flush=True)
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def prepare(compile_bin, root, work):
    """Compiles the models and renders the pages; returns {name: .kiln path}."""
    os.makedirs(work, exist_ok=True)
    out = {}
    with open(os.path.join(work, '.lock'), 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for name, (onnx, shape) in MODELS.items():
            src = os.path.join(root, '.cache', 'models', onnx)
            dst = os.path.join(work, name + '.kiln')
            if not (os.path.exists(dst) and os.path.getmtime(dst) > os.path.getmtime(compile_bin)):
                r = run([compile_bin, src, '--input-shape=' + shape, '-o', dst + '.tmp'])
                if r.returncode != 0:
                    raise RuntimeError('kiln-compile %s failed:\n%s' % (onnx, r.stderr))
                os.replace(dst + '.tmp', dst)
            out[name] = dst
        r = run([os.path.join(root, 'scripts', 'render_ocr.sh'), os.path.join(work, 'pages')])
        if r.returncode != 0:
            raise RuntimeError('render_ocr.sh failed:\n' + r.stderr)
    return out


def parse(stdout):
    """kiln-ocr / ocr_reference.mjs output -> {image: [(text, conf, [(x, y) * 4])]}."""
    pages, cur = {}, None
    for line in stdout.splitlines():
        if line.startswith('# '):
            cur = pages.setdefault(line[2:], [])
            continue
        if cur is None:
            cur = pages.setdefault('', [])
        text, conf, box = line.split('\t')
        pts = [tuple(int(v) for v in p.split(',')) for p in box.split(' ')]
        cur.append((text, float(conf), pts))
    return pages


def page_paths(work):
    return [os.path.join(work, 'pages', p + '.png') for p in PAGES]


def mode_text(kilns, ocr_bin, root, work):
    keys = os.path.join(root, '.cache', 'models', 'ppocr_keys_v1.txt')
    large = os.path.join(work, 'pages', 'demo_large.png')
    r = run([ocr_bin, '--det=' + kilns['det640'], '--cls=' + kilns['cls'], '--rec=' + kilns['rec'],
             '--keys=' + keys, '--stats', '--annotate=' + os.path.join(work, 'annotated.png')]
            + page_paths(work) + [large])
    sys.stdout.write(r.stdout)
    sys.stdout.write(r.stderr)
    if r.returncode != 0:
        print('FAIL: kiln-ocr exited with %d' % r.returncode)
        return 1
    got = parse(r.stdout)
    ok = True
    for name, path in zip(PAGES, page_paths(work)):
        want = open(os.path.join(work, 'pages', name + '.txt')).read().splitlines()
        texts = [t for t, _, _ in got.get(path, [])]
        line_ok = texts == want
        print('%s %s: %r (want %r)' % ('ok  ' if line_ok else 'FAIL', name, texts, want))
        ok = ok and line_ok
    demo, big = got.get(page_paths(work)[0], []), got.get(large, [])
    want = open(os.path.join(work, 'pages', 'demo.txt')).read().splitlines()
    worst = max((abs(1.5 * a - b) for (_, _, bd), (_, _, bb) in zip(demo, big)
                 for pd, pb in zip(bd, bb) for a, b in zip(pd, pb)), default=99)
    large_ok = [t for t, _, _ in big] == want and len(demo) == len(big) and worst <= 4
    print('%s demo_large: %r, boxes vs 1.5 x demo: max diff %.1f px (tol 4)' % (
        'ok  ' if large_ok else 'FAIL', [t for t, _, _ in big], worst))
    ok = ok and large_ok
    # Bad input: clear errors, no crash.
    for args, want in [
            (['--det=' + kilns['cls'], '--rec=' + kilns['rec'], page_paths(work)[0]],
             'det model: output [1,2] is not one map of the input\'s 48x192'),
            (['--det=' + kilns['det640'], '--rec=' + kilns['rec'], '/nonexistent.png'],
             'cannot read the image /nonexistent.png'),
            (['--det=' + kilns['det640'], '--rec=' + kilns['cls'], page_paths(work)[0]],
             'rec model: output [1,2] is not [1,T,6625]'),
            (['--det=' + kilns['det640'], '--rec=' + kilns['det480'], page_paths(work)[0]],
             "module 'ch_PP-OCRv4_det_infer': a module of that name is already registered")]:
        e = run([ocr_bin, '--keys=' + keys] + args)
        err_ok = e.returncode == 1 and want in e.stderr
        print('%s bad input %s: exit %d, %r' % ('ok  ' if err_ok else 'FAIL', args[0:2],
                                                e.returncode, e.stderr.strip().splitlines()[-1:]))
        ok = ok and err_ok
    stats = [l for l in r.stderr.splitlines() if l.startswith('stats ')]
    steady = [l for l in stats[1:] if 'device_allocations 0 ' not in l]
    if len(stats) != len(PAGES) + 1 or steady:
        print('FAIL: pages after the first must make no device allocation: %s' % (steady or stats))
        ok = False
    else:
        print('ok   steady state: pages 2..%d made 0 device allocations' % (len(PAGES) + 1))
    print('PASS' if ok else 'FAIL')
    return 0 if ok else 1


def mode_ocr_node(kilns, ocr_bin, root, work):
    ref_script = os.path.join(root, 'scripts', 'ocr_reference.mjs')
    ref = run(['node', ref_script] + page_paths(work))
    if ref.returncode == 77:
        print('SKIP: ' + ref.stderr.strip())
        return 77
    if ref.returncode != 0:
        print('FAIL: ocr_reference.mjs exited with %d:\n%s' % (ref.returncode, ref.stderr))
        return 1
    keys = os.path.join(root, '.cache', 'models', 'ppocr_keys_v1.txt')
    r = run([ocr_bin, '--det=' + kilns['det480'], '--rec=' + kilns['rec'], '--keys=' + keys,
             '--preset=ocr-node'] + page_paths(work))
    sys.stdout.write(r.stderr)
    if r.returncode != 0:
        print('FAIL: kiln-ocr exited with %d' % r.returncode)
        return 1
    want, got = parse(ref.stdout), parse(r.stdout)
    ok = True
    for path in page_paths(work):
        w, g = want.get(path, []), got.get(path, [])
        print('--- %s\n  ocr-node: %s\n  kiln:     %s' % (
            os.path.basename(path), [(t, c, b) for t, c, b in w], [(t, c, b) for t, c, b in g]))
        if [t for t, _, _ in w] != [t for t, _, _ in g]:
            print('FAIL %s: texts differ' % path)
            ok = False
            continue
        worst = max((abs(a - b) for (_, _, bw), (_, _, bg) in zip(w, g)
                     for pw, pg in zip(bw, bg) for a, b in zip(pw, pg)), default=0)
        page_ok = worst <= BOX_TOL
        print('%s %s: %d lines, same text, max box corner diff %d px (tol %d)' % (
            'ok  ' if page_ok else 'FAIL', os.path.basename(path), len(w), worst, BOX_TOL))
        ok = ok and page_ok
    print('PASS' if ok else 'FAIL')
    return 0 if ok else 1


def mode_models(kilns, ocr_bin, root, work):
    env_ort = os.environ.get('KILN_ORT_DIR', os.path.join(root, '.cache', 'ort'))
    if not os.path.isdir(os.path.join(env_ort, 'node_modules', 'onnxruntime-node')):
        print('SKIP: onnxruntime-node not installed in %s (scripts/setup.sh)' % env_ort)
        return 77
    dump = os.path.join(work, 'dump')
    os.makedirs(dump, exist_ok=True)
    for f in glob.glob(os.path.join(dump, '*')):
        if os.path.isfile(f):
            os.remove(f)
    keys = os.path.join(root, '.cache', 'models', 'ppocr_keys_v1.txt')
    demo = page_paths(work)[0]
    r = run([ocr_bin, '--det=' + kilns['det640'], '--cls=' + kilns['cls'], '--rec=' + kilns['rec'],
             '--keys=' + keys, '--dump=' + dump, demo])
    sys.stdout.write(r.stdout + r.stderr)
    if r.returncode != 0:
        print('FAIL: kiln-ocr exited with %d' % r.returncode)
        return 1
    onnx = {'det': MODELS['det640'][0], 'cls': MODELS['cls'][0], 'rec': MODELS['rec'][0]}
    ok, seen = True, set()
    for inp in sorted(glob.glob(os.path.join(dump, '*_in.npy'))):
        name = os.path.basename(inp)[:-len('_in.npy')]
        model = name.split('_')[0]
        seen.add(model)
        ort_dir = os.path.join(dump, 'ort_' + name)
        g = run(['node', os.path.join(root, 'scripts', 'gen_golden.mjs'),
                 os.path.join(root, '.cache', 'models', onnx[model]), ort_dir, 'x=@' + inp])
        if g.returncode != 0:
            print('FAIL: gen_golden.mjs on %s: %s' % (name, g.stderr))
            return 1
        want = np.load(os.path.join(ort_dir, 'output_0.npy'))
        got = np.load(os.path.join(dump, name + '_out.npy'))
        diff = float(np.abs(want - got).max()) if want.shape == got.shape else float('inf')
        line_ok = diff <= ATOL
        print('%s %s: %s max|kiln - ort| = %.3g (tol %g)' % (
            'ok  ' if line_ok else 'FAIL', name, list(got.shape), diff, ATOL))
        ok = ok and line_ok
    if seen != {'det', 'cls', 'rec'}:
        print('FAIL: expected dumps of det, cls and rec, got %s' % sorted(seen))
        ok = False
    print('PASS' if ok else 'FAIL')
    return 0 if ok else 1


def main():
    if len(sys.argv) != 6 or sys.argv[1] not in ('text', 'ocr-node', 'models'):
        sys.exit('usage: check_ocr.py text|ocr-node|models KILN_COMPILE KILN_OCR REPO_ROOT WORK_DIR')
    mode, compile_bin, ocr_bin, root, work = sys.argv[1:]
    for onnx, _ in MODELS.values():
        if not os.path.exists(os.path.join(root, '.cache', 'models', onnx)):
            print('SKIP: %s not found (run scripts/setup.sh to fetch the models)' % onnx)
            return 77
    kilns = prepare(compile_bin, root, work)
    if mode == 'text':
        return mode_text(kilns, ocr_bin, root, work)
    if mode == 'ocr-node':
        return mode_ocr_node(kilns, ocr_bin, root, work)
    return mode_models(kilns, ocr_bin, root, work)


if __name__ == '__main__':
    sys.exit(main())
