"""Per-signature fast path of the norm and softmax calls on torch tensors.

The general path (``_norm``) ingests every argument, checks it, picks and plans a kernel and
allocates the outputs: tens of microseconds of Python a call. A call whose *signature* (kind,
backend, dtypes, shapes, strides, devices, pointer alignment class, flags) equals that of an
earlier call that went through the general path without error passes exactly the same checks
and gets exactly the same plan, so it only needs its pointers read, its outputs allocated and
its launcher called. The general path records such signatures (the ``remember_*`` functions);
anything else (other array kinds, explicit streams, FP8 scale/amax, the fused add, plans that
need an inter-CTA barrier, empty inputs) always takes the general path.
"""

from __future__ import annotations

import math
import os
import sys
import threading
from typing import Any

from .. import dispatch

__all__ = [
    "clear",
    "norm_bwd",
    "norm_fwd",
    "remember_bwd",
    "remember_fwd",
    "remember_softmax_bwd",
    "remember_softmax_fwd",
    "run_softmax_bwd",
    "run_softmax_fwd",
]

_LIMIT = 1024  # signatures kept per direction; cleared when full
_lock = threading.Lock()
_fwd: dict[tuple, tuple] = {}
_bwd: dict[tuple, tuple] = {}


class _Unbound:
    """Stands for torch.Tensor until a torch call is remembered (torch is never imported here)."""


_tensor_type: Any = _Unbound
_empty: Any = None
_empty_like: Any = None
_raw_stream: Any = None
_uint8: Any = None
_float32: Any = None


def _env_reader():
    """A cheap read of DISABLE_NVRTC for the signature (its raw value: the general path
    interprets it). ``os.environ.get`` encodes the name and decodes the value on every call
    (0.7 us of a 1.8 us signature on the dev box); on POSIX CPython the mapping's own dict of
    bytes holds the same values, updated by every ``os.environ`` assignment."""
    data = getattr(os.environ, "_data", None)
    if os.name == "posix" and isinstance(data, dict):
        name = os.fsencode("DISABLE_NVRTC")
        return lambda: data.get(name)
    return lambda: os.environ.get("DISABLE_NVRTC")


_nvrtc_switch = _env_reader()


def clear() -> None:
    """Forget every remembered signature."""
    with _lock:
        for table in (_fwd, _bwd, _sm_fwd, _sm_bwd):
            table.clear()


def _low_bits(*ptrs: int) -> int:
    bits = 0
    for p in ptrs:
        bits |= p
    return bits & 15


def _sig(t: Any) -> tuple:
    return (t.dtype, t.shape, t.stride(), t.device)


def _bind_torch() -> bool:
    """Bind torch's names (once torch is imported and a torch call went through)."""
    global _tensor_type, _empty, _empty_like, _raw_stream, _uint8, _float32
    if dispatch.simulator_enabled():
        return False
    torch = sys.modules.get("torch")
    raw = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
    if torch is None or raw is None:
        return False
    _empty, _empty_like, _raw_stream = torch.empty, torch.empty_like, raw
    _uint8, _float32 = torch.uint8, torch.float32
    _tensor_type = torch.Tensor
    return True


def _last_launch(rows: int, cols: int, barrier_free: bool = True) -> tuple | None:
    """(backend, plan, backend module, plan-cache key) of the general-path launch this thread
    just made, if the fast path can repeat it: rows to run, torch bound, no scratch (or, with
    ``barrier_free`` False, scratch but one CTA a row)."""
    last = getattr(dispatch._local, "launch", None)
    dispatch._local.launch = None
    if last is None or rows == 0 or cols == 0:
        return None
    plan = last[1]
    if plan.ctas_per_row > 1 or (barrier_free and plan.scratch_bytes):
        return None
    if _tensor_type is _Unbound and not _bind_torch():
        return None
    return last


def _store(table: dict, key: tuple, ck: tuple, plan: Any, entry: tuple) -> None:
    """Remember ``entry`` for ``key``, valid while dispatch's plan cache holds ``plan``."""
    with _lock:
        if len(table) >= _LIMIT:
            table.clear()
        table[key] = (ck, plan, entry)


