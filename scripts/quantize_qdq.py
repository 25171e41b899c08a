#!/usr/bin/python3
"""Static int8 QDQ quantization of a float ONNX model, calibrated with numpy.

    quantize_qdq.py IN.onnx OUT.onnx NAME=CALIB.npy [NAME=CALIB2.npy ...]

ONNX Runtime's quantizer (onnxruntime.quantization) is not packaged in Debian,
so this is a small stand-in with Debian's python3-onnx and python3-numpy that
writes the same QDQ form (the "QDQ" format of ONNX Runtime's static
quantization, the form most mobile exporters produce):

- every Conv weight W [M, C/g, kH, kW] becomes DequantizeLinear(W_i8, s_w, axis=0):
  per output channel, symmetric, s_w[m] = max|W[m]| / 127, W_i8 = round(W / s_w)
  in [-127, 127], zero point 0;
- every Conv bias B [M] becomes DequantizeLinear(B_i32, s_x * s_w, axis=0);
- every float activation (graph inputs and node outputs) T is followed by
  QuantizeLinear → DequantizeLinear, per tensor, u8 asymmetric: over the
  calibration inputs, lo = min(0, min T), hi = max(0, max T), s = (hi - lo) / 255,
  zp = round(-lo / s). Reshape and MaxPool outputs reuse their input's (s, zp)
  (as ONNX Runtime's quantizer does; the max of u8 codes is then exact);
- graph outputs stay float: the quantized tensor feeding them is dequantized.

Calibration runs onnx_ref_eval.Evaluator in float64 (deterministic across
machines; scales are rounded to f32 once). Covers the op set of the models it is
used on (Conv, LeakyRelu, Max, MaxPool, Reshape; others raise). The model must
be opset >= 13 (per-axis DequantizeLinear). Rounding is half to even, as ONNX's
QuantizeLinear. Prints the output tensor's quantization step, the tolerance
that comparisons with ONNX Runtime use (docs/quantization.md).
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_ref_eval import Evaluator  # noqa: E402

SAME_PARAMS = {'Reshape', 'MaxPool'}  # output reuses the input's (scale, zero point)


def act_params(lo, hi):
    lo, hi = min(0.0, lo), max(0.0, hi)
    s = np.float32((hi - lo) / 255.0) if hi > lo else np.float32(1.0)
    zp = int(np.clip(np.rint(-lo / float(s)), 0, 255))
    return s, np.uint8(zp)


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    model = onnx.load(argv[1])
    opset = max(o.version for o in model.opset_import if o.domain in ('', 'ai.onnx'))
    if opset < 13:
        sys.exit('quantize_qdq: opset %d < 13 (per-axis DequantizeLinear needs 13)' % opset)
    g = model.graph
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}

    # 1. Calibration: per-tensor min/max of every float activation, in float64.
    ranges = {}
    ev = Evaluator(model, dtype=np.float64)
    for spec in argv[3:]:
        name, path = spec.split('=', 1)
        _, env = ev.run({name: np.load(path)})
        for k, v in env.items():
            if k in inits or not isinstance(v, np.ndarray) or v.dtype.kind != 'f':
                continue
            lo, hi = float(v.min()), float(v.max())
            if k in ranges:
                lo, hi = min(lo, ranges[k][0]), max(hi, ranges[k][1])
            ranges[k] = (lo, hi)

    # 2. (scale, zero point) per activation, in graph order.
    params = {}
    for i in g.input:
        if i.name in ranges:
            params[i.name] = act_params(*ranges[i.name])
    for n in g.node:
        for o in n.output:
            if o not in ranges:
                continue
            if n.op_type in SAME_PARAMS and n.input[0] in params:
                params[o] = params[n.input[0]]
            else:
                params[o] = act_params(*ranges[o])

    # 3. Rewrite: Q → DQ after every quantized activation; int8 weights, i32 bias.
    new_inits, nodes = [], []
    outputs = {o.name for o in g.output}
    dq_name = {}  # float activation -> its QDQ'd name

    def add_init(arr, name):
        new_inits.append(numpy_helper.from_array(arr, name))
        return name

    def qdq(t):
        s, zp = params[t]
        sn, zn = add_init(np.array(s, np.float32), t + '_scale'), add_init(np.array(zp, np.uint8), t + '_zp')
        nodes.append(helper.make_node('QuantizeLinear', [t, sn, zn], [t + '_q'], name=t + '_Q'))
        nodes.append(helper.make_node('DequantizeLinear', [t + '_q', sn, zn], [t + '_dq'], name=t + '_DQ'))
        dq_name[t] = t + '_dq'

    for i in g.input:
        if i.name in params:
            qdq(i.name)
    renamed_outputs = {}
    for n in g.node:
        ins = list(n.input)
        if n.op_type == 'Conv':
            x = ins[0]
            w = inits[ins[1]].astype(np.float64)
            m = w.shape[0]
            sw = (np.abs(w.reshape(m, -1)).max(axis=1) / 127.0).astype(np.float32)
            sw[sw == 0] = 1.0
            wq = np.clip(np.rint(w / sw.astype(np.float64).reshape(m, 1, 1, 1)), -127, 127).astype(np.int8)
            wn = ins[1] + '_i8'
            add_init(wq, wn)
            add_init(sw, wn + '_scale')
            add_init(np.zeros(m, np.int8), wn + '_zp')
            nodes.append(helper.make_node('DequantizeLinear', [wn, wn + '_scale', wn + '_zp'], [wn + '_dq'],
                                          name=wn + '_DQ', axis=0))
            ins[1] = wn + '_dq'
            if len(ins) > 2 and ins[2]:
                b = inits[ins[2]].astype(np.float64)
                sb = (np.float64(params[x][0]) * sw.astype(np.float64)).astype(np.float32)
                bq = np.rint(b / sb.astype(np.float64)).astype(np.int32)
                bn = ins[2] + '_i32'
                add_init(bq, bn)
                add_init(sb, bn + '_scale')
                nodes.append(helper.make_node('DequantizeLinear', [bn, bn + '_scale'], [bn + '_dq'],
                                              name=bn + '_DQ', axis=0))
                ins[2] = bn + '_dq'
        ins = [dq_name.get(i, i) for i in ins]
        outs = list(n.output)
        for k, o in enumerate(outs):
            if o in outputs and o in params:
                # A graph output keeps its name; the float tensor before it is renamed.
                renamed_outputs[o + '_f'] = o
                outs[k] = o + '_f'
                params[o + '_f'] = params.pop(o)
        nodes.append(helper.make_node(n.op_type, ins, outs, name=n.name or outs[0], domain=n.domain))
        nodes[-1].attribute.extend(n.attribute)
        for o in outs:
            if o in params:
                qdq(o)
    for f, o in renamed_outputs.items():
        nodes.append(helper.make_node('Identity', [dq_name[f]], [o], name=o + '_out'))

    # Initializers still used (Reshape shapes, Max constants) carry over as they are.
    used = {i for n in nodes for i in n.input}
    keep = [i for i in g.initializer if i.name in used]
    graph = helper.make_graph(nodes, g.name + '_qdq', list(g.input), list(g.output), keep + new_inits)
    out = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)],
                            producer_name='kiln scripts/quantize_qdq.py')
    out.ir_version = model.ir_version
    onnx.checker.check_model(out)
    onnx.save(out, argv[2])
    for o in g.output:
        src = dq_name.get(o.name + '_f') or dq_name.get(o.name)
        t = src[:-3] if src else None
        if t in params:
            print('quantize_qdq: %s: output %s step %.9g (zero point %d)' % (
                argv[2], o.name, float(params[t][0]), int(params[t][1])))


if __name__ == '__main__':
    main(sys.argv)
