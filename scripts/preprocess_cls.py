#!/usr/bin/python3
"""PaddleOCR direction-classifier (ch_ppocr_mobile_v2.0_cls) preprocessing.

    /usr/bin/python3 scripts/preprocess_cls.py IMG.png OUT.npy [--shape=HxW] [--det]

--shape: another line shape, e.g. 48x320 or 48x128 for the PP-OCRv4 recognizer
(same steps with 192 replaced by W, 48 by H).
--det: the PP-OCRv4 detector's preprocessing for a fixed HxW canvas (as
samples/ocr/preprocess.cc): resize keeping the aspect ratio to fit the canvas
(scale = min(W/w, H/h), sides rounded), x / 255, (x - mean) / std with PaddleOCR's
ImageNet mean (0.485, 0.456, 0.406) and std (0.229, 0.224, 0.225) applied to the
B, G, R planes in that order, zero-padded on the right and bottom.

Writes a float32 array of shape [1, 3, 48, 192] (NCHW, channel order B, G, R as
cv2.imread gives it). Mirrors PaddleOCR's TextClassifier.resize_norm_img with
cls_image_shape = 3,48,192:
  h, w = image size; resized_w = min(192, ceil(48 * w / h))
  resize to (resized_w, 48); x = x / 255; x = (x - 0.5) / 0.5; HWC -> CHW
  zero-pad on the right to width 192 (0, not -1: Paddle pads after normalizing).
Needs only numpy and ImageMagick's `convert` (no PIL, no cv2). The resize is
ImageMagick's `-filter Triangle -resize WxH!` (bilinear weights; when shrinking,
ImageMagick widens the filter, i.e. it antialiases, unlike cv2.INTER_LINEAR).
The goldens store the resulting tensor, so this difference never reaches a test.
"""
import math
import subprocess
import sys

import numpy as np

H, W, C = 48, 192, 3


def read_ppm(data):
    """Parses a binary P6 PPM (maxval <= 255) into an HxWx3 uint8 array (R, G, B)."""
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b'#':
            while data[pos:pos + 1] not in (b'\n', b''):
                pos += 1
            continue
        start = pos
        while not data[pos:pos + 1].isspace():
            pos += 1
        fields.append(data[start:pos])
    pos += 1  # exactly one whitespace byte after maxval
    if fields[0] != b'P6':
        raise ValueError('expected a P6 PPM, got %r' % fields[0])
    w, h, maxval = int(fields[1]), int(fields[2]), int(fields[3])
    if maxval > 255:
        raise ValueError('16-bit PPM not supported (maxval %d)' % maxval)
    pix = np.frombuffer(data, dtype=np.uint8, count=w * h * 3, offset=pos)
    return pix.reshape(h, w, 3)


def image_size(path):
    out = subprocess.run(['identify', '-format', '%w %h', path + '[0]'],
                         check=True, capture_output=True).stdout.split()
    return int(out[0]), int(out[1])


def preprocess_det(path):
    w, h = image_size(path)
    scale = min(W / float(w), H / float(h))
    rw, rh = max(1, min(W, int(round(w * scale)))), max(1, min(H, int(round(h * scale))))
    ppm = subprocess.run(['convert', path + '[0]', '-alpha', 'remove', '-colorspace', 'sRGB',
                          '-type', 'TrueColor', '-filter', 'Triangle',
                          '-resize', '%dx%d!' % (rw, rh), '-depth', '8', 'ppm:-'],
                         check=True, capture_output=True).stdout
    bgr = read_ppm(ppm)[:, :, ::-1].astype(np.float32)
    mean = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
    std = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)
    x = (bgr.transpose(2, 0, 1) / 255.0 - mean) / std
    out = np.zeros((1, C, H, W), dtype=np.float32)
    out[0, :, :rh, :rw] = x
    return out


def preprocess(path):
    w, h = image_size(path)
    resized_w = min(W, int(math.ceil(H * w / float(h))))
    ppm = subprocess.run(['convert', path + '[0]', '-alpha', 'remove', '-colorspace', 'sRGB',
                          '-type', 'TrueColor', '-filter', 'Triangle',
                          '-resize', '%dx%d!' % (resized_w, H), '-depth', '8', 'ppm:-'],
                         check=True, capture_output=True).stdout
    rgb = read_ppm(ppm)
    assert rgb.shape == (H, resized_w, 3), rgb.shape
    bgr = rgb[:, :, ::-1].astype(np.float32)  # cv2.imread order
    x = bgr.transpose(2, 0, 1) / 255.0
    x = (x - 0.5) / 0.5
    out = np.zeros((1, C, H, W), dtype=np.float32)
    out[0, :, :, :resized_w] = x
    return out


def main():
    global H, W
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    opts = [a for a in sys.argv[1:] if a.startswith('--')]
    det = False
    for o in opts:
        if o.startswith('--shape='):
            H, W = (int(v) for v in o[len('--shape='):].split('x'))
        elif o == '--det':
            det = True
        else:
            sys.exit('unknown option ' + o)
    if len(args) != 2:
        sys.exit('usage: preprocess_cls.py IMG.png OUT.npy [--shape=HxW] [--det]')
    x = preprocess_det(args[0]) if det else preprocess(args[0])
    np.save(args[1], x)
    print('preprocess_cls: %s -> %s %s %s' % (args[0], args[1], list(x.shape), x.dtype))


if __name__ == '__main__':
    main()
