"""The one place that knows both backends.

For each call: read ``DISABLE_NVRTC`` (at call time), pick the registry entry, ask the planner for
the spec and plan, fetch the compiled kernel from the chosen backend and launch it. Plans are
cached per problem so a repeated call costs a dictionary lookup.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import importlib
import itertools
import os
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from . import planner, registry
from .planner import CLUSTER_CC, DEPENDENT_LAUNCH_CC, MAX_CLUSTER, DeviceLimits, PlanError

__all__ = [
    "BackendChoice",
    "choose_backend",
    "device_limits",
    "last_backend",
    "norm_spec_for",
    "nvrtc_status",
    "run_norm",
    "run_softmax",
    "simulator_enabled",
]

_TRUE = {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class BackendChoice:
    """The backend a call uses and why."""

    name: str  # "nvrtc" | "numba"
    reason: str


_simulator: bool | None = None


def simulator_enabled() -> bool:
    """True when Numba's CUDA simulator is on (NUMBA_ENABLE_CUDASIM=1 before numba import)."""
    global _simulator
    if _simulator is None:
        from numba import config  # fixed once numba is imported, so read it once

        _simulator = bool(config.ENABLE_CUDASIM)
    return _simulator


_nvrtc_lock = threading.Lock()
_nvrtc_state: tuple[bool, str] | None = None
_warned_fallback = False


def nvrtc_status() -> tuple[bool, str]:
    """(usable, detail): whether NVRTC can be loaded, and its version or the failure."""
    global _nvrtc_state
    if _nvrtc_state is None:
        with _nvrtc_lock:
            if _nvrtc_state is None:
                try:
                    import rtc

                    major, minor = rtc.nvrtc_version()
                    _nvrtc_state = (True, f"NVRTC {major}.{minor}")
                except Exception as exc:  # any failure to load the library means "no NVRTC"
                    _nvrtc_state = (False, f"{type(exc).__name__}: {exc}")
    return _nvrtc_state


def _env_reader():
    """A cheap read of DISABLE_NVRTC's raw value (the torch fast path keys signatures on it).
    ``os.environ.get`` encodes the name and decodes the value on every call (0.7 us of a 1.8 us
    signature on the dev box); on POSIX CPython the mapping's own dict of bytes holds the same
    values, updated by every ``os.environ`` assignment."""
    data = getattr(os.environ, "_data", None)
    if os.name == "posix" and isinstance(data, dict):
        name = os.fsencode("DISABLE_NVRTC")
        return lambda: data.get(name)
    return lambda: os.environ.get("DISABLE_NVRTC")


nvrtc_switch = _env_reader()


def choose_backend() -> BackendChoice:
    """The backend a call made now would use, and why."""
    return _choose(nvrtc_switch())


def _choose(switch: bytes | str | None) -> BackendChoice:
    """The backend for DISABLE_NVRTC's raw value ``switch`` (as :data:`nvrtc_switch` reads it:
    a launch records the value it was chosen by, so the fast path files it under that one)."""
    global _warned_fallback
    if isinstance(switch, bytes):
        switch = os.fsdecode(switch)
    if (switch or "").strip().lower() in _TRUE:
        return BackendChoice("numba", "DISABLE_NVRTC is set")
    if simulator_enabled():
        return BackendChoice("numba", "Numba's CUDA simulator is on (NUMBA_ENABLE_CUDASIM=1)")
    ok, detail = nvrtc_status()
    if not ok:
        if not _warned_fallback:
            _warned_fallback = True
            warnings.warn(
                f"NVRTC cannot be loaded ({detail}); numba-norms falls back to Numba kernels",
                RuntimeWarning,
                stacklevel=3,
            )
        return BackendChoice("numba", f"NVRTC cannot be loaded: {detail}")
    return BackendChoice("nvrtc", f"default ({detail})")


_local = threading.local()


def last_backend() -> str | None:
    """The backend that ran this thread's last kernel launch ("nvrtc" or "numba")."""
    return getattr(_local, "backend", None)


_limits_cache: dict[int | None, DeviceLimits] = {}


