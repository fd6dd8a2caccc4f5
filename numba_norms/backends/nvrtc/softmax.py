"""Fused-softmax launchers of the NVRTC backend (kernels: ``softmax.cu``, helpers: ``norms.cuh``).

A :class:`~numba_norms.planner.SoftmaxSpec` maps to one C++ name expression,
``softmax_fwd<T, WARPS_M, WARPS_N, NUM_ELTS, LDGS, VARIANT, MIN_CTAS, PREFETCH>``,
``softmax_fwd_stream<T, WARPS_N, NUM_ELTS, CHUNK, VARIANT, MIN_CTAS, REVERSE, STAGE>``
(streaming entries), ``softmax_bwd<T, WARPS_M, WARPS_N, NUM_ELTS, LDGS, MIN_CTAS, PREFETCH>`` or
``softmax_bwd_stream<T, WARPS_N, NUM_ELTS, CHUNK, MIN_CTAS, REVERSE>``, compiled through
:func:`rtc.compile` with this package directory as the include path (so the headers are part of
the cache key). Specs with one CTA a row are built with ``SOFTMAX_MULTI_CTA=0`` (no inter-CTA
exchange, and the column step a constant), others with ``SOFTMAX_ROW_CTAS=<CTAs a row>`` (the
exchange, the count and the column step constants). Loaded kernels are cached per
``(spec.kernel_key, spec.ctas_per_row, device)`` and launch
records (an :class:`rtc.Launcher`) per plan object, so a call costs a dict lookup, a few
attribute reads and one launcher call (plus a barrier memset when a row spans several CTAs).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import rtc

from ...planner import RowPlan, SoftmaxSpec
from ..common import SOFTMAX_BWD_PARAMS, SOFTMAX_FWD_PARAMS, SoftmaxBwdArgs, SoftmaxFwdArgs
from ._launch import cached_record, current_device, kernel_source

__all__ = [
    "launchers",
    "C_TYPES",
    "NVRTC_OPTIONS",
    "VARIANT_IDS",
    "backward",
    "compile_backward",
    "compile_forward",
    "compile_spec",
    "forward",
    "kernel_name",
    "load",
    "active_clusters",
    "occupancy_backward",
    "occupancy_forward",
]

_DIR = Path(__file__).resolve().parent
C_TYPES = {"fp32": "float", "fp16": "nn::fp16", "bf16": "nn::bf16"}
VARIANT_IDS = {"scaled": 0, "masked": 1, "upper_triang": 2, "aligned_causal": 3}
# -minimal skips the runtime-API declarations NVRTC would otherwise parse (~15 ms a compile).
# -Ofast-compile=min ("minimal impact on run time") cuts NVVM/ptxas time by about a quarter; on
# these kernels it removes the small forward spills and adds registers to some small ones.
NVRTC_OPTIONS: tuple[str, ...] = ("-minimal", "-Ofast-compile=min")

_NULL = 0
_SINGLE_CTA = {"SOFTMAX_MULTI_CTA": 0}
_ROW_CTAS = "SOFTMAX_ROW_CTAS"
_FWD = "softmax_fwd"
_BWD = "softmax_bwd"


def kernel_name(spec: SoftmaxSpec) -> str:
    """C++ name expression of the kernel of ``spec``."""
    c = spec.config
    try:
        ctype = C_TYPES[c.dtype]
    except KeyError:
        raise NotImplementedError(f"NVRTC softmax: dtype {c.dtype!r} is not supported") from None
    args = f"{ctype}, {c.warps_m}, {c.warps_n}, {spec.num_elts}, {spec.ldgs}"
    pf = "true" if c.prefetch else "false"
    if spec.stream:
        head = f"{ctype}, {c.warps_n}, {spec.num_elts}, {spec.ldgs}"
        rev = "true" if c.reverse else "false"
        if c.is_backward:
            return f"{_BWD}_stream<{head}, {c.min_ctas_per_sm}, {rev}>"
        stage = "true" if c.stage else "false"
        return (
            f"{_FWD}_stream<{head}, {VARIANT_IDS[c.variant]}, {c.min_ctas_per_sm}, {rev}, {stage}>"
        )
    if c.is_backward:
        return f"{_BWD}<{args}, {c.min_ctas_per_sm}, {pf}>"
    return f"{_FWD}<{args}, {VARIANT_IDS[c.variant]}, {c.min_ctas_per_sm}, {pf}>"


def _defines(spec: SoftmaxSpec) -> dict[str, int]:
    return {_ROW_CTAS: spec.ctas_per_row} if spec.multi_cta else _SINGLE_CTA


def compile_spec(
    spec: SoftmaxSpec, arch: str | None = None, options: tuple[str, ...] = ()
) -> rtc.CompiledModule:
    """Compile the kernel of ``spec`` (cached in process and on disk by :mod:`rtc`).

    Specs with one CTA a row get a build without the inter-CTA exchange
    (``SOFTMAX_MULTI_CTA=0``: faster to compile, fewer registers); the same template with
    several CTAs a row is a separate module for each count (``SOFTMAX_ROW_CTAS``: the column
    step a constant; a launch on a grid of another width traps).

    Parameters
    ----------
    spec : SoftmaxSpec
        What to specialise the template on.
    arch : str, optional
        ``"sm_90"`` etc.; default: the current device's (needs a GPU).
    options : tuple of str
        Extra NVRTC flags (e.g. ``("-Xptxas=-v",)`` to see register counts in ``.log``).

    Returns
    -------
    rtc.CompiledModule
        Its ``symbols`` hold :func:`kernel_name` of ``spec``.
    """
    return rtc.compile(
        kernel_source("softmax.cu"),
        (kernel_name(spec),),
        arch=arch,
        name=f"{spec.op}.cu",
        options=NVRTC_OPTIONS + tuple(options),
        defines=_defines(spec),
        include_dirs=(_DIR,),
    )


# ----------------------------------------------------------------------------------------------
# loaded kernels: (kernel_key, device) -> rtc.Kernel
# ----------------------------------------------------------------------------------------------

_kernels: dict[tuple, Any] = {}
_kernels_lock = threading.Lock()


def load(spec: SoftmaxSpec, device: int | None = None) -> Any:
    """Compile (for the current device) and load the kernel of ``spec``.

    Returns
    -------
    rtc.Kernel
    """
    if device is None:
        device = current_device("NVRTC softmax kernels")
    key = (spec.kernel_key, spec.ctas_per_row, device)
    k = _kernels.get(key)
    if k is not None:
        return k
    # No lock around the compile (as the norms' load): rtc compiles concurrent equal requests
    # once and different specs concurrently, and caches loaded kernels per device.
    k = compile_spec(spec).kernel(kernel_name(spec))
    if k.device != device:
        raise RuntimeError(
            f"softmax kernel requested for device {device} while device {k.device} is current"
        )
    with _kernels_lock:
        return _kernels.setdefault(key, k)


def _check_op(spec: SoftmaxSpec, op: str) -> None:
    if spec.op != op:
        raise ValueError(f"expected a {op} spec, got {spec.op}")


def _compile_op(spec: SoftmaxSpec, op: str, arch: str | None) -> rtc.CompiledModule:
    _check_op(spec, op)
    if arch is not None:
        return compile_spec(spec, arch)
    load(spec)
    return compile_spec(spec)  # an in-process cache hit by now


def compile_forward(spec: SoftmaxSpec, arch: str | None = None) -> rtc.CompiledModule:
    """Build (cached) the forward kernel of ``spec``.

    With ``arch`` this only compiles to CUBIN (no GPU needed); without, it compiles for the
    current device and loads the kernel, so the first launch finds it ready.
    """
    return _compile_op(spec, _FWD, arch)


def compile_backward(spec: SoftmaxSpec, arch: str | None = None) -> rtc.CompiledModule:
    """Build (cached) the backward kernel of ``spec`` (see :func:`compile_forward`)."""
    return _compile_op(spec, _BWD, arch)


def occupancy_forward(spec: SoftmaxSpec) -> int:
    """Max active CTAs per SM of the forward kernel on the current device."""
    _check_op(spec, _FWD)
    return load(spec).occupancy(spec.threads, 0)


def occupancy_backward(spec: SoftmaxSpec) -> int:
    """Max active CTAs per SM of the backward kernel on the current device."""
    _check_op(spec, _BWD)
    return load(spec).occupancy(spec.threads, 0)


def active_clusters(spec: SoftmaxSpec, cluster: int) -> int:
    """Clusters of ``cluster`` CTAs of the spec's kernel the current device holds at once."""
    return load(spec).max_active_clusters(cluster, spec.threads, 0)