def _hit(table: dict, key: tuple) -> tuple | None:
    """The entry of ``key``, or None; also None once dispatch's plan cache no longer holds the
    plan the entry repeats (cleared or replaced: tools and tests re-plan that way)."""
    rec = table.get(key)
    if rec is None or dispatch._plan_cache.get(rec[0]) is not rec[1]:
        return None
    return rec[2]


# --------------------------------------------------------------------------------------------
# forward
# --------------------------------------------------------------------------------------------


def _fwd_key(kind, x, gamma, beta, zero_centered_gamma, out_dtype) -> tuple:
    bp = 0 if beta is None else beta.data_ptr()
    low = _low_bits(x.data_ptr(), gamma.data_ptr(), bp)
    return (
        kind, _nvrtc_switch(), low, _sig(x), _sig(gamma),
        None if beta is None else _sig(beta), out_dtype, bool(zero_centered_gamma),
    )  # fmt: skip


def norm_fwd(kind, x, gamma, beta, eps, zero_centered_gamma, out_dtype) -> tuple | None:
    """The outputs of a remembered forward signature, or None (take the general path)."""
    # isinstance: parameters (torch.nn.Parameter) are the usual gamma and beta
    if not isinstance(x, _tensor_type) or not isinstance(gamma, _tensor_type):
        return None
    if eps.__class__ is not float or not (0.0 <= eps < math.inf):
        return None
    try:
        entry = _hit(_fwd, _fwd_key(kind, x, gamma, beta, zero_centered_gamma, out_dtype))
    except (TypeError, RuntimeError, AttributeError):  # unhashable out_dtype, sparse, not torch
        return None
    if entry is None:
        return None
    fire, backend, dev, index, y_shape, y_dtype, rows, cols, x_stride, zc = entry
    # empty_like and sizes as separate ints parse faster than a shape tuple (y_dtype None: y is
    # like x, a contiguous tensor of y's dtype)
    y = _empty_like(x) if y_dtype is None else _empty(*y_shape, dtype=y_dtype, device=dev)
    mu = _empty(rows, dtype=_float32, device=dev) if kind == "layernorm" else None
    rs = _empty(rows, dtype=_float32, device=dev)
    fire(
        _raw_stream(index), x.data_ptr(), gamma.data_ptr(),
        0 if beta is None else beta.data_ptr(), y.data_ptr(),
        0 if mu is None else mu.data_ptr(), rs.data_ptr(), rows, cols, x_stride, cols, eps, zc,
        0, 0, 0, 0, 0,
    )  # fmt: skip
    dispatch._local.backend = backend
    return (y, mu, rs) if mu is not None else (y, rs)


def remember_fwd(kind, x, gamma, beta, zero_centered_gamma, out_dtype, y, rows, cols, xt):
    """Record the signature of a forward call that just ran on the general path."""
    last = _last_launch(rows, cols)
    if last is None:
        return
    backend, plan, mod, ck = last
    if not isinstance(x, _tensor_type) or y.data_ptr() & 15:
        return
    try:
        key = _fwd_key(kind, x, gamma, beta, zero_centered_gamma, out_dtype)
        hash(key)
    except (TypeError, RuntimeError, AttributeError):
        return
    fire, _ = mod.launchers(plan, xt.device)
    like = y.dtype == x.dtype and x.is_contiguous()
    entry = (
        fire, backend, y.device, xt.device, tuple(y.shape), None if like else y.dtype, rows,
        cols, xt.rows_cols()[2], 1 if zero_centered_gamma else 0,
    )  # fmt: skip
    _store(_fwd, key, ck, plan, entry)


# --------------------------------------------------------------------------------------------
# backward
# --------------------------------------------------------------------------------------------


