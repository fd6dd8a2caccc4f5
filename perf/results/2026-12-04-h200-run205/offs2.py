# Session 32, run 205: run 204 found rmsnorm_fwd bf16 16384 x 32768 / 65536 (one CTA of 1024
# threads an SM, persistent grid) at 82-84% of the ceiling with y at one base address and 88-91%
# at every other offset tried, a torch copy_ level at all of them. Is it the address (repeat it
# later in the process) and does a larger grid (WAVES times the persistent one) avoid it?
import dataclasses
import statistics
import sys

import torch

import numba_norms as nn
from numba_norms import dispatch, planner

rows, cols = 16384, int(sys.argv[1])
dt = torch.bfloat16
g = torch.randn(cols, device="cuda", dtype=dt)
rs = torch.empty(rows, device="cuda", dtype=torch.float32)
nbytes = rows * cols * 2 * 2
real = planner.row_plan
W = [1]


def row_plan(spec, rows, cols, limits, occ, mac=None):
    if W[0] == 1:
        return real(spec, rows, cols, limits, occ, mac)
    lim = dataclasses.replace(limits, sm_count=limits.sm_count * W[0])
    return real(spec, rows, cols, lim, occ, None if mac is None else mac * W[0])


planner.row_plan = row_plan


def t(fn, n=12):
    fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e3)
    return statistics.median(ts)


def line(tag, x, y, waves=(1,)):
    out = []
    for w in waves:
        W[0] = w
        dispatch._plan_cache.clear()
        us = t(lambda: nn.rmsnorm_fwd(x, g, 1e-5, out=(y, rs)))
        out.append(f"W{w} {us:7.1f} us {100 * nbytes / us / 1e3 / 4220:5.1f}%")
    W[0] = 1
    dispatch._plan_cache.clear()
    cu = t(lambda: y.copy_(x))
    print(
        f"{tag:22s} y-x={y.data_ptr() - x.data_ptr():+#014x} "
        + "  ".join(out)
        + f"  copy {100 * nbytes / cu / 1e3 / 4220:5.1f}%",
        flush=True,
    )


x = torch.randn(rows, cols, device="cuda", dtype=dt)
pool = torch.empty(rows * cols + (64 << 20), device="cuda", dtype=dt)
n = rows * cols
for off in (0, 1 << 10, 0, 1 << 16, 1 << 21, 0, 1 << 22, 1 << 23, 1 << 24, 1 << 25, 0):
    y = pool[off // 2 : off // 2 + n].view(rows, cols)
    line(f"y +{off:#x}", x, y, (1, 2, 8) if off in (0, 1 << 10) else (1,))
# x at offsets, y fixed (a fresh tensor)
y = torch.empty(rows, cols, device="cuda", dtype=dt)
pool.normal_()
for off in (0, 1 << 10, 1 << 21, 1 << 24):
    xx = pool[off // 2 : off // 2 + n].view(rows, cols)
    line(f"x +{off:#x}", xx, y)