# ----------------------------------------------------------------------------------------------
# launch records, one per (plan, device)
# ----------------------------------------------------------------------------------------------


class _Launch:
    """Everything a launch of one plan needs that does not change between calls: the loaded
    kernel wrapped in an :class:`rtc.Launcher` (grid, block, parameter layout fixed)."""

    __slots__ = (
        "plan", "kernel", "rows", "cols", "multi", "barrier_offset", "barrier_count",
        "stats_offset",
    )  # fmt: skip

    def __init__(self, plan: RowPlan, device: int) -> None:
        self.plan = plan  # keeps id(plan) from being reused while this record is cached
        params = SOFTMAX_BWD_PARAMS if plan.spec.op == _BWD else SOFTMAX_FWD_PARAMS
        self.kernel = rtc.Launcher(
            load(plan.spec, device),
            tuple(plan.grid),
            tuple(plan.block),
            params,
            shared_mem=plan.shared_bytes,
            cooperative=bool(plan.cooperative),
            cluster=plan.cluster,
            programmatic=plan.dependent,
        )
        self.rows = plan.rows
        self.cols = plan.cols
        self.multi = plan.ctas_per_row > 1
        self.barrier_offset = plan.barrier_offset
        self.barrier_count = plan.barrier_bytes // 4
        self.stats_offset = plan.stats_offset


