#!/usr/bin/env python3
"""ONNX Runtime side of a device benchmark, for machines with Python's
onnxruntime and no node (scripts/bench_ort.mjs is the same protocol in node).

  bench_ort.py MODEL.onnx --reps=N --min-time=S name=@in.npy ...

CPU execution provider, intra- and inter-op threads 1 (as
scripts/ort_loader.mjs). One warm-up run, then N repetitions, each running
session.run back to back until at least S seconds have passed; prints
{"median_ms": M, "reps_ms": [...]} (each rep's mean, in milliseconds).
Exit status 1 with a message on stderr on any error.
"""
import json
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort


def main(argv):
    model, reps, min_time, feeds = None, 5, 0.5, {}
    for a in argv:
        if a.startswith('--reps='):
            reps = int(a[7:])
        elif a.startswith('--min-time='):
            min_time = float(a[11:])
        elif '=@' in a:
            name, path = a.split('=@', 1)
            feeds[name] = np.load(path)
        elif model is None and not a.startswith('--'):
            model = a
        else:
            raise SystemExit(f'bench_ort.py: unknown argument {a!r}')
    if model is None:
        raise SystemExit('usage: bench_ort.py MODEL.onnx [--reps=N] [--min-time=S] name=@in.npy ...')
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(model, opts, providers=['CPUExecutionProvider'])
    for i in sess.get_inputs():
        if i.name not in feeds:
            raise SystemExit(f'bench_ort.py: no input given for graph input {i.name!r}')
    sess.run(None, feeds)  # warm-up
    reps_ms = []
    for _ in range(reps):
        n, start = 0, time.perf_counter()
        while True:
            sess.run(None, feeds)
            n += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        reps_ms.append(elapsed * 1e3 / n)
    print(json.dumps({'median_ms': statistics.median(reps_ms), 'reps_ms': reps_ms}))


if __name__ == '__main__':
    main(sys.argv[1:])
