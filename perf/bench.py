#!/usr/bin/env python3
"""Benchmarks of numba-norms on one GPU: throughput, JIT cost and host cost.

Throughput: every (op, dtype, shape) runs on our two backends (``nvrtc``, ``numba``, selected per
call with ``DISABLE_NVRTC``) and on torch eager (and torch.compile with ``--compile``), on the
same inputs in the same process. Each measurement: one checked call against an fp32 reference
(outputs poisoned with NaN first), warm-up, then the median of per-call CUDA-event times over
input/output sets rotated so that the working set exceeds 3x the L2. GB/s use the byte formulas
of ``perf/_bench_cases.py``; ``pct_ceiling`` is against a device-to-device copy measured at the
start of the same run. perf/NOTES.md explains the method.

Outputs in ``--out DIR``: bench.csv, jit.csv, host.csv, bench.txt (a copy of stdout). Nothing
else is written there (the device tool returns at most 8 files from $OUT).

Examples::

    python3 perf/bench.py --out /tmp/b                      # default set (~3 min on an H200)
    python3 perf/bench.py --out /tmp/b --quick --no-jit     # smoke run
    python3 perf/bench.py --out /tmp/b --full --dtypes bf16 --time-budget 540 --no-jit
    python3 perf/bench.py --list --full                     # what would run; no GPU needed
    BENCH_ARGS="--quick" bash perf/gpu_suite.sh bench
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import shlex
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
for _p in (str(REPO), str(HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import _bench_jit  # noqa: E402  (no torch at import time)
from _bench_cases import (  # noqa: E402
    ALL_OPS,
    DTYPE_SIZES,
    DTYPES,
    NORM_HIDDEN,
    NORM_ROWS,
    OP_GROUPS,
    SOFTMAX_KEYS,
    Case,
    build_cases,
    expand_ops,
    sets_needed,
)

META_FIELDS = ["date", "gpu", "torch", "numba_cuda", "cuda_core", "nvrtc", "driver", "command"]
BENCH_FIELDS = META_FIELDS + [
    "op", "backend", "impl", "dtype", "rows", "cols", "extra", "median_us", "gbytes", "gbs",
    "pct_ceiling", "vs_torch",
    # beyond the issue's columns
    "pct_stream",
    "check", "error", "first_ms", "sets", "reps", "p20_us", "p80_us", "loop_us", "host_us",
    "plan",
]  # fmt: skip
HOST_FIELDS = META_FIELDS + [
    "op", "backend", "impl", "dtype", "rows", "cols", "calls", "us_per_call", "error",
]  # fmt: skip
DEFAULT_BUDGET = {"quick": 240.0, "default": 240.0, "full": 500.0}
JIT_RESERVE_S = 60.0  # kept free of throughput work for the JIT children
HOST_RESERVE_S = 10.0
COMPILE_SIZES = (4096,)  # torch.compile rows only at these sizes (each costs 10-40 s)
HOST_ROWS = (1, 8, 64)
HOST_HIDDEN = 4096
IMPL_ORDER = ("nvrtc", "numba", "torch", "torch_compile", "liger", "stream")
# Rough costs for --list's estimate (seconds).
EST_NVRTC_KERNEL_S, EST_NUMBA_KERNEL_S, EST_MEASURE_S = 0.15, 1.2, 0.25


# --------------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------------


def _csv_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _int_list(text: str) -> list[int]:
    return [int(t) for t in _csv_list(text)]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="perf/bench.py",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "shape sets (rows x hidden for norms, rows = "
            f"{NORM_ROWS}; key lengths sk for softmax, sq = sk up to 16384):\n"
            + "".join(
                f"  {name:<8} norms {NORM_HIDDEN[name]}\n           softmax {SOFTMAX_KEYS[name]}"
                f", dtypes {DTYPES[name]}\n"
                for name in ("quick", "default", "full")
            )
            + f"op groups: {', '.join(OP_GROUPS)}; ops: {', '.join(ALL_OPS)}\n"
            "--full does not fit one 10-minute call: split it, e.g. by --dtypes or --ops."
        ),
    )
    p.add_argument("--out", type=Path, help="output directory (bench.csv, jit.csv, host.csv)")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="a handful of shapes")
    size.add_argument("--full", action="store_true", help="the issue's complete shape matrix")
    p.add_argument("--ops", default="all", help="comma list of ops or groups (default: all)")
    p.add_argument("--backends", default="nvrtc,numba", help="our backends (default: both)")
    p.add_argument("--dtypes", help="comma list of fp32,fp16,bf16 (default: the set's)")
    p.add_argument("--sizes", help="comma list of hidden sizes / key lengths, replacing the set's")
    p.add_argument("--rows", type=int, default=NORM_ROWS, help="rows of the norm problems")
    p.add_argument(
        "--heads-first",
        action="store_true",
        help="softmax: where b*h must shrink, keep heads (h <= 32) rather than the batch (b = 4)",
    )
    p.add_argument(
        "--time-budget",
        type=float,
        help="seconds for the whole run; no new throughput measurement starts after "
        "budget - reserve (JIT/host reserve); default 240 (500 with --full)",
    )
    p.add_argument("--no-torch", action="store_true", help="skip the torch eager baseline")
    p.add_argument(
        "--compile",
        action="store_true",
        help="add torch.compile(dynamic=False) rows at --compile-sizes (10-40 s per shape)",
    )
    p.add_argument(
        "--compile-sizes",
        default=",".join(map(str, COMPILE_SIZES)),
        help="sizes that get torch.compile rows (default: %(default)s)",
    )
    p.add_argument(
        "--no-liger", action="store_true", help="skip Liger-Kernel rows (norms; if importable)"
    )
    p.add_argument(
        "--no-stream",
        action="store_true",
        help="skip the per-shape streaming reference (torch copy / add of the same tensors)",
    )
    p.add_argument("--no-jit", action="store_true", help="skip the JIT-cost subprocesses")
    p.add_argument("--no-host", action="store_true", help="skip the host-cost loops")
    p.add_argument("--host-calls", type=int, default=2000, help="calls per host-cost loop")
    p.add_argument("--target-ms", type=float, default=40.0, help="device time per measurement")
    p.add_argument(
        "--stall-timeout",
        type=float,
        default=120.0,
        help="abort (writing what is there) if one step runs longer than this (seconds)",
    )
    p.add_argument("--list", action="store_true", help="print the cases and exit (no GPU)")
    args = p.parse_args(argv)
    args.shape_set = "quick" if args.quick else "full" if args.full else "default"
    try:
        args.op_list = expand_ops(_csv_list(args.ops))
        args.size_list = _int_list(args.sizes) if args.sizes else None
        args.compile_size_list = set(_int_list(args.compile_sizes))
    except ValueError as exc:
        p.error(str(exc))
    args.backend_list = _csv_list(args.backends)
    for b in args.backend_list:
        if b not in ("nvrtc", "numba"):
            p.error(f"unknown backend {b!r}; expected nvrtc and/or numba")
    args.dtype_list = _csv_list(args.dtypes) if args.dtypes else list(DTYPES[args.shape_set])
    for d in args.dtype_list:
        if d not in DTYPE_SIZES:
            p.error(f"unknown dtype {d!r}; expected {', '.join(DTYPE_SIZES)}")
    if args.time_budget is None:
        args.time_budget = DEFAULT_BUDGET[args.shape_set]
    if not args.list and args.out is None:
        p.error("--out DIR is required (except with --list)")
    return args


# --------------------------------------------------------------------------------------------
# run state, output files
# --------------------------------------------------------------------------------------------


class Tee:
    """Write to the console and to a file (stdout and stderr both go to bench.txt)."""

    def __init__(self, stream: TextIO, file: TextIO) -> None:
        self.stream, self.file = stream, file

    def write(self, text: str) -> int:
        self.stream.write(text)
        self.file.write(text)
        return len(text)

    def flush(self) -> None:
        self.stream.flush()
        self.file.flush()

    def isatty(self) -> bool:
        return False


class CsvOut:
    """A CSV file written row by row (flushed each time: a killed run keeps its rows)."""

    def __init__(self, path: Path, fields: list[str]) -> None:
        self.fh = path.open("w", newline="")
        self.writer = csv.DictWriter(self.fh, fieldnames=fields, extrasaction="ignore")
        self.writer.writeheader()
        self.fh.flush()

    def write(self, row: dict[str, Any]) -> None:
        self.writer.writerow({k: _fmt(v) for k, v in row.items()})
        self.fh.flush()

    def close(self) -> None:
        self.fh.close()


def _fmt(v: Any) -> Any:
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return ""
        return f"{v:.6g}"
    return "" if v is None else v


@dataclass
class Run:
    args: argparse.Namespace
    meta: dict[str, str]
    start: float
    bench: CsvOut
    host: CsvOut
    jit: CsvOut
    l2_bytes: int = 60 * 1000 * 1000
    ceiling_gbs: float = float("nan")
    rows: list[dict[str, Any]] = field(default_factory=list)
    errors: list[tuple[str, str, str]] = field(default_factory=list)  # (what, message, tb)
    skipped: list[str] = field(default_factory=list)
    liger: bool = False
    step: str = "start"
    step_since: float = 0.0

    def begin(self, step: str) -> None:
        self.step, self.step_since = step, time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def record_error(self, what: str, exc: BaseException) -> str:
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        message = f"{type(exc).__name__}: {first}"[:300]
        self.errors.append((what, message, tb))
        return message


def collect_meta(torch: Any, command: str) -> dict[str, str]:
    """The columns every CSV row starts with: date, versions, command."""
    from importlib import metadata

    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except Exception:
            return "?"

    nvrtc = driver = "?"
    try:
        import rtc

        nvrtc = "{}.{}".format(*rtc.nvrtc_version())
        drv = rtc.driver_version()
        driver = f"CUDA {drv[0]}.{drv[1]}" if drv else "?"
    except Exception:
        pass
    try:
        import pynvml

        pynvml.nvmlInit()
        v = pynvml.nvmlSystemGetDriverVersion()
        driver = f"{v.decode() if isinstance(v, bytes) else v} ({driver})"
    except Exception:
        pass
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "numba_cuda": version("numba-cuda"),
        "cuda_core": version("cuda-core"),
        "nvrtc": nvrtc,
        "driver": driver,
        "command": command,
    }


def l2_bytes_of(torch: Any) -> int:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = getattr(props, "L2_cache_size", 0)
    if not l2:
        try:
            import rtc

            l2 = rtc.device_info().l2_bytes
        except Exception:
            l2 = 0
    return int(l2) or 60 * 1000 * 1000


def start_watchdog(run: Run) -> None:
    """Abort a stalled run (a hung kernel) while the output still fits the call's time limit."""

    def watch() -> None:
        while True:
            time.sleep(2.0)
            if time.perf_counter() - run.step_since > run.args.stall_timeout:
                try:
                    print(f"\nSTALL: '{run.step}' ran over {run.args.stall_timeout:.0f} s; abort")
                    print_errors(run)
                    print_summary(run)
                except Exception:
                    pass
                finally:
                    sys.stdout.flush()
                    os._exit(3)

    threading.Thread(target=watch, name="bench-watchdog", daemon=True).start()


