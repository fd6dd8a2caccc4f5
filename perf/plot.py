#!/usr/bin/env python3
"""Plots of ``perf/bench.py``'s bench.csv: GB/s against hidden size / key length.

Runs on the CPU (matplotlib only), from one or more CSVs::

    python3 perf/plot.py perf/results/latest/bench.csv            # -> docs/bench_<op>_<dtype>.png
    python3 perf/plot.py a/bench.csv b/bench.csv --out /tmp/plots --pct

One PNG per (op, dtype), one line per implementation (nvrtc, numba, torch eager, torch.compile),
and the device-to-device copy ceiling of the same CSV(s) as a horizontal line. Rows whose check
failed are drawn as red crosses; rows with an error have no number and are left out. When a
(op, dtype, impl, size) appears more than once, the last row read wins, so CSVs of a split
``--full`` run can be given together (later files override earlier ones).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
IMPLS = ("nvrtc", "numba", "torch", "torch_compile", "liger", "stream")
LABELS = {
    "nvrtc": "numba-norms (NVRTC)",
    "numba": "numba-norms (Numba)",
    "torch": "torch eager",
    "torch_compile": "torch.compile",
    "liger": "Liger-Kernel",
    "stream": "torch copy / add of the same tensors",
}
STYLE = {
    "nvrtc": ("tab:blue", "o", "-"),
    "numba": ("tab:orange", "s", "-"),
    "torch": ("tab:green", "^", "--"),
    "torch_compile": ("tab:purple", "v", ":"),
    "liger": ("tab:brown", "D", "-."),
    "stream": ("tab:gray", ".", ":"),
}

Row = dict[str, str]


def _float(text: str | None) -> float | None:
    try:
        v = float(text) if text not in (None, "") else None
    except ValueError:
        return None
    return v


def read_rows(paths: list[Path]) -> list[Row]:
    rows: list[Row] = []
    for path in paths:
        with path.open(newline="") as fh:
            rows.extend(csv.DictReader(fh))
    return rows


def ceiling_gbs(rows: list[Row], gpu: str | None) -> float | None:
    """Median GB/s of the copy rows (of ``gpu`` when given)."""
    vals = [
        _float(r.get("gbs"))
        for r in rows
        if r.get("impl") == "copy" and (gpu is None or r.get("gpu") == gpu)
    ]
    vals = [v for v in vals if v]
    return statistics.median(vals) if vals else None


def group(rows: list[Row]) -> dict[tuple[str, str], dict[str, dict[int, Row]]]:
    """(op, dtype) -> impl -> size -> the last row for it."""
    out: dict[tuple[str, str], dict[str, dict[int, Row]]] = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        if r.get("impl") not in IMPLS or _float(r.get("gbs")) is None:
            continue
        try:
            cols = int(r["cols"])
        except (KeyError, ValueError):
            continue
        out[(r["op"], r["dtype"])][r["impl"]][cols] = r
    return out


def plot_one(
    op: str,
    dtype: str,
    series: dict[str, dict[int, Row]],
    ceiling: float | None,
    gpu: str,
    out_dir: Path,
    pct: bool,
) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.0, 4.8))
    sizes: set[int] = set()
    top = 0.0
    failed_labelled = False
    rows_note = ""
    for impl in IMPLS:
        points = series.get(impl)
        if not points:
            continue
        xs = sorted(points)
        sizes.update(xs)
        ys = [float(points[x]["gbs"]) for x in xs]
        if pct:
            ys = [100.0 * y / ceiling for y in ys] if ceiling else ys
        top = max([top, *ys])
        color, marker, line = STYLE[impl]
        ax.plot(xs, ys, color=color, marker=marker, linestyle=line, label=LABELS[impl])
        bad = [
            (x, y) for x, y in zip(xs, ys, strict=True) if points[x].get("check") not in ("ok", "-")
        ]
        if bad:
            ax.scatter(
                [b[0] for b in bad],
                [b[1] for b in bad],
                marker="x",
                s=80,
                color="red",
                zorder=5,
                label=None if failed_labelled else "check failed",
            )
            failed_labelled = True
        if op.endswith(("norm_fwd", "norm_bwd")) and not rows_note:
            rows_note = f" (rows = {points[xs[0]]['rows']})"
    if ceiling:
        level = 100.0 if pct else ceiling
        top = max(top, level)
        ax.axhline(level, color="gray", linestyle="--", linewidth=1.2,
                   label=f"device copy ceiling ({ceiling:.0f} GB/s)")  # fmt: skip
    ax.set_xscale("log", base=2)
    ticks = sorted(sizes)
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks], rotation=45, ha="right")
    ax.minorticks_off()
    is_norm = "norm" in op
    ax.set_xlabel(("hidden size" + rows_note) if is_norm else "keys (sk)")
    ax.set_ylabel("% of copy ceiling" if pct else "GB/s (formula bytes / median time)")
    ax.set_ylim(0, 1.1 * top if top > 0 else 1.0)
    ax.set_title(f"{op} {dtype} - {gpu}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"bench_{op}_{dtype}{'_pct' if pct else ''}.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="perf/plot.py", description=__doc__.split("\n\n")[0])
    p.add_argument("csv", nargs="*", type=Path, help="bench.csv file(s)")
    p.add_argument("--out", type=Path, default=REPO / "docs", help="directory of the PNGs")
    p.add_argument("--ops", help="comma list of ops to plot (default: all in the CSV)")
    p.add_argument("--dtypes", help="comma list of dtypes to plot (default: all in the CSV)")
    p.add_argument("--gpu", help="only rows of this GPU name (default: the last row's GPU)")
    p.add_argument("--pct", action="store_true", help="y axis in %% of the copy ceiling")
    args = p.parse_args(argv)
    paths = args.csv or [REPO / "perf" / "results" / "latest" / "bench.csv"]
    missing = [str(x) for x in paths if not x.is_file()]
    if missing:
        p.error(f"no such file: {', '.join(missing)}")
    rows = read_rows(paths)
    if not rows:
        print("no rows", file=sys.stderr)
        return 1
    gpu = args.gpu or rows[-1].get("gpu", "")
    rows = [r for r in rows if r.get("gpu", "") == gpu]
    ceiling = ceiling_gbs(rows, gpu)
    ops = set(args.ops.split(",")) if args.ops else None
    dtypes = set(args.dtypes.split(",")) if args.dtypes else None
    written = []
    for (op, dtype), series in sorted(group(rows).items()):
        if (ops and op not in ops) or (dtypes and dtype not in dtypes):
            continue
        written.append(plot_one(op, dtype, series, ceiling, gpu, args.out, args.pct))
    for path in written:
        print(path)
    if not written:
        print("nothing to plot", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
