"""NVRTC launchers shared by LayerNorm and RMSNorm (kernels in ``norms.cu`` / ``norms.cuh``).

A :class:`~numba_norms.planner.NormSpec` maps to C++ name expressions of the kernel templates;
:func:`compile_spec` compiles them through :func:`rtc.compile` (with this package directory as
the include path, so ``norms.cuh`` is found and is part of the cache key). Loaded kernels are
cached per ``(spec.kernel_key, device)``; launch records (an
:class:`rtc.Launcher` per kernel, scratch offsets) are cached per plan object, so a call costs a
dict lookup, a few attribute reads and the launcher calls.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import rtc

from ...planner import NormPlan, NormSpec
from ..common import (
    NORM_BWD_PARAMS,
    NORM_FINALIZE_PARAMS,
    NORM_FWD_PARAMS,
    NormBwdArgs,
    NormFwdArgs,
)
from ._launch import cached_record, current_device, kernel_source

__all__ = [
    "C_TYPES",
    "NVRTC_OPTIONS",
    "active_clusters",
    "backward",
    "backward_names",
    "compile_backward",
    "compile_forward",
    "compile_spec",
    "exchange",
    "forward",
    "forward_name",
    "launchers",
    "load",
    "occupancy",
    "occupancy_backward",
    "occupancy_forward",
]

_DIR = Path(__file__).resolve().parent
# Storage types of norms.cuh (FP8: forward outputs only).
C_TYPES = {
    "fp32": "float",
    "fp16": "nn::fp16",
    "bf16": "nn::bf16",
    "fp8e4m3": "nn::fp8e4m3",
    "fp8e5m2": "nn::fp8e5m2",
}
# -minimal drops the runtime API declarations NVRTC would otherwise parse (~15 ms a compile).
NVRTC_OPTIONS: tuple[str, ...] = ("-minimal",)

_NULL = 0


def _ctype(dtype: str) -> str:
    try:
        return C_TYPES[dtype]
    except KeyError:
        raise NotImplementedError(f"NVRTC norm kernels: dtype {dtype!r} is not supported") from None


def _flag(b: bool) -> str:
    return "true" if b else "false"


def _template_args(spec: NormSpec) -> str:
    c = spec.config
    return (
        f"{_ctype(c.input)}, {_ctype(c.weight)}, {_ctype(c.output)}, {c.warps_m}, {c.warps_n}, "
        f"{spec.num_elts}, {spec.ldgs}, {_flag(spec.general)}, {_flag(c.is_rms)}"
    )


def _tail(c) -> str:
    """Register cap and software pipelining (the last template arguments of both kernels)."""
    return f"{c.min_ctas_per_sm}, {_flag(c.prefetch)}"


def exchange(spec: NormSpec) -> bool:
    """Whether the forward kernel of ``spec`` is compiled with the inter-CTA exchange.

    Rows of several CTAs need it. Without it the column step is a constant and the kernel
    addresses each row from one pointer (``Slice``). LayerNorm's one-CTA rows leave it out
    (layernorm_fwd_fp8 bf16 1.04-1.32x, fp16 1.06-1.13x; H200 run 129); RMSNorm's only where
    the entry says so (``NormConfig.fold``: folded, 0.47-1.17x of the same shape unfolded, runs
    139-140). Without the exchange alone (the vectors still addressed one by one) every
    one-CTA RMSNorm forward ran 0.43-1.04x (run 134). The backward keeps it always (without it
    ptxas spilled: layernorm_bwd 2048 / 4096 0.48 / 0.46x, run 127).
    """
    c = spec.config
    if spec.multi_cta:
        return True
    return c.is_rms and not c.fold


def forward_name(spec: NormSpec) -> str:
    """Name expression of the forward kernel of ``spec``."""
    if spec.config.is_backward:
        raise ValueError(f"{spec.op} is not a forward op")
    return f"norm_fwd<{_template_args(spec)}, {_tail(spec.config)}, {_flag(exchange(spec))}>"


def backward_names(spec: NormSpec) -> tuple[str, str]:
    """Name expressions of the backward kernel of ``spec`` and of its finalize kernel."""
    c = spec.config
    if not c.is_backward:
        raise ValueError(f"{spec.op} is not a backward op")
    main = f"norm_bwd<{_template_args(spec)}, {_flag(c.fused_add)}, {_tail(c)}, {c.wgrad_smem}>"
    fin = f"norm_bwd_finalize<{_ctype(c.weight)}, {_flag(not c.is_rms)}>"
    return main, fin


def _names(spec: NormSpec) -> tuple[str, ...]:
    return backward_names(spec) if spec.config.is_backward else (forward_name(spec),)


def compile_spec(
    spec: NormSpec, arch: str | None = None, options: tuple[str, ...] = ()
) -> rtc.CompiledModule:
    """Compile the kernels of ``spec`` (cached in process and on disk by :mod:`rtc`).

    Parameters
    ----------
    spec : NormSpec
        What to specialise the templates on.
    arch : str, optional
        ``"sm_90"`` etc.; default: the current device's (needs a GPU).
    options : tuple of str
        Extra NVRTC flags (e.g. ``("-Xptxas=-v",)`` to see register counts in ``.log``).

    Returns
    -------
    rtc.CompiledModule
        Its ``symbols`` hold the name expressions of :func:`forward_name` or
        :func:`backward_names`.
    """
    return rtc.compile(
        kernel_source("norms.cu"),
        _names(spec),
        arch=arch,
        name=f"norms_{spec.op}.cu",
        options=NVRTC_OPTIONS + tuple(options),
        include_dirs=(_DIR,),
    )


# ----------------------------------------------------------------------------------------------
# loaded kernels: (kernel_key, device) -> (main, finalize or None)
# ----------------------------------------------------------------------------------------------

_kernels: dict[tuple, tuple[Any, Any]] = {}
_kernels_lock = threading.Lock()


def load(spec: NormSpec, device: int | None = None) -> tuple[Any, Any]:
    """Compile (for the current device) and load the kernels of ``spec``.

    Returns
    -------
    (rtc.Kernel, rtc.Kernel or None)
        The main kernel and, for backward specs, the finalize kernel.
    """
    if device is None:
        device = current_device("NVRTC norm kernels")
    key = (spec.kernel_key, device)
    ks = _kernels.get(key)
    if ks is not None:
        return ks
    # No lock around the compile: rtc compiles concurrent equal requests once and different
    # specs concurrently, and caches loaded kernels per device.
    mod = compile_spec(spec)
    loaded = [mod.kernel(n) for n in _names(spec)]
    if loaded[0].device != device:
        raise RuntimeError(
            f"norm kernels requested for device {device} while device {loaded[0].device} is current"
        )
    with _kernels_lock:
        return _kernels.setdefault(key, (loaded[0], loaded[1] if len(loaded) > 1 else None))


def occupancy(spec: NormSpec) -> int:
    """Max resident CTAs per SM of the main kernel of ``spec`` on the current device."""
    main, _ = load(spec)
    return main.occupancy(spec.threads, 0)


def active_clusters(spec: NormSpec, cluster: int) -> int:
    """Clusters of ``cluster`` CTAs of the main kernel of ``spec`` the current device holds."""
    main, _ = load(spec)
    return main.max_active_clusters(cluster, spec.threads, 0)


def _direction(spec: NormSpec, backward: bool) -> NormSpec:
    if spec.config.is_backward != backward:
        raise ValueError(f"{spec.op} is not a {'backward' if backward else 'forward'} op")
    return spec


def _compile(spec: NormSpec, arch: str | None) -> rtc.CompiledModule:
    if arch is not None:
        return compile_spec(spec, arch)
    load(spec)  # compile for the current device and load: the first launch finds them ready
    return compile_spec(spec)  # an in-process cache hit by now


def compile_forward(spec: NormSpec, arch: str | None = None) -> rtc.CompiledModule:
    """The compiled module of a forward spec (loaded on the current device unless ``arch``)."""
    return _compile(_direction(spec, False), arch)


def compile_backward(spec: NormSpec, arch: str | None = None) -> rtc.CompiledModule:
    """The compiled module of a backward spec (main and finalize kernels)."""
    return _compile(_direction(spec, True), arch)


def occupancy_forward(spec: NormSpec) -> int:
    """Max resident CTAs per SM of a forward spec's kernel on the current device."""
    return occupancy(_direction(spec, False))