# --------------------------------------------------------------------------------------------
# throughput
# --------------------------------------------------------------------------------------------

LINE = "{op:<27} {dtype:<4} {shape:>13} {impl:<13} {us:>10} {gbs:>8} {pct:>6} {vs:>6} {check}"


def print_header() -> None:
    print(
        LINE.format(
            op="op", dtype="dt", shape="rows x cols", impl="impl", us="median us",
            gbs="GB/s", pct="%ceil", vs="/torch", check="check  plan",
        )
    )  # fmt: skip


def print_row(row: dict[str, Any]) -> None:
    def num(v: Any, f: str) -> str:
        return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, f)

    tail = row.get("check", "")
    if row.get("error"):
        tail = f"ERROR {row['error']}"
    elif row.get("plan"):
        tail = f"{tail}  {row['plan']}"
    print(
        LINE.format(
            op=row["op"],
            dtype=row["dtype"],
            shape=f"{row['rows']}x{row['cols']}",
            impl=row["impl"],
            us=num(row.get("median_us"), ".1f"),
            gbs=num(row.get("gbs"), ".0f"),
            pct=num(row.get("pct_ceiling"), ".1f"),
            vs=num(row.get("vs_torch"), ".2f"),
            check=tail,
        )
    )


def measure_ceiling(run: Run, bt: Any) -> None:
    run.begin("copy ceiling")
    try:
        med, gbs, nbytes = bt.copy_ceiling()
        run.ceiling_gbs = gbs
        row = dict(run.meta, op="copy", backend="torch", impl="copy", dtype="uint8", rows=1,
                   cols=nbytes // 2, extra="dst.copy_(src), bytes = read + write",
                   median_us=med, gbytes=nbytes / 1e9, gbs=gbs, pct_ceiling=100.0,
                   check="-")  # fmt: skip
    except Exception as exc:
        row = dict(run.meta, op="copy", backend="torch", impl="copy", dtype="uint8", rows=1,
                   cols=0, error=run.record_error("copy ceiling", exc))  # fmt: skip
    run.bench.write(row)
    run.rows.append(row)
    print(f"copy ceiling: {run.ceiling_gbs:.0f} GB/s (2 GiB dst.copy_(src), read + write)")


