"""numba-norms: LayerNorm, RMSNorm and fused softmax GPU kernels with TransformerEngine semantics.

Every kernel exists as CUDA C compiled at run time by NVRTC (the default) and as a Numba
``@cuda.jit`` kernel (``DISABLE_NVRTC=1``); both share one registry and one launch planner.
"""

from __future__ import annotations

from .dispatch import choose_backend, last_backend
from .ops import (
    layernorm_bwd,
    layernorm_fwd,
    rmsnorm_bwd,
    rmsnorm_fwd,
    scaled_aligned_causal_masked_softmax_bwd,
    scaled_aligned_causal_masked_softmax_fwd,
    scaled_masked_softmax_bwd,
    scaled_masked_softmax_fwd,
    scaled_softmax_bwd,
    scaled_softmax_fwd,
    scaled_upper_triang_masked_softmax_bwd,
    scaled_upper_triang_masked_softmax_fwd,
)
from .registry import UnsupportedError

__version__ = "0.1.0"

__all__ = [
    "UnsupportedError",
    "__version__",
    "choose_backend",
    "last_backend",
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
