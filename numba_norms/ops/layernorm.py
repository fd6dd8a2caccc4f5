"""LayerNorm forward and backward (TransformerEngine semantics)."""

from __future__ import annotations

from typing import Any

from ._norm import norm_bwd, norm_fwd

__all__ = ["layernorm_bwd", "layernorm_fwd"]


def layernorm_fwd(
    x: Any,
    gamma: Any,
    beta: Any,
    eps: float = 1e-5,
    *,
    zero_centered_gamma: bool = False,
    out_dtype: Any = None,
    scale: Any = None,
    amax: Any = None,
    scale_inv: Any = None,
    stream: Any = None,
    out: Any = None,
) -> tuple[Any, Any, Any]:
    """LayerNorm over the last dimension, computed in fp32.

    ``mu = mean(x)``, ``rsigma = 1 / sqrt(var(x) + eps)`` (biased variance),
    ``y = (x - mu) * rsigma * g + beta`` with ``g = gamma + 1`` when ``zero_centered_gamma``
    else ``gamma``.

    Parameters
    ----------
    x : array
        ``[..., hidden]`` in fp32, fp16 or bf16; leading dimensions are flattened into rows. The
        last dimension must be contiguous. numpy, Numba, CuPy or torch; all arguments of one
        kind and on one device.
    gamma, beta : array
        ``[hidden]``, both of one dtype.
    eps : float
        Added to the variance; 0 <= eps <= 3.4028e38 (used as fp32).
    zero_centered_gamma : bool
        Use ``gamma + 1`` as the scale.
    out_dtype : dtype, optional
        Dtype of ``y``; defaults to gamma's. Any of TE's registered combinations, including
        FP8 (``float8_e4m3fn`` / ``float8_e5m2`` as ml_dtypes or torch dtypes, or their names).
    scale : array, optional
        float32, one element, on x's device. Required for FP8 output:
        ``y = fp8(normalised * scale)``, rounded to nearest even and saturated to the finite
        range.
    amax : array, optional
        float32, one element; updated in place to ``max(amax, max|v|)`` where ``v`` is the
        output before scaling (FP8) or the converted output (other dtypes). Zero it for a fresh
        maximum.
    scale_inv : array, optional
        float32, one element; receives ``1 / scale`` (FP8 output only).
    stream : stream, optional
        Numba / cuda.core / torch / CuPy stream, anything with ``__cuda_stream__``, or a raw
        handle. torch inputs default to torch's current stream.
    out : tuple, optional
        ``(y, mu, rsigma)`` to write instead of allocating: each an array of the kind and
        device of the inputs, or None (allocated). ``y``: shape of ``x`` and dtype
        ``out_dtype``, contiguous columns and one row pitch (rows may be padded); ``mu``,
        ``rsigma``: fp32, ``rows`` contiguous elements. No output may share memory with an
        input or another output (ValueError). The call returns these arrays.

    Returns
    -------
    y : array
        Shape of ``x``, dtype ``out_dtype``; same kind as ``x`` (numpy in, numpy out).
    mu, rsigma : array
        fp32 ``[rows]``.

    Raises
    ------
    TypeError
        Unsupported dtype or dtype combination (the message lists the supported ones).
    ValueError
        Mismatched shapes, hidden size 0, non-contiguous last dimension, arrays on different
        devices, host and device arrays mixed, or an ``out`` array of the wrong shape, layout
        or overlapping another argument (TypeError for its dtype).
    """
    return norm_fwd(
        "layernorm",
        x,
        gamma,
        beta,
        eps,
        zero_centered_gamma,
        out_dtype,
        stream,
        scale,
        amax,
        scale_inv,
        out,
    )


def layernorm_bwd(
    dy: Any,
    x: Any,
    mu: Any,
    rsigma: Any,
    gamma: Any,
    *,
    zero_centered_gamma: bool = False,
    stream: Any = None,
    out: Any = None,
) -> tuple[Any, Any, Any]:
    """Gradients of :func:`layernorm_fwd`.

    Parameters
    ----------
    dy : array
        Gradient of ``y``: shape of ``x``, dtype of ``gamma`` (the gradient of a forward to
        another ``out_dtype`` is converted first).
    x, mu, rsigma, gamma : array
        The forward's input, statistics and weight.
    zero_centered_gamma : bool
        As in the forward.
    stream : stream, optional
        As in :func:`layernorm_fwd`.
    out : tuple, optional
        ``(dx, dgamma, dbeta)`` to write instead of allocating, each an array or None; shapes
        and dtypes as returned, rules as for the forward's ``out``.

    Returns
    -------
    dx : array
        Shape and dtype of ``x``.
    dgamma, dbeta : array
        ``[hidden]`` in gamma's dtype. Deterministic: per-CTA fp32 partials reduced in a fixed
        order, no atomics.
    """
    return norm_bwd("layernorm", dy, x, mu, rsigma, gamma, zero_centered_gamma, None, stream, out)
