"""Fused softmax family, forward and backward (TransformerEngine semantics, without its limits).

Every function works along the last dimension in fp32 and returns arrays of the input's dtype
and kind. Unlike TE, any key length (1 to 131072 and beyond), any query length and batch work.
``out=`` (every function) is an array to write instead of allocating: the result's shape and
dtype, the inputs' kind and device, contiguous columns, no memory shared with an input
(the rules of :func:`numba_norms.layernorm_fwd`'s ``out``); the call returns it.
"""

from __future__ import annotations

from typing import Any

from .. import arrays, dispatch, planner
from ..backends.common import SOFTMAX_SCALE_MAX, SoftmaxBwdArgs, SoftmaxFwdArgs
from . import _fast, _out
from ._scalars import as_real

__all__ = [
    "scaled_aligned_causal_masked_softmax_bwd",
    "scaled_aligned_causal_masked_softmax_fwd",
    "scaled_masked_softmax_bwd",
    "scaled_masked_softmax_fwd",
    "scaled_softmax_bwd",
    "scaled_softmax_fwd",
    "scaled_upper_triang_masked_softmax_bwd",
    "scaled_upper_triang_masked_softmax_fwd",
]

DTYPES = ("fp32", "fp16", "bf16")


def _check_scale(scale: float) -> float:
    scale = as_real(scale, "scale")
    if abs(scale) > SOFTMAX_SCALE_MAX:  # the kernels take it as fp32
        raise ValueError(
            f"scale: expected |scale| <= {SOFTMAX_SCALE_MAX!r} (fp32's largest), got {scale!r}"
        )
    return scale


def _forward(variant: str, x, scale, stream, out, *, ndim: int, mask=None):
    if stream is None:
        y = _fast.run_softmax_fwd(variant, x, mask, scale, out)
        if y is not None:
            return y
    scale = _check_scale(scale)
    call = arrays.Call(stream)
    xt = call.input(x, "x", dtypes=DTYPES, ndim=ndim)
    if variant == "upper_triang" and xt.shape[1] != xt.shape[2]:
        raise ValueError(f"x: expected a square [attn_batches, sq, sq] input, got {xt.shape}")
    mt = None
    if variant == "masked":
        mt = call.input(mask, "mask", dtypes=("bool", "uint8"), ndim=4)
        b, _, sq, sk = xt.shape
        if mt.shape[1:] != (1, sq, sk) or mt.shape[0] not in (1, b):
            batch = "1" if b == 1 else f"{b} or 1"
            raise ValueError(
                f"mask: expected shape [{batch}, 1, {sq}, {sk}] for x of shape {xt.shape}, "
                f"got {mt.shape}"
            )
    rows, cols, _ = xt.rows_cols()
    planner.check_rows(rows)
    (y,) = _out.outputs(call, out, [("y", xt.shape, xt.dtype)], [xt, mt])
    if rows and cols:
        sq = xt.shape[-2]
        heads = xt.shape[1] if ndim == 4 else 1
        mask_batch = mt.shape[0] if mt is not None else 1
        if mt is not None:
            mt.rows_cols()
        args = SoftmaxFwdArgs(xt, y, mt, scale, sq, heads, mask_batch)
        used = [xt, y] + ([mt] if mt is not None else [])
        pairs = [(t.alignment(), t.itemsize) for t in used]
        dispatch.run_softmax("softmax_fwd", variant, xt.dtype, call, args, rows, cols, pairs)
    res = call.finish(y)[0]
    if stream is None and call.kind == "torch":
        _fast.remember_softmax_fwd(variant, x, mask, out, res, y, xt, mt, rows, cols)
    return res


