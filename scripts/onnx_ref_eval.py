#!/usr/bin/python3
"""A small numpy ONNX evaluator at a chosen float precision (investigation aid).

    from onnx_ref_eval import Evaluator
    ev = Evaluator(onnx.load(path), dtype=np.float64)
    outs, env = ev.run({'input': x, 'sr': np.int64(16000), 'h': h, 'c': c})

Float initializers and float inputs are cast to `dtype` (np.float64 gives an
independent high-precision reference; np.float32 a plain float32 one), so
every op runs in that precision. `env` maps every value name (subgraph values
included) to its array, for bisecting where two implementations diverge.
Only the op set of the models in .cache/models that use it (silero_vad,
investigated with it; embedding_model, calibrated with it by
quantize_qdq.py) is covered; any other op raises NotImplementedError. Needs
/usr/bin/python3 (numpy + onnx).
"""
import numpy as np
import onnx
from onnx import numpy_helper


def _attrs(node):
    out = {}
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            out[a.name] = a.g
        elif a.type == onnx.AttributeProto.TENSOR:
            out[a.name] = numpy_helper.to_array(a.t)
        else:
            out[a.name] = onnx.helper.get_attribute_value(a)
    return out


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


class Evaluator:
    def __init__(self, model, dtype=np.float64):
        self.model = model
        self.dtype = dtype

    def _cast(self, a):
        a = np.asarray(a)
        if a.dtype.kind == 'f':
            return a.astype(self.dtype)
        return a

    def run(self, feeds):
        env = {}
        for k, v in feeds.items():
            env[k] = self._cast(v)
        outs = self._graph(self.model.graph, env)
        return outs, env

    def _graph(self, g, env):
        for init in g.initializer:
            env[init.name] = self._cast(numpy_helper.to_array(init))
        for n in g.node:
            ins = [env[i] if i else None for i in n.input]
            res = self._node(n, ins, env)
            for name, val in zip(n.output, res):
                if name:
                    env[name] = val
        return [env[o.name] for o in g.output]

    def _node(self, n, x, env):
        op, at = n.op_type, _attrs(n)
        dt = self.dtype
        if op == 'Shape':
            s = np.array(x[0].shape, dtype=np.int64)
            return [s[at.get('start', 0):at['end'] if 'end' in at else None]]
        if op == 'Gather':
            return [np.take(x[0], x[1], axis=at.get('axis', 0))]
        if op == 'Unsqueeze':
            r = x[0]
            axes = sorted(int(a) % (r.ndim + len(x[1])) for a in np.atleast_1d(x[1]))
            for a in axes:
                r = np.expand_dims(r, a)
            return [r]
        if op == 'Squeeze':
            if len(x) < 2 or x[1] is None:
                return [np.squeeze(x[0])]
            return [np.squeeze(x[0], axis=tuple(int(a) for a in np.atleast_1d(x[1])))]
        if op == 'Concat':
            return [np.concatenate([np.atleast_1d(v) if v.ndim == 0 else v for v in x], axis=at['axis'])]
        if op == 'Reshape':
            shape = [int(d) for d in x[1]]
            shape = [x[0].shape[i] if d == 0 and not at.get('allowzero', 0) else d for i, d in enumerate(shape)]
            return [x[0].reshape(shape)]
        if op == 'Pad':
            r = x[0].ndim
            pads = [int(p) for p in x[1]]
            widths = [(pads[i], pads[i + r]) for i in range(r)]
            mode = at.get('mode', b'constant').decode()
            if mode == 'constant':
                cv = x[2] if len(x) > 2 and x[2] is not None else 0
                return [np.pad(x[0], widths, mode='constant', constant_values=cv)]
            return [np.pad(x[0], widths, mode={'reflect': 'reflect', 'edge': 'edge'}[mode])]
        if op == 'Equal':
            return [np.equal(x[0], x[1])]
        if op == 'If':
            branch = at['then_branch'] if bool(np.asarray(x[0]).reshape(-1)[0]) else at['else_branch']
            return self._graph(branch, env)
        if op == 'Identity':
            return [x[0]]
        if op == 'Cast':
            to = onnx.helper.tensor_dtype_to_np_dtype(at['to']) if hasattr(onnx.helper, 'tensor_dtype_to_np_dtype') \
                else onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[at['to']]
            if np.dtype(to).kind == 'f':
                to = dt
            return [x[0].astype(to)]
        if op == 'ConstantOfShape':
            v = at.get('value', np.zeros(1, np.float32))
            return [np.full([int(d) for d in x[0]], v.reshape(-1)[0], dtype=dt if v.dtype.kind == 'f' else v.dtype)]
        if op == 'Slice':
            data = x[0]
            starts, ends = x[1], x[2]
            axes = x[3] if len(x) > 3 and x[3] is not None else np.arange(len(starts))
            steps = x[4] if len(x) > 4 and x[4] is not None else np.ones(len(starts), np.int64)
            sl = [slice(None)] * data.ndim
            for s, e, a, st in zip(starts, ends, axes, steps):
                a = int(a) % data.ndim
                dim = data.shape[a]
                s, e, st = int(s), int(e), int(st)
                s = max(-dim, min(dim, s))
                e = max(-dim - 1, min(dim, e))
                sl[a] = slice(s, e if e >= -dim else None, st)
            return [data[tuple(sl)]]
        if op == 'Pow':
            if np.all(x[1] == 2):
                return [x[0] * x[0]]
            return [np.power(x[0], x[1]).astype(x[0].dtype)]
        if op == 'Add':
            return [(x[0] + x[1]).astype(np.result_type(x[0], x[1]))]
        if op == 'Mul':
            return [x[0] * x[1]]
        if op == 'Neg':
            return [-x[0]]
        if op == 'Sqrt':
            return [np.sqrt(x[0])]
        if op == 'Log':
            return [np.log(x[0])]
        if op == 'Relu':
            return [np.maximum(x[0], 0).astype(x[0].dtype)]
        if op == 'Sigmoid':
            return [_sigmoid(x[0])]
        if op == 'Transpose':
            return [np.transpose(x[0], at.get('perm'))]
        if op == 'ReduceMean':
            axes = tuple(at['axes']) if 'axes' in at else None
            return [np.mean(x[0], axis=axes, keepdims=bool(at.get('keepdims', 1))).astype(x[0].dtype)]
        if op == 'Conv':
            return [self._conv2d(x, at) if x[0].ndim == 4 else self._conv1d(x, at)]
        if op == 'LeakyRelu':
            a = at.get('alpha', 0.01)
            return [np.where(x[0] >= 0, x[0], x[0] * a).astype(x[0].dtype)]
        if op == 'Max':
            r = x[0]
            for v in x[1:]:
                r = np.maximum(r, v)
            return [r.astype(x[0].dtype)]
        if op == 'MaxPool':
            return [self._maxpool2d(x[0], at)]
        if op == 'LSTM':
            return self._lstm(x, at)
        raise NotImplementedError(op)

    def _conv1d(self, x, at):
        inp, w = x[0], x[1]
        b = x[2] if len(x) > 2 and x[2] is not None else None
        if inp.ndim != 3:
            raise NotImplementedError('Conv rank %d' % inp.ndim)
        g = at.get('group', 1)
        stride = at.get('strides', [1])[0]
        dil = at.get('dilations', [1])[0]
        pads = at.get('pads', [0, 0])
        xp = np.pad(inp, ((0, 0), (0, 0), (pads[0], pads[1])))
        n, c, length = xp.shape
        m, cg, k = w.shape
        lout = (length - dil * (k - 1) - 1) // stride + 1
        idx = np.arange(lout)[None, :] * stride + np.arange(k)[:, None] * dil  # [K, Lout]
        cols = xp[:, :, idx]  # [N, C, K, Lout]
        mg = m // g
        out = np.empty((n, m, lout), dtype=self.dtype)
        for gi in range(g):
            xs = cols[:, gi * cg:(gi + 1) * cg]  # [N, cg, K, Lout]
            ws = w[gi * mg:(gi + 1) * mg]  # [mg, cg, K]
            out[:, gi * mg:(gi + 1) * mg] = np.einsum('nckl,mck->nml', xs, ws)
        if b is not None:
            out += b[None, :, None]
        return out

    def _conv2d(self, x, at):
        # NCHW, explicit pads (auto_pad NOTSET only), groups, strides, dilations.
        inp, w = x[0], x[1]
        b = x[2] if len(x) > 2 and x[2] is not None else None
        if at.get('auto_pad', b'NOTSET') not in (b'NOTSET', 'NOTSET'):
            raise NotImplementedError('Conv auto_pad')
        g = at.get('group', 1)
        sh, sw = at.get('strides', [1, 1])
        dh, dw = at.get('dilations', [1, 1])
        pt, pl, pb, pr = at.get('pads', [0, 0, 0, 0])
        xp = np.pad(inp, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
        n, c, hh, ww = xp.shape
        m, cg, kh, kw = w.shape
        oh = (hh - dh * (kh - 1) - 1) // sh + 1
        ow = (ww - dw * (kw - 1) - 1) // sw + 1
        iy = np.arange(oh)[None, :] * sh + np.arange(kh)[:, None] * dh  # [KH, OH]
        ix = np.arange(ow)[None, :] * sw + np.arange(kw)[:, None] * dw  # [KW, OW]
        cols = xp[:, :, iy[:, :, None, None], ix[None, None, :, :]]  # [N, C, KH, OH, KW, OW]
        mg = m // g
        out = np.empty((n, m, oh, ow), dtype=self.dtype)
        for gi in range(g):
            xs = cols[:, gi * cg:(gi + 1) * cg]
            ws = w[gi * mg:(gi + 1) * mg]  # [mg, cg, KH, KW]
            out[:, gi * mg:(gi + 1) * mg] = np.einsum('ncyhxw,mcyx->nmhw', xs, ws)
        if b is not None:
            out += b[None, :, None, None]
        return out

    def _maxpool2d(self, inp, at):
        # NCHW, explicit pads (padding never wins), strides; no dilations/ceil_mode.
        if at.get('ceil_mode', 0) or any(d != 1 for d in at.get('dilations', [1, 1])) or inp.ndim != 4:
            raise NotImplementedError('MaxPool variant')
        kh, kw = at['kernel_shape']
        sh, sw = at.get('strides', [1, 1])
        pt, pl, pb, pr = at.get('pads', [0, 0, 0, 0])
        xp = np.pad(inp, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=-np.inf)
        oh = (xp.shape[2] - kh) // sh + 1
        ow = (xp.shape[3] - kw) // sw + 1
        out = np.full(inp.shape[:2] + (oh, ow), -np.inf, dtype=inp.dtype)
        for y in range(kh):
            for x in range(kw):
                out = np.maximum(out, xp[:, :, y:y + sh * (oh - 1) + 1:sh, x:x + sw * (ow - 1) + 1:sw])
        return out

    def _lstm(self, x, at):
        X, W, R = x[0], x[1], x[2]
        B = x[3] if len(x) > 3 else None
        h0 = x[5] if len(x) > 5 else None
        c0 = x[6] if len(x) > 6 else None
        if at.get('direction', b'forward') != b'forward' or at.get('layout', 0) != 0 or 'activations' in at:
            raise NotImplementedError('LSTM variant')
        hs = at['hidden_size']
        T, batch, _ = X.shape
        h = h0[0] if h0 is not None else np.zeros((batch, hs), self.dtype)
        c = c0[0] if c0 is not None else np.zeros((batch, hs), self.dtype)
        bias = (B[0, :4 * hs] + B[0, 4 * hs:]) if B is not None else 0
        ys = []
        for t in range(T):
            gates = X[t] @ W[0].T + h @ R[0].T + bias
            i, o, f, cc = (gates[:, k * hs:(k + 1) * hs] for k in range(4))
            i, o, f, cc = _sigmoid(i), _sigmoid(o), _sigmoid(f), np.tanh(cc)
            c = f * c + i * cc
            h = o * np.tanh(c)
            ys.append(h)
        Y = np.stack(ys)[:, None]
        return [Y, h[None], c[None]]
