"""What the launch-shape sweeps (``tune_norms.py``, ``tune_softmax.py``) share (no torch)."""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import csv
import multiprocessing as mp
import os
from collections.abc import Callable, Iterable
from typing import Any

from numba_norms import planner, registry

__all__ = [
    "BACKENDS",
    "add_grids_argument",
    "compile_ahead",
    "group_rows",
    "numba_compile_ahead",
    "main_kernel",
]

BACKENDS = ("nvrtc", "numba")


def add_grids_argument(p: argparse.ArgumentParser, applies: str) -> None:
    """``--grids``: the launch grids (``registry.GRIDS``) to time each shape on; ``applies``
    says which shapes the grid of all rows is timed for."""
    p.add_argument(
        "--grids",
        nargs="+",
        default=["persistent"],
        choices=registry.GRIDS,
        help=f"launch grids to time each shape on (the config's grid; 'rows' {applies})",
    )


def compile_ahead(
    pool: cf.Executor, cfgs: Iterable[Any], spec_of: Callable[[Any], Any], build: Callable
) -> None:
    """Compile the kernels of ``cfgs`` on ``pool`` before they are timed one by one.

    ``spec_of(cfg)`` makes the spec (configurations the planner rejects are skipped: the timed
    call reports them), ``build(spec)`` compiles it into the caches the timed call reads.
    """
    list(pool.map(build, _distinct_specs(cfgs, spec_of)))


def _distinct_specs(cfgs: Iterable[Any], spec_of: Callable[[Any], Any]) -> list:
    """One spec per compiled kernel (configurations differing in a launch parameter such as the
    grid share one), skipping configurations the planner rejects."""
    specs: dict = {}
    for cfg in cfgs:
        try:
            spec = spec_of(cfg)
        except planner.PlanError:
            continue
        specs.setdefault(spec.kernel_key, spec)
    return list(specs.values())


def group_rows(
    paths: Iterable[str], key: Callable[[dict], tuple], keep: Callable[[dict], bool]
) -> dict[tuple, list[dict]]:
    """Rows of earlier ``tune.csv`` files passing ``keep``, grouped by ``key(row)`` (a problem);
    a later file's rows of a problem replace an earlier one's (it timed newer kernel code)."""
    out: dict[tuple, list[dict]] = {}
    for path in paths:
        mine: dict[tuple, list[dict]] = {}
        with open(path) as f:
            for r in csv.DictReader(f):
                if keep(r):
                    mine.setdefault(key(r), []).append(r)
        out.update(mine)
    return out


def _numba_build(item: tuple[str, Any]) -> str:
    """Worker of :func:`numba_compile_ahead`: compile one spec on this process's GPU context (its
    cubin lands in rtc's disk cache, where the timing process finds it)."""
    from numba_norms import dispatch

    module, spec = item
    mod = dispatch.backend_module("numba", module)
    try:
        (mod.compile_backward if spec.config.is_backward else mod.compile_forward)(spec)
    except Exception as exc:  # reported again, with its context, by the timed call
        return f"{type(exc).__name__}: {exc}"
    return ""


_numba_pool: cf.ProcessPoolExecutor | None = None


def numba_compile_ahead(
    module: str, cfgs: Iterable[Any], spec_of: Callable[[Any], Any], workers: int = 12
) -> None:
    """:func:`compile_ahead` for the Numba backend: numba-cuda compiles one kernel at a time
    under the GIL (0.6-1 s each on the H200 host), so the kernels are built in worker processes
    (spawned: a forked CUDA context is unusable) and the timing process loads their cubins from
    the disk cache (``NUMBA_NORMS_CACHE_DIR`` is inherited)."""
    global _numba_pool
    specs = [(module, spec) for spec in _distinct_specs(cfgs, spec_of)]
    if not specs:
        return
    if _numba_pool is None:
        n = min(workers, os.cpu_count() or 2)
        _numba_pool = cf.ProcessPoolExecutor(n, mp_context=mp.get_context("spawn"))
    list(_numba_pool.map(_numba_build, specs))


def main_kernel(backend: str, module: str, spec: Any) -> Any:
    """The loaded main :class:`rtc.Kernel` of ``spec`` on ``backend`` (registers, occupancy)."""
    from numba_norms import dispatch

    mod = dispatch.backend_module(backend, module)
    if backend == "nvrtc":
        if module == "softmax":
            return mod.load(spec)
        from numba_norms.backends.nvrtc import _norms

        return _norms.load(spec)[0]
    got = (mod.compile_backward if spec.config.is_backward else mod.compile_forward)(spec)
    return got.kernel


def general_shapes(
    in_size: int, cols: int, max_elts: int, nbytes: int, max_ctas: int = 1
) -> list[tuple[int, int, int, int]]:
    """(CTAs a row, warps_m, warps_n, vectors a thread) of general kernels for rows of ``cols``
    accessed in ``nbytes``-byte vectors: scalar ones for the rows of an odd hidden size, 16-byte
    ones for sizes that are vector multiples but no tile multiple (1000 in bf16, say). A shape
    may leave at most one pass of one CTA's vectors idle. Up to ``max_ctas`` CTAs share a row
    (one warp row each), each covering the same ``warps_n * 32 * vectors`` columns; the planner
    gives such an entry ``ceil(cols / columns a CTA)`` CTAs, so only counts it reproduces are
    listed."""
    v = nbytes // in_size
    out = []
    for ctas in range(1, max_ctas + 1):
        for wn in (1, 2, 4, 8, 16, 32):
            lanes = wn * 32 * v
            ldgs = -(-cols // (ctas * lanes))
            idle = ctas * ldgs * lanes - cols  # half a pass at most where there is one pass
            if (
                ldgs * v > max_elts
                or idle >= (lanes if ldgs > 1 else lanes // 2)
                or (v == 1 and ldgs < 4)
                or -(-cols // (ldgs * lanes)) != ctas
            ):
                continue
            for wm in (1, 2, 4) if ctas == 1 else (1,):
                if wm * wn <= 32:
                    out.append((ctas, wm, wn, ldgs))
    return out


def make_general(key: registry.NormKey, ctas: int, wm: int, wn: int, ldgs: int, nbytes: int):
    """A general entry whose CTAs (``ctas`` of them share a row: the planner derives the count
    from the row length) each cover ``wn * 32 * ldgs`` vectors of ``nbytes``."""
    del ctas  # not a field of general entries
    return registry.NormConfig.general_for(
        key,
        wn * 32 * ldgs * (nbytes // registry.itemsize(key.input)),
        warps_m=wm,
        warps_n=wn,
        bytes_per_ldg=nbytes,
        origin="measured",
    )
