#!/usr/bin/env python3
"""Issue #5's speed targets checked against ``perf/bench.py`` output: one markdown row a target.

Runs on the CPU, from the bench.csv files of one or more runs (a later file's row replaces an
earlier one's, as in ``perf/scoreboard.py``) and, for the host-cost target, their host.csv::

    python3 perf/targets.py perf/results/RUN/*/bench.csv [--host RUN/host.csv] [--misses]

Each row says how many of the measured shapes meet the target and names the farthest one.
Percentages are of the copy ceiling measured in the same process (bench.csv's pct_ceiling);
ratios are of median device times on the same shape in the same process. ``--misses`` lists
every shape that misses. A target with no measured shape says so: nothing is assumed met.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from scoreboard import read

NORM_FWD = ("layernorm_fwd", "rmsnorm_fwd")
NORM_FWD_FP8 = ("layernorm_fwd_fp8", "rmsnorm_fwd_fp8")
NORM_BWD = ("layernorm_bwd", "rmsnorm_bwd")
SOFTMAX = (
    "softmax_fwd",
    "softmax_bwd",
    "masked_softmax_fwd",
    "upper_triang_softmax_fwd",
    "aligned_causal_softmax_fwd",
)
OURS = ("nvrtc", "numba")

# QuACK's GB/s from the peer table (H200, 2026-11-30, copy ceiling 4240 GB/s, bf16,
# rows 16384), as % of that ceiling so runs with another ceiling compare fairly.
QUACK_CEILING = 4240.0
QUACK_GBS = {
    ("rmsnorm_fwd", 4096): 3440.0,
    ("rmsnorm_fwd", 8192): 3790.0,
    ("rmsnorm_fwd", 16384): 3930.0,
    ("layernorm_fwd", 4096): 2210.0,
    ("layernorm_fwd", 8192): 2640.0,
    ("rmsnorm_bwd", 4096): 1820.0,
    ("rmsnorm_bwd", 8192): 2680.0,
    ("layernorm_bwd", 4096): 2580.0,
    ("layernorm_bwd", 8192): 2750.0,
}
# sizes TE's norm tables do not tune, against the nearest size they do (the list)
UNTUNED = {2560: 2048, 3584: 4096, 7168: 8192}
# the same bar for 16-bit rows of 16-byte vectors that no tuned shape tiles (session 44: the
# general path serves them; not in the list, not in --full: `bench.py --sizes
# 24832,32768,40704,59648,65536`), against the nearest benchmark size by ratio
UNTILED = {24832: 32768, 40704: 32768, 59648: 65536}
# host cost a call, microseconds (the targets)
HOST_LIMIT_US = {"nvrtc": 10.0, "numba": 15.0}


@dataclass
class Check:
    """One shape's figure against its bar (``value >= bar`` meets it)."""

    shape: str
    value: float
    bar: float
    failed: bool = False  # a row's numerical check failed: never met

    @property
    def met(self) -> bool:
        return not self.failed and self.value >= self.bar


@dataclass(frozen=True)
class Target:
    name: str
    bar: str
    unit: str  # "%" or "x"
    checks: Callable[[dict], Iterator[Check]]


def _bad(*rows: dict) -> bool:
    return any(r["check"] not in ("ok", "-") for r in rows)


def _pct(row: dict) -> float:
    return float(row["pct_ceiling"])


def _us(row: dict) -> float:
    return float(row["median_us"])


def _rows(data: dict, ops: tuple, dtype: str | None = "bf16") -> Iterator[tuple]:
    """(op, dtype, size, {impl: row}) of ``ops`` (every dtype where ``dtype`` is None)."""
    for (op, dt), sizes in sorted(data.items()):
        if op in ops and (dtype is None or dt == dtype):
            for size in sorted(sizes):
                yield op, dt, size, sizes[size]


def _even(size: int) -> bool:
    return size % 8 == 0  # rows of whole 16-byte vectors in 16-bit types


