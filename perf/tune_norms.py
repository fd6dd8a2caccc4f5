# ruff: noqa: E402
"""Timed sweep of norm launch shapes on the GPU; writes the measured registry tables.

For each op, dtype combination and hidden size (rows 16384) this times the NVRTC kernel of
every launch shape that tiles the row with 16-byte vectors (CTAs per row x warps_m x warps_n,
at most ``--max-elts`` elements a thread), then the best ``--top`` shapes under register caps
(``__launch_bounds__`` min CTAs per SM). Every candidate's outputs are compared with TE's
entry's (the baseline) before it may win. Where a measured entry serves the size now, it is
timed too ("current") and is the bar a winner must clear.

Outputs in ``--out``: ``tune.csv`` (every measurement) and ``measured_norms.json`` (winners that
beat what serves now by more than ``--min-gain``, in ``numba_norms/data/measured_norms.json``'s
format: copy it there after reading the CSV).

``--fold also`` (or ``only``) times the one-CTA RMSNorm forward shapes folded too
(``NormConfig.fold``); a folded winner carries ``"fold": true``.

``--general`` sweeps one-CTA general shapes instead (``--general-ctas N``: also shapes of up to
N CTAs a row), timed on rows of the given lengths: scalar accesses where the pitch allows only
one element (odd lengths; winners go from ``tune.csv`` into
``registry._NARROW_GENERAL`` / ``_NARROW_GENERAL_NVRTC`` by hand), 16-byte vectors where the row
is a vector multiple that no tuned shape tiles (1000 in bf16: ``registry._VECTOR_GENERAL``; 4104:
``_WIDE_VECTOR_GENERAL``). No JSON. "current" is what serves rows of that pitch.

``--grids persistent rows`` times each shape of a forward with one CTA a row on both launch
grids (``NormConfig.grid``); a winner on the grid of all rows carries ``"grid": "rows"``.

``--backend numba`` times the Numba kernels instead (``--refine`` with NVRTC sweeps' CSVs: their
fastest shapes are the candidates). Its baseline is what the Numba path runs now (the shared
table), and its winners go to ``measured_norms_numba.json`` (``numba_norms/data/``'s file of the
same name: entries that serve the Numba backend only).

    python3 perf/tune_norms.py --out DIR [--ops ...] [--dtypes bf16 fp32 ...] [--sizes ...]
    python3 perf/tune_norms.py --out DIR --backend numba --refine RUN/tune.csv [...] --top 6
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

import torch
from _bench_cases import norm_bwd_bytes, norm_fwd_bytes
from _bench_torch import copy_ceiling, time_calls
from _tune_common import (
    BACKENDS,
    add_grids_argument,
    compile_ahead,
    general_shapes,
    group_rows,
    main_kernel,
    make_general,
    numba_compile_ahead,
)

import numba_norms as nn
import rtc
from numba_norms import dispatch, planner, registry
from numba_norms.backends.nvrtc import _norms

OPS = ("layernorm_fwd", "rmsnorm_fwd", "layernorm_bwd", "rmsnorm_bwd")
SIZES = (768, 1024, 2048, 2560, 3584, 4096, 5120, 7168, 8192, 12288, 16384, 32768, 65536)
# name -> (weight, input, output); FP8 output only for the forward ops
COMBOS = {
    "bf16": ("bf16", "bf16", "bf16"),
    "fp16": ("fp16", "fp16", "fp16"),
    "fp32": ("fp32", "fp32", "fp32"),
    "bf16-fp8": ("bf16", "bf16", "fp8e4m3"),
    "fp16-fp8": ("fp16", "fp16", "fp8e4m3"),
    "fp32-fp8": ("fp32", "fp32", "fp8e4m3"),
}
TORCH = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
TOL = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 1e-2, "fp8e4m3": 8e-2}
MIN_CTAS = (2, 3, 4, 6, 8, 16)


def shapes(in_size: int, cols: int, max_elts: int) -> list[tuple[int, int, int]]:
    """(ctas_per_row, warps_m, warps_n) tiling ``cols`` with 16-byte vectors."""
    v = 16 // in_size
    out = []
    # 16 CTAs a row (the arrival counter: no portable cluster) ran 0.41-0.65x the best
    # layernorm_bwd 32768 / 65536 shapes (run 95): not swept
    for ctas in (1, 2, 4, 8):
        if ctas > 1 and cols < 16384:
            continue
        for wn in range(1, 33):  # any warp count: 2560 = 10 warps x 256 columns, say
            per_pass = ctas * wn * 32 * v
            if cols % per_pass or cols // per_pass * v > max_elts:
                continue
            for wm in (1, 2, 4, 8):
                if wm * wn > 32 or (ctas > 1 and wm > 1):
                    continue
                out.append((ctas, wm, wn))
    return out


def make_config(
    key: registry.NormKey, cols: int, ctas: int, wm: int, wn: int, mc: int, grid="persistent"
):
    return registry.NormConfig.tuned_for(
        key, cols, ctas_per_row=ctas, warps_m=wm, warps_n=wn, origin="measured",
        min_ctas_per_sm=mc, grid=grid,
    )  # fmt: skip


def grids_for(key: registry.NormKey, ctas: int, grids: list[str]) -> list[str]:
    """The launch grids (NormConfig.grid) to time a shape on: the grid of all rows only for
    forwards of one CTA a row."""
    return [g for g in grids if g == "persistent" or (not key.op.endswith("_bwd") and ctas == 1)]


PREFETCH = (False, True)


def te_select(key: registry.NormKey, cols: int, rows: int) -> registry.NormConfig:
    """The entry the registry picks without the measured table (TE's or a generated one)."""
    return registry.select_norm(key, cols, rows, 16, measured=False)


def load_refine(paths: list[str]) -> dict:
    """Rows of earlier tune.csv files that passed, grouped by (op, weight, input, output, cols);
    a later file's rows of a problem replace an earlier one's."""
    return group_rows(
        paths,
        lambda r: (r["op"], r["weight"], r["input"], r["output"], int(r["cols"])),
        lambda r: r["check"] == "ok" and not r["label"].startswith("baseline"),
    )


def refine_candidates(refine: dict, key: registry.NormKey, cols: int, top: int) -> list:
    """The ``top`` fastest distinct shapes + caps (+ fold) of an earlier sweep, with and without
    the software pipeline."""
    rows = sorted(
        refine.get((key.op, key.weight, key.input, key.output, cols), []),
        key=lambda r: float(r["median_us"]),
    )
    seen, out = set(), []
    for r in rows:
        shape = tuple(int(r[f]) for f in ("ctas_per_row", "warps_m", "warps_n", "min_ctas_per_sm"))
        grid, fold = r.get("row_grid") or "persistent", bool(int(r.get("fold") or 0))
        if shape + (grid, fold) in seen:
            continue
        seen.add(shape + (grid, fold))
        cfg = dataclasses.replace(make_config(key, cols, *shape, grid), fold=fold)
        out += [dataclasses.replace(cfg, prefetch=pf) for pf in PREFETCH]
        if len(seen) == top:
            break
    return out


def wgrad_variants(cfg: registry.NormConfig, sweep: str | None) -> list:
    """``cfg`` and, with ``sweep`` ("also") for a tuned backward entry, its copies with 1 .. 2
    (RMSNorm: 1) partial sums in shared memory whose slots fit; "only": the copies alone."""
    out = [] if sweep == "only" and cfg.is_backward else [cfg]
    if sweep and cfg.is_backward and cfg.kind == "tuned":
        for w in range(1, 2 if cfg.is_rms else 3):
            try:
                out.append(dataclasses.replace(cfg, wgrad_smem=w))
            except ValueError:  # slots exceed the static shared memory
                break
    return out


def fold_variants(cfg: registry.NormConfig, sweep: str | None) -> list:
    """``cfg`` and, with ``sweep`` ("also") for a tuned rmsnorm_fwd entry of one CTA a row, its
    folded copy (``NormConfig.fold``); "only": the folded copy alone, nothing for shapes that
    cannot fold."""
    if not sweep or cfg.fold:
        return [cfg]
    if not cfg.foldable:
        return [] if sweep == "only" else [cfg]
    folded = dataclasses.replace(cfg, fold=True)
    return [folded] if sweep == "only" else [cfg, folded]


def shape_candidates(refine: dict, key: registry.NormKey, cols: int, top: int) -> list:
    """For another backend than the sweep's: the ``top`` fastest distinct launch shapes of an
    earlier sweep, each as timed fastest (register cap, pipeline) and uncapped with and without
    the pipeline (the Numba kernels run it only where their register estimate allows). Shapes
    rather than caps: NVVM's kernels take more registers, so a shape NVRTC ranks lower may suit
    them better."""
    rows = sorted(
        refine.get((key.op, key.weight, key.input, key.output, cols), []),
        key=lambda r: float(r["median_us"]),
    )
    shapes_seen: set = set()
    out: list = []
    for r in rows:
        shape = tuple(int(r[f]) for f in ("ctas_per_row", "warps_m", "warps_n"))
        grid = r.get("row_grid") or "persistent"
        if (shape, grid) in shapes_seen:
            continue
        shapes_seen.add((shape, grid))
        best = (int(r["min_ctas_per_sm"]), bool(int(r.get("prefetch") or 0)))
        for cap, pf in dict.fromkeys((best, (1, False), (1, True))):
            cfg = make_config(key, cols, *shape, cap, grid)
            out.append(dataclasses.replace(cfg, prefetch=pf))
        if len(shapes_seen) == top:
            break
    return out


class Problem:
    """Inputs of one (op, dtypes, rows, cols) and a call that uses a forced configuration."""

    def __init__(self, key: registry.NormKey, rows: int, cols: int) -> None:
        self.key, self.rows, self.cols = key, rows, cols
        kind, direction = key.op.split("_")
        self.kind, self.bwd = kind, direction == "bwd"
        dt, wt = TORCH[key.input], TORCH[key.weight]
        g = torch.Generator(device="cuda").manual_seed(0)
        self.x = torch.randn(rows, cols, device="cuda", generator=g).to(dt)
        self.gamma = (1 + 0.1 * torch.randn(cols, device="cuda", generator=g)).to(wt)
        self.beta = (0.1 * torch.randn(cols, device="cuda", generator=g)).to(wt)
        self.fp8 = key.output.startswith("fp8")
        self.scale = torch.full((1,), 2.0, device="cuda")
        if self.bwd:
            self.dy = torch.randn(rows, cols, device="cuda", generator=g).to(TORCH[key.output])
            if kind == "layernorm":
                _, self.mu, self.rs = nn.layernorm_fwd(self.x, self.gamma, self.beta)
            else:
                _, self.rs = nn.rmsnorm_fwd(self.x, self.gamma)
        sx = self.x.element_size()
        w = self.gamma.element_size()
        rms = kind == "rmsnorm"
        if self.bwd:
            self.nbytes = norm_bwd_bytes(rows, cols, sx, self.dy.element_size(), w, rms)
        else:
            sy = 1 if self.fp8 else TORCH[key.output].itemsize
            self.nbytes = norm_fwd_bytes(rows, cols, sx, sy, w, rms)

    def __call__(self, _i: int = 0):
        k = self.kind
        if self.bwd:
            if k == "layernorm":
                return nn.layernorm_bwd(self.dy, self.x, self.mu, self.rs, self.gamma)
            return nn.rmsnorm_bwd(self.dy, self.x, self.rs, self.gamma)
        extra = {"out_dtype": torch.float8_e4m3fn, "scale": self.scale} if self.fp8 else {}
        if k == "layernorm":
            return nn.layernorm_fwd(self.x, self.gamma, self.beta, **extra)
        return nn.rmsnorm_fwd(self.x, self.gamma, **extra)


def rel_err(a, b) -> float:
    """Largest relative L2 error over the outputs (dgamma/dbeta included for backward)."""
    errs = []
    for u, v in zip(a, b, strict=True):
        u, v = u.float(), v.float()
        errs.append(float((u - v).norm() / v.norm().clamp_min(1e-30)))
    return max(errs)


def run(args) -> int:
    os.makedirs(args.out, exist_ok=True)
    dev = torch.cuda.current_device()
    limits = dispatch.device_limits(dev)
    arch = rtc.device_info(dev).arch  # explicit: the compile threads need no CUDA context
    _, ceiling, _ = copy_ceiling()
    print(f"copy ceiling {ceiling:.0f} GB/s on {torch.cuda.get_device_name()}", flush=True)
    real_select = registry.select_norm
    refine = load_refine(args.refine) if args.refine else None
    backend = args.backend
    if backend == "numba":  # read at call time by the dispatcher
        os.environ["DISABLE_NVRTC"] = "1"
    else:
        os.environ.pop("DISABLE_NVRTC", None)
    forced: list = [None]

    def select(key, cols, rows, alignment, **kw):
        cfg = forced[0]
        return cfg if cfg is not None else real_select(key, cols, rows, alignment, **kw)

    registry.select_norm = select
    pool = cf.ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 4))
    t_end = time.monotonic() + args.time_budget
    fields = [
        "op",
        "weight",
        "input",
        "output",
        "rows",
        "cols",
        "label",
        "ctas_per_row",
        "warps_m",
        "warps_n",
        "min_ctas_per_sm",
        "prefetch",
        "row_grid",
        "wgrad_smem",
        "fold",
        "elts_per_thread",
        "regs",
        "occupancy",
        "grid",
        "median_us",
        "p20_us",
        "p80_us",
        "gbs",
        "pct_ceiling",
        "vs_baseline",
        "err",
        "check",
    ]
    fcsv = open(os.path.join(args.out, "tune.csv"), "w", newline="")
    wr = csv.DictWriter(fcsv, fieldnames=fields)
    wr.writeheader()
    winners = []

    def measure(prob: Problem, cfg, label: str, ref, base_us):
        forced[0] = cfg
        dispatch._plan_cache.clear()
        try:
            out = prob()
            torch.cuda.synchronize()
            err = rel_err(out, ref) if ref is not None else 0.0
            tol = TOL[prob.key.output if not prob.bwd else prob.key.input]
            ok = err <= tol
            t = time_calls(prob, 1, target_ms=args.target_ms, min_reps=8, max_reps=60)
            plan = next(iter(dispatch._plan_cache.values()))
            main = main_kernel(backend, prob.kind, plan.spec)
            row = dict(
                op=prob.key.op,
                weight=prob.key.weight,
                input=prob.key.input,
                output=prob.key.output,
                rows=prob.rows,
                cols=prob.cols,
                label=label,
                ctas_per_row=cfg.ctas_per_row,
                warps_m=cfg.warps_m,
                warps_n=cfg.warps_n,
                min_ctas_per_sm=cfg.min_ctas_per_sm,
                prefetch=int(cfg.prefetch),
                row_grid=cfg.grid,
                wgrad_smem=cfg.wgrad_smem,
                fold=int(cfg.fold),
                elts_per_thread=plan.spec.ldgs * plan.spec.num_elts,
                regs=main.num_regs,
                occupancy=main.occupancy(plan.spec.threads, 0),
                grid="x".join(map(str, plan.grid)),
                median_us=round(t.median_us, 2),
                p20_us=round(t.p20_us, 2),
                p80_us=round(t.p80_us, 2),
                gbs=round(prob.nbytes / t.median_us / 1e3, 1),
                pct_ceiling=round(100 * prob.nbytes / t.median_us / 1e3 / ceiling, 1),
                vs_baseline=round(base_us / t.median_us, 3) if base_us else 1.0,
                err=f"{err:.2e}",
                check="ok" if ok else "FAIL",
            )
            return row, out, t.median_us if ok else None
        except Exception as exc:  # a shape this device cannot run: record and go on
            print(
                f"  {label} {cfg.ctas_per_row}/{cfg.warps_m}x{cfg.warps_n}/"
                f"{cfg.min_ctas_per_sm}: {type(exc).__name__}: {exc}",
                flush=True,
            )
            return None, None, None
        finally:
            forced[0] = None
            dispatch._plan_cache.clear()

    def spec_for(c, cols):
        # general candidates are compiled for the odd row length they are timed on
        size = c.hidden_size if c.kind == "tuned" else cols
        return planner.norm_spec(c, size, c.num_elts, limits)

    def numba_pipelines(cfg, cols) -> bool:
        from numba_norms.backends.numba import _norms as numba_norms  # (NVRTC runs: no Numba)

        try:
            return numba_norms.runs_pipeline(spec_for(cfg, cols))
        except planner.PlanError:
            return True  # the timed call reports it

    def prefetch(cfgs, cols, module):
        def spec_of(c):
            return spec_for(c, cols)

        if backend == "numba":
            numba_compile_ahead(module, cfgs, spec_of)
        else:
            compile_ahead(pool, cfgs, spec_of, lambda s: _norms.compile_spec(s, arch))

    for combo in args.dtypes:
        weight, inp, outp = COMBOS[combo]
        for op in args.ops:
            if op.endswith("_bwd") and outp.startswith("fp8"):
                continue
            key = registry.NormKey(op, weight, inp, outp)
            for cols in args.sizes:
                if time.monotonic() > t_end:
                    print(f"time budget spent: skipping {combo} {op} {cols}", flush=True)
                    continue
                t0 = time.monotonic()
                prob = Problem(key, args.rows, cols)
                # the alignment of the timed rows (contiguous: their pitch), as the call sees it
                pitch = cols * min(registry.itemsize(inp), registry.itemsize(outp))
                align = min(16, pitch & -pitch)
                if backend == "numba":  # what the Numba path runs now
                    base_cfg = real_select(key, cols, args.rows, align, backend="numba")
                else:
                    base_cfg = te_select(key, cols, args.rows)
                ahead = [base_cfg]
                if refine is not None:
                    if backend == "numba":
                        cands = shape_candidates(refine, key, cols, args.top)
                    else:
                        cands = refine_candidates(refine, key, cols, args.top)
                    cands = [v for c in cands for v in wgrad_variants(c, args.wgrad_smem)]
                    cands = [v for c in cands for v in fold_variants(c, args.fold)]
                    ahead += cands
                if backend == "numba":  # one batch: the workers build them side by side
                    prefetch(ahead, cols, prob.kind)
                base_row, ref, base_us = measure(prob, base_cfg, "baseline", None, None)
                if base_row is None:
                    continue
                base_row["label"] = f"baseline:{base_cfg.origin}"
                wr.writerow(base_row)
                results = [(base_us, base_cfg, base_row)]
                # NVRTC: also what serves now (a measured entry), the bar a winner must clear
                cur = (base_us, base_cfg, base_row)
                if backend == "nvrtc":
                    now = real_select(key, cols, args.rows, align, backend="nvrtc")
                    if now != base_cfg:
                        row, _, us = measure(prob, now, f"current:{now.origin}", ref, base_us)
                        if row and us:
                            wr.writerow(row)
                            cur = (us, now, row)
                            results.append(cur)
                if refine is not None:
                    stages = [("refine", [c for c in cands if c not in (base_cfg, cur[1])])]
                elif args.general:
                    size = registry.itemsize(inp)
                    # rows of a vector multiple take 16-byte vectors, others one element
                    nbytes = 16 if cols * size % 16 == 0 else size
                    stages = [
                        (
                            "general",
                            [
                                make_general(key, *s, nbytes)
                                for s in general_shapes(
                                    size, cols, args.max_elts, nbytes, args.general_ctas
                                )
                            ],
                        ),
                        ("capped", None),
                    ]
                else:
                    stages = [
                        (
                            "shape",
                            [
                                v
                                for s in shapes(registry.itemsize(inp), cols, args.max_elts)
                                for g in grids_for(key, s[0], args.grids)
                                for pf in ((False, True) if args.shape_prefetch else (False,))
                                for w in wgrad_variants(
                                    dataclasses.replace(
                                        make_config(key, cols, *s, 1, g), prefetch=pf
                                    ),
                                    args.wgrad_smem,
                                )
                                for v in fold_variants(w, args.fold)
                            ],
                        ),
                        ("capped", None),
                    ]
                for label, cands in stages:
                    if cands is None:  # register caps (and the pipeline) on the best shapes
                        top = sorted(results, key=lambda r: r[0])[: args.top]
                        cands = [
                            dataclasses.replace(
                                c, min_ctas_per_sm=m, origin="measured", prefetch=pf
                            )
                            for _, c, _ in top
                            for m in (1,) + MIN_CTAS
                            # (Numba: --general sweeps it too; its general kernels have one)
                            for pf in (PREFETCH if backend == "nvrtc" or args.general else (False,))
                            if c.threads * m <= registry.MAX_THREADS_PER_SM
                        ]
                        if backend == "numba":  # a pipeline the kernel leaves out: timed once
                            cands = [c for c in cands if not c.prefetch or numba_pipelines(c, cols)]
                    prefetch(cands, cols, prob.kind)
                    for cfg in cands:
                        row, _, us = measure(prob, cfg, label, ref, base_us)
                        if row:
                            wr.writerow(row)
                            if us:
                                results.append((us, cfg, row))
                fcsv.flush()
                best_us, best, brow = min(results, key=lambda r: r[0])
                cur_us, cur_cfg, cur_row = cur
                gain = cur_us / best_us
                print(
                    f"{combo:8s} {op:14s} {cols:6d}: baseline {base_row['gbs']:7.1f} GB/s "
                    f"({base_cfg.ctas_per_row}/{base_cfg.warps_m}x{base_cfg.warps_n}) current "
                    f"{cur_row['gbs']:7.1f} best "
                    f"{brow['gbs']:7.1f} ({best.ctas_per_row}/{best.warps_m}x{best.warps_n}"
                    f"/min{best.min_ctas_per_sm}{'/pf' if best.prefetch else ''}"
                    f"{f'/wg{best.wgrad_smem}' if best.wgrad_smem else ''}"
                    f"{'/fold' if best.fold else ''}"
                    f"{'/rows' if best.grid == 'rows' else ''}, "
                    f"{brow['regs']} regs) x{gain:.2f} "
                    f"[{len(results)} cands, {time.monotonic() - t0:.1f} s]",
                    flush=True,
                )
                # general shapes go from tune.csv into registry._NARROW_GENERAL by hand
                new = best is not base_cfg and best is not cur_cfg
                if new and gain > 1 + args.min_gain and not args.general:
                    winners.append(
                        dict(
                            op=op,
                            hidden_size=cols,
                            weight=weight,
                            input=inp,
                            output=outp,
                            ctas_per_row=best.ctas_per_row,
                            warps_m=best.warps_m,
                            warps_n=best.warps_n,
                            bytes_per_ldg=16,
                            min_ctas_per_sm=best.min_ctas_per_sm,
                            prefetch=best.prefetch,
                            **({} if best.grid == "persistent" else {"grid": best.grid}),
                            **({"wgrad_smem": best.wgrad_smem} if best.wgrad_smem else {}),
                            **({"fold": True} if best.fold else {}),
                            gbs=brow["gbs"],
                            baseline_gbs=cur_row["gbs"],
                            baseline=f"{cur_cfg.origin} {cur_cfg.ctas_per_row}/"
                            f"{cur_cfg.warps_m}x{cur_cfg.warps_n}",
                        )
                    )
                del prob
                torch.cuda.empty_cache()
    fcsv.close()
    registry.select_norm = real_select
    meta = dict(
        date=datetime.date.today().isoformat(),
        gpu=torch.cuda.get_device_name(),
        copy_ceiling_gbs=round(ceiling),
        rows=args.rows,
        command="python3 perf/tune_norms.py " + " ".join(sys.argv[1:]),
        versions=dict(
            torch=torch.__version__,
            python=platform.python_version(),
            nvrtc=".".join(map(str, rtc.nvrtc_version())),
        ),
    )
    meta["backend"] = backend
    name = "measured_norms.json" if backend == "nvrtc" else f"measured_norms_{backend}.json"
    with open(os.path.join(args.out, name), "w") as f:
        json.dump(dict(source=meta, entries=winners), f, indent=1)
    print(f"{len(winners)} winners -> {args.out}/{name}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--ops", nargs="+", default=list(OPS), choices=OPS)
    p.add_argument(
        "--dtypes", nargs="+", default=["bf16", "fp32", "bf16-fp8", "fp16"], choices=list(COMBOS)
    )
    p.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    p.add_argument("--rows", type=int, default=16384)
    p.add_argument(
        "--refine",
        nargs="+",
        default=None,
        help="earlier tune.csv files (a later file's problems replace an earlier one's): re-time "
        "their best --top shapes (with caps), each with and without the software pipeline",
    )
    p.add_argument("--backend", default="nvrtc", choices=BACKENDS, help="kernels to time")
    p.add_argument(
        "--general",
        action="store_true",
        help="sweep one-CTA general shapes with scalar accesses (for hidden sizes whose rows "
        "are not 16-byte aligned, e.g. 5003 in bf16); rows are timed at their odd length",
    )
    p.add_argument("--max-elts", type=int, default=64, help="elements a thread holds, at most")
    p.add_argument(
        "--general-ctas",
        type=int,
        default=1,
        help="--general: also shapes of up to this many CTAs a row (one warp row each)",
    )
    p.add_argument("--top", type=int, default=3, help="shapes swept with register caps")
    p.add_argument(
        "--shape-prefetch",
        action="store_true",
        help="time every shape with the software pipeline too (not only the --top ones)",
    )
    add_grids_argument(p, "for forwards of one CTA a row")
    p.add_argument(
        "--wgrad-smem",
        choices=("also", "only"),
        default=None,
        help="backward ops: time every shape (with --refine: every refined candidate) also "
        "('only': just) with its dgamma / dbeta sums in shared memory (NormConfig.wgrad_smem, "
        "each value whose slots fit)",
    )
    p.add_argument(
        "--fold",
        choices=("also", "only"),
        default=None,
        help="rmsnorm_fwd: time every one-CTA tuned shape (with --refine: every refined "
        "candidate) also ('only': just) folded (NormConfig.fold)",
    )
    p.add_argument(
        "--min-gain",
        type=float,
        default=0.03,
        help="keep what serves now (NVRTC: the current entry, timed too) below this gain",
    )
    p.add_argument("--target-ms", type=float, default=12.0)
    p.add_argument("--time-budget", type=float, default=480.0, help="seconds")
    return run(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
