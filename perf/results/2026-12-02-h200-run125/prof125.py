# Session 19, run 125: one layernorm_fwd bf16 -> e4m3 16384 x 8192 call per backend (the backend
# from DISABLE_NVRTC), timed with CUDA events, for ncu.
import os
import sys

import torch

import numba_norms as nn

x = torch.randn(16384, 8192, device="cuda", dtype=torch.bfloat16)
g = torch.randn(8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, device="cuda", dtype=torch.bfloat16)
scale = torch.full((1,), 4.0, device="cuda")
amax = torch.zeros(1, device="cuda")
n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
for _ in range(3):
    nn.layernorm_fwd(x, g, b, 1e-5, out_dtype=torch.float8_e4m3fn, scale=scale, amax=amax)
torch.cuda.synchronize()
t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
t0.record()
for _ in range(n):
    nn.layernorm_fwd(x, g, b, 1e-5, out_dtype=torch.float8_e4m3fn, scale=scale, amax=amax)
t1.record()
torch.cuda.synchronize()
us = t0.elapsed_time(t1) * 1e3 / n
print(
    f"{nn.last_backend()} DISABLE_NVRTC={os.environ.get('DISABLE_NVRTC')} {us:.1f} us a call,"
    f" {16384 * 8192 * 3 / us / 1e3:.0f} GB/s"
)
