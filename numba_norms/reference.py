"""float64 numpy references of every op (TransformerEngine semantics), for tests and `check`."""

from __future__ import annotations

import ml_dtypes
import numpy as np

__all__ = [
    "NP",
    "TOLERANCE",
    "FP8_MAX",
    "causal_keep",
    "layernorm_bwd",
    "quantize_fp8",
    "layernorm_fwd",
    "rmsnorm_bwd",
    "rmsnorm_fwd",
    "scaled_aligned_causal_softmax",
    "scaled_masked_softmax",
    "scaled_softmax",
    "scaled_upper_triang_softmax",
    "softmax_bwd",
    "softmax_keep",
    "softmax_kept",
    "softmax_rows",
]

NP = {"fp32": np.float32, "fp16": np.float16, "bf16": ml_dtypes.bfloat16}

# Tolerances against float64 references, per output dtype: (absolute, relative).
# fp32 kernels accumulate in fp32; fp16/bf16 outputs are dominated by one final rounding
# (2^-11 and 2^-8 relative); callers widen them for gradients reduced over many rows.
TOLERANCE = {
    "fp32": (1e-5, 1e-5),
    "fp16": (2e-3, 2e-3),
    "bf16": (1.6e-2, 1.6e-2),
}


def f64(a) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def layernorm_fwd(x, gamma, beta, eps, zero_centered=False):
    x = f64(x)
    g = f64(gamma) + (1.0 if zero_centered else 0.0)
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    rs = 1.0 / np.sqrt(var + eps)
    y = (x - mu) * rs * g + f64(beta)
    return y, mu.reshape(-1), rs.reshape(-1)


def rmsnorm_fwd(x, gamma, eps, zero_centered=False):
    x = f64(x)
    g = f64(gamma) + (1.0 if zero_centered else 0.0)
    rs = 1.0 / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return x * rs * g, rs.reshape(-1)


def layernorm_bwd(dy, x, mu, rsigma, gamma, zero_centered=False):
    cols = np.shape(x)[-1]
    x, dy = f64(x).reshape(-1, cols), f64(dy).reshape(-1, cols)
    mu, rs = f64(mu).reshape(-1, 1), f64(rsigma).reshape(-1, 1)
    g = f64(gamma) + (1.0 if zero_centered else 0.0)
    xhat = (x - mu) * rs
    dyg = dy * g
    dx = rs * (dyg - (dyg * xhat).mean(-1, keepdims=True) * xhat - dyg.mean(-1, keepdims=True))
    return dx, (dy * xhat).sum(0), dy.sum(0)


def rmsnorm_bwd(dy, x, rsigma, gamma, zero_centered=False, add=None):
    cols = np.shape(x)[-1]
    x, dy = f64(x).reshape(-1, cols), f64(dy).reshape(-1, cols)
    rs = f64(rsigma).reshape(-1, 1)
    g = f64(gamma) + (1.0 if zero_centered else 0.0)
    xhat = x * rs
    dyg = dy * g
    dx = rs * (dyg - (dyg * xhat).mean(-1, keepdims=True) * xhat)
    if add is not None:
        dx = dx + f64(add).reshape(-1, cols)
    return dx, (dy * xhat).sum(0)


def softmax_kept(v, keep):
    """float64 softmax of ``v`` over the positions ``keep`` marks along the last axis; zeros
    elsewhere and in rows that keep nothing. A row whose kept values hold a NaN or +inf, or are
    all -inf, is NaN at its kept positions (IEEE arithmetic, as the kernels, TE and torch)."""
    keep = np.broadcast_to(keep, np.shape(v))
    v = np.where(keep, v, -np.inf)
    m = v.max(-1, keepdims=True)  # NaN where the row holds one
    with np.errstate(invalid="ignore"):  # inf - inf: the NaN rows above
        e = np.where(keep, np.exp(v - np.where(keep.any(-1, keepdims=True), m, 0.0)), 0.0)
        y = e / e.sum(-1, keepdims=True)
    return np.where(keep, y, 0.0)