def _ceiling(ops, bar, keep, impl="nvrtc", dtype="bf16"):
    def run(data):
        for op, dt, size, row in _rows(data, ops, dtype):
            if impl in row and keep(size):
                yield Check(f"{op} {dt} {size}", _pct(row[impl]), bar, _bad(row[impl]))

    return run


def _quack(data):
    for op, dt, size, row in _rows(data, NORM_FWD + NORM_BWD):
        bar = QUACK_GBS.get((op, size))
        if bar is not None and "nvrtc" in row:
            pct = 100 * bar / QUACK_CEILING
            yield Check(f"{op} {dt} {size}", _pct(row["nvrtc"]), pct, _bad(row["nvrtc"]))


def _peer_ratio(ops, impls, peers, bar, keep, dtype="bf16"):
    """Ours over the fastest peer measured on the shape (time ratio: peer / ours)."""

    def run(data):
        for op, dt, size, row in _rows(data, ops, dtype):
            times = [_us(row[p]) for p in peers if p in row]
            if not times or not keep(size):
                continue
            for impl in impls:
                if impl in row:
                    value = min(times) / _us(row[impl])
                    yield Check(f"{op} {dt} {size} {impl}", value, bar, _bad(row[impl]))

    return run


def _numba_share(data):
    for op, dt, size, row in _rows(data, NORM_FWD + NORM_FWD_FP8 + NORM_BWD + SOFTMAX, None):
        if "nvrtc" in row and "numba" in row and size >= 1024:
            nv, nb = row["nvrtc"], row["numba"]
            yield Check(f"{op} {dt} {size}", _us(nv) / _us(nb), 0.85, _bad(nv, nb))


def _vs_nearest(nearest: dict[int, int]):
    """NVRTC's GB/s at each size of ``nearest`` over its GB/s at the size it maps to."""

    def run(data):
        for op, dt, size, row in _rows(data, NORM_FWD + NORM_FWD_FP8 + NORM_BWD, None):
            near = nearest.get(size)
            if near is None or "nvrtc" not in row:
                continue
            other = data[(op, dt)].get(near, {}).get("nvrtc")
            if other is not None:
                value = float(row["nvrtc"]["gbs"]) / float(other["gbs"])
                bad = _bad(row["nvrtc"], other)
                yield Check(f"{op} {dt} {size} (vs {near})", value, 0.90, bad)

    return run


TARGETS = (
    Target(
        "norm forward, hidden >= 4096 (NVRTC; 16-byte rows)",
        ">= 95% of the ceiling",
        "%",
        _ceiling(NORM_FWD, 95.0, lambda n: n >= 4096 and _even(n)),
    ),
    Target(
        "norm forward, FP8 output, hidden >= 4096 (NVRTC)",
        ">= 95% of the ceiling",
        "%",
        _ceiling(NORM_FWD_FP8, 95.0, lambda n: n >= 4096 and _even(n)),
    ),
    Target("norm >= QuACK (the issue's GB/s)", ">= QuACK", "%", _quack),
    Target(
        "norm backward, hidden >= 4096 (NVRTC; 16-byte rows)",
        ">= 85% of the ceiling",
        "%",
        _ceiling(NORM_BWD, 85.0, lambda n: n >= 4096 and _even(n)),
    ),
    Target(
        "softmax, every variant, sk >= 1024 (NVRTC)",
        ">= 90% of the ceiling",
        "%",
        _ceiling(SOFTMAX, 90.0, lambda n: n >= 1024),
    ),
    Target(
        "small norms, hidden 768-2048, against torch / Liger",
        ">= 1.2x the best peer",
        "x",
        _peer_ratio(
            NORM_FWD + NORM_BWD, ("nvrtc",), ("torch", "liger"), 1.2, lambda n: 768 <= n <= 2048
        ),
    ),  # fmt: skip
    Target(
        "Numba against NVRTC, size >= 1024, every dtype",
        ">= 0.85x NVRTC",
        "x",
        _numba_share,
    ),
    Target(
        "against torch eager, every shape and dtype, both backends",
        ">= 1.0x torch",
        "x",
        _peer_ratio(
            NORM_FWD + NORM_FWD_FP8 + NORM_BWD + SOFTMAX,
            OURS,
            ("torch",),
            1.0,
            lambda n: True,
            dtype=None,
        ),
    ),  # fmt: skip
    Target(
        "sizes TE does not tune (2560 / 3584 / 7168, NVRTC)",
        ">= 0.9x the nearest tuned size's GB/s",
        "x",
        _vs_nearest(UNTUNED),
    ),
    Target(
        "16-bit rows no tuned shape tiles (24832 / 40704 / 59648, NVRTC)",
        ">= 0.9x the nearest tuned size's GB/s",
        "x",
        _vs_nearest(UNTILED),
    ),
)


