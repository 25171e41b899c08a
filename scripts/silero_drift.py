#!/usr/bin/python3
"""Where silero_vad's streamed state drifts from ONNX Runtime (investigation aid).

    scripts/silero_drift.py [--wav=W.wav] [--golden=DIR] [--f32=OP,...] [--stft=MODE]

Streams the model chunk by chunk like tests/e2e/silero_stream_test.cc (h/c
fed back, rounded to float32 between chunks, as every implementation must)
with scripts/onnx_ref_eval.py in float64, except:
  --f32=Conv,LSTM,...   ops (by op type or output name; ALL for every op)
                        evaluated entirely in float32 (numpy)
  --stft=MODE           the 256-tap STFT conv (forward_transform) computed
                        with an emulated float32 accumulation, k in order:
                        fma   acc = fma(x, w, acc) (one rounding per term)
                        mul   acc = acc + round(x * w) (two roundings)
                        exact float64 (the default)
and prints the max |x - ORT| per output over all chunks against the goldens
(DIR/output.npy, hn.npy, cn.npy from scripts/silero_stream_reference.mjs).
Defaults: tests/golden/wakeword/alexa.wav, tests/golden/silero_stream.

Findings (alexa, 100 chunks; ORT = onnxruntime-node 1.20.1, MLAS, AVX-512):
  float64 everywhere          output 4.0e-6 hn 4.6e-5 cn 8.2e-5
  --f32=ALL                   output 8.3e-6 hn 7.7e-5 cn 1.3e-4
  --f32=forward_transform     output 8.3e-6 hn 7.7e-5 cn 1.3e-4
  --f32=LSTM                  output 4.1e-6 hn 4.6e-5 cn 8.2e-5
  --stft=mul                  output 8.3e-6 hn 7.7e-5 cn 1.3e-4  (Kiln before)
  --stft=fma                  output 1.8e-7 hn 2.0e-6 cn 1.3e-5  (like ORT)
i.e. the STFT conv's float32 accumulation is the whole drift, and ORT's is
a sequential fused multiply-add chain. Needs /usr/bin/python3 (numpy, onnx).
"""
import os
import sys
import wave

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_ref_eval  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def r32(v):
    return v.astype(np.float32).astype(np.float64)


def stft_accumulate(w, x, mode):
    """w [M, K], x [K, L] (float32 values): M x L dot products over K in order."""
    if mode == 'exact':
        return w @ x
    acc = np.zeros((w.shape[0], x.shape[1]))
    for k in range(w.shape[1]):
        p = np.outer(w[:, k], x[k])  # exact in float64
        acc = r32(acc + (p if mode == 'fma' else r32(p)))
    return acc


class Evaluator(onnx_ref_eval.Evaluator):
    def __init__(self, model, f32_ops, stft):
        super().__init__(model, np.float64)
        self.f32_ops, self.stft = f32_ops, stft

    def _node(self, n, x, env):
        if n.op_type != 'If' and ('ALL' in self.f32_ops or n.op_type in self.f32_ops or
                                  n.output[0] in self.f32_ops):
            self.dtype = np.float32
            try:
                r = super()._node(n, [v.astype(np.float32) if isinstance(v, np.ndarray) and v.dtype == np.float64
                                      else v for v in x], env)
            finally:
                self.dtype = np.float64
            return [v.astype(np.float64) if isinstance(v, np.ndarray) and v.dtype == np.float32 else v for v in r]
        return super()._node(n, x, env)

    def _conv1d(self, x, at):
        inp, w = x[0], x[1]
        if self.stft == 'exact' or inp.shape[1] != 1 or w.shape[2] != 256:
            return super()._conv1d(x, at)
        stride = at['strides'][0]
        length = (inp.shape[2] - 256) // stride + 1
        idx = np.arange(length)[None, :] * stride + np.arange(256)[:, None]
        return stft_accumulate(w[:, 0, :], inp[0, 0][idx], self.stft)[None]


def main():
    args = dict(a[2:].split('=', 1) for a in sys.argv[1:] if a.startswith('--') and '=' in a)
    wav = args.get('wav', os.path.join(ROOT, 'tests/golden/wakeword/alexa.wav'))
    golden = args.get('golden', os.path.join(ROOT, 'tests/golden/silero_stream'))
    f32_ops = set(filter(None, args.get('f32', '').split(',')))
    stft = args.get('stft', 'exact')
    if stft not in ('exact', 'fma', 'mul'):
        sys.exit('error: --stft must be exact, fma or mul')
    want = {k: np.load(os.path.join(golden, k + '.npy')) for k in ('output', 'hn', 'cn')}
    n = want['output'].shape[0]
    w = wave.open(wav)
    pcm = np.frombuffer(w.readframes(w.getnframes()), dtype='<i2').astype(np.float32) / 32768
    audio = np.zeros(n * 512, np.float32)
    audio[:min(len(pcm), n * 512)] = pcm[:n * 512]
    ev = Evaluator(onnx.load(os.path.join(ROOT, '.cache/models/silero_vad.onnx')), f32_ops, stft)
    h = np.zeros((2, 1, 64))
    c = np.zeros((2, 1, 64))
    err = {k: np.zeros(n) for k in want}
    for k in range(n):
        (o, h, c), _ = ev.run({'input': audio[k * 512:(k + 1) * 512].reshape(1, 512),
                               'sr': np.array(16000, np.int64), 'h': h, 'c': c})
        o, h, c = r32(o), r32(h), r32(c)
        for name, v in (('output', o), ('hn', h), ('cn', c)):
            err[name][k] = np.abs(v.reshape(-1) - want[name][k].reshape(-1)).max()
    print('f32=%s stft=%s: %d chunks, max |x - ort|: output %.2g hn %.2g cn %.2g (cn worst at chunk %d)' % (
        ','.join(sorted(f32_ops)) or '-', stft, n, err['output'].max(), err['hn'].max(), err['cn'].max(),
        int(err['cn'].argmax())))


if __name__ == '__main__':
    main()
