# Session 29, run 179: one softmax call shape, timed with CUDA events (mode "time") or launched
# a few times for ncu (mode "ncu"). Args: mode op dtype sk sq [n].
import os
import sys

import torch

import numba_norms as nn

mode, op, dt, sk, sq = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
n = int(sys.argv[6]) if len(sys.argv) > 6 else 20
dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dt]
x = torch.randn(1, 1, sq, sk, device="cuda", dtype=dtype)
es = x.element_size()
if op == "fwd":
    f = lambda: nn.scaled_softmax_fwd(x, 0.5)  # noqa: E731
    nbytes = x.numel() * 2 * es
elif op == "masked":
    mask = torch.rand(1, 1, sq, sk, device="cuda") < 0.1
    f = lambda: nn.scaled_masked_softmax_fwd(x, mask, 0.5)  # noqa: E731
    nbytes = x.numel() * (2 * es + 1)
elif op == "bwd":
    y = torch.softmax(x.float(), -1).to(dtype)
    f = lambda: nn.scaled_softmax_bwd(x, y, 0.5)  # noqa: E731
    nbytes = x.numel() * 3 * es
else:
    raise SystemExit(f"op {op}?")
for _ in range(3):
    f()
torch.cuda.synchronize()
if mode == "ncu":
    f()
    torch.cuda.synchronize()
    raise SystemExit(0)
t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
best = []
for _ in range(5):
    t0.record()
    for _ in range(n):
        f()
    t1.record()
    torch.cuda.synchronize()
    best.append(t0.elapsed_time(t1) * 1e3 / n)
us = sorted(best)[len(best) // 2]
print(
    f"{op} {dt} sk={sk} sq={sq} {nn.last_backend()} DISABLE_NVRTC={os.environ.get('DISABLE_NVRTC')}"
    f" {us:.1f} us {us / sq * 1e3:.2f} ns/row {nbytes / us / 1e3:.0f} GB/s"
)
