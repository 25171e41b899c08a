#!/usr/bin/env python3
"""Writes the single-anchor benchmark kernels of scripts/kernel_bench.sh.

usage: gen_kernel_bench.py OUT_DIR

For each kernel NAME: NAME.kir (one conv2d or matmul with a relu epilogue,
operands as function arguments), NAME.args (kiln-bench --input flags: splat
values) and NAME.macs (multiply-adds per invoke). Shapes are those of the
mobile models' hot layers (PP-OCR, openWakeWord): 1x1 (pw), 3x3 (c3),
3x3 stride 2 (c3s2), depthwise 3x3 (dw) and a matmul (mm).
"""
import sys, os
out = sys.argv[1]
def t(s): return "tensor<" + "x".join(map(str, s)) + "xf32>"
def conv(name, N, C, H, W, O, K, s=1, p=None, d=1, g=1):
    if p is None: p = (K // 2) * d
    OH = (H + 2*p - d*(K-1) - 1)//s + 1; OW = (W + 2*p - d*(K-1) - 1)//s + 1
    xs, ws, os_ = [N,C,H,W], [O,C//g,K,K], [N,O,OH,OW]
    macs = N*O*OH*OW*(C//g)*K*K
    txt = f'''"func.func"() ({{
^bb0(%x: {t(xs)}, %w: {t(ws)}):
  %0 = "tensor.conv2d"(%x, %w) {{dilations = [{d}, {d}], group = {g} : i64, pads = [{p}, {p}, {p}, {p}], strides = [{s}, {s}]}} : ({t(xs)}, {t(ws)}) -> {t(os_)} loc("conv")
  %1 = "tensor.relu"(%0) : ({t(os_)}) -> {t(os_)} loc("act")
  "func.return"(%1) : ({t(os_)}) -> ()
}}) {{sym_name = "main"}} : () -> ()
'''
    open(f"{out}/{name}.kir", "w").write(txt)
    open(f"{out}/{name}.args", "w").write(f"--input={'x'.join(map(str,xs))}xf32=0.5 --input={'x'.join(map(str,ws))}xf32=0.25\n")
    open(f"{out}/{name}.macs", "w").write(str(macs))
def matmul(name, M, K, N):
    a, b, o = [M,K], [K,N], [M,N]
    txt = f'''"func.func"() ({{
^bb0(%a: {t(a)}, %b: {t(b)}):
  %0 = "tensor.matmul"(%a, %b) : ({t(a)}, {t(b)}) -> {t(o)} loc("mm")
  %1 = "tensor.relu"(%0) : ({t(o)}) -> {t(o)} loc("act")
  "func.return"(%1) : ({t(o)}) -> ()
}}) {{sym_name = "main"}} : () -> ()
'''
    open(f"{out}/{name}.kir", "w").write(txt)
    open(f"{out}/{name}.args", "w").write(f"--input={'x'.join(map(str,a))}xf32=0.5 --input={'x'.join(map(str,b))}xf32=0.25\n")
    open(f"{out}/{name}.macs", "w").write(str(M*K*N))
conv("pw", 1, 64, 24, 96, 128, 1, p=0)
conv("c3", 1, 32, 24, 96, 32, 3)
conv("c3s2", 1, 32, 48, 192, 64, 3, s=2)
conv("dw", 1, 128, 24, 96, 128, 3, g=128)
matmul("mm", 256, 512, 512)
