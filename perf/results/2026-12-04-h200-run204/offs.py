# Session 32, run 204: why one-CTA-an-SM norm forwards at 32768 / 65536 columns ran 82% of the
# ceiling in some processes and 92-94% in others (run 203). Within one process: fresh
# allocations of x and y (do they flip between the two levels?), then y at byte offsets from one
# base (x fixed), with a same-size torch copy_ as control.
import statistics
import sys

import torch

import numba_norms as nn

rows, cols = 16384, int(sys.argv[1]) if len(sys.argv) > 1 else 32768
dt = torch.bfloat16
g = torch.randn(cols, device="cuda", dtype=dt)
rs = torch.empty(rows, device="cuda", dtype=torch.float32)
nbytes = rows * cols * 2 * 2


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


def line(tag, x, y):
    us = t(lambda: nn.rmsnorm_fwd(x, g, 1e-5, out=(y, rs)))
    cu = t(lambda: y.copy_(x))
    print(
        f"{tag:28s} x={x.data_ptr() % (1 << 30):#012x} y={y.data_ptr() % (1 << 30):#012x} "
        f"rms {us:7.1f} us {nbytes / us / 1e3:6.0f} GB/s   copy {cu:7.1f} us "
        f"{nbytes / cu / 1e3:6.0f} GB/s",
        flush=True,
    )


junk = []
for trial in range(8):
    junk.append(torch.empty(trial * 3 * (1 << 20) + 12345, device="cuda", dtype=torch.uint8))
    x = torch.randn(rows, cols, device="cuda", dtype=dt)
    y = torch.empty_like(x)
    line(f"fresh {trial}", x, y)
    del x, y
junk.clear()
torch.cuda.empty_cache()
x = torch.randn(rows, cols, device="cuda", dtype=dt)
pool = torch.empty(rows * cols + (64 << 20), device="cuda", dtype=dt)
for off in (0, 1 << 10, 1 << 12, 1 << 16, 1 << 20, 3 << 20, 1 << 22, 1 << 24, 5 << 22, 1 << 25):
    y = pool[off // 2 : off // 2 + rows * cols].view(rows, cols)
    line(f"y offset {off:#x}", x, y)
