# ruff: noqa: B023  (each lambda runs within its own loop iteration)
"""Session 30 experiment: multi-CTA softmax rows launched as clusters (the planner's choice on
sm_90) or through the arrival counter (planner.cluster_size patched to 1), at 131072 keys.

    python3 .exp/clus.py BACKEND on|off OUT.csv
"""

import csv
import os
import statistics
import sys

import torch

backend, mode, out = sys.argv[1], sys.argv[2], sys.argv[3]
if backend == "numba":
    os.environ["DISABLE_NVRTC"] = "1"
import numba_norms as nn  # noqa: E402
from numba_norms import dispatch, planner  # noqa: E402

if mode == "off":
    planner.cluster_size = lambda ctas_per_row, limits: 1

SK, SQ = 131072, 1024
rows = SQ
res = []
for dt_name, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16), ("fp32", torch.float32)):
    size = torch.tensor([], dtype=dt).element_size()
    x = torch.randn(1, 1, SQ, SK, device="cuda", dtype=dt)
    mask = torch.rand(1, 1, SQ, SK, device="cuda") < 0.1
    dy = torch.randn_like(x)
    y = torch.softmax(x.float(), -1).to(dt)
    out_t = torch.empty_like(x)
    cases = {
        "softmax_fwd": (lambda: nn.scaled_softmax_fwd(x, 0.5, out=out_t), 2 * size),
        "masked_softmax_fwd": (
            lambda: nn.scaled_masked_softmax_fwd(x, mask, 0.5, out=out_t),
            2 * size + 1,
        ),
        "aligned_causal_softmax_fwd": (
            lambda: nn.scaled_aligned_causal_masked_softmax_fwd(x, 0.5, out=out_t),
            2 * size,
        ),
        "softmax_bwd": (lambda: nn.scaled_softmax_bwd(dy, y, 0.5, out=out_t), 3 * size),
    }
    for op, (fn, per) in cases.items():
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        plan = [p for k, p in dispatch._plan_cache.items()]
        ts = []
        for _ in range(25):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1e3)
        us = statistics.median(ts)
        gbs = rows * SK * per / us / 1e3
        last = plan[-1] if plan else None
        res.append(
            dict(
                op=op,
                dtype=dt_name,
                backend=backend,
                mode=mode,
                us=round(us, 1),
                gbs=round(gbs, 1),
                grid=getattr(last, "grid", ""),
                cluster=getattr(last, "cluster", ""),
            )
        )
        dispatch._plan_cache.clear()
        print(res[-1], flush=True)
with open(out, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(res[0]))
    w.writeheader()
    w.writerows(res)
