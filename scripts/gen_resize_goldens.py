#!/usr/bin/env python3
"""ONNX Runtime goldens for Resize / Upsample (tests/golden/resize/<case>/).

For every case below: writes model.onnx (one Resize or Upsample node, its
scales / sizes / roi as initializers; encoded from text by protoc with
/usr/include/onnx/onnx.proto), input_0.npy (X, deterministic), and runs
scripts/gen_golden.mjs (onnxruntime-node, CPU, one thread) for
output_0.npy. tests/e2e/resize_golden_test.cc compiles each model with Kiln,
runs it on Vulkan and compares. The cases cover what ONNX 1.12's node tests
do not: Resize-10 and Upsample-7/9, every nearest_mode and transform on
non-integral scales, cubic with exclude_outside, trilinear, tf_crop_and_resize
with nearest and cubic, and opset 18 (half_pixel_symmetric, axes,
keep_aspect_ratio_policy, antialias).

Usage: /usr/bin/python3 scripts/gen_resize_goldens.py   (needs numpy, protoc, node)
"""
import os
import shutil
import subprocess
import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, 'tests', 'golden', 'resize')
F, I64 = 1, 7


def tensor_txt(name, dt, dims, vals):
    s = 'initializer { name: "%s" data_type: %d ' % (name, dt)
    s += ' '.join('dims: %d' % d for d in dims) + ' '
    if dt == F:
        s += ' '.join('float_data: %r' % float(v) for v in vals)
    else:
        s += ' '.join('int64_data: %d' % int(v) for v in vals)
    return s + ' }'


def attr_txt(k, v):
    if isinstance(v, str):
        return 'attribute { name: "%s" type: STRING s: "%s" }' % (k, v)
    if isinstance(v, float):
        return 'attribute { name: "%s" type: FLOAT f: %r }' % (k, v)
    if isinstance(v, int):
        return 'attribute { name: "%s" type: INT i: %d }' % (k, v)
    if all(isinstance(x, int) for x in v):
        return 'attribute { name: "%s" type: INTS %s }' % (k, ' '.join('ints: %d' % x for x in v))
    return 'attribute { name: "%s" type: FLOATS %s }' % (k, ' '.join('floats: %r' % float(x) for x in v))


def write_case(name, op, opset, xshape, inputs, attrs):
    ins, inits = ['X'], []
    for i in inputs:
        if i == '':
            ins.append('')
        else:
            ins.append(i[0])
            inits.append(tensor_txt(*i))
    node = 'node { op_type: "%s" name: "%s" %s output: "Y" %s }' % (
        op, name, ' '.join('input: "%s"' % i for i in ins),
        ' '.join(attr_txt(k, v) for k, v in attrs.items()))
    dims = ' '.join('dim { dim_value: %d }' % d for d in xshape)
    graph = ('graph { name: "%s" %s %s input { name: "X" type { tensor_type { elem_type: 1 '
             'shape { %s } } } } output { name: "Y" type { tensor_type { elem_type: 1 } } } }'
             % (name, node, ' '.join(inits), dims))
    text = 'ir_version: 8 opset_import { domain: "" version: %d } %s' % (opset, graph)
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    model = subprocess.run(['protoc', '-I/usr/include', '--encode=onnx.ModelProto',
                            '/usr/include/onnx/onnx.proto'], input=text.encode(),
                           capture_output=True, check=True).stdout
    with open(os.path.join(d, 'model.onnx'), 'wb') as f:
        f.write(model)
    n = int(np.prod(xshape))
    x = (np.sin(np.arange(n) * 1.7) * 10 + np.arange(n) * 0.1).reshape(xshape).astype(np.float32)
    np.save(os.path.join(d, 'input_0.npy'), x)
    subprocess.run(['node', os.path.join(REPO, 'scripts', 'gen_golden.mjs'),
                    os.path.join(d, 'model.onnx'), d, 'X=@' + os.path.join(d, 'input_0.npy')],
                   check=True)


