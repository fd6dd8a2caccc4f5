#!/usr/bin/env python3
"""Markdown tables of ``perf/bench.py``'s bench.csv files: one table per (op, dtype).

Runs on the CPU, from one or more CSVs (a later file's row replaces an earlier one's for the
same op, dtype, implementation and size, as in ``perf/plot.py``)::

    python3 perf/scoreboard.py perf/results/RUN/*/bench.csv > /tmp/scoreboard.md

Each row is one size: the same-size stream, NVRTC and Numba as % of that process's copy
ceiling (NVRTC also as % of the stream), torch eager and Liger-Kernel where measured, and the
ratios the issue's targets name: NVRTC / torch, Numba / NVRTC, NVRTC / Liger. ``!`` marks a
failed check.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict
from pathlib import Path

IMPLS = ("stream", "nvrtc", "numba", "torch", "liger")


def read(paths: list[Path]) -> dict:
    """{(op, dtype): {size: {impl: row}}} with the later file's rows winning."""
    out: dict = defaultdict(lambda: defaultdict(dict))
    for path in paths:
        with open(path, newline="") as fh:
            for r in csv.DictReader(fh):
                if r["op"] == "copy" or r["impl"] not in IMPLS or not r["gbs"]:
                    continue
                out[(r["op"], r["dtype"])][int(r["cols"])][r["impl"]] = r
    return out


def _pct(r: dict | None) -> str:
    if r is None:
        return "-"
    return f"{float(r['pct_ceiling']):.1f}" + ("" if r["check"] in ("ok", "-") else " !")


def _ratio(a: dict | None, b: dict | None) -> str:
    if a is None or b is None:
        return "-"
    return f"{float(b['median_us']) / float(a['median_us']):.2f}"


def table(op: str, dtype: str, sizes: dict) -> str:
    head = (
        f"| {op} {dtype} | stream | NVRTC (of stream) | Numba | torch | Liger | NVRTC/torch "
        "| Numba/NVRTC | NVRTC/Liger |"
    )
    lines = [head, "| ---: " * 9 + "|"]
    for size in sorted(sizes):
        row = sizes[size]
        nv, st = row.get("nvrtc"), row.get("stream")
        of_stream = ""
        if nv is not None and st is not None:
            # GB/s against GB/s: the stream moves its own bytes (no mask, say)
            of_stream = f" ({100 * float(nv['gbs']) / float(st['gbs']):.0f})"
        cells = [
            str(size),
            _pct(st),
            _pct(nv) + of_stream,
            _pct(row.get("numba")),
            _pct(row.get("torch")),
            _pct(row.get("liger")),
            _ratio(nv, row.get("torch")),
            _ratio(row.get("numba"), nv),
            _ratio(nv, row.get("liger")),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("csv", nargs="+", type=Path, help="bench.csv file(s)")
    args = p.parse_args(argv)
    data = read(args.csv)
    if not data:
        print("no throughput rows", file=sys.stderr)
        return 1
    print("% of the copy ceiling (NVRTC: in brackets % of the same-size stream); A/B columns are")
    print("speed ratios: B's time over A's.\n")
    for op, dtype in sorted(data):
        print(table(op, dtype, data[(op, dtype)]))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
