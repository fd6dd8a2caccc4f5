"""Run 69: host cost of one rtc.Launcher call, plain (cuLaunchKernel) against programmatic
(cuLaunchKernelEx), the same empty kernel, alternated blocks of 500 calls, synchronized between
blocks (outside the timing): median us per call over 40 blocks each."""

from __future__ import annotations

import statistics
import time

import torch

import rtc

SRC = 'extern "C" __global__ void k(int* p, int n) { if (n < 0) p[0] = n; }'
mod = rtc.compile(SRC, ("k",), name="empty.cu")
kern = mod.kernel("k")
stream = torch.cuda.current_stream().cuda_stream
buf = torch.zeros(4, dtype=torch.int32, device="cuda")
plain = rtc.Launcher(kern, 1, 32, "Pi")
dep = rtc.Launcher(kern, 1, 32, "Pi", programmatic=True)
coop = rtc.Launcher(kern, 1, 32, "Pi", cooperative=True)
ptr = buf.data_ptr()
res = {"plain": [], "programmatic": [], "cooperative": []}
for f in (plain, dep, coop):
    for _ in range(100):
        f(stream, ptr, 1)
torch.cuda.synchronize()
for _ in range(40):
    for name, f in (("plain", plain), ("programmatic", dep), ("cooperative", coop)):
        t0 = time.perf_counter()
        for _ in range(500):
            f(stream, ptr, 1)
        res[name].append((time.perf_counter() - t0) / 500 * 1e6)
        torch.cuda.synchronize()
for name, v in res.items():
    v.sort()
    print(f"{name:13} median {statistics.median(v):6.2f} us  p20 {v[8]:6.2f}  p80 {v[32]:6.2f}")