def occupancy_backward(spec: NormSpec) -> int:
    """Max resident CTAs per SM of a backward spec's main kernel on the current device."""
    return occupancy(_direction(spec, True))


# ----------------------------------------------------------------------------------------------
# launch records, one per (plan, device)
# ----------------------------------------------------------------------------------------------


class _Launch:
    """Everything a launch of one plan needs that does not change between calls: the loaded
    kernels wrapped in :class:`rtc.Launcher` (grid, block, parameter layout fixed)."""

    __slots__ = (
        "plan", "main", "finalize", "rows", "cols", "barrier_offset", "barrier_count",
        "stats_offset", "multi", "partial_offset", "dbeta_partial_offset", "partial_rows",
    )  # fmt: skip

    def __init__(self, plan: NormPlan, device: int) -> None:
        self.plan = plan  # keeps id(plan) from being reused while this record is cached
        main, finalize = load(plan.spec, device)
        params = NORM_BWD_PARAMS if plan.spec.config.is_backward else NORM_FWD_PARAMS
        self.main = rtc.Launcher(
            main, tuple(plan.grid), tuple(plan.block), params,
            cooperative=bool(plan.cooperative), cluster=plan.cluster,
            programmatic=plan.dependent,
        )  # fmt: skip
        self.finalize = None
        if finalize is not None:
            fgrid, fblock = tuple(plan.finalize_grid), tuple(plan.finalize_block)
            self.finalize = rtc.Launcher(
                finalize, fgrid, fblock, NORM_FINALIZE_PARAMS,
                programmatic=plan.finalize_dependent,
            )  # fmt: skip
        self.rows = plan.rows
        self.cols = plan.cols
        self.multi = plan.ctas_per_row > 1
        self.barrier_offset = plan.barrier_offset
        self.barrier_count = plan.barrier_bytes // 4
        self.stats_offset = plan.stats_offset
        self.partial_offset = plan.partial_offset
        self.dbeta_partial_offset = plan.dbeta_partial_offset
        self.partial_rows = plan.partial_rows


