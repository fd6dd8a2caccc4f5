"""torch integration: autograd functions and ``nn.Module`` s on top of the public API.

Import this module only where torch is installed; the rest of numba-norms never imports torch
unless it is handed a tensor. The forward and the backward both run our kernels, on torch's
current stream. ``torch.compile`` does not trace into our kernels: each call is a graph break
(``torch.compiler.disable``), and CUDA-graph capture works once the kernels are compiled (warm
up before capturing, as torch itself asks).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import torch
from torch import nn

from . import ops, registry
from .arrays import dtype_name

__all__ = [
    "LayerNorm",
    "RMSNorm",
    "layer_norm",
    "rms_norm",
    "scaled_aligned_causal_masked_softmax",
    "scaled_masked_softmax",
    "scaled_softmax",
    "scaled_upper_triang_masked_softmax",
]


def _weight_for(op: str, weight: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The weight in a dtype our kernels serve with ``x`` (TE has no fp32-weight/bf16-x kernel)."""
    combos = registry.supported_norm_dtypes(op)
    w, i = dtype_name(weight.dtype), dtype_name(x.dtype)
    # contiguous: the kernels read the weight from its base pointer (a no-op for the usual
    # parameter, a copy for a strided view of a larger one)
    if (w, i, w) in combos:
        return weight.contiguous()
    return weight.to(x.dtype).contiguous()


class _LayerNormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps, zero_centered):
        w = _weight_for("layernorm_fwd", weight, x)
        y, mu, rs = ops.layernorm_fwd(
            x, w, bias.to(w.dtype).contiguous(), eps, zero_centered_gamma=zero_centered
        )
        ctx.save_for_backward(x, w, mu, rs)
        ctx.zero_centered = zero_centered
        ctx.weight_dtype = weight.dtype
        return y

    @staticmethod
    def backward(ctx, dy):
        x, w, mu, rs = ctx.saved_tensors
        dx, dg, db = ops.layernorm_bwd(
            dy.contiguous(), x, mu, rs, w, zero_centered_gamma=ctx.zero_centered
        )
        return dx, dg.to(ctx.weight_dtype), db.to(ctx.weight_dtype), None, None


class _RMSNormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps, zero_centered):
        w = _weight_for("rmsnorm_fwd", weight, x)
        y, rs = ops.rmsnorm_fwd(x, w, eps, zero_centered_gamma=zero_centered)
        ctx.save_for_backward(x, w, rs)
        ctx.zero_centered = zero_centered
        ctx.weight_dtype = weight.dtype
        return y

    @staticmethod
    def backward(ctx, dy):
        x, w, rs = ctx.saved_tensors
        dx, dg = ops.rmsnorm_bwd(dy.contiguous(), x, rs, w, zero_centered_gamma=ctx.zero_centered)
        return dx, dg.to(ctx.weight_dtype), None, None


@torch.compiler.disable
def layer_norm(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    eps: float = 1e-5,
    zero_centered_gamma: bool = False,
) -> torch.Tensor:
    """LayerNorm over the last dimension with autograd (see :func:`numba_norms.layernorm_fwd`)."""
    return _LayerNormFn.apply(x, weight, bias, eps, zero_centered_gamma)


@torch.compiler.disable
def rms_norm(
    x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-5, zero_centered_gamma: bool = False
) -> torch.Tensor:
    """RMSNorm over the last dimension with autograd (see :func:`numba_norms.rmsnorm_fwd`)."""
    return _RMSNormFn.apply(x, weight, eps, zero_centered_gamma)


def _hidden(normalized_shape: int | Sequence[int]) -> int:
    if isinstance(normalized_shape, numbers.Integral):
        return int(normalized_shape)
    shape = tuple(normalized_shape)
    if len(shape) != 1:
        raise ValueError(
            f"normalized_shape: only the last dimension can be normalized, got {shape}"
        )
    return int(shape[0])


