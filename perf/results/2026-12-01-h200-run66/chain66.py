"""Run 66: back-to-back calls of one op, its kernels launched as programmatic dependents (PDL,
as the library now does on sm_90) or plainly (the same kernels, plain rtc.Launcher copies), in
one process: us per call, median of 7 timings of 40 calls (3 input sets rotated), bf16.
(As run, in lint-clean form: loop variables bound as default arguments. Its maintained
successor is perf/chain_timing.py.)"""

import importlib
import os
import statistics

import torch

import numba_norms as nn
import rtc

L = importlib.import_module("rtc.launch")
orig = L.Launcher.__call__
calls = []


def rec(self, stream, *args):
    calls.append((self, stream, args))
    return orig(self, stream, *args)


def capture(fn):
    calls.clear()
    L.Launcher.__call__ = rec
    try:
        fn()
    finally:
        L.Launcher.__call__ = orig
    return list(calls)


def plain(f):
    return rtc.Launcher(f._fn, f._grid, f._block, f.params, device=f._device, cooperative=f._coop)


def timed(body, n, iters=40, reps=7):
    s = torch.cuda.current_stream()
    for _ in range(2):
        for k in range(n):
            body(k)
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(2_000_000)
        a.record(s)
        for i in range(iters):
            body(i % n)
        b.record(s)
        torch.cuda.synchronize()
        out.append(a.elapsed_time(b) * 1000 / iters)
    return statistics.median(out)


def norm_case(op, hidden, rows=16384):
    x = torch.randn(rows, hidden, device="cuda", dtype=torch.bfloat16)
    g = torch.randn(hidden, device="cuda", dtype=torch.bfloat16)
    b = torch.randn_like(g)
    dy = torch.randn_like(x)
    keep = [x, g, b, dy]
    if op.startswith("layernorm"):
        y, mu, rs = nn.layernorm_fwd(x, g, b, 1e-5)
        keep += [y, mu, rs]
        if op.endswith("fwd"):
            outs = (torch.empty_like(x), torch.empty_like(mu), torch.empty_like(rs))
            return keep + [outs], lambda: nn.layernorm_fwd(x, g, b, 1e-5, out=outs)
        outs = (torch.empty_like(x), torch.empty_like(g), torch.empty_like(g))
        return keep + [outs], lambda: nn.layernorm_bwd(dy, x, mu, rs, g, out=outs)
    y, rs = nn.rmsnorm_fwd(x, g, 1e-5)
    keep += [y, rs]
    if op.endswith("fwd"):
        outs = (torch.empty_like(x), torch.empty_like(rs))
        return keep + [outs], lambda: nn.rmsnorm_fwd(x, g, 1e-5, out=outs)
    outs = (torch.empty_like(x), torch.empty_like(g))
    return keep + [outs], lambda: nn.rmsnorm_bwd(dy, x, rs, g, out=outs)


def softmax_case(op, sk, b=4, h=32):
    x = torch.randn(b, h, sk, sk, device="cuda", dtype=torch.bfloat16)
    y = nn.scaled_softmax_fwd(x, 0.125)
    if op.endswith("fwd"):
        o = torch.empty_like(x)
        return [x, y, o], lambda: nn.scaled_softmax_fwd(x, 0.125, out=o)
    dy = torch.randn_like(x)
    o = torch.empty_like(x)
    return [x, y, dy, o], lambda: nn.scaled_softmax_bwd(dy, y, 0.125, out=o)


print(f"{'backend':6} {'op':14} {'size':>6} {'plain':>8} {'pdl':>8} {'gain':>6}  us a call")
cases = [
    (op, n)
    for op in ("layernorm_fwd", "rmsnorm_fwd", "layernorm_bwd", "rmsnorm_bwd")
    for n in (768, 1024, 2048, 4096, 8192)
]
cases += [(op, n) for op in ("softmax_fwd", "softmax_bwd") for n in (128, 256, 512, 1024, 2048)]
for backend in ("nvrtc", "numba"):
    if backend == "numba":
        os.environ["DISABLE_NVRTC"] = "1"
    else:
        os.environ.pop("DISABLE_NVRTC", None)
    for op, n in cases:
        sets = []
        for _ in range(3):
            keep, fn = (softmax_case if op.startswith("softmax") else norm_case)(op, n)
            cap = capture(fn)
            sets.append((keep, cap, [(plain(f), s, a) for f, s, a in cap]))
        torch.cuda.synchronize()

        def run_pdl(k, sets=sets):
            for f, s, a in sets[k][1]:
                f(s, *a)

        def run_plain(k, sets=sets):
            for f, s, a in sets[k][2]:
                f(s, *a)

        t_plain = timed(run_plain, 3)
        t_pdl = timed(run_pdl, 3)
        flags = "".join("P" if f.programmatic else "-" for f, _, _ in sets[0][1])
        print(
            f"{backend:6} {op:14} {n:6d} {t_plain:8.2f} {t_pdl:8.2f} {t_plain / t_pdl:6.3f}  "
            f"launches {flags}",
            flush=True,
        )
        del sets
        torch.cuda.empty_cache()
