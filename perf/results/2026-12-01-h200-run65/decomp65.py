"""Run 65: the norm backward's two kernels timed apart and together, the finalize launched as a
programmatic dependent (PDL) or plainly, in one process (bf16, rows 16384).
(As run, in lint-clean form: loop variables bound as default arguments.)"""

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


def timed(body, sets, iters=40, reps=7):
    s = torch.cuda.current_stream()
    for _ in range(3):
        for k in range(len(sets)):
            body(k)
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(2_000_000)
        a.record(s)
        for i in range(iters):
            body(i % len(sets))
        b.record(s)
        torch.cuda.synchronize()
        out.append(a.elapsed_time(b) * 1000 / iters)
    return statistics.median(out)


rows = 16384
print(
    f"{'backend':6} {'op':12} {'hidden':>6} {'main':>8} {'fin':>7} {'plain':>8} {'pdl':>8} "
    f"{'gain':>6}  (us per backward; plain/pdl = main + finalize)"
)
for backend in ("nvrtc", "numba"):
    if backend == "numba":
        os.environ["DISABLE_NVRTC"] = "1"
    else:
        os.environ.pop("DISABLE_NVRTC", None)
    for op in ("layernorm", "rmsnorm"):
        for hidden in (768, 1024, 2048, 4096, 5120, 8192):
            sets = []
            for _ in range(3):
                x = torch.randn(rows, hidden, device="cuda", dtype=torch.bfloat16)
                g = torch.randn(hidden, device="cuda", dtype=torch.bfloat16)
                dy = torch.randn_like(x)
                if op == "layernorm":
                    b = torch.randn_like(g)
                    y, mu, rs = nn.layernorm_fwd(x, g, b, 1e-5)
                    outs = (torch.empty_like(x), torch.empty_like(g), torch.empty_like(g))
                    cap = capture(
                        lambda dy=dy, x=x, mu=mu, rs=rs, g=g, outs=outs: nn.layernorm_bwd(
                            dy, x, mu, rs, g, out=outs
                        )
                    )
                else:
                    y, rs = nn.rmsnorm_fwd(x, g, 1e-5)
                    outs = (torch.empty_like(x), torch.empty_like(g))
                    cap = capture(
                        lambda dy=dy, x=x, rs=rs, g=g, outs=outs: nn.rmsnorm_bwd(
                            dy, x, rs, g, out=outs
                        )
                    )
                assert len(cap) == 2, [c[0] for c in cap]
                (m, ms, margs), (f, fs, fargs) = cap
                plain = rtc.Launcher(f._fn, f._grid, f._block, f.params, device=f._device)
                mu_ = mu if op == "layernorm" else None
                sets.append((m, f, plain, ms, margs, fargs, x, dy, outs, mu_, rs))
            torch.cuda.synchronize()
            t_main = timed(lambda k, S=sets: S[k][0](S[k][3], *S[k][4]), sets)
            t_fin = timed(lambda k, S=sets: S[k][1](S[k][3], *S[k][5]), sets)
            t_plain = timed(
                lambda k, S=sets: (S[k][0](S[k][3], *S[k][4]), S[k][2](S[k][3], *S[k][5])), sets
            )
            t_pdl = timed(
                lambda k, S=sets: (S[k][0](S[k][3], *S[k][4]), S[k][1](S[k][3], *S[k][5])), sets
            )
            prog = sets[0][1].programmatic
            print(
                f"{backend:6} {op:12} {hidden:6d} {t_main:8.2f} {t_fin:7.2f} {t_plain:8.2f} "
                f"{t_pdl:8.2f} {t_plain / t_pdl:6.3f}  programmatic={prog}",
                flush=True,
            )