def _put_timing(run: Run, row: dict[str, Any], timing: Any, nbytes: int) -> None:
    """A timing's columns, and GB/s / % of the ceiling for ``nbytes`` a call."""
    row.update(
        median_us=timing.median_us, p20_us=timing.p20_us, p80_us=timing.p80_us,
        reps=timing.reps, loop_us=timing.loop_us, host_us=timing.host_us,
    )  # fmt: skip
    row["gbs"] = nbytes / (timing.median_us * 1e-6) / 1e9
    row["pct_ceiling"] = 100.0 * row["gbs"] / run.ceiling_gbs


def measure_stream(run: Run, bt: Any, case: Case, sets: list) -> dict[str, Any]:
    """The shape's streaming reference (``bt.stream_runner``): GB/s over its own bytes."""
    row: dict[str, Any] = dict(
        run.meta, op=case.op, backend="torch", impl="stream", dtype=case.dtype, rows=case.rows,
        cols=case.cols, extra=case.extra(), sets=len(sets), check="-",
    )  # fmt: skip
    run.begin(f"{case.op} {case.dtype} {case.label()} stream")
    try:
        fn, nbytes = bt.stream_runner(case, sets)
        row["gbytes"] = nbytes / 1e9
        _put_timing(run, row, bt.time_calls(fn, len(sets), target_ms=run.args.target_ms), nbytes)
    except Exception as exc:
        row["error"] = run.record_error(f"{case.op} {case.dtype} {case.label()} stream", exc)
    return row


