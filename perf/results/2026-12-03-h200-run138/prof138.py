# Session 22, run 138: rmsnorm_fwd bf16 -> e4m3 16384 x 65536 calls on the backend that
# DISABLE_NVRTC picks, timed with CUDA events, for ncu (same plan on both backends; run 133:
# NVRTC 85.0%, Numba 99.3% of the copy ceiling).
import os
import sys

import torch

import numba_norms as nn

rows, cols = 16384, int(sys.argv[2]) if len(sys.argv) > 2 else 65536
x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
g = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
scale = torch.full((1,), 4.0, device="cuda")
amax = torch.zeros(1, device="cuda")
n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
for _ in range(3):
    nn.rmsnorm_fwd(x, g, 1e-5, out_dtype=torch.float8_e4m3fn, scale=scale, amax=amax)
torch.cuda.synchronize()
t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
t0.record()
for _ in range(n):
    nn.rmsnorm_fwd(x, g, 1e-5, out_dtype=torch.float8_e4m3fn, scale=scale, amax=amax)
t1.record()
torch.cuda.synchronize()
us = t0.elapsed_time(t1) * 1e3 / n
print(
    f"{nn.last_backend()} DISABLE_NVRTC={os.environ.get('DISABLE_NVRTC')} {us:.1f} us a call,"
    f" {rows * cols * 3 / us / 1e3:.0f} GB/s"
)