_launches: dict[tuple[int, int], _Launch] = {}


def _launch_record(plan: NormPlan, device: int) -> _Launch:
    return cached_record(_launches, _Launch, plan, device)


def _row_stride(t: Any) -> int:
    """Row pitch in elements (the common 2-D case without the general flattening walk)."""
    s = t.strides
    if len(s) == 2:
        return s[0]
    if len(s) == 1:
        return t.shape[0]
    return t.rows_cols()[2]


# Zeroes the inter-CTA barrier counters on the launch stream (a module attribute: tests fake it).
_memset = rtc.memset_d32_async


def _scratch_ptrs(rec: _Launch, scratch: Any, stream: int) -> tuple[int, int, int]:
    """(stats, barrier, scratch base) addresses; zeroes the barrier counters on ``stream`` (a
    cluster launch has none)."""
    if not rec.multi:
        return _NULL, _NULL, _NULL if scratch is None else scratch.ptr
    if scratch is None:
        raise ValueError("several CTAs per row need a scratch buffer (barrier and statistics)")
    base = scratch.ptr
    barrier = base + rec.barrier_offset
    if rec.barrier_count:
        _memset(barrier, 0, rec.barrier_count, stream)
    return base + rec.stats_offset, barrier, base


def launchers(plan: NormPlan, device: int) -> tuple[rtc.Launcher, rtc.Launcher | None]:
    """(main, finalize or None) launchers of ``plan`` on ``device``."""
    rec = _launch_record(plan, device)
    return rec.main, rec.finalize


def forward(plan: NormPlan, args: NormFwdArgs, stream: int) -> None:
    """Launch the forward kernel of ``plan`` on ``stream`` (a raw CUstream handle)."""
    x = args.x
    rec = _launch_record(plan, x.device)
    stats, barrier, _ = _scratch_ptrs(rec, args.scratch, stream)
    beta, mu = args.beta, args.mu
    scale, amax, scale_inv = args.scale, args.amax, args.scale_inv
    rec.main(
        stream,
        x.ptr,
        args.gamma.ptr,
        _NULL if beta is None else beta.ptr,
        args.y.ptr,
        _NULL if mu is None else mu.ptr,
        args.rsigma.ptr,
        rec.rows,
        rec.cols,
        _row_stride(x),
        _row_stride(args.y),
        args.eps,
        1 if args.zero_centered else 0,
        stats,
        barrier,
        _NULL if scale is None else scale.ptr,
        _NULL if amax is None else amax.ptr,
        _NULL if scale_inv is None else scale_inv.ptr,
    )


def backward(plan: NormPlan, args: NormBwdArgs, stream: int) -> None:
    """Launch the backward and finalize kernels of ``plan`` on ``stream``."""
    x = args.x
    rec = _launch_record(plan, x.device)
    if args.scratch is None:
        raise ValueError("norm backward needs a scratch buffer for the dgamma/dbeta partials")
    stats, barrier, base = _scratch_ptrs(rec, args.scratch, stream)
    dgamma_part = base + rec.partial_offset
    has_beta = args.dbeta is not None
    dbeta_part = base + rec.dbeta_partial_offset if has_beta else _NULL
    add, mu = args.add, args.mu
    rec.main(
        stream,
        args.dy.ptr,
        x.ptr,
        _NULL if mu is None else mu.ptr,
        args.rsigma.ptr,
        args.gamma.ptr,
        args.dx.ptr,
        _NULL if add is None else add.ptr,
        dgamma_part,
        dbeta_part,
        rec.rows,
        rec.cols,
        _row_stride(args.dy),
        _row_stride(x),
        _row_stride(args.dx),
        0 if add is None else _row_stride(add),
        1 if args.zero_centered else 0,
        stats,
        barrier,
    )
    rec.finalize(
        stream,
        dgamma_part,
        dbeta_part,
        args.dgamma.ptr,
        _NULL if not has_beta else args.dbeta.ptr,
        rec.partial_rows,
        rec.cols,
    )