def impls_for(run: Run, case: Case) -> list[str]:
    impls = [] if run.args.no_torch else ["torch"]
    impls += list(run.args.backend_list)
    if run.args.compile and case.cols in run.args.compile_size_list:
        impls.append("torch_compile")
    if run.liger and case.is_norm and not case.is_fp8:
        impls.append("liger")
    return impls


def measure(run: Run, bt: Any, case: Case, impl: str, sets: list, ref: dict) -> dict[str, Any]:
    """One throughput row: check once, then time. Errors become the row's ``error``."""
    import torch

    n_sets = len(sets)
    backend = impl if impl in (*bt.OUR_IMPLS, "liger") else "torch"
    row: dict[str, Any] = dict(
        run.meta, op=case.op, backend=backend, impl=impl, dtype=case.dtype, rows=case.rows,
        cols=case.cols, extra=case.extra(), gbytes=case.nbytes() / 1e9, sets=n_sets,
    )  # fmt: skip
    run.begin(f"{case.op} {case.dtype} {case.label()} {impl}")
    try:
        with bt.backend_env(impl):
            if impl in bt.OUR_IMPLS:
                fn = bt.ours_runner(case, sets)
            else:
                fn = bt.torch_runner(case, sets, flavor=impl)
            before = bt.plan_keys()
            bt.poison(bt.output_bytes(case))
            t0 = time.perf_counter()
            out = fn(0)
            torch.cuda.synchronize()
            row["first_ms"] = (time.perf_counter() - t0) * 1e3
            problems = []
            if impl in bt.OUR_IMPLS:
                import numba_norms

                used = numba_norms.last_backend()
                row["backend"] = used
                if used != impl:
                    problems.append(f"ran on backend {used}")
                row["plan"] = bt.describe_new_plans(before, case)
            problem = bt.compare(case, bt.as_outputs(case, impl, out), ref)
            del out
            if problem:
                problems.append(problem)
            row["check"] = "fail: " + "; ".join(problems) if problems else "ok"
            timing = bt.time_calls(fn, n_sets, target_ms=run.args.target_ms)
        _put_timing(run, row, timing, case.nbytes())
    except Exception as exc:
        row["error"] = run.record_error(f"{case.op} {case.dtype} {case.label()} {impl}", exc)
        row.setdefault("check", "not run")
    return row


