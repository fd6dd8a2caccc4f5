# Session 29, run 180: softmax calls back to back (a loop of n launches, no events between them)
# against per-call events (bench.py's timing), with the plan's programmatic dependent launch as
# planned or forced off (run 179: the streaming forward bf16 32768 keys x 4096 rows ran 43.8 ns a
# row in a loop, 36.1 at 3960 rows = 10 rows for each of its 396 CTAs).
import dataclasses
import statistics
import sys

import torch

import numba_norms as nn
from numba_norms import dispatch, planner

real_plan = planner.softmax_plan
nodep = [False]


def plan(*a, **k):
    p = real_plan(*a, **k)
    return dataclasses.replace(p, dependent=False) if nodep[0] else p


planner.softmax_plan = plan
DT = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def case(op, dt, sk, sq):
    dtype = DT[dt]
    x = torch.randn(1, 1, sq, sk, device="cuda", dtype=dtype)
    es = x.element_size()
    if op == "fwd":
        return (lambda: nn.scaled_softmax_fwd(x, 0.5)), x.numel() * 2 * es
    if op == "causal":
        return (lambda: nn.scaled_aligned_causal_masked_softmax_fwd(x, 0.5)), x.numel() * 2 * es
    if op == "masked":
        mask = torch.rand(1, 1, sq, sk, device="cuda") < 0.1
        return (lambda: nn.scaled_masked_softmax_fwd(x, mask, 0.5)), x.numel() * (2 * es + 1)
    y = torch.softmax(x.float(), -1).to(dtype)
    return (lambda: nn.scaled_softmax_bwd(x, y, 0.5)), x.numel() * 3 * es


def loop_us(f, n=20):
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    res = []
    for _ in range(5):
        t0.record()
        for _ in range(n):
            f()
        t1.record()
        torch.cuda.synchronize()
        res.append(t0.elapsed_time(t1) * 1e3 / n)
    return statistics.median(res)


def events_us(f, n=40):
    ev = [
        (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        for _ in range(n)
    ]
    for a, b in ev:
        a.record()
        f()
        b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) * 1e3 for a, b in ev)


for spec in sys.argv[1:]:
    op, dt, sk, sq = spec.split(":")
    f, nbytes = case(op, dt, int(sk), int(sq))
    out = []
    for mode, nd in (
        ("loop", False),
        ("loop-nodep", True),
        ("events", False),
        ("events-nodep", True),
    ):
        nodep[0] = nd
        dispatch._plan_cache.clear()
        for _ in range(3):
            f()
        torch.cuda.synchronize()
        us = (loop_us if mode.startswith("loop") else events_us)(f)
        out.append(f"{mode} {us:.1f} us {nbytes / us / 1e3:.0f} GB/s")
    p = next(iter(dispatch._plan_cache.values()))
    print(f"{spec} grid {p.grid} dep {p.dependent}: " + "; ".join(out), flush=True)
    dispatch._plan_cache.clear()