def device_limits(device: int | None) -> DeviceLimits:
    """Planner limits of a device (the simulator's when it is on)."""
    if simulator_enabled():
        return DeviceLimits.simulator()
    limits = _limits_cache.get(device)
    if limits is None:
        import rtc

        info = rtc.device_info(device)
        if info is None:
            raise RuntimeError("no CUDA GPU is available (set NUMBA_ENABLE_CUDASIM=1 to simulate)")
        clusters = tuple(info.cc) >= CLUSTER_CC
        cooperative = bool(info.cooperative_launch)
        limits = DeviceLimits(
            sm_count=info.sm_count,
            max_threads_per_block=info.max_threads_per_block,
            max_shared_per_block_optin=info.max_shared_per_block_optin,
            cooperative=cooperative,
            dependent_launch=tuple(info.cc) >= DEPENDENT_LAUNCH_CC,
            clusters=clusters,
            name=info.name,
            # without cooperative launch nothing promises the CTAs of a row are resident
            # together (they would spin at the counter): rows of one cluster at most
            **({} if cooperative else {"max_ctas_per_row": MAX_CLUSTER if clusters else 1}),
        )
        _limits_cache[device] = limits
    return limits


_modules: dict[tuple[str, str], ModuleType] = {}


def backend_module(backend: str, op_module: str) -> ModuleType:
    """``numba_norms.backends.<backend>.<op_module>`` (imported once)."""
    key = (backend, op_module)
    mod = _modules.get(key)
    if mod is None:
        mod = importlib.import_module(f"numba_norms.backends.{backend}.{op_module}")
        _modules[key] = mod
    return mod


def _clusters(mod: ModuleType, spec, limits: DeviceLimits) -> int | None:
    """How many clusters of the spec's row group the device holds (None: no cluster)."""
    cluster = planner.cluster_size(spec.ctas_per_row, limits)
    return mod.active_clusters(spec, cluster) if cluster > 1 else None


# (backend, device, op, dtypes..., rows, cols, vector elements, tuned allowed) -> plan
_plan_cache: dict[tuple, planner.RowPlan] = {}
_plan_lock = threading.Lock()