def _bwd_key(kind, dy, x, mu, rsigma, gamma, zero_centered_gamma) -> tuple:
    mp = 0 if mu is None else mu.data_ptr()
    low = _low_bits(dy.data_ptr(), x.data_ptr(), gamma.data_ptr(), rsigma.data_ptr(), mp)
    return (
        kind, _nvrtc_switch(), low, _sig(dy), _sig(x),
        None if mu is None else _sig(mu), _sig(rsigma), _sig(gamma), bool(zero_centered_gamma),
    )  # fmt: skip


def norm_bwd(kind, dy, x, mu, rsigma, gamma, zero_centered_gamma) -> tuple | None:
    """The gradients of a remembered backward signature, or None (take the general path)."""
    if not isinstance(x, _tensor_type) or not isinstance(dy, _tensor_type):
        return None
    try:
        entry = _hit(_bwd, _bwd_key(kind, dy, x, mu, rsigma, gamma, zero_centered_gamma))
    except (TypeError, RuntimeError, AttributeError):
        return None
    if entry is None:
        return None
    main, fin, backend, dev, index, rows, cols, strides, zc, part, sizes = entry
    dx_shape, dx_dtype, g_dtype, scratch_bytes, partial_rows = sizes
    dx = _empty_like(x) if dx_dtype is None else _empty(*dx_shape, dtype=dx_dtype, device=dev)
    dgamma = _empty(cols, dtype=g_dtype, device=dev)
    dbeta = _empty(cols, dtype=g_dtype, device=dev) if kind == "layernorm" else None
    base = _empty(scratch_bytes, dtype=_uint8, device=dev).data_ptr()
    dgp = base + part[0]
    dbp = 0 if dbeta is None else base + part[1]
    stream = _raw_stream(index)
    dy_s, x_s = strides
    main(
        stream, dy.data_ptr(), x.data_ptr(), 0 if mu is None else mu.data_ptr(),
        rsigma.data_ptr(), gamma.data_ptr(), dx.data_ptr(), 0, dgp, dbp, rows, cols, dy_s, x_s,
        cols, 0, zc, 0, 0,
    )  # fmt: skip
    fin(
        stream, dgp, dbp, dgamma.data_ptr(), 0 if dbeta is None else dbeta.data_ptr(),
        partial_rows, cols,
    )  # fmt: skip
    dispatch._local.backend = backend
    return (dx, dgamma, dbeta) if dbeta is not None else (dx, dgamma)


def remember_bwd(kind, dy, x, mu, rsigma, gamma, zero_centered_gamma, dx, dyt, xt, rows, cols):
    """Record the signature of a backward call (no fused add) that just ran on the general
    path."""
    last = _last_launch(rows, cols, barrier_free=False)  # the partials live in scratch
    if last is None:
        return
    backend, plan, mod, ck = last
    if not isinstance(x, _tensor_type) or dx.data_ptr() & 15:
        return
    try:
        key = _bwd_key(kind, dy, x, mu, rsigma, gamma, zero_centered_gamma)
        hash(key)
    except (TypeError, RuntimeError, AttributeError):
        return
    main, fin = mod.launchers(plan, xt.device)
    like = x.is_contiguous()  # dx: x's dtype, contiguous
    sizes = (
        tuple(dx.shape), None if like else dx.dtype, gamma.dtype, plan.scratch_bytes,
        plan.partial_rows,
    )  # fmt: skip
    entry = (
        main, fin, backend, dx.device, xt.device, rows, cols,
        (dyt.rows_cols()[2], xt.rows_cols()[2]), 1 if zero_centered_gamma else 0,
        (plan.partial_offset, plan.dbeta_partial_offset), sizes,
    )  # fmt: skip
    _store(_bwd, key, ck, plan, entry)


# --------------------------------------------------------------------------------------------
# softmax
# --------------------------------------------------------------------------------------------

_sm_fwd: dict[tuple, tuple] = {}
_sm_bwd: dict[tuple, tuple] = {}


def _finite(scale: Any) -> bool:
    return scale.__class__ is float and -math.inf < scale < math.inf


