"""Argument bundles handed from dispatch to either backend.

The tensors are :class:`numba_norms.arrays.Tensor` objects: the NVRTC backend reads ``ptr`` and
``strides``, the Numba backend calls ``as_numba()``. ``scratch`` is a uint8 device buffer of
``plan.scratch_bytes`` (None when the plan needs none).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "NORM_BWD_PARAMS",
    "NORM_FINALIZE_PARAMS",
    "NORM_FWD_PARAMS",
    "NormBwdArgs",
    "NormFwdArgs",
    "SOFTMAX_BWD_PARAMS",
    "SOFTMAX_FWD_PARAMS",
    "SoftmaxBwdArgs",
    "SoftmaxFwdArgs",
]

# Parameter layouts of the kernels, the same in both backends (``rtc.Launcher`` codes:
# P pointer, i int32, q int64, f float32); tests check them against the CUDA C source and the
# Numba signatures.
NORM_FWD_PARAMS = "PPPPPPiiqqfiPPPPP"
NORM_BWD_PARAMS = "PPPPPPPPPiiqqqqiPP"
NORM_FINALIZE_PARAMS = "PPPPii"
SOFTMAX_FWD_PARAMS = "PPPiiqqqiiifPP"
SOFTMAX_BWD_PARAMS = "PPPiiqqqfPP"


@dataclass
class NormFwdArgs:
    x: Any
    gamma: Any
    beta: Any | None
    y: Any
    mu: Any | None
    rsigma: Any
    eps: float
    zero_centered: bool
    scratch: Any | None = None
    scale: Any | None = None
    amax: Any | None = None
    scale_inv: Any | None = None


@dataclass
class NormBwdArgs:
    dy: Any
    x: Any
    mu: Any | None
    rsigma: Any
    gamma: Any
    dx: Any
    add: Any | None
    dgamma: Any
    dbeta: Any | None
    zero_centered: bool
    scratch: Any | None = None


@dataclass
class SoftmaxFwdArgs:
    """``x``/``y`` flatten to rows x sk; ``mask`` is a uint8 [mask_batch * sq, sk] view or None."""

    x: Any
    y: Any
    mask: Any | None
    scale: float
    sq: int
    heads: int = 1
    mask_batch: int = 1
    scratch: Any | None = None


@dataclass
class SoftmaxBwdArgs:
    dy: Any
    y: Any
    dx: Any
    scale: float
    scratch: Any | None = None