_launches: dict[tuple[int, int], _Launch] = {}


def _launch_record(plan: RowPlan, device: int) -> _Launch:
    return cached_record(_launches, _Launch, plan, device)


def _row_stride(t: Any) -> int:
    """Row pitch in elements: the stride of the innermost leading dimension longer than 1.

    The ops layer has already checked (``rows_cols``) that the leading dimensions flatten to one
    uniform row stride; the common case reads it off directly.
    """
    shape = t.shape
    if len(shape) >= 2 and shape[-2] != 1:
        return t.strides[-2]
    return t.rows_cols()[2]


# Zeroes the inter-CTA barrier counters on the launch stream (a module attribute: tests fake it).
_memset = rtc.memset_d32_async


def _scratch_ptrs(rec: _Launch, scratch: Any, stream: int) -> tuple[int, int]:
    """(stats, barrier) addresses; zeroes the barrier counters on ``stream`` first (a cluster
    launch has none)."""
    if not rec.multi:
        return _NULL, _NULL
    if scratch is None:
        raise ValueError("several CTAs per row need a scratch buffer (barrier and statistics)")
    base = scratch.ptr
    barrier = base + rec.barrier_offset
    if rec.barrier_count:
        _memset(barrier, 0, rec.barrier_count, stream)
    return base + rec.stats_offset, barrier


def launchers(plan: RowPlan, device: int) -> tuple[rtc.Launcher, None]:
    """(launcher, None) of ``plan`` on ``device`` (the norms' shape of this call)."""
    return _launch_record(plan, device).kernel, None


def forward(plan: RowPlan, args: SoftmaxFwdArgs, stream: int) -> None:
    """Launch the forward kernel of ``plan`` on ``stream`` (a raw CUstream handle)."""
    x = args.x
    rec = _launch_record(plan, x.device)
    stats, barrier = _scratch_ptrs(rec, args.scratch, stream)
    mask = args.mask
    rec.kernel(
        stream,
        x.ptr,
        _NULL if mask is None else mask.ptr,
        args.y.ptr,
        rec.rows,
        rec.cols,
        _row_stride(x),
        _row_stride(args.y),
        0 if mask is None else _row_stride(mask),
        args.sq,
        args.heads,
        args.mask_batch,
        args.scale,
        stats,
        barrier,
    )


def backward(plan: RowPlan, args: SoftmaxBwdArgs, stream: int) -> None:
    """Launch the backward kernel of ``plan`` on ``stream`` (a raw CUstream handle)."""
    y = args.y
    rec = _launch_record(plan, y.device)
    stats, barrier = _scratch_ptrs(rec, args.scratch, stream)
    rec.kernel(
        stream,
        args.dy.ptr,
        y.ptr,
        args.dx.ptr,
        rec.rows,
        rec.cols,
        _row_stride(args.dy),
        _row_stride(y),
        _row_stride(args.dx),
        args.scale,
        stats,
        barrier,
    )