def run_case(run: Run, bt: Any, case: Case, deadline: float) -> None:
    import torch

    impls = impls_for(run, case)
    if time.perf_counter() > deadline:
        run.skipped.append(f"{case.op} {case.dtype} {case.label()} ({', '.join(impls)})")
        return
    run.begin(f"{case.op} {case.dtype} {case.label()} inputs")
    try:
        n_sets = sets_needed(case.nbytes(), run.l2_bytes)
        sets = [bt.make_set(case, seed=1000 + k) for k in range(n_sets)]
        ref = bt.reference(case, sets[0])
    except Exception as exc:
        err = run.record_error(f"{case.op} {case.dtype} {case.label()} inputs", exc)
        for impl in impls:
            row = dict(run.meta, op=case.op, backend="-", impl=impl, dtype=case.dtype,
                       rows=case.rows, cols=case.cols, extra=case.extra(), error=err,
                       check="not run")  # fmt: skip
            run.bench.write(row)
            run.rows.append(row)
            print_row(row)
        torch.cuda.empty_cache()
        return
    torch_gbs = stream_gbs = None
    if not run.args.no_stream:
        row = measure_stream(run, bt, case, sets)
        stream_gbs = row.get("gbs")
        run.bench.write(row)
        run.rows.append(row)
        print_row(row)
    for impl in impls:
        if time.perf_counter() > deadline:
            run.skipped.append(f"{case.op} {case.dtype} {case.label()} {impl}")
            continue
        row = measure(run, bt, case, impl, sets, ref)
        if impl == "torch":
            torch_gbs = row.get("gbs")
        elif torch_gbs and row.get("gbs"):
            row["vs_torch"] = row["gbs"] / torch_gbs
        if stream_gbs and row.get("gbs"):
            row["pct_stream"] = 100.0 * row["gbs"] / stream_gbs
        run.bench.write(row)
        run.rows.append(row)
        print_row(row)
    del sets, ref
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


# --------------------------------------------------------------------------------------------
# host cost and JIT cost
# --------------------------------------------------------------------------------------------


def run_host(run: Run, bt: Any) -> None:
    print(f"\nHOST COST: wall us per call, {run.args.host_calls} calls, bf16, hidden {HOST_HIDDEN}")
    ours = list(run.args.backend_list)
    impls = ["torch"] + ours + [f"{b}+out" for b in ours]  # +out: outputs given (out=)
    print(f"{'op':<15} {'rows':>5} " + " ".join(f"{i:>10}" for i in impls))
    for op in bt.HOST_OPS:
        for rows in HOST_ROWS:
            cells = []
            for impl in impls:
                run.begin(f"host {op} rows={rows} {impl}")
                row = dict(run.meta, op=op, backend=impl.removesuffix("+out"),
                           impl=impl, dtype="bf16", rows=rows, cols=HOST_HIDDEN,
                           calls=run.args.host_calls)  # fmt: skip
                try:
                    with bt.backend_env(impl):
                        fn = bt.host_runner(op, impl, rows, HOST_HIDDEN)
                        row["us_per_call"] = bt.host_cost(fn, run.args.host_calls)
                    cells.append(f"{row['us_per_call']:>10.1f}")
                except Exception as exc:
                    row["error"] = run.record_error(f"host {op} rows={rows} {impl}", exc)
                    cells.append(f"{'ERROR':>10}")
                run.host.write(row)
            print(f"{op:<15} {rows:>5} " + " ".join(cells))


