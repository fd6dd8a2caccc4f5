# ruff: noqa: B023, F821 (the lambdas run in the iteration that binds them; xs is freed after)
"""Probe: LayerNorm forward weight traffic. Times layernorm_fwd bf16 rows x cols with distinct
gamma / beta and with beta aliased to gamma (half the weight reads), and rmsnorm_fwd, on the
numba_norms first on sys.path. Prints one line per case: tag case cols us GB/s(x+y)."""

import os
import sys

sys.path.insert(1, os.path.join(os.getcwd(), "perf"))
import torch
from _bench_torch import time_calls

import numba_norms as nn

tag = sys.argv[1]
print("tree", tag, nn.__file__, flush=True)
torch.manual_seed(0)
for cols in (65536, 32768):
    rows = 16384
    nsets = 3 if cols == 65536 else 5
    xs = [torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16) for _ in range(nsets)]
    g = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
    # correctness once (first rows)
    y, mu, rs = nn.layernorm_fwd(xs[0], g, b, 1e-5)
    ref = torch.nn.functional.layer_norm(xs[0][:64].float(), (cols,), g.float(), b.float(), 1e-5)
    err = (y[:64].float() - ref).abs().max().item()
    cases = {
        "ln": lambda i: nn.layernorm_fwd(xs[i % nsets], g, b, 1e-5),
        "ln_alias": lambda i: nn.layernorm_fwd(xs[i % nsets], g, g, 1e-5),
        "rms": lambda i: nn.rmsnorm_fwd(xs[i % nsets], g, 1e-5),
    }
    for rnd in range(2):
        for name, fn in cases.items():
            t = time_calls(fn, nsets, target_ms=60.0)
            gbs = 2 * rows * cols * 2 / t.median_us / 1e3
            print(
                f"{tag} r{rnd} {name:9s} {cols} {t.median_us:9.1f} us {gbs:7.1f} GB/s "
                f"p20 {t.p20_us:.1f} p80 {t.p80_us:.1f} err {err:.3g}",
                flush=True,
            )
    del xs
    torch.cuda.empty_cache()