class _Norm(nn.Module):
    """Shared parameters: ``weight`` (and LayerNorm's ``bias``) as torch's modules have them.

    Without ``elementwise_affine`` (or ``bias``) the tensors are fixed buffers, so the kernels
    always get a weight and a bias and their gradients are simply dropped.
    """

    def __init__(self, normalized_shape, eps, affine, zero_centered_gamma, bias, device, dtype):
        super().__init__()
        hidden = _hidden(normalized_shape)
        self.normalized_shape = (hidden,)
        self.eps = eps
        self.elementwise_affine = affine
        self.zero_centered_gamma = zero_centered_gamma
        kw = {"device": device, "dtype": dtype}
        # With zero-centered gamma the stored weight is gamma - 1, so identity is zeros.
        init = torch.zeros if zero_centered_gamma else torch.ones
        if affine:
            self.weight = nn.Parameter(init(hidden, **kw))
        else:
            self.register_buffer("weight", init(hidden, **kw), persistent=False)
        if bias is None:
            self.bias = None
        elif affine and bias:
            self.bias = nn.Parameter(torch.zeros(hidden, **kw))
        else:
            self.register_buffer("bias", torch.zeros(hidden, **kw), persistent=False)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, "
            f"zero_centered_gamma={self.zero_centered_gamma}"
        )


class LayerNorm(_Norm):
    """Drop-in for ``torch.nn.LayerNorm`` over the last dimension, plus ``zero_centered_gamma``
    (the weight is stored as ``gamma - 1`` and initialised to zeros)."""

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        *,
        zero_centered_gamma: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            normalized_shape, eps, elementwise_affine, zero_centered_gamma, bias, device, dtype
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return layer_norm(x, self.weight, self.bias, self.eps, self.zero_centered_gamma)


class RMSNorm(_Norm):
    """Drop-in for ``torch.nn.RMSNorm`` over the last dimension, plus ``zero_centered_gamma``.

    As torch's, ``eps=None`` (the default) means ``torch.finfo(x.dtype).eps`` at each call.
    """

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float | None = None,
        elementwise_affine: bool = True,
        *,
        zero_centered_gamma: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            normalized_shape, eps, elementwise_affine, zero_centered_gamma, None, device, dtype
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        eps = torch.finfo(x.dtype).eps if self.eps is None else self.eps
        return rms_norm(x, self.weight, eps, self.zero_centered_gamma)


class _SoftmaxFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, variant, x, mask, scale):
        if variant == "scaled":
            y = ops.scaled_softmax_fwd(x, scale)
        elif variant == "masked":
            y = ops.scaled_masked_softmax_fwd(x, mask, scale)
        elif variant == "upper_triang":
            y = ops.scaled_upper_triang_masked_softmax_fwd(x, scale)
        else:
            y = ops.scaled_aligned_causal_masked_softmax_fwd(x, scale)
        ctx.save_for_backward(y)
        ctx.scale = scale
        ctx.ndim = x.ndim
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        fn = ops.scaled_upper_triang_masked_softmax_bwd if ctx.ndim == 3 else ops.scaled_softmax_bwd
        return None, fn(dy.contiguous(), y, ctx.scale), None, None


@torch.compiler.disable
def scaled_softmax(x: torch.Tensor, scale: float) -> torch.Tensor:
    """``softmax(scale * x)`` with autograd; ``x: [b, h, sq, sk]``."""
    return _SoftmaxFn.apply("scaled", x, None, scale)


@torch.compiler.disable
def scaled_masked_softmax(x: torch.Tensor, mask: torch.Tensor, scale: float) -> torch.Tensor:
    """Masked ``softmax(scale * x)`` with autograd; ``mask: [b or 1, 1, sq, sk]``, True = masked."""
    return _SoftmaxFn.apply("masked", x, mask, scale)


@torch.compiler.disable
def scaled_upper_triang_masked_softmax(x: torch.Tensor, scale: float) -> torch.Tensor:
    """Causal ``softmax(scale * x)`` with autograd; ``x: [attn_batches, sq, sq]``."""
    return _SoftmaxFn.apply("upper_triang", x, None, scale)


@torch.compiler.disable
def scaled_aligned_causal_masked_softmax(x: torch.Tensor, scale: float) -> torch.Tensor:
    """Bottom-right aligned causal ``softmax(scale * x)`` with autograd; ``[b, h, sq, sk]``."""
    return _SoftmaxFn.apply("aligned_causal", x, None, scale)