def run_jit_section(run: Run) -> None:
    print("\nJIT COST (fresh subprocesses, bf16; jit_ms = first call - warm call)")
    run.begin("jit children")
    # Each child gets less than the watchdog's limit, so a stuck child is ended by its timeout.
    timeout = max(30.0, run.args.stall_timeout - 15.0)
    try:
        rows = _bench_jit.run_jit(
            run.args.backend_list,
            timeout_s=timeout,
            on_phase=lambda phase: run.begin(f"jit child '{phase}'"),
        )
    except Exception as exc:
        rows = [{"phase": "-", "op": "(parent)", "error": run.record_error("jit", exc)}]
    head = f"{'phase':<7} {'backend':<7} {'op':<27} {'first ms':>9} {'jit ms':>9} {'lookup us':>9}"
    print(head + "  origin/compiles/disk hits")
    for r in rows:
        run.jit.write(dict(run.meta, **r))

        def num(key: str, f: str, r: dict = r) -> str:
            v = r.get(key)
            return "-" if v is None else format(v, f)

        tail = r.get("error") or (
            f"{r.get('origin') or '-'}/{num('nvrtc_compiles', 'd')}/{num('disk_hits', 'd')}"
            if "warm_ms" in r
            else ""
        )
        print(
            f"{r.get('phase', ''):<7} {r.get('backend', ''):<7} {r.get('op', ''):<27} "
            f"{num('first_ms', '.1f'):>9} {num('jit_ms', '.1f'):>9} {num('lookup_us', '.2f'):>9}"
            f"  {tail}"
        )


# --------------------------------------------------------------------------------------------
# summary
# --------------------------------------------------------------------------------------------


def _good(row: dict[str, Any]) -> bool:
    checked = row.get("check") == "ok" or (row.get("impl") == "stream" and row.get("check") == "-")
    return bool(row.get("gbs")) and not row.get("error") and checked


def print_errors(run: Run) -> None:
    fails = [r for r in run.rows if str(r.get("check", "")).startswith("fail")]
    if fails:
        print(f"\nCHECK FAILURES ({len(fails)}): timed, marked check=fail, left out of the summary")
        for r in fails:
            print(f"  {r['op']} {r['dtype']} {r['rows']}x{r['cols']} {r['impl']}: {r['check']}")
    if run.errors:
        print(f"\nERRORS ({len(run.errors)}):")
        for what, message, _ in run.errors:
            print(f"  {what}: {message}")
        shown: set[str] = set()
        for what, message, tb in run.errors:
            if message in shown or len(shown) >= 3:
                continue
            shown.add(message)
            print(f"--- traceback of {what} (tail) ---")
            print("\n".join(tb.strip().splitlines()[-10:]))
    if run.skipped:
        print(f"\nSKIPPED by the time budget ({len(run.skipped)}): " + "; ".join(run.skipped[:12]))