def norm_spec_for(
    backend: str,
    key: registry.NormKey,
    rows: int,
    cols: int,
    vec: tuple[tuple[int, int], ...],
    limits: DeviceLimits,
    measured: bool = True,
) -> tuple[registry.NormConfig, planner.NormSpec]:
    """The configuration and kernel spec a norm call selects (before occupancy is known):
    ``vec`` holds the ``(alignment, itemsize)`` of its arrays (``measured`` False: TE's
    entries only). Precompile asks the same."""
    # The registry's alignment: the bytes of x a vector may span with every array allowing its
    # own share (8 fp8 outputs take 8 bytes: rows of 4104 columns, bf16 -> fp8, still take
    # 16-byte vectors of x)
    size = registry.itemsize(key.input)
    alignment = planner.vector_elements(vec, registry.TUNED_ALIGNMENT // size) * size
    kw = {"backend": backend, "measured": measured}
    cfg = registry.select_norm(key, cols, rows, alignment, **kw)
    try:
        spec = planner.norm_spec(cfg, cols, planner.vector_elements(vec, cfg.num_elts), limits)
    except PlanError:
        # A tuned entry this device cannot run (e.g. several CTAs a row in the simulator).
        cfg = registry.select_norm(key, cols, rows, alignment, allow_tuned=False, **kw)
        spec = planner.norm_spec(cfg, cols, planner.vector_elements(vec, cfg.num_elts), limits)
    return cfg, spec


def _norm_plan(
    backend: str,
    mod: ModuleType,
    key: registry.NormKey,
    rows: int,
    cols: int,
    vec: tuple[tuple[int, int], ...],
    device: int | None,
) -> planner.RowPlan:
    cache_key = (backend, device, key, rows, cols, vec)
    plan = _plan_cache.get(cache_key)
    if plan is not None:
        return plan
    occupancy = mod.occupancy_backward if key.op.endswith("_bwd") else mod.occupancy_forward

    def plan_with(limits: DeviceLimits) -> planner.RowPlan:
        cfg, spec = norm_spec_for(backend, key, rows, cols, vec, limits)
        try:
            return planner.norm_plan(
                spec, rows, cols, limits, occupancy(spec), _clusters(mod, spec, limits)
            )
        except PlanError:
            if cfg.origin != "measured":
                raise
        # Measured on one backend and GPU; where this kernel cannot be resident (occupancy 0),
        # TE's entry serves (chosen as any call's, with its own fallback).
        cfg, spec = norm_spec_for(backend, key, rows, cols, vec, limits, measured=False)
        return planner.norm_plan(
            spec, rows, cols, limits, occupancy(spec), _clusters(mod, spec, limits)
        )

    plan = fitted_plan(plan_with, device_limits(device))
    with _plan_lock:  # a plan made meanwhile by another thread wins: one object a key
        return _plan_cache.setdefault(cache_key, plan)


def _on_device(device: int | None) -> contextlib.AbstractContextManager:
    """The call's device current while it plans, loads and launches (a call on arrays of a GPU
    other than the thread's current one runs there, as torch's device guard; not simulated)."""
    if device is None or simulator_enabled():
        return contextlib.nullcontext()
    import rtc

    return rtc.on_device(device)


def run_norm(op: str, key: registry.NormKey, call, args, rows: int, cols: int, tensors) -> None:
    """Plan and launch one norm op (``op`` is "layernorm" or "rmsnorm").

    ``tensors`` are the call's arrays whose alignment limits the vector width: a tuple of
    ``(alignment_bytes, itemsize)`` pairs.
    """
    switch = nvrtc_switch()
    choice = _choose(switch)
    mod = backend_module(choice.name, op)
    vec = tuple(tensors)
    with _on_device(call.device):
        plan = _norm_plan(choice.name, mod, key, rows, cols, vec, call.device)
        launch = mod.backward if key.op.endswith("_bwd") else mod.forward
        with _scratch(call, plan.scratch_bytes) as args.scratch:
            launch(plan, args, call.stream_handle)
    _local.backend = choice.name
    # for the ops' fast path (ops/_fast.py): what ran, the plan-cache entry it came from and
    # the DISABLE_NVRTC value it was chosen by
    ck = (choice.name, call.device, key, rows, cols, vec)
    _local.launch = (choice.name, plan, mod, ck, switch)


def _softmax_plan(
    backend: str,
    mod: ModuleType,
    op: str,
    variant: str,
    dtype: str,
    rows: int,
    cols: int,
    vec: tuple[tuple[int, int], ...],
    device: int | None,
) -> planner.RowPlan:
    cache_key = (backend, device, op, variant, dtype, rows, cols, vec)
    plan = _plan_cache.get(cache_key)
    if plan is not None:
        return plan
    cfg = registry.select_softmax(op, variant, dtype, cols, backend=backend)
    occupancy = mod.occupancy_backward if cfg.is_backward else mod.occupancy_forward

    def plan_with(limits: DeviceLimits) -> planner.RowPlan:
        def plan_of(cfg: registry.SoftmaxConfig) -> planner.RowPlan:
            vec_elts = planner.vector_elements(vec, cfg.num_elts)
            spec = planner.softmax_spec(cfg, cols, vec_elts, limits)
            return planner.softmax_plan(
                spec, rows, cols, limits, occupancy(spec), _clusters(mod, spec, limits)
            )

        return first_plan(softmax_fallbacks(cfg, op, variant, dtype, cols, backend), plan_of)

    plan = fitted_plan(plan_with, device_limits(device))
    with _plan_lock:
        return _plan_cache.setdefault(cache_key, plan)


def softmax_fallbacks(
    cfg: registry.SoftmaxConfig, op: str, variant: str, dtype: str, cols: int, backend: str
) -> list[registry.SoftmaxConfig]:
    """``cfg`` and what to plan, in order, where its plan raises :class:`PlanError`.

    A staged part longer than a CTA's shared memory, or rows of several CTAs without a cluster
    a row (the counter path): the same shape unstaged, streaming its second read from L2. A
    measured entry (timed on one backend and GPU) whose kernel cannot be resident here
    (occupancy 0): the default table's, as for the norms.
    """
    tries = [cfg] + ([dataclasses.replace(cfg, stage=False)] if cfg.stage else [])
    if cfg.keys:
        tries.append(
            registry.select_softmax(op, variant, dtype, cols, measured=False, backend=backend)
        )
    return tries


def first_plan(
    tries: list[registry.SoftmaxConfig],
    plan_of: Callable[[registry.SoftmaxConfig], planner.RowPlan],
) -> planner.RowPlan:
    """The plan of the first of ``tries`` that has one (the last one's PlanError otherwise)."""
    for c in tries[:-1]:
        try:
            return plan_of(c)
        except PlanError:
            continue
    return plan_of(tries[-1])


def fitted_plan(
    plan_with: Callable[[DeviceLimits], planner.RowPlan], limits: DeviceLimits
) -> planner.RowPlan:
    """``plan_with(limits)``; where a row's CTAs cannot all be resident (a long row on a GPU of
    few SMs), planned again allowing only as many CTAs a row as fit, each with a longer part of
    the row, until the plan fits or a row is down to one CTA."""
    while True:
        try:
            return plan_with(limits)
        except planner.ResidencyError as e:
            if not 1 <= e.resident < limits.max_ctas_per_row:
                raise
            limits = dataclasses.replace(limits, max_ctas_per_row=e.resident)


def run_softmax(op: str, variant: str, dtype: str, call, args, rows: int, cols: int, tensors):
    """Plan and launch one softmax kernel (``op`` is "softmax_fwd" or "softmax_bwd")."""
    switch = nvrtc_switch()
    choice = _choose(switch)
    mod = backend_module(choice.name, "softmax")
    vec = tuple(tensors)
    with _on_device(call.device):
        plan = _softmax_plan(choice.name, mod, op, variant, dtype, rows, cols, vec, call.device)
        launch = mod.backward if op == "softmax_bwd" else mod.forward
        with _scratch(call, plan.scratch_bytes) as args.scratch:
            launch(plan, args, call.stream_handle)
    _local.backend = choice.name
    ck = (choice.name, call.device, op, variant, dtype, rows, cols, vec)
    _local.launch = (choice.name, plan, mod, ck, switch)  # for the ops' fast path


# Grow-only scratch per (device, stream) for callers whose arrays have no caching allocator:
# reuse on one stream is ordered by the stream itself, and a cudaMalloc/cudaFree per call would
# both cost tens of microseconds and synchronise the device. A call holds its buffer's lock
# from taking it until its launches are queued: a backward's main kernel writes partial sums
# that its finalize reads (rows of several CTAs: a counter reset, then the kernel), and another
# thread's launches on the same stream must not fall in between. Keyed by the stream's handle:
# the driver releases a destroyed stream (so its handle, which a new stream could get) only
# once its queued work has finished. The per-thread default stream has one handle for every
# thread; its key names the thread by a number never given twice (thread ids are reused, and an
# ended thread's stream may still be running).
_SCRATCH_STREAMS = 16  # buffers kept; past that the least recently used idle one is dropped


class _Pooled:
    """One stream's scratch buffer and the lock its call holds."""

    __slots__ = ("buf", "lock")

    def __init__(self) -> None:
        self.buf: Any = None
        self.lock = threading.Lock()


_scratch_pool: collections.OrderedDict[tuple, _Pooled] = collections.OrderedDict()
_scratch_lock = threading.Lock()
# CU_STREAM_PER_THREAD: one handle, a different stream in each thread
_PER_THREAD_STREAM = 2
_thread_numbers = itertools.count()
_thread = threading.local()


def _pool_key(device: int | None, stream: int) -> tuple:
    if stream != _PER_THREAD_STREAM:
        return (device, stream)
    number = getattr(_thread, "number", None)
    if number is None:
        number = _thread.number = next(_thread_numbers)
    return (device, stream, number)


def _pooled(key: tuple) -> _Pooled:
    """The pool entry of ``key``, made where there is none. Past the pool's size the least
    recently used idle entry goes: its buffer is freed as any array is (Numba's free waits for
    the device, CuPy's pool reuses it in its stream's order)."""
    with _scratch_lock:
        entry = _scratch_pool.get(key)
        if entry is not None:
            _scratch_pool.move_to_end(key)
            return entry
        entry = _scratch_pool[key] = _Pooled()
        if len(_scratch_pool) > _SCRATCH_STREAMS:
            for old_key, old in _scratch_pool.items():
                if old is not entry and not old.lock.locked():
                    del _scratch_pool[old_key]  # a call that took it first keeps it alive
                    break
        return entry


@contextlib.contextmanager
def _scratch(call, nbytes: int) -> Iterator[object]:
    """The scratch of one call's launches (None when it needs none), held for the block."""
    if nbytes == 0:
        yield None
        return
    if call.kind == "torch":
        yield call.scratch(nbytes)  # torch's caching allocator is stream-ordered already
        return
    entry = _pooled(_pool_key(call.device, call.stream_handle))
    with entry.lock:
        if entry.buf is None or entry.buf.size < nbytes:
            entry.buf = None  # the old one freed before the larger one is made
            entry.buf = call.scratch(max(nbytes, 1 << 20))
        yield entry.buf