def _sm_fwd_key(variant: str, x, mask) -> tuple:
    if mask is None:
        return (variant, _nvrtc_switch(), x.data_ptr() & 15, _sig(x), None)
    low = (x.data_ptr() | mask.data_ptr()) & 15
    return (variant, _nvrtc_switch(), low, _sig(x), _sig(mask))


def _sm_bwd_key(dy, y, ndim: int) -> tuple:
    low = (dy.data_ptr() | y.data_ptr()) & 15
    return (ndim, _nvrtc_switch(), low, _sig(dy), _sig(y))


def run_softmax_fwd(variant: str, x, mask, scale) -> Any:
    """y of a remembered softmax forward signature, or None (take the general path)."""
    if not _finite(scale) or not isinstance(x, _tensor_type):
        return None
    try:
        entry = _hit(_sm_fwd, _sm_fwd_key(variant, x, mask))
    except (TypeError, RuntimeError, AttributeError):
        return None
    if entry is None:
        return None
    fire, backend, dev, index, rows, cols, xs, ms, sq, heads, mask_batch = entry
    y = _empty_like(x)  # remembered only where x is contiguous
    fire(
        _raw_stream(index), x.data_ptr(), 0 if mask is None else mask.data_ptr(), y.data_ptr(),
        rows, cols, xs, cols, ms, sq, heads, mask_batch, scale, 0, 0,
    )  # fmt: skip
    dispatch._local.backend = backend
    return y


def remember_softmax_fwd(variant: str, x, mask, y, xt, mt, rows: int, cols: int) -> None:
    """Record a softmax forward signature that just ran on the general path."""
    last = _last_launch(rows, cols)
    if last is None:
        return
    backend, plan, mod, ck = last
    if not isinstance(x, _tensor_type) or y.data_ptr() & 15 or not x.is_contiguous():
        return  # y is allocated like x: one saved row pitch for both
    try:
        key = _sm_fwd_key(variant, x, mask)
        hash(key)
    except (TypeError, RuntimeError, AttributeError):
        return
    fire, _ = mod.launchers(plan, xt.device)
    sq = xt.shape[-2]
    heads = xt.shape[1] if xt.ndim == 4 else 1
    entry = (
        fire, backend, y.device, xt.device, rows, cols, xt.rows_cols()[2],
        0 if mt is None else mt.rows_cols()[2], sq, heads, 1 if mt is None else mt.shape[0],
    )  # fmt: skip
    _store(_sm_fwd, key, ck, plan, entry)


def run_softmax_bwd(dy, y, scale, ndim: int) -> Any:
    """dx of a remembered softmax backward signature, or None (take the general path)."""
    if not _finite(scale) or not isinstance(y, _tensor_type) or not isinstance(dy, _tensor_type):
        return None
    try:
        entry = _hit(_sm_bwd, _sm_bwd_key(dy, y, ndim))
    except (TypeError, RuntimeError, AttributeError):
        return None
    if entry is None:
        return None
    fire, backend, dev, index, rows, cols, dys, ys = entry
    dx = _empty_like(y)  # remembered only where y is contiguous
    fire(
        _raw_stream(index), dy.data_ptr(), y.data_ptr(), dx.data_ptr(), rows, cols, dys, ys,
        cols, scale, 0, 0,
    )  # fmt: skip
    dispatch._local.backend = backend
    return dx


def remember_softmax_bwd(dy, y, dx, dyt, yt, rows: int, cols: int, ndim: int) -> None:
    """Record a softmax backward signature that just ran on the general path."""
    last = _last_launch(rows, cols)
    if last is None:
        return
    backend, plan, mod, ck = last
    if not isinstance(y, _tensor_type) or dx.data_ptr() & 15 or not y.is_contiguous():
        return
    try:
        key = _sm_bwd_key(dy, y, ndim)
        hash(key)
    except (TypeError, RuntimeError, AttributeError):
        return
    fire, _ = mod.launchers(plan, yt.device)
    entry = (
        fire, backend, dx.device, yt.device, rows, cols, dyt.rows_cols()[2], yt.rows_cols()[2],
    )  # fmt: skip
    _store(_sm_bwd, key, ck, plan, entry)