def print_summary(run: Run) -> None:
    """Per op and dtype: best-shape GB/s and % of ceiling per impl, and ours vs torch."""
    impls = [i for i in IMPL_ORDER if any(r.get("impl") == i for r in run.rows)]
    ours = [i for i in ("nvrtc", "numba") if i in impls]
    print(
        f"\nSUMMARY  copy ceiling {run.ceiling_gbs:.0f} GB/s; per impl the best shape's GB/s "
        f"(% of ceiling) @ size; x torch = geometric mean over shapes of ours/torch; "
        f"%stream = lowest-highest % of the same shape's stream row"
    )
    head = f"{'op':<27} {'dt':<4} " + " ".join(f"{i:>22}" for i in impls)
    head += " " + " ".join(f"{i + ' x torch':>15}" for i in ours)
    head += " " + " ".join(f"{i + ' %stream':>15}" for i in ours)
    print(head)
    keys = []
    for r in run.rows:
        k = (r["op"], r["dtype"])
        if r["op"] != "copy" and k not in keys:
            keys.append(k)
    for op, dtype in keys:
        rows = [r for r in run.rows if r["op"] == op and r["dtype"] == dtype]
        cells = []
        for impl in impls:
            good = [r for r in rows if r["impl"] == impl and _good(r)]
            if not good:
                cells.append(f"{'-':>22}")
                continue
            best = max(good, key=lambda r: r["gbs"])
            cell = f"{best['gbs']:.0f} ({best['pct_ceiling']:.1f}%) @{best['cols']}"
            cells.append(f"{cell:>22}")
        ratios = []
        for impl in ours:
            vs = [
                r["vs_torch"] for r in rows if r["impl"] == impl and _good(r) and r.get("vs_torch")
            ]
            geo = math.exp(sum(math.log(v) for v in vs) / len(vs)) if vs else None
            ratios.append(f"{geo:>15.2f}" if geo else f"{'-':>15}")
        for impl in ours:
            ps = [r["pct_stream"] for r in rows if r["impl"] == impl and _good(r)
                  and r.get("pct_stream")]  # fmt: skip
            ratios.append(f"{f'{min(ps):.0f}-{max(ps):.0f}':>15}" if ps else f"{'-':>15}")
        print(f"{op:<27} {dtype:<4} " + " ".join(cells) + " " + " ".join(ratios))
    print(f"(run took {run.elapsed():.0f} s)")


# --------------------------------------------------------------------------------------------
# --list
# --------------------------------------------------------------------------------------------


def kernel_keys(case: Case, sm_count: int = 132) -> set[tuple]:
    """Distinct compiled kernels a case needs (per backend), from the registry and planner."""
    from numba_norms import planner, registry

    limits = planner.DeviceLimits(sm_count=sm_count)
    s = case.size

    def align(pitch: int) -> int:
        return min(256, pitch & -pitch)

    if case.is_norm:
        out = "fp8e4m3" if case.is_fp8 else case.dtype
        key = registry.NormKey(case.op.removesuffix("_fp8"), case.dtype, case.dtype, out)
        a = align(case.cols * s)
        vec = [(a, s), (256, s)]
        cfg = registry.select_norm(key, case.cols, case.rows, min(a, 256))
        try:
            spec = planner.norm_spec(cfg, case.cols, planner.vector_elements(vec, cfg.num_elts),
                                     limits)  # fmt: skip
        except planner.PlanError:
            cfg = registry.select_norm(key, case.cols, case.rows, a, allow_tuned=False)
            spec = planner.norm_spec(cfg, case.cols, planner.vector_elements(vec, cfg.num_elts),
                                     limits)  # fmt: skip
        keys = {spec.kernel_key}
        if case.is_backward:
            keys.add(("finalize", case.dtype, not case.is_rms))
        return keys
    op = "softmax_bwd" if case.is_backward else "softmax_fwd"
    variant = {"masked": "masked", "upper": "upper_triang", "aligned": "aligned_causal"}.get(
        case.op.split("_")[0], "scaled"
    )
    cfg = registry.select_softmax(op, variant, case.dtype, case.cols)
    vec = [(align(case.cols * s), s)]
    if variant == "masked":
        vec.append((align(case.cols), 1))
    spec = planner.softmax_spec(cfg, case.cols, planner.vector_elements(vec, cfg.num_elts), limits)
    return {spec.kernel_key}


