"""RMSNorm forward and backward (TransformerEngine semantics)."""

from __future__ import annotations

from typing import Any

from ._norm import norm_bwd, norm_fwd

__all__ = ["rmsnorm_bwd", "rmsnorm_fwd"]


def rmsnorm_fwd(
    x: Any,
    gamma: Any,
    eps: float = 1e-5,
    *,
    zero_centered_gamma: bool = False,
    out_dtype: Any = None,
    scale: Any = None,
    amax: Any = None,
    scale_inv: Any = None,
    stream: Any = None,
    out: Any = None,
) -> tuple[Any, Any]:
    """RMSNorm over the last dimension, computed in fp32.

    ``rsigma = 1 / sqrt(mean(x^2) + eps)``, ``y = x * rsigma * g`` with ``g = gamma + 1`` when
    ``zero_centered_gamma`` else ``gamma``. Arguments, kinds, streams and errors are those of
    :func:`numba_norms.layernorm_fwd` (without ``beta``), FP8 output with ``scale``, ``amax``
    and ``scale_inv`` included; ``out`` is ``(y, rsigma)``.

    Returns
    -------
    y : array
        Shape of ``x``, dtype ``out_dtype`` (default gamma's).
    rsigma : array
        fp32 ``[rows]``.
    """
    return norm_fwd(
        "rmsnorm",
        x,
        gamma,
        None,
        eps,
        zero_centered_gamma,
        out_dtype,
        stream,
        scale,
        amax,
        scale_inv,
        out,
    )


def rmsnorm_bwd(
    dy: Any,
    x: Any,
    rsigma: Any,
    gamma: Any,
    *,
    zero_centered_gamma: bool = False,
    add: Any = None,
    stream: Any = None,
    out: Any = None,
) -> tuple[Any, Any]:
    """Gradients of :func:`rmsnorm_fwd`.

    Parameters
    ----------
    dy, x, rsigma, gamma : array
        Gradient of ``y`` (shape of ``x``, ``gamma``'s dtype), the forward's input,
        statistics and weight.
    zero_centered_gamma : bool
        As in the forward.
    add : array, optional
        Shape and dtype of ``dx``; added to ``dx`` inside the kernel (TE's BackwardAdd, for a
        residual branch).
    stream : stream, optional
        As in :func:`numba_norms.layernorm_fwd`.
    out : tuple, optional
        ``(dx, dgamma)`` to write instead of allocating (rules of
        :func:`numba_norms.layernorm_fwd`'s ``out``).

    Returns
    -------
    dx : array
        Shape and dtype of ``x``.
    dgamma : array
        ``[hidden]`` in gamma's dtype, deterministic.
    """
    return norm_bwd("rmsnorm", dy, x, None, rsigma, gamma, zero_centered_gamma, add, stream, out)
