"""Compile every registry entry ahead of time (``numba-norms precompile``).

Works without a GPU when an arch is given: NVRTC kernels and Numba kernels (their linked cubins)
land in the disk cache under the same key a GPU of that arch will look up later.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, replace

from . import planner, registry
from .arrays import byte_alignment
from .dispatch import backend_module, norm_spec_for

__all__ = ["PrecompileResult", "all_specs", "precompile", "size_specs"]

# The planner's limits for enumerating specs: only max_ctas_per_row matters here, and a real GPU
# never limits it.
_LIMITS = planner.DeviceLimits(sm_count=132)
OP_GROUPS = {
    "layernorm": ("layernorm_fwd", "layernorm_bwd"),
    "rmsnorm": ("rmsnorm_fwd", "rmsnorm_bwd"),
    "softmax": ("softmax_fwd", "softmax_bwd"),
}


@dataclass
class PrecompileResult:
    compiled: int
    cached: int
    seconds: float


def all_specs(
    ops: Iterable[str] = tuple(OP_GROUPS), backend: str | None = None
) -> Iterator[tuple[str, bool, object]]:
    """(backend module name, is_backward, spec) for every entry, one per compiled kernel
    (``backend``: its own measured entries included)."""
    seen: set[tuple] = set()
    wanted = {o for group in ops for o in OP_GROUPS[group]}
    for cfg in registry.norm_configs(include_fp8=True, backend=backend):
        if cfg.op not in wanted:
            continue
        # General entries also run with narrower vectors (rows whose pitch or pointers are
        # less aligned): one kernel per width.
        for vec in _widths(cfg.num_elts) if cfg.kind == "general" else (cfg.num_elts,):
            spec = planner.norm_spec(cfg, cfg.hidden_size, vec, _LIMITS)
            if spec.kernel_key not in seen:
                seen.add(spec.kernel_key)
                yield cfg.op.split("_")[0], cfg.is_backward, spec
    for cfg in registry.softmax_configs(True, backend):
        if cfg.op not in wanted:
            continue
        for vec in _widths(cfg.num_elts):
            spec = planner.softmax_spec(cfg, cfg.max_cols, vec, _LIMITS)
            if spec.kernel_key not in seen:
                seen.add(spec.kernel_key)
                yield "softmax", cfg.is_backward, spec
        if cfg.keys > cfg.max_cols:
            # A measured entry timed on rows of several CTAs: its kernel for that count too (the
            # NVRTC build fixes the count), at the entry's own vector width.
            spec = planner.softmax_spec(cfg, cfg.keys, cfg.num_elts, _LIMITS)
            key = (spec.kernel_key, spec.ctas_per_row)
            if key not in seen:
                seen.add(key)
                yield "softmax", cfg.is_backward, spec


def size_specs(
    backend: str,
    hidden: Iterable[int] = (),
    keys: Iterable[int] = (),
    ops: Iterable[str] = tuple(OP_GROUPS),
) -> list[tuple[str, bool, object]]:
    """(backend module name, is_backward, spec) of the kernels a call of these sizes launches.

    The registry's entries (:func:`all_specs`) do not cover hidden sizes and key lengths whose
    configuration is made at run time (generated tuned entries, the measured general shapes):
    a model's own sizes are precompiled with this. Norms: every dtype combination of ``ops`` at
    each hidden size, for rows a multiple of the tuned row multiple and not; softmax: every
    variant and dtype at each key length. Arrays are taken as freshly allocated (pointers
    aligned, rows as aligned as their pitch allows); ``backend`` selects as dispatch does
    (its own measured entries).
    """
    wanted = {o for group in ops for o in OP_GROUPS[group]}
    out: dict[tuple, tuple[str, bool, object]] = {}
    norm_keys = dict.fromkeys(
        c.key for c in registry.norm_configs(include_fp8=True) if c.op in wanted
    )
    for cols in hidden:
        for key in norm_keys:
            sizes = {registry.itemsize(t) for t in (key.input, key.output)}
            vec = tuple((byte_alignment(cols * n), n) for n in sorted(sizes))
            for rows in (registry.TUNED_ROW_MULTIPLE, registry.TUNED_ROW_MULTIPLE + 1):
                cfg, spec = norm_spec_for(backend, key, rows, cols, vec, _LIMITS)
                out.setdefault((spec.kernel_key,), (key.op.split("_")[0], cfg.is_backward, spec))
    softmax_ops = [o for o in registry.SOFTMAX_OPS if o in wanted]
    for cols in keys:
        for op in softmax_ops:
            for variant in registry.SOFTMAX_VARIANTS:
                for dtype in registry.SOFTMAX_DTYPES:
                    size = registry.itemsize(dtype)
                    vec = [(byte_alignment(cols * size), size)]
                    if variant == "masked" and op == "softmax_fwd":
                        vec.append((byte_alignment(cols), 1))
                    cfg = registry.select_softmax(op, variant, dtype, cols, backend=backend)
                    for c in (cfg, replace(cfg, stage=False)) if cfg.stage else (cfg,):
                        # a staged entry also runs unstaged where its part does not fit
                        elts = planner.vector_elements(vec, c.num_elts)
                        spec = planner.softmax_spec(c, cols, elts, _LIMITS)
                        out.setdefault(
                            (spec.kernel_key, spec.ctas_per_row), ("softmax", c.is_backward, spec)
                        )
    return list(out.values())


def _widths(n: int) -> tuple[int, ...]:
    """n, n/2, ..., 1: the vector widths a configuration of n-element vectors may run with."""
    return tuple(n >> k for k in range(n.bit_length()))


def precompile(
    backend: str, ops: Iterable[str], arch: str | None, progress=None, specs=None
) -> PrecompileResult:
    """Compile the specs of ``ops`` (or the given ``specs``) with ``backend`` for ``arch``.

    NVRTC compiles run on a thread pool (NVRTC releases the GIL: 4x faster than one thread on a
    2-core machine, measured on 12 LayerNorm kernels); Numba builds run in worker processes and
    store linked cubins in the same disk cache, GPU or not. Either way there is one worker a
    core (``NUMBA_NORMS_PRECOMPILE_WORKERS`` to change it). Without ``arch`` the current GPU's
    arch is used.
    """
    import rtc

    todo = list(all_specs(ops, backend) if specs is None else specs)
    start = time.perf_counter()
    if arch is None:  # this GPU's arch: compile only, the first launch loads from the cache
        info = rtc.device_info()
        if info is None:
            raise RuntimeError("no GPU: give an arch (e.g. sm_90) to precompile")
        arch = info.arch
    if backend == "nvrtc":

        def one(item) -> bool:
            module, backward, spec = item
            mod = backend_module(backend, module)
            (mod.compile_backward if backward else mod.compile_forward)(spec, arch=arch)
            return rtc.last_origin() != "compiled"  # disk or memory: it was there already

        cached = 0
        with ThreadPoolExecutor(max_workers=_workers()) as pool:  # NVRTC drops the GIL
            for hit in pool.map(one, todo):
                cached += hit
                if progress is not None:
                    progress.update(1)
        return PrecompileResult(len(todo) - cached, cached, time.perf_counter() - start)
    # Numba compiles hold the GIL (0.4-0.9 s a kernel of Python-side typing and lowering on the
    # 2-core dev box, NVVM 0.06 s of it): worker processes, not threads. The builds touch no
    # GPU, so the workers create no CUDA context.
    workers = min(_workers(), len(todo))
    cached = 0
    if workers <= 1:
        for item in todo:
            cached += _store_numba(item, arch)
            if progress is not None:
                progress.update(1)
    else:
        ctx = multiprocessing.get_context("spawn")  # no forked CUDA or Numba state
        chunk = max(1, min(4, len(todo) // (4 * workers)))  # small lists: spread them too
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            for hit in pool.map(_store_numba, todo, [arch] * len(todo), chunksize=chunk):
                cached += hit
                if progress is not None:
                    progress.update(1)
    return PrecompileResult(len(todo) - cached, cached, time.perf_counter() - start)


def _workers() -> int:
    """Parallel builds (NVRTC threads, Numba processes of 0.2-0.5 GB each):
    ``NUMBA_NORMS_PRECOMPILE_WORKERS``, else one a core this process may run on."""
    raw = os.environ.get("NUMBA_NORMS_PRECOMPILE_WORKERS", "")
    if raw:
        try:
            n = int(raw)
        except ValueError:
            n = 0
        if n < 1:
            raise ValueError(
                f"NUMBA_NORMS_PRECOMPILE_WORKERS: expected a positive integer, got {raw!r}"
            )
        return n
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _store_numba(item: tuple[str, bool, object], arch: str) -> bool:
    """Put one spec's Numba cubins for ``arch`` in the disk cache; True where none was built
    (all were cached already)."""
    module, _backward, spec = item
    from .backends.numba import _norms, softmax

    try:
        origins = (softmax if module == "softmax" else _norms).store_cubins(spec, arch)
    except Exception as exc:  # from a worker: say which kernel
        raise RuntimeError(
            f"Numba build of {spec.config.op} {spec.kernel_key} for {arch} failed: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    return "compiled" not in origins