def scaled_softmax(x, scale):
    v = f64(x) * scale
    return softmax_kept(v, np.ones(v.shape, bool))


def scaled_masked_softmax(x, mask, scale):
    v = f64(x) * scale
    m = np.broadcast_to(np.asarray(mask).astype(bool), v.shape)
    v = np.where(m, -10000.0, v)
    y = softmax_kept(v, np.ones(v.shape, bool))
    return np.where(m.all(-1, keepdims=True), 0.0, y)


def causal_keep(sq, sk):
    """[sq, sk] positions kept by the bottom-right aligned causal mask (j <= i + sk - sq)."""
    i = np.arange(sq)[:, None]
    j = np.arange(sk)[None, :]
    return j <= i + (sk - sq)


def softmax_keep(variant: str, sq: int, sk: int) -> np.ndarray:
    """[sq, sk] kept positions of a softmax variant: ``upper_triang`` j <= i (for any sq, sk),
    ``aligned_causal`` :func:`causal_keep`, every position otherwise."""
    if variant == "upper_triang":
        return np.arange(sk)[None, :] <= np.arange(sq)[:, None]
    if variant == "aligned_causal":
        return causal_keep(sq, sk)
    return np.ones((sq, sk), bool)


def softmax_rows(x, variant: str, sq: int, scale, mask=None, heads: int = 1, mask_batch: int = 1):
    """Forward of a softmax variant on ``[rows, cols]`` rows, row ``r`` being query ``r % sq``
    of batch ``r // (heads * sq)`` (the kernels' view of ``[b, h, sq, sk]``).

    ``mask`` is ``[mask_batch * sq, cols]`` (nonzero: masked). Returns ``(y, keep)``: the
    float64 output and the positions that carry probability (what is not kept must be 0).
    """
    v = f64(x) * scale
    rows = v.shape[0]
    i = np.arange(rows)[:, None] % sq
    if variant == "masked":
        b = np.arange(rows) // (heads * sq)
        masked = np.asarray(mask)[(0 if mask_batch == 1 else b) * sq + i[:, 0]] != 0
        v, keep = np.where(masked, -10000.0, v), ~masked
        empty = masked.all(-1, keepdims=True)
        y = softmax_kept(v, np.ones(v.shape, bool))
    else:
        keep = softmax_keep(variant, sq, v.shape[1])[i[:, 0]]
        empty = ~keep.any(-1, keepdims=True)
        y = softmax_kept(v, keep)
    return np.where(empty, 0.0, y), keep & ~empty


def scaled_upper_triang_softmax(x, scale):
    v = f64(x) * scale
    return softmax_kept(v, np.broadcast_to(causal_keep(v.shape[-2], v.shape[-1]), v.shape))


def scaled_aligned_causal_softmax(x, scale):
    v = f64(x) * scale
    return softmax_kept(v, np.broadcast_to(causal_keep(v.shape[-2], v.shape[-1]), v.shape))


def softmax_bwd(dy, y, scale):
    dy, y = f64(dy), f64(y)
    return scale * y * (dy - (dy * y).sum(-1, keepdims=True))


# Largest finite magnitudes of the FP8 formats: saturating conversions clamp to these.
FP8_MAX = {"fp8e4m3": 448.0, "fp8e5m2": 57344.0}
FP8_NP = {"fp8e4m3": ml_dtypes.float8_e4m3fn, "fp8e5m2": ml_dtypes.float8_e5m2}


def quantize_fp8(v, dtype: str) -> np.ndarray:
    """Saturating round-to-nearest-even conversion to FP8 (NaN stays NaN).

    ``v`` is taken in its own precision: pass float32 values to reproduce a kernel that scales
    in fp32, float64 for an exact reference.
    """
    v = np.asarray(v)
    limit = FP8_MAX[dtype]
    return np.clip(v, -limit, limit).astype(FP8_NP[dtype])