def host_checks(paths: list[Path]) -> Iterator[Check]:
    """Host cost a call (host.csv): under the issue's limit and under torch eager's."""
    rows: dict = {}
    for path in paths:
        with open(path, newline="") as fh:
            for r in csv.DictReader(fh):
                if r.get("us_per_call") and not r.get("error"):
                    rows[(r["op"], r["dtype"], int(r["rows"]), int(r["cols"]), r["impl"])] = r
    for (op, dt, n, cols, impl), r in sorted(rows.items()):
        limit = HOST_LIMIT_US.get(r["backend"])
        if limit is None or impl == "torch":
            continue
        us = float(r["us_per_call"])
        torch = rows.get((op, dt, n, cols, "torch"))
        bar = limit if torch is None else min(limit, float(torch["us_per_call"]))
        # as a ratio (bar / us >= 1 meets it), so the table reads like the others
        yield Check(f"{op} {dt} {n}x{cols} {impl} ({us:.1f} us)", bar / us, 1.0)


def _fmt(value: float, unit: str) -> str:
    return f"{value:.1f}%" if unit == "%" else f"{value:.2f}x"


def report(rows: list[tuple[str, str, str, list[Check]]], misses: bool) -> str:
    out = ["| target | bar | met | farthest from it |", "| --- | --- | ---: | --- |"]
    for name, bar, unit, checks in rows:
        if not checks:
            out.append(f"| {name} | {bar} | not measured | - |")
            continue
        met = sum(c.met for c in checks)
        worst = min(
            checks,
            key=lambda c: (not c.failed, c.value - c.bar if unit == "%" else c.value / c.bar),
        )
        shown = _fmt(worst.value, unit) + ("" if unit == "x" else f" (bar {worst.bar:.1f}%)")
        shown += " (check failed)" if worst.failed else ""
        failed = sum(c.failed for c in checks)
        note = f" ({failed} failed their check)" if failed else ""
        out.append(f"| {name} | {bar} | {met} / {len(checks)}{note} | {worst.shape}: {shown} |")
    if misses:
        for name, _bar, unit, checks in rows:
            missed = [c for c in checks if not c.met]
            if missed:
                out.append(f"\n**{name}**, missed on {len(missed)}:")
                out += [
                    f"- {c.shape}: {_fmt(c.value, unit)}" + (" (check failed)" if c.failed else "")
                    for c in missed
                ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("csv", nargs="+", type=Path, help="bench.csv file(s)")
    p.add_argument("--host", nargs="*", type=Path, default=[], help="host.csv file(s)")
    p.add_argument("--misses", action="store_true", help="list every shape that misses")
    args = p.parse_args(argv)
    data = read(args.csv)
    if not data:
        print("no throughput rows", file=sys.stderr)
        return 1
    rows = [(t.name, t.bar, t.unit, list(t.checks(data))) for t in TARGETS]
    if args.host:
        rows.append(
            (
                "host cost a call (host.csv)",
                "<= 10 us NVRTC / 15 us Numba and <= torch eager",
                "x",
                list(host_checks(args.host)),
            )
        )
    print(report(rows, args.misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