def list_cases(args: argparse.Namespace, cases: list[Case], skipped: list[str]) -> None:
    print(f"{'op':<27} {'dt':<4} {'rows x cols':>14} {'MB moved':>9} {'sets':>4}  extra")
    kernels: set[tuple] = set()
    for c in cases:
        sets = sets_needed(c.nbytes(), 60 * 1000 * 1000)
        print(f"{c.op:<27} {c.dtype:<4} {c.label():>14} {c.nbytes() / 1e6:>9.1f} {sets:>4}  "
              f"{c.extra()}")  # fmt: skip
        try:
            kernels |= kernel_keys(c)
        except Exception as exc:
            print(f"  (kernel count unavailable: {type(exc).__name__}: {exc})")
    for s in skipped:
        print(f"skipped: {s}")
    n_impl = (0 if args.no_torch else 1) + len(args.backend_list)
    nb = {b: len(kernels) for b in args.backend_list}
    est = len(cases) * n_impl * EST_MEASURE_S + 15.0
    est += nb.get("nvrtc", 0) * EST_NVRTC_KERNEL_S + nb.get("numba", 0) * EST_NUMBA_KERNEL_S
    print(
        f"\n{len(cases)} cases x {n_impl} impls; ~{len(kernels)} distinct kernels per backend "
        f"(+ host-cost shapes); rough throughput estimate {est:.0f} s"
        + ("" if args.no_jit else f" + JIT ~{JIT_RESERVE_S:.0f} s")
        + ("" if args.no_host else f" + host ~{HOST_RESERVE_S:.0f} s")
        + f"; budget {args.time_budget:.0f} s"
    )


# --------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cases, skipped = build_cases(
        args.shape_set, args.op_list, args.dtype_list, args.size_list, args.rows, args.heads_first
    )
    if args.list:
        list_cases(args, cases, skipped)
        return 0
    start = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    txt = (args.out / "bench.txt").open("w", buffering=1)  # line-buffered: survives a kill
    sys.stdout = Tee(sys.__stdout__, txt)
    sys.stderr = Tee(sys.__stderr__, txt)
    command = "perf/bench.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    try:
        import torch
    except ImportError as exc:
        print(f"bench.py needs torch: {exc}")
        return 2
    if not torch.cuda.is_available():
        print("bench.py needs a CUDA GPU (torch.cuda.is_available() is False)")
        return 2
    import _bench_torch as bt

    torch.cuda.init()
    meta = collect_meta(torch, command)
    run = Run(
        args=args,
        meta=meta,
        start=start,
        bench=CsvOut(args.out / "bench.csv", BENCH_FIELDS),
        host=CsvOut(args.out / "host.csv", HOST_FIELDS),
        jit=CsvOut(args.out / "jit.csv", META_FIELDS + list(_bench_jit.FIELDS)),
        l2_bytes=l2_bytes_of(torch),
    )
    run.skipped.extend(skipped)
    run.liger = not args.no_liger and bt.liger_available()
    if not args.no_liger and not run.liger:
        print("liger_kernel is not importable: no Liger rows")
    run.begin("start")
    start_watchdog(run)
    print(" | ".join(f"{k}: {v}" for k, v in meta.items()))
    print(
        f"{len(cases)} cases ({args.shape_set}); ops {','.join(args.op_list)}; dtypes "
        f"{','.join(args.dtype_list)}; L2 {run.l2_bytes / 1e6:.0f} MB; budget "
        f"{args.time_budget:.0f} s"
    )
    reserve = (0.0 if args.no_jit else JIT_RESERVE_S) + (0.0 if args.no_host else HOST_RESERVE_S)
    deadline = start + max(0.0, args.time_budget - reserve)

    measure_ceiling(run, bt)
    print()
    print_header()
    for case in cases:
        run_case(run, bt, case, deadline)
    if not args.no_host:
        run_host(run, bt)
    if not args.no_jit:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        run_jit_section(run)
    run.begin("summary")
    bad = sum(bool(r.get("error") or str(r.get("check", "")).startswith("fail")) for r in run.rows)
    print_errors(run)
    if bad:
        print(f"\nexit status 1: {bad} throughput rows with an error or a failed check")
    print_summary(run)
    for out in (run.bench, run.host, run.jit):
        out.close()
    sys.stdout.flush()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
