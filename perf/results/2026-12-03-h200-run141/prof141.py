# Session 22, run 141: one rmsnorm_fwd call shape, timed with CUDA events, for ncu.
# argv: n dtype out cols fold  (fold=1 adds the shape to _norms.RMS_FOLDED for this process)
import sys

import torch

import numba_norms as nn
from numba_norms.backends.nvrtc import _norms

n, dt, out, cols, fold = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
tdt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dt]
odt = {"e4m3": torch.float8_e4m3fn, "same": None}[out]
if fold == "1":
    _norms.RMS_FOLDED = _norms.RMS_FOLDED | {(dt, "fp8" if odt else dt, cols)}
rows = 16384
x = torch.randn(rows, cols, device="cuda", dtype=tdt)
g = torch.randn(cols, device="cuda", dtype=tdt)
kw = (
    dict(
        out_dtype=odt,
        scale=torch.full((1,), 4.0, device="cuda"),
        amax=torch.zeros(1, device="cuda"),
    )
    if odt
    else {}
)
for _ in range(3):
    nn.rmsnorm_fwd(x, g, 1e-5, **kw)
torch.cuda.synchronize()
t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
t0.record()
for _ in range(n):
    nn.rmsnorm_fwd(x, g, 1e-5, **kw)
t1.record()
torch.cuda.synchronize()
us = t0.elapsed_time(t1) * 1e3 / n
b = rows * cols * (x.element_size() + (1 if odt else x.element_size()))
gbs = b / us / 1e3
print(f"{nn.last_backend()} {dt}->{out} {cols} fold={fold} {us:.1f} us a call, {gbs:.0f} GB/s")