CASES = [
    ('op10_nearest_down', 'Resize', 10, [1, 1, 5, 7], [('s', F, [4], [1, 1, 0.6, 0.6])], {'mode': 'nearest'}),
    ('op10_linear_up', 'Resize', 10, [1, 1, 3, 4], [('s', F, [4], [1, 1, 2.5, 1.5])], {'mode': 'linear'}),
    ('upsample7_nearest', 'Upsample', 7, [1, 2, 2, 3], [], {'mode': 'nearest', 'scales': [1.0, 1.0, 2.0, 3.0]}),
    ('upsample9_linear', 'Upsample', 9, [1, 1, 3, 4], [('s', F, [4], [1, 1, 2, 2.5])], {'mode': 'linear'}),
    ('nearest_hp_prefer_floor', 'Resize', 13, [1, 2, 6, 8], ['', ('s', F, [4], [1, 1, 1.5, 0.75])], {'mode': 'nearest'}),
    ('nearest_hp_prefer_ceil', 'Resize', 13, [1, 2, 6, 8], ['', ('s', F, [4], [1, 1, 1.5, 0.75])],
     {'mode': 'nearest', 'nearest_mode': 'round_prefer_ceil'}),
    ('nearest_asym_floor_2x', 'Resize', 13, [1, 3, 5, 5], ['', ('s', F, [4], [1, 1, 2, 2])],
     {'mode': 'nearest', 'coordinate_transformation_mode': 'asymmetric', 'nearest_mode': 'floor'}),
    ('linear_align_corners_sizes', 'Resize', 13, [1, 1, 5, 6], ['', '', ('z', I64, [4], [1, 1, 9, 4])],
     {'mode': 'linear', 'coordinate_transformation_mode': 'align_corners'}),
    ('linear_hp_0p7', 'Resize', 13, [2, 3, 7, 9], ['', ('s', F, [4], [1, 1, 0.7, 1.3])], {'mode': 'linear'}),
    ('linear_pytorch_len1', 'Resize', 13, [1, 1, 4, 6], ['', '', ('z', I64, [4], [1, 1, 1, 3])],
     {'mode': 'linear', 'coordinate_transformation_mode': 'pytorch_half_pixel'}),
    ('cubic_hp_0p7', 'Resize', 13, [1, 2, 7, 9], ['', ('s', F, [4], [1, 1, 0.7, 1.6])], {'mode': 'cubic'}),
    ('cubic_exclude_asym', 'Resize', 13, [1, 1, 6, 6], ['', ('s', F, [4], [1, 1, 1.5, 2.5])],
     {'mode': 'cubic', 'exclude_outside': 1, 'cubic_coeff_a': -0.5, 'coordinate_transformation_mode': 'asymmetric'}),
    ('trilinear', 'Resize', 13, [1, 1, 3, 4, 5], ['', '', ('z', I64, [5], [1, 1, 5, 6, 7])], {'mode': 'linear'}),
    ('crop_nearest', 'Resize', 13, [1, 1, 6, 6],
     [('r', F, [8], [0, 0, 0.2, -0.1, 1, 1, 0.9, 1.2]), '', ('z', I64, [4], [1, 1, 4, 5])],
     {'mode': 'nearest', 'coordinate_transformation_mode': 'tf_crop_and_resize', 'extrapolation_value': -3.0}),
    ('crop_cubic', 'Resize', 13, [1, 1, 6, 6],
     [('r', F, [8], [0, 0, 0.2, -0.1, 1, 1, 0.9, 1.2]), '', ('z', I64, [4], [1, 1, 4, 5])],
     {'mode': 'cubic', 'coordinate_transformation_mode': 'tf_crop_and_resize', 'extrapolation_value': -3.0}),
    ('tf_half_pixel_for_nn', 'Resize', 11, [1, 1, 4, 6], [('r', F, [0], []), ('s', F, [4], [1, 1, 1.5, 0.5])],
     {'mode': 'nearest', 'coordinate_transformation_mode': 'tf_half_pixel_for_nn'}),
    ('op18_half_pixel_symmetric_linear', 'Resize', 18, [1, 1, 5, 7], ['', ('s', F, [4], [1, 1, 0.65, 1.37])],
     {'mode': 'linear', 'coordinate_transformation_mode': 'half_pixel_symmetric'}),
    ('op18_half_pixel_symmetric_nearest', 'Resize', 18, [1, 1, 5, 7], ['', ('s', F, [4], [1, 1, 0.65, 1.37])],
     {'mode': 'nearest', 'coordinate_transformation_mode': 'half_pixel_symmetric'}),
    ('op18_axes_scales', 'Resize', 18, [1, 2, 5, 7], ['', ('s', F, [2], [1.5, 0.6])], {'mode': 'linear', 'axes': [2, 3]}),
    ('op18_not_larger', 'Resize', 18, [1, 1, 5, 8], ['', '', ('z', I64, [2], [7, 7])],
     {'mode': 'linear', 'axes': [2, 3], 'keep_aspect_ratio_policy': 'not_larger'}),
    ('op18_not_smaller', 'Resize', 18, [1, 1, 5, 8], ['', '', ('z', I64, [2], [7, 7])],
     {'mode': 'nearest', 'axes': [2, 3], 'keep_aspect_ratio_policy': 'not_smaller'}),
    ('op18_antialias_linear_0p5', 'Resize', 18, [1, 1, 8, 10], ['', ('s', F, [4], [1, 1, 0.5, 0.5])],
     {'mode': 'linear', 'antialias': 1}),
    ('op18_antialias_linear_0p3', 'Resize', 18, [1, 1, 13, 17], ['', ('s', F, [4], [1, 1, 0.3, 0.45])],
     {'mode': 'linear', 'antialias': 1}),
    ('op18_antialias_cubic_0p4', 'Resize', 18, [1, 1, 12, 15], ['', ('s', F, [4], [1, 1, 0.4, 0.6])],
     {'mode': 'cubic', 'antialias': 1}),
    ('op18_antialias_cubic_exclude', 'Resize', 18, [1, 1, 12, 15], ['', ('s', F, [4], [1, 1, 0.4, 0.6])],
     {'mode': 'cubic', 'antialias': 1, 'exclude_outside': 1}),
    ('op18_antialias_linear_sizes', 'Resize', 18, [1, 1, 9, 11], ['', '', ('z', I64, [4], [1, 1, 4, 3])],
     {'mode': 'linear', 'antialias': 1}),
]

if __name__ == '__main__':
    for c in CASES:
        write_case(*c)
    print('wrote %d cases under %s' % (len(CASES), OUT))