def _backward(dy, y, scale, stream, out, *, ndim: int):
    if stream is None:
        dx = _fast.run_softmax_bwd(dy, y, scale, ndim, out)
        if dx is not None:
            return dx
    scale = _check_scale(scale)
    call = arrays.Call(stream)
    dyt = call.input(dy, "dy", dtypes=DTYPES, ndim=ndim)
    yt = call.input(y, "y", dtypes=DTYPES, ndim=ndim)
    if dyt.shape != yt.shape:
        raise ValueError(f"dy: expected shape {yt.shape} (as y), got {dyt.shape}")
    if dyt.dtype != yt.dtype:
        raise TypeError(f"dy: expected dtype {yt.dtype} (as y), got {dyt.dtype}")
    if ndim == 3 and yt.shape[1] != yt.shape[2]:  # the upper-triangular pair, as its forward
        raise ValueError(f"y: expected a square [attn_batches, sq, sq] input, got {yt.shape}")
    rows, cols, _ = yt.rows_cols()
    planner.check_rows(rows, "y")
    dyt.rows_cols()
    (dx,) = _out.outputs(call, out, [("dx", yt.shape, yt.dtype)], [dyt, yt])
    if rows and cols:
        args = SoftmaxBwdArgs(dyt, yt, dx, scale)
        pairs = [(t.alignment(), t.itemsize) for t in (dyt, yt, dx)]
        dispatch.run_softmax("softmax_bwd", "scaled", yt.dtype, call, args, rows, cols, pairs)
    res = call.finish(dx)[0]
    if stream is None and call.kind == "torch":
        _fast.remember_softmax_bwd(dy, y, out, res, dx, dyt, yt, rows, cols, ndim)
    return res


def scaled_softmax_fwd(x: Any, scale: float, *, stream: Any = None, out: Any = None) -> Any:
    """``y = softmax(scale * x)`` over the last dimension of ``x: [b, h, sq, sk]``."""
    return _forward("scaled", x, scale, stream, out, ndim=4)


def scaled_softmax_bwd(
    dy: Any, y: Any, scale: float, *, stream: Any = None, out: Any = None
) -> Any:
    """``dx = scale * y * (dy - sum(dy * y))`` per row; ``dy``, ``y``: ``[b, h, sq, sk]``."""
    return _backward(dy, y, scale, stream, out, ndim=4)


def scaled_masked_softmax_fwd(
    x: Any, mask: Any, scale: float, *, stream: Any = None, out: Any = None
) -> Any:
    """Softmax of ``scale * x`` with masked positions set to -10000 first.

    Parameters
    ----------
    x : array
        ``[b, h, sq, sk]``, fp32/fp16/bf16.
    mask : array
        ``[b or 1, 1, sq, sk]``, bool or uint8; nonzero means masked. A row whose every position
        is masked gives zeros.
    scale : float
        Applied to ``x`` before masking.
    """
    return _forward("masked", x, scale, stream, out, ndim=4, mask=mask)


def scaled_masked_softmax_bwd(
    dy: Any, y: Any, scale: float, *, stream: Any = None, out: Any = None
) -> Any:
    """Backward of :func:`scaled_masked_softmax_fwd` (same formula as the unmasked one)."""
    return _backward(dy, y, scale, stream, out, ndim=4)


def scaled_upper_triang_masked_softmax_fwd(
    x: Any, scale: float, *, stream: Any = None, out: Any = None
) -> Any:
    """Causal softmax of ``x: [attn_batches, sq, sq]``: (i, j) with j > i gives exactly 0."""
    return _forward("upper_triang", x, scale, stream, out, ndim=3)


def scaled_upper_triang_masked_softmax_bwd(
    dy: Any, y: Any, scale: float, *, stream: Any = None, out: Any = None
) -> Any:
    """Backward of :func:`scaled_upper_triang_masked_softmax_fwd`; ``[attn_batches, sq, sq]``."""
    return _backward(dy, y, scale, stream, out, ndim=3)


def scaled_aligned_causal_masked_softmax_fwd(
    x: Any, scale: float, *, stream: Any = None, out: Any = None
) -> Any:
    """Causal softmax aligned to the bottom-right corner of ``x: [b, h, sq, sk]``.

    Row ``i`` keeps columns ``j <= i + (sk - sq)``; the others are exactly 0, and a row that
    keeps nothing (possible when ``sk < sq``) is all zeros.
    """
    return _forward("aligned_causal", x, scale, stream, out, ndim=4)


def scaled_aligned_causal_masked_softmax_bwd(
    dy: Any, y: Any, scale: float, *, stream: Any = None, out: Any = None
) -> Any:
    """Backward of :func:`scaled_aligned_causal_masked_softmax_fwd`."""
    return _backward(dy, y, scale, stream, out, ndim=4)
