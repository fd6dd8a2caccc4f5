"""Back-to-back calls of one op, timed as a chain (GPU): what launch chaining saves.

``perf/bench.py`` records CUDA events around every call, so an event separates any two of its
kernels and the stream's launch gap between calls is not part of its per-call medians. In a
model the kernels run back to back. This script captures the launches of one public call per
input set (``rtc.Launcher`` calls), then times ``--iters`` back-to-back replays between two
events (median of ``--reps``), rotating three input sets: once with the launchers as the library
built them (on sm_90 programmatic dependents, ``pdl``) and once with plain copies of the same
kernels (``plain``). Run it with another checkout's package first on ``PYTHONPATH`` to time
that code (its launchers have no ``programmatic`` flag: both columns are then plain).

    python3 perf/chain_timing.py [--backends nvrtc,numba] [--ops layernorm_fwd,...]
        [--sizes 768,4096] [--softmax-sizes 128,512] [--out chain.csv]

Columns: us per call (plain, pdl), their ratio, and the launch kinds (``P`` programmatic,
``-`` plain) of one call.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import os
import statistics
import sys
from collections.abc import Callable
from typing import Any

NORM_OPS = ("layernorm_fwd", "rmsnorm_fwd", "layernorm_bwd", "rmsnorm_bwd")
SOFTMAX_OPS = ("softmax_fwd", "softmax_bwd")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backends", default="nvrtc,numba")
    p.add_argument("--ops", default=",".join(NORM_OPS + SOFTMAX_OPS))
    p.add_argument("--sizes", default="768,1024,2048,4096,8192", help="norm hidden sizes")
    p.add_argument("--softmax-sizes", default="128,256,512,1024,2048", help="sq = sk")
    p.add_argument("--rows", type=int, default=16384, help="norm rows")
    p.add_argument("--iters", type=int, default=40, help="calls between the two events")
    p.add_argument("--reps", type=int, default=7, help="timings; the median is reported")
    p.add_argument("--out", help="CSV file for the rows")
    return p.parse_args(argv)


class Recorder:
    """Captures ``(launcher, stream, args)`` of every ``rtc.Launcher`` call inside ``capture``."""

    def __init__(self) -> None:
        self.mod = importlib.import_module("rtc.launch")  # `rtc.launch` is also the function
        self.orig = self.mod.Launcher.__call__
        self.calls: list[tuple] = []

    def capture(self, fn: Callable[[], Any]) -> list[tuple]:
        orig, calls = self.orig, self.calls
        calls.clear()

        def record(launcher, stream, *args):
            calls.append((launcher, stream, args))
            return orig(launcher, stream, *args)

        self.mod.Launcher.__call__ = record
        try:
            fn()
        finally:
            self.mod.Launcher.__call__ = orig
        return list(calls)


def plain_copy(launcher: Any) -> Any:
    """The same kernel, shape and parameters as a plain (non-programmatic) launcher."""
    import rtc

    return rtc.Launcher(
        launcher._fn, launcher._grid, launcher._block, launcher.params,
        cooperative=launcher._coop, device=launcher._device,
    )  # fmt: skip


def norm_call(op: str, hidden: int, rows: int) -> tuple[list, Callable[[], Any]]:
    """Inputs (kept alive) and a call of ``op`` writing into preallocated outputs (bf16)."""
    import torch

    import numba_norms as nn

    x = torch.randn(rows, hidden, device="cuda", dtype=torch.bfloat16)
    g = torch.randn(hidden, device="cuda", dtype=torch.bfloat16)
    b = torch.randn_like(g)
    dy = torch.randn_like(x)
    if op.startswith("layernorm"):
        y, mu, rs = nn.layernorm_fwd(x, g, b, 1e-5)
        if op.endswith("fwd"):
            out = (torch.empty_like(x), torch.empty_like(mu), torch.empty_like(rs))
            return [x, g, b, out], lambda: nn.layernorm_fwd(x, g, b, 1e-5, out=out)
        out = (torch.empty_like(x), torch.empty_like(g), torch.empty_like(g))
        return [x, g, dy, mu, rs, out], lambda: nn.layernorm_bwd(dy, x, mu, rs, g, out=out)
    y, rs = nn.rmsnorm_fwd(x, g, 1e-5)
    if op.endswith("fwd"):
        out = (torch.empty_like(x), torch.empty_like(rs))
        return [x, g, out], lambda: nn.rmsnorm_fwd(x, g, 1e-5, out=out)
    out = (torch.empty_like(x), torch.empty_like(g))
    return [x, g, dy, rs, out], lambda: nn.rmsnorm_bwd(dy, x, rs, g, out=out)


def softmax_call(op: str, sk: int, b: int = 4, h: int = 32) -> tuple[list, Callable[[], Any]]:
    """Inputs and a call of the scaled softmax ``op`` on ``[b, h, sk, sk]`` (bf16)."""
    import torch

    import numba_norms as nn

    x = torch.randn(b, h, sk, sk, device="cuda", dtype=torch.bfloat16)
    y = nn.scaled_softmax_fwd(x, 0.125)
    out = torch.empty_like(x)
    if op.endswith("fwd"):
        return [x, out], lambda: nn.scaled_softmax_fwd(x, 0.125, out=out)
    dy = torch.randn_like(x)
    return [y, dy, out], lambda: nn.scaled_softmax_bwd(dy, y, 0.125, out=out)


def chain_us(replays: list[list[tuple]], iters: int, reps: int) -> float:
    """Median us per call of ``iters`` back-to-back replays (rotating the sets) between events."""
    import torch

    stream = torch.cuda.current_stream()
    n = len(replays)

    def call(k: int) -> None:
        for fire, s, args in replays[k % n]:
            fire(s, *args)

    for k in range(2 * n):
        call(k)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(2_000_000)  # the host queues every call before the first one runs
        start.record(stream)
        for k in range(iters):
            call(k)
        end.record(stream)
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / iters)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    rec = Recorder()
    ops = [o for o in args.ops.split(",") if o]
    cases = [(op, int(n)) for op in ops if op in NORM_OPS for n in args.sizes.split(",")]
    cases += [
        (op, int(n)) for op in ops if op in SOFTMAX_OPS for n in args.softmax_sizes.split(",")
    ]
    rows = []
    print(f"{'backend':7} {'op':14} {'size':>6} {'plain':>8} {'pdl':>8} {'ratio':>6}  us a call")
    for backend in args.backends.split(","):
        if backend == "numba":
            os.environ["DISABLE_NVRTC"] = "1"
        else:
            os.environ.pop("DISABLE_NVRTC", None)
        for op, n in cases:
            keep, lib, plain = [], [], []
            for _ in range(3):
                inputs, fn = (
                    softmax_call(op, n) if op in SOFTMAX_OPS else norm_call(op, n, args.rows)
                )
                launches = rec.capture(fn)
                keep.append(inputs)
                lib.append(launches)
                plain.append([(plain_copy(f), s, a) for f, s, a in launches])
            torch.cuda.synchronize()
            t_plain = chain_us(plain, args.iters, args.reps)
            t_lib = chain_us(lib, args.iters, args.reps)
            kinds = "".join("P" if getattr(f, "programmatic", False) else "-" for f, _, _ in lib[0])
            print(f"{backend:7} {op:14} {n:6d} {t_plain:8.2f} {t_lib:8.2f} "
                  f"{t_plain / t_lib:6.3f}  {kinds}", flush=True)  # fmt: skip
            rows.append(dict(backend=backend, op=op, size=n, plain_us=round(t_plain, 3),
                             pdl_us=round(t_lib, 3), launches=kinds))  # fmt: skip
            del keep, lib, plain
            torch.cuda.empty_cache()
    if args.out:
        with open(args.out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
