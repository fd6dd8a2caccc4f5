# ruff: noqa: B023  (the lambdas run inside the loop iteration that made them)
"""Sweep the NVRTC norm kernels' ``__launch_bounds__`` minimum CTAs per SM (GPU, bf16).

``NN_FWD_MIN_CTAS`` / ``NN_BWD_MIN_CTAS`` cap registers so more CTAs fit an SM; too low a cap
spills. This times each setting on the same inputs with CUDA events and prints GB/s (bytes by
perf/_bench_cases.py's formulas), so the default in norms.cu can follow a measurement.

    python3 perf/sweep_launch_bounds.py [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

import numba_norms as nn  # noqa: E402
from numba_norms import dispatch  # noqa: E402
from numba_norms.backends.nvrtc import _norms  # noqa: E402

SETTINGS = [(1, 1), (2, 2), (3, 3), (4, 2), (5, 3)]  # (forward, backward) min CTAs per SM
SHAPES = [(16384, 4096), (16384, 8192), (16384, 1024)]


def _time(fn, reps: int = 30) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    return statistics.median(times)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None)
    args = p.parse_args()
    base_options = _norms.NVRTC_OPTIONS
    rows_out = []
    for rows, cols in SHAPES:
        x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
        g = torch.randn(cols, device="cuda", dtype=torch.bfloat16) * 0.1 + 1
        b = torch.randn(cols, device="cuda", dtype=torch.bfloat16) * 0.1
        dy = torch.randn_like(x)
        n = rows * cols
        fwd_bytes = {
            "layernorm": n * 4 + cols * 4 + rows * 8,
            "rmsnorm": n * 4 + cols * 2 + rows * 4,
        }
        bwd_bytes = {
            "layernorm": n * 6 + cols * 6 + rows * 8,
            "rmsnorm": n * 6 + cols * 4 + rows * 4,
        }
        for fmin, bmin in SETTINGS:
            _norms.NVRTC_OPTIONS = base_options + (
                f"-DNN_FWD_MIN_CTAS={fmin}",
                f"-DNN_BWD_MIN_CTAS={bmin}",
            )
            _norms._kernels.clear()
            _norms._launches.clear()
            dispatch._plan_cache.clear()
            t0 = time.perf_counter()
            y, mu, rs = nn.layernorm_fwd(x, g, b)
            yr, rsr = nn.rmsnorm_fwd(x, g)
            nn.layernorm_bwd(dy, x, mu, rs, g)
            nn.rmsnorm_bwd(dy, x, rsr, g)
            torch.cuda.synchronize()
            compile_s = time.perf_counter() - t0
            cases = {
                ("layernorm", "fwd"): lambda: nn.layernorm_fwd(x, g, b),
                ("rmsnorm", "fwd"): lambda: nn.rmsnorm_fwd(x, g),
                ("layernorm", "bwd"): lambda: nn.layernorm_bwd(dy, x, mu, rs, g),
                ("rmsnorm", "bwd"): lambda: nn.rmsnorm_bwd(dy, x, rsr, g),
            }
            for (op, d), fn in cases.items():
                us = _time(fn)
                nbytes = (fwd_bytes if d == "fwd" else bwd_bytes)[op]
                plan = next(
                    (
                        pl
                        for k, pl in dispatch._plan_cache.items()
                        if pl.spec.config.op == f"{op}_{d}" and pl.cols == cols
                    ),
                    None,
                )
                grid = plan.grid if plan else None
                row = dict(
                    op=f"{op}_{d}",
                    rows=rows,
                    cols=cols,
                    fwd_min=fmin,
                    bwd_min=bmin,
                    median_us=round(us, 2),
                    gbs=round(nbytes / us / 1e3, 1),
                    grid=grid,
                    compile_s=round(compile_s, 2),
                )
                rows_out.append(row)
                print(row, flush=True)
    _norms.NVRTC_OPTIONS = base_options
    if args.out:
        with open(os.path.join(args.out, "launch_bounds.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows_out[0]))
            w.writeheader()
            w.writerows(rows_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
