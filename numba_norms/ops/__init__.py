"""Public operations, one module per op family."""

from __future__ import annotations

from .layernorm import layernorm_bwd, layernorm_fwd
from .rmsnorm import rmsnorm_bwd, rmsnorm_fwd
from .softmax import (
    scaled_aligned_causal_masked_softmax_bwd,
    scaled_aligned_causal_masked_softmax_fwd,
    scaled_masked_softmax_bwd,
    scaled_masked_softmax_fwd,
    scaled_softmax_bwd,
    scaled_softmax_fwd,
    scaled_upper_triang_masked_softmax_bwd,
    scaled_upper_triang_masked_softmax_fwd,
)

__all__ = [
    "layernorm_bwd",
    "layernorm_fwd",
    "rmsnorm_bwd",
    "rmsnorm_fwd",
    "scaled_aligned_causal_masked_softmax_bwd",
    "scaled_aligned_causal_masked_softmax_fwd",
    "scaled_masked_softmax_bwd",
    "scaled_masked_softmax_fwd",
    "scaled_softmax_bwd",
    "scaled_softmax_fwd",
    "scaled_upper_triang_masked_softmax_bwd",
    "scaled_upper_triang_masked_softmax_fwd",
]
