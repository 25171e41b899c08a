#!/usr/bin/python3
"""Deterministic inputs for the golden tests (called by `gen_golden.mjs --all`).

    /usr/bin/python3 scripts/gen_golden_inputs.py GOLDEN_DIR TMP_DIR

Writes GOLDEN_DIR/<dir>/input_<i>.npy for the goldens whose inputs are
pure numpy (melspectrogram, silero_vad), in graph input order, and under TMP_DIR
the raw material gen_golden.mjs finishes with ORT: embedding_audio.npy (-> mel ->
embedding_model input), head_audio.npy and <head>_noise.npy (-> real embeddings
blended with noise -> wake word head inputs). numpy only; every array comes from its own seeded
np.random.default_rng (PCG64), so the bytes do not depend on call order.
The cls inputs come from render_text.sh + preprocess_cls.py instead.

Audio for the openWakeWord models is int16-scaled float32 (integers in
[-32768, 32767]), which is what openWakeWord feeds melspectrogram.onnx.
silero_vad takes audio normalized to [-1, 1].
"""
import os
import sys

import numpy as np

SR = 16000
HEADS = [('alexa_v0.1', 16, 201), ('hey_mycroft_v0.1', 16, 202), ('hey_rhasspy_v0.1', 16, 203),
         ('weather_v0.1', 22, 204), ('timer_v0.1', 34, 205), ('hey_jarvis_v0.1', 16, 206)]


def audio_int16_scale(n, seed):
    """A sine mix with a slow amplitude envelope plus noise, rounded to int16 values."""
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=np.float64) / SR
    env = 0.6 + 0.4 * np.sin(2 * np.pi * 3.0 * t)
    x = env * (3000 * np.sin(2 * np.pi * 440 * t)
               + 2000 * np.sin(2 * np.pi * 1250 * t + 0.3)
               + 1000 * np.sin(2 * np.pi * (600 + 2000 * t) * t))
    x += 300 * rng.standard_normal(n)
    return np.clip(np.round(x), -32768, 32767).astype(np.float32)


def save(golden, name, index, arr):
    d = os.path.join(golden, name)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, 'input_%d.npy' % index), arr)


def main():
    if len(sys.argv) != 3:
        sys.exit('usage: gen_golden_inputs.py GOLDEN_DIR TMP_DIR')
    golden, tmp = sys.argv[1], sys.argv[2]

    # melspectrogram: input [1, 1280] (one 80 ms openWakeWord chunk).
    save(golden, 'melspectrogram', 0, audio_int16_scale(1280, 101)[None, :])

    # embedding_model source audio: 512 + 75*160 samples -> exactly 76 mel frames.
    np.save(os.path.join(tmp, 'embedding_audio.npy'), audio_int16_scale(512 + 75 * 160, 102)[None, :])

    # Wake word heads [1, L, 96]: gen_golden.mjs blends real embeddings of this audio
    # (512 + 339*160 samples -> 340 mel frames -> 34 embeddings) with 16 * N(0, 1)
    # noise (16 ~ the embeddings' std), so each head's output is not saturated.
    np.save(os.path.join(tmp, 'head_audio.npy'), audio_int16_scale(512 + 339 * 160, 103)[None, :])
    for name, frames, seed in HEADS:
        rng = np.random.default_rng(seed)
        np.save(os.path.join(tmp, name + '_noise.npy'),
                (16.0 * rng.standard_normal((1, frames, 96))).astype(np.float32))

    # silero_vad: input [1,512] f32 in [-1,1], sr int64 scalar, h and c [2,1,64] f32.
    rng = np.random.default_rng(301)
    t = np.arange(512) / SR
    x = 0.1 * np.sin(2 * np.pi * 220 * t) + 0.05 * np.sin(2 * np.pi * 1800 * t) + 0.01 * rng.standard_normal(512)
    save(golden, 'silero_vad', 0, x.astype(np.float32)[None, :])
    save(golden, 'silero_vad', 1, np.array(SR, dtype=np.int64))
    save(golden, 'silero_vad', 2, (0.1 * rng.standard_normal((2, 1, 64))).astype(np.float32))
    save(golden, 'silero_vad', 3, (0.1 * rng.standard_normal((2, 1, 64))).astype(np.float32))
    print('gen_golden_inputs: wrote synthetic inputs under %s' % golden)


if __name__ == '__main__':
    main()
