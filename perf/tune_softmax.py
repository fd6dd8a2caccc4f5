# ruff: noqa: E402
"""Timed sweep of softmax launch shapes on the GPU (NVRTC path); writes ``tune.csv``.

For each op, dtype and key length this times the registry's current choice (the baseline), then
every shape that holds a row in registers with 16-byte vectors: warp entries (one warp a row,
``warps_m`` rows a CTA) up to 2048 keys, block entries (``warps_n`` warps a row, over 1-16 CTAs)
from 1024 keys, at most ``--max-elts`` elements a thread; then the best ``--top`` shapes under
register caps (``__launch_bounds__`` min CTAs per SM) and with the software pipeline
(``prefetch``; the backward's since session 7). Problems are the benchmark's
(``perf/_bench_cases.py``: b=4, h=32, sq=sk, at most 2^27 elements), so are the byte counts.
Every candidate's output is checked against an fp32 torch reference before it may win.
``--grids persistent rows`` times each shape whose row takes one CTA, or one cluster (2-8 CTAs),
on both launch grids (``SoftmaxConfig.grid``); a winner on the grid of all rows carries
``"grid": "rows"``.
``--stream`` times, instead of those stages, the streaming kernels (``SoftmaxConfig.chunk``:
CTAs that read their part of a row twice; forward and backward) in every block shape, chunk and
CTAs an SM of ``STREAM_SHAPES``, on 1, 2 or 4 CTAs a row past 32768 keys (``STREAM_CTAS``;
``--stream-ctas`` for other counts), the second pass walked forwards and back (``reverse``), on
each grid of ``--grids`` (rows of several CTAs on the grid of rows: a cluster a row); a winner
carries ``"chunk"`` (and ``"reverse"``, ``"grid"``). ``--stage`` adds the staged forward
(``SoftmaxConfig.stage``: the row kept in shared memory between the passes) in STAGE_SHAPES,
one CTA or (past 32768 keys, ``--stream-ctas``) one cluster a row on the grid of rows, where a
CTA's part fits its shared memory; ``--staged-only`` times those alone; a winner carries
``"stage": true``.

Outputs in ``--out``: ``tune.csv`` (every measurement) and ``measured_softmax.json`` (one winner
per op, dtype and key length, in ``numba_norms/data/measured_softmax.json``'s format: copy it
there after reading the CSV). ``--from-csv`` rebuilds that JSON from earlier sweeps' CSVs.

``--backend numba --refine CSV...`` times the Numba kernels on the ``--top`` fastest shapes of
earlier NVRTC sweeps (the Numba backward drops the pipeline); the baseline is what the Numba path
runs now, and winners more than ``--min-gain`` faster go to ``measured_softmax_numba.json`` (the
Numba backend's own entries).

    python3 perf/tune_softmax.py --out DIR [--ops softmax_fwd softmax_bwd masked_softmax_fwd]
        [--dtypes bf16 fp32] [--keys 512 ... 131072]
    python3 perf/tune_softmax.py --out DIR --stream --ops softmax_fwd softmax_bwd ... --keys 32768
    python3 perf/tune_softmax.py --out DIR --from-csv RUN/tune.csv [RUN2/tune.csv ...]
    python3 perf/tune_softmax.py --out DIR --backend numba --refine RUN/tune.csv [...] --top 6
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import csv
import dataclasses
import datetime
import json
import os
import platform
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from _bench_cases import Case, sets_needed, softmax_dims
from _tune_common import (
    BACKENDS,
    add_grids_argument,
    compile_ahead,
    group_rows,
    main_kernel,
    numba_compile_ahead,
)

import rtc
from numba_norms import dispatch, planner, registry
from numba_norms.backends.nvrtc import softmax as nv_softmax

OPS = (
    "softmax_fwd", "softmax_bwd", "masked_softmax_fwd", "upper_triang_softmax_fwd",
    "aligned_causal_softmax_fwd",
)  # fmt: skip
KEYS = (512, 1024, 2048, 4096, 8192, 16384, 32768, 131072)
MIN_CTAS = (2, 3, 4)
# The streaming kernels' sweep: (warps a row, vectors a step, CTAs an SM). Run 164's prototype
# (bf16, 32768 / 131072 keys) was fastest at 8-16 warps with 3 CTAs an SM and 32 warps with one,
# chunks of 2-4; the grid around it.
STREAM_SHAPES = tuple(
    (wn, chunk, m)
    for wn in (4, 8, 16, 32)
    for chunk in (2, 4)
    for m in (1, 2, 3, 4, 6, 8)
    if wn * 32 * m <= 2048
)
# CTAs a streaming row is cut into (contiguous parts) past 32768 keys: at 131072 keys one CTA
# a row keeps 34-67 MB of rows in flight on 132 SMs, more than L2 holds for the second read
# (run 172: the backward 0.91-0.96x of its held entry there).
STREAM_CTAS = (1, 2, 4)
# --stage: the staged forward (SoftmaxConfig.stage, one CTA or, past 32768 keys, one cluster a
# row on the grid of rows). Run 208's prototype (bf16 32768 keys, the row in shared memory) ran
# 92.6-93.3% of the copy ceiling on 8-32 warps with 2-3 CTAs an SM, holding the row as one chunk
# (8 vectors a thread at 16 warps).
STAGE_SHAPES = tuple(
    (wn, chunk, m)
    for wn in (8, 16, 32)
    for chunk in (2, 4, 8)
    for m in (1, 2, 3)
    if wn * 32 * m <= 2048
)
VARIANTS = {"masked": "masked", "upper": "upper_triang", "aligned": "aligned_causal"}


def kernel_op(op: str) -> tuple[str, str]:
    """(registry op, variant) of a benchmark op name."""
    if op == "softmax_bwd":
        return "softmax_bwd", "scaled"
    return "softmax_fwd", VARIANTS.get(op.split("_")[0], "scaled")


def candidates(op: str, variant: str, dtype: str, cols: int, max_elts: int) -> list:
    """Every warp and block shape (min CTAs per SM 1) that covers ``cols`` keys."""
    size = registry.itemsize(dtype)
    vec = 16 // size
    out = []
    span = max(32, 1 << (cols - 1).bit_length())  # the power of two the row rounds up to
    if span <= 2048:
        elts = min(vec, span // 32)
        for wm in (1, 2, 4, 8):
            out.append(registry.SoftmaxConfig(op, "warp", span, dtype, wm, 1, elts * size, variant))
    if span >= 1024:
        for ctas in (1, 2, 4, 8, 16):
            if ctas > 1 and span < 16384:  # shorter rows fill the GPU with one CTA each
                continue
            per_cta = span // ctas
            for wn in (2, 4, 8, 16, 32):
                per_thread = per_cta // (wn * 32)
                if per_thread < vec or per_thread > max_elts:
                    continue
                out.append(registry.SoftmaxConfig(op, "block", per_cta, dtype, 1, wn, 16, variant))
    return out


def _stream_span(wn: int, vec: int, cols: int) -> int:
    """Columns a streaming candidate of ``wn`` warps covers at ``cols`` keys: the power of two the
    row rounds up to, at least one vector a thread."""
    return max(wn * 32 * vec, 1 << (cols - 1).bit_length())


def stream_candidates(
    op: str, variant: str, dtype: str, cols: int, row_ctas: tuple = STREAM_CTAS
) -> list:
    """The streaming kernel of ``op`` in every shape of STREAM_SHAPES, the second pass walked
    forwards and back, on one CTA a row and (past 32768 keys) each count of ``row_ctas``."""
    vec = 16 // registry.itemsize(dtype)
    out = []
    for wn, chunk, m in STREAM_SHAPES:
        span = _stream_span(wn, vec, cols)
        for ctas in row_ctas if cols > 32768 else (1,):
            if span // ctas < wn * 32 * vec:
                continue
            for reverse in (False, True):
                out.append(
                    registry.SoftmaxConfig(
                        op, "block", span // ctas, dtype, 1, wn, 16, variant, m, chunk=chunk,
                        reverse=reverse,
                    )
                )  # fmt: skip
    return out


def staged_candidates(
    op: str,
    variant: str,
    dtype: str,
    cols: int,
    row_ctas: tuple = STREAM_CTAS,
    max_shared: int | None = None,
) -> list:
    """The staged streaming forward (``stage``) in every shape of STAGE_SHAPES on the grid of
    rows, timed at ``cols`` keys: one CTA a row and (past 32768 keys) each count of
    ``row_ctas``, a cluster a row, where a CTA's part fits ``max_shared`` bytes of shared
    memory (with the masked variant's mask bytes; none for the backward)."""
    if op != "softmax_fwd":
        return []
    vec = 16 // registry.itemsize(dtype)
    out = []
    for wn, chunk, m in STAGE_SHAPES:
        span = _stream_span(wn, vec, cols)
        for ctas in row_ctas if cols > 32768 else (1,):
            if span // ctas < wn * 32 * vec:
                continue
            cfg = registry.SoftmaxConfig(
                op, "block", span // ctas, dtype, 1, wn, 16, variant, m, keys=cols, grid="rows",
                chunk=chunk, stage=True,
            )  # fmt: skip
            part = planner.SoftmaxSpec(cfg, vec, chunk, ctas).stage_bytes(cols)  # the planner's
            if max_shared is None or part + planner.STAGE_RESERVE <= max_shared:
                out.append(cfg)
    return out


def load_refine(paths: list[str]) -> dict:
    """Passing rows of earlier sweeps grouped by (benchmark op, dtype, cols); a later file's
    rows of a problem replace an earlier one's."""
    return group_rows(paths, _problem, lambda r: r["check"] == "ok")


def _problem(r: dict) -> tuple:
    return (r["op"], r["dtype"], int(r["cols"]))


def config_of(r: dict, op: str, variant: str, pipeline: bool = True) -> registry.SoftmaxConfig:
    """The configuration a ``tune.csv`` row timed (``pipeline`` False drops its prefetch)."""
    size = registry.itemsize(r["dtype"])
    max_cols = int(r["max_cols"])
    return registry.SoftmaxConfig(
        op, r["kind"], max_cols, r["dtype"], int(r["warps_m"]), int(r["warps_n"]),
        16 if r["kind"] == "block" else min(16, max_cols // 32 * size), variant,
        int(r["min_ctas_per_sm"]), prefetch=pipeline and bool(int(r.get("prefetch") or 0)),
        grid=r.get("row_grid") or "persistent", chunk=int(r.get("chunk") or 0),
        reverse=bool(int(r.get("reverse") or 0)), stage=bool(int(r.get("stage") or 0)),
    )  # fmt: skip


def with_grids(cfgs: list, cols: int, grids: list[str]) -> list:
    """``cfgs`` on each launch grid of ``grids``, as entries timed at ``cols`` keys (the planner
    launches rows of several CTAs of an entry on the grid of rows a cluster a row only where it
    was timed so); the grid of all rows where a row takes one CTA or its CTAs fit one cluster
    (longer rows keep the persistent grid whatever the entry says)."""
    return [
        dataclasses.replace(c, grid=g, keys=cols)
        for c in cfgs
        for g in grids
        if g == "persistent" or -(-cols // c.max_cols) <= planner.MAX_CLUSTER
    ]


def refine_candidates(rows: list[dict], op: str, variant: str, top: int, pipeline: bool):
    """The ``top`` fastest distinct launch shapes of one problem's earlier rows, each as timed
    fastest (register cap, pipeline unless ``pipeline`` is False) and uncapped without the
    pipeline. Shapes rather than caps: another backend's kernels (NVVM's take more registers)
    may prefer a shape the sweep ranked lower."""
    shapes: set = set()
    out: list = []
    for r in sorted(rows, key=lambda r: float(r["median_us"])):
        shape = (r["kind"], int(r["max_cols"]), int(r["warps_m"]), int(r["warps_n"]))
        shape += (r.get("row_grid") or "persistent", int(r.get("chunk") or 0))
        shape += (int(r.get("reverse") or 0), int(r.get("stage") or 0))
        if shape in shapes:
            continue
        shapes.add(shape)
        best = config_of(r, op, variant, pipeline)
        # (a streaming entry's CTAs an SM is its grid, not a register cap: kept)
        plain = best if best.chunk else dataclasses.replace(best, min_ctas_per_sm=1, prefetch=False)
        out += list(dict.fromkeys((best, plain)))
        if len(shapes) == top:
            break
    return out


# A winner within this fraction of the fastest that needs no register cap (nor the pipeline) is
# preferred: gains below it were within run-to-run noise in run 28 (repeats of one shape there
# differ by up to 0.5%).
PREFER_UNCAPPED = 0.015


def pick(rows: list[dict]) -> dict:
    """The winner among one problem's passing rows (``tune.csv`` dicts)."""
    ok = [r for r in rows if r["check"] == "ok"]
    best = max(float(r["gbs"]) for r in ok)
    near = [r for r in ok if float(r["gbs"]) >= best * (1 - PREFER_UNCAPPED)]
    uncapped = [
        r for r in near if int(r["min_ctas_per_sm"]) == 1 and not int(r.get("prefetch") or 0)
    ]
    return max(uncapped or near, key=lambda r: float(r["gbs"]))


def winners_from_csv(
    paths: list[str], run_label: str | None, min_gain: float | None = None
) -> list[dict]:
    """One ``measured_softmax.json`` entry per (op, dtype, key length) of the CSVs.

    A later CSV's rows of a problem replace an earlier one's (a sweep of changed kernel code
    re-times them). Each entry's ``run`` is ``run_label`` or its CSV's folder. ``min_gain``:
    only winners faster than their problem's baseline row by more than this fraction.
    """
    groups: dict[tuple, list[dict]] = {}
    source: dict[tuple, str] = {}
    for path in paths:
        mine = group_rows([path], _problem, lambda r: True)
        groups.update(mine)
        source.update(dict.fromkeys(mine, run_label or os.path.dirname(path)))
    out = []
    for (bop, dtype, cols), rows in sorted(groups.items()):
        if not any(r["check"] == "ok" for r in rows):
            continue
        op, variant = kernel_op(bop)
        w = pick(rows)
        base = next((r for r in rows if r["label"] == "baseline"), None)
        if min_gain is not None and (
            base is None
            or base["check"] != "ok"
            or float(w["gbs"]) <= float(base["gbs"]) * (1 + min_gain)
        ):
            continue
        size = registry.itemsize(dtype)
        max_cols = int(w["max_cols"])
        bytes_per_ldg = 16 if w["kind"] == "block" else min(16, max_cols // 32 * size)
        out.append(
            dict(
                op=op, variant=variant, dtype=dtype, keys=cols, kind=w["kind"],
                max_cols=max_cols, warps_m=int(w["warps_m"]), warps_n=int(w["warps_n"]),
                bytes_per_ldg=bytes_per_ldg, min_ctas_per_sm=int(w["min_ctas_per_sm"]),
                prefetch=bool(int(w.get("prefetch") or 0)),
                **({"grid": w["row_grid"]} if w.get("row_grid") == "rows" else {}),
                **({"chunk": int(w["chunk"])} if int(w.get("chunk") or 0) else {}),
                **({"reverse": True} if int(w.get("reverse") or 0) else {}),
                **({"stage": True} if int(w.get("stage") or 0) else {}),
                rows=int(w["rows"]), gbs=float(w["gbs"]), pct_ceiling=float(w["pct_ceiling"]),
                baseline_gbs=float(base["gbs"]) if base else None, run=source[bop, dtype, cols],
            )
        )  # fmt: skip
    return out


def run(args) -> int:
    import torch  # the sweep needs the GPU; --from-csv does not
    from _bench_torch import (
        as_outputs,
        compare,
        copy_ceiling,
        make_set,
        ours_runner,
        output_bytes,
        poison,
        reference,
        time_calls,
    )

    os.makedirs(args.out, exist_ok=True)
    dev = torch.cuda.current_device()
    limits = dispatch.device_limits(dev)
    arch = rtc.device_info(dev).arch  # explicit: the compile threads need no CUDA context
    _, ceiling, _ = copy_ceiling()
    print(f"copy ceiling {ceiling:.0f} GB/s on {torch.cuda.get_device_name()}", flush=True)
    real_select = registry.select_softmax
    forced: list = [None]
    backend = args.backend
    refine = load_refine(args.refine) if args.refine else None

    def select(op, variant, dtype, cols, **kw):
        cfg = forced[0]
        return cfg if cfg is not None else real_select(op, variant, dtype, cols, **kw)

    registry.select_softmax = select
    pool = cf.ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 4))
    t_end = time.monotonic() + args.time_budget
    fields = [
        "op", "dtype", "rows", "cols", "label", "kind", "max_cols", "ctas_per_row", "warps_m",
        "warps_n", "min_ctas_per_sm", "prefetch", "row_grid", "chunk", "reverse", "stage",
        "shared_bytes", "elts_per_thread", "regs",
        "occupancy", "grid",
        "median_us", "p20_us", "p80_us", "gbs", "pct_ceiling", "vs_baseline", "check",
    ]  # fmt: skip
    fcsv = open(os.path.join(args.out, "tune.csv"), "w", newline="")
    wr = csv.DictWriter(fcsv, fieldnames=fields)
    wr.writeheader()
    summary = []

    def measure(case: Case, run_fn, n_sets, ref, cfg, label: str, base_us):
        forced[0] = cfg
        dispatch._plan_cache.clear()
        try:
            poison(output_bytes(case))
            got = as_outputs(case, backend, run_fn(0))
            torch.cuda.synchronize()
            bad = compare(case, got, ref)
            t = time_calls(run_fn, n_sets, target_ms=args.target_ms, min_reps=8, max_reps=80)
            plan = next(iter(dispatch._plan_cache.values()))
            k = main_kernel(backend, "softmax", plan.spec)
            gbs = case.nbytes() / t.median_us / 1e3
            row = dict(
                op=case.op, dtype=case.dtype, rows=case.rows, cols=case.cols, label=label,
                kind=cfg.kind, max_cols=cfg.max_cols, ctas_per_row=plan.ctas_per_row,
                warps_m=cfg.warps_m, warps_n=cfg.warps_n, min_ctas_per_sm=cfg.min_ctas_per_sm,
                prefetch=int(cfg.prefetch), row_grid=cfg.grid, chunk=cfg.chunk,
                reverse=int(cfg.reverse), stage=int(plan.spec.config.stage),
                shared_bytes=plan.shared_bytes,
                elts_per_thread=plan.spec.ldgs * plan.spec.num_elts, regs=k.num_regs,
                occupancy=k.occupancy(plan.spec.threads, plan.shared_bytes),
                grid="x".join(map(str, plan.grid)), median_us=round(t.median_us, 2),
                p20_us=round(t.p20_us, 2), p80_us=round(t.p80_us, 2), gbs=round(gbs, 1),
                pct_ceiling=round(100 * gbs / ceiling, 1),
                vs_baseline=round(base_us / t.median_us, 3) if base_us else 1.0,
                check=bad or "ok",
            )  # fmt: skip
            return row, (t.median_us if not bad else None)
        except Exception as exc:  # a shape this device cannot run: record and go on
            print(f"  {label} {cfg}: {type(exc).__name__}: {exc}", flush=True)
            return None, None
        finally:
            forced[0] = None
            dispatch._plan_cache.clear()

    def prefetch(cfgs, cols):
        def spec_of(c):
            return planner.softmax_spec(c, cols, c.num_elts, limits)

        if backend == "numba":
            numba_compile_ahead("softmax", cfgs, spec_of)
        else:
            compile_ahead(pool, cfgs, spec_of, lambda s: nv_softmax.compile_spec(s, arch))

    if backend == "numba":  # read at call time by the dispatcher
        os.environ["DISABLE_NVRTC"] = "1"
    else:
        os.environ.pop("DISABLE_NVRTC", None)
    for dtype in args.dtypes:
        for bop in args.ops:
            op, variant = kernel_op(bop)
            for cols in args.keys:
                if time.monotonic() > t_end:
                    print(f"time budget spent: skipping {dtype} {bop} {cols}", flush=True)
                    continue
                dims = softmax_dims(bop, cols)
                if dims is None:
                    continue
                b, h, sq, note = dims
                case = Case(bop, dtype, b * h * sq, cols, b=b, h=h, sq=sq, note=note)
                t0 = time.monotonic()
                n_sets = sets_needed(case.nbytes(), 60 * 1000 * 1000)
                sets = [make_set(case, 100 + i) for i in range(n_sets)]
                ref = reference(case, sets[0])
                run_fn = ours_runner(case, sets)
                base_cfg = real_select(op, variant, dtype, cols, backend=backend)
                if refine is not None:
                    rows = refine.get((bop, dtype, cols), [])
                    pipeline = not (backend == "numba" and op == "softmax_bwd")
                    stage = refine_candidates(rows, op, variant, args.top, pipeline)
                    stage = list(dict.fromkeys(stage + with_grids(stage, cols, args.grids)))
                    labels: tuple = ("refine",)
                elif args.stream:
                    row_ctas = tuple(args.stream_ctas)
                    stage = []
                    if not args.staged_only:
                        stage = with_grids(
                            stream_candidates(op, variant, dtype, cols, row_ctas),
                            cols,
                            args.grids,
                        )
                    if args.stage or args.staged_only:
                        stage += staged_candidates(
                            op, variant, dtype, cols, row_ctas, limits.max_shared_per_block_optin
                        )
                    labels = ("stream",)
                else:
                    stage = with_grids(
                        candidates(op, variant, dtype, cols, args.max_elts), cols, args.grids
                    )
                    labels = ("shape", "capped")
                stage = [c for c in stage if c != base_cfg]
                if backend == "numba":  # one batch: the workers build them side by side
                    prefetch([base_cfg] + stage, cols)
                base_row, base_us = measure(case, run_fn, n_sets, ref, base_cfg, "baseline", None)
                if base_row is None:
                    continue
                wr.writerow(base_row)
                results = [(base_us or float("inf"), base_cfg, base_row)]
                for label in labels:
                    if label == "capped":
                        top = sorted(results, key=lambda r: r[0])[: args.top]
                        pipelines = (False, True)
                        stage = [
                            dataclasses.replace(c, min_ctas_per_sm=m, prefetch=pf)
                            for _, c, _ in top
                            for m in (1,) + MIN_CTAS
                            for pf in pipelines
                            if c.threads * m <= registry.MAX_THREADS_PER_SM
                            and (m, pf) != (1, False)  # timed in the shape stage
                        ]
                    prefetch(stage, cols)
                    for cfg in stage:
                        row, us = measure(case, run_fn, n_sets, ref, cfg, label, base_us)
                        if row:
                            wr.writerow(row)
                            if us:
                                results.append((us, cfg, row))
                fcsv.flush()
                best_us, best, brow = min(results, key=lambda r: r[0])
                print(
                    f"{dtype:5s} {bop:26s} {cols:6d}: baseline {base_row['gbs']:7.1f} GB/s "
                    f"({base_cfg.kind} {base_cfg.max_cols} {base_cfg.warps_m}x{base_cfg.warps_n})"
                    f" best {brow['gbs']:7.1f} ({best.kind} {best.max_cols} cpr"
                    f"{brow['ctas_per_row']} {best.warps_m}x{best.warps_n} "
                    f"min{best.min_ctas_per_sm}{'/rows' if best.grid == 'rows' else ''}"
                    f"{f' chunk{best.chunk}' if best.chunk else ''}"
                    f"{' rev' if best.reverse else ''}{' staged' if best.stage else ''}, "
                    f"{brow['regs']} regs) "
                    f"x{base_us / best_us if base_us else 0:.2f} "
                    f"[{len(results)} cands, {time.monotonic() - t0:.1f} s]",
                    flush=True,
                )
                summary.append(brow)
                del sets, ref, run_fn
                torch.cuda.empty_cache()
    fcsv.close()
    registry.select_softmax = real_select
    meta = dict(
        date=datetime.date.today().isoformat(),
        gpu=torch.cuda.get_device_name(),
        copy_ceiling_gbs=round(ceiling),
        command="python3 perf/tune_softmax.py " + " ".join(sys.argv[1:]),
        versions=dict(
            torch=torch.__version__,
            python=platform.python_version(),
            nvrtc=".".join(map(str, rtc.nvrtc_version())),
        ),
        best=summary,
        backend=backend,
    )
    with open(os.path.join(args.out, "tune_softmax.json"), "w") as f:
        json.dump(meta, f, indent=1)
    write_json(args, [os.path.join(args.out, "tune.csv")], meta)
    return 0


def write_json(args, csvs: list[str], meta: dict) -> None:
    own = args.backend != "nvrtc"  # a backend's own table: only clear gains over the shared one
    entries = winners_from_csv(csvs, args.run_label, args.min_gain if own else None)
    source = {k: v for k, v in meta.items() if k != "best"}
    name = f"measured_softmax_{args.backend}.json" if own else "measured_softmax.json"
    with open(os.path.join(args.out, name), "w") as f:
        json.dump(dict(source=source, entries=entries), f, indent=1)
    print(f"{len(entries)} entries -> {args.out}/{name}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--ops", nargs="+", default=list(OPS), choices=OPS)
    p.add_argument("--dtypes", nargs="+", default=["bf16"], choices=("bf16", "fp16", "fp32"))
    p.add_argument("--keys", nargs="+", type=int, default=list(KEYS))
    p.add_argument("--max-elts", type=int, default=64, help="elements a thread holds, at most")
    p.add_argument("--top", type=int, default=3, help="shapes swept with register caps")
    p.add_argument("--target-ms", type=float, default=10.0)
    p.add_argument("--time-budget", type=float, default=420.0, help="seconds")
    p.add_argument("--from-csv", nargs="+", default=None, help="earlier sweeps' tune.csv files")
    p.add_argument("--backend", default="nvrtc", choices=BACKENDS, help="kernels to time")
    p.add_argument(
        "--refine",
        nargs="+",
        default=None,
        help="earlier sweeps' tune.csv files: time their --top fastest launch shapes only",
    )
    p.add_argument(
        "--min-gain",
        type=float,
        default=0.03,
        help="a backend's own entry must beat its baseline by more than this",
    )
    add_grids_argument(p, "where a row takes one CTA")
    p.add_argument(
        "--stream",
        action="store_true",
        help="time the streaming kernels (SoftmaxConfig.chunk) in STREAM_SHAPES instead",
    )
    p.add_argument(
        "--stream-ctas",
        type=int,
        nargs="+",
        default=list(STREAM_CTAS),
        help="--stream: CTAs a row past 32768 keys (default: STREAM_CTAS)",
    )
    p.add_argument(
        "--stage",
        action="store_true",
        help="--stream: also the staged forward (SoftmaxConfig.stage) in STAGE_SHAPES",
    )
    p.add_argument(
        "--staged-only",
        action="store_true",
        help="--stream: the staged forward's shapes alone (against the serving entry)",
    )
    p.add_argument("--run-label", default=None, help="the 'run' field (default: the CSV's folder)")
    p.add_argument("--source", default=None, help="--from-csv: a tune_softmax.json for 'source'")
    args = p.parse_args()
    if args.from_csv:
        os.makedirs(args.out, exist_ok=True)
        meta = {}
        if args.source:
            with open(args.source) as f:
                meta = json.load(f)
        write_json(args, args.from_csv, meta)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
