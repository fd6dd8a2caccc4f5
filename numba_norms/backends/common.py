"""Argument bundles handed from dispatch to either backend, the kernels' parameter layouts and
the per-norm module surface both backends share.

The tensors are :class:`numba_norms.arrays.Tensor` objects: the NVRTC backend reads ``ptr`` and
``strides``, the Numba backend calls ``as_numba()``. ``scratch`` is a uint8 device buffer of
``plan.scratch_bytes`` (None when the plan needs none).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

__all__ = [
    "FP32_MAX",
    "NORM_BWD_PARAMS",
    "NORM_FINALIZE_PARAMS",
    "NORM_FWD_PARAMS",
    "NORM_OP_EXPORTS",
    "NormBwdArgs",
    "NormFwdArgs",
    "NormOps",
    "SOFTMAX_BWD_PARAMS",
    "SOFTMAX_FWD_PARAMS",
    "SOFTMAX_SCALE_MAX",
    "SoftmaxBwdArgs",
    "SoftmaxFwdArgs",
]

# The kernels take eps and the softmax scale as fp32: calls refuse magnitudes above FLT_MAX,
# which would become inf there (FLT_MAX itself is taken).
FP32_MAX = 3.4028234663852886e38
SOFTMAX_SCALE_MAX = FP32_MAX

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


class NormOps:
    """What a backend's ``layernorm`` / ``rmsnorm`` module exports for its norm, over the
    backend's shared implementation ``impl`` (its ``_norms`` module).

    ``compile_forward`` / ``compile_backward`` / ``occupancy_forward`` / ``occupancy_backward``
    check that the spec is of this norm and direction (``active_clusters`` that it is of this
    norm); ``forward`` / ``backward`` / ``launchers``
    are ``impl``'s own (the hot path: dispatch hands them only plans of this norm).

    Parameters
    ----------
    norm : str
        ``"layernorm"`` or ``"rmsnorm"``.
    impl : module
        Provides ``compile_forward(spec, arch)``, ``compile_backward(spec, arch)``,
        ``occupancy_forward(spec)``, ``occupancy_backward(spec)``,
        ``active_clusters(spec, cluster)``, ``forward``, ``backward`` and ``launchers``.
    """

    def __init__(self, norm: str, impl: ModuleType) -> None:
        self._fwd, self._bwd, self._impl = f"{norm}_fwd", f"{norm}_bwd", impl
        self.forward, self.backward, self.launchers = impl.forward, impl.backward, impl.launchers

    def _check(self, spec: Any, op: str) -> Any:
        if spec.op != op:
            raise ValueError(f"expected a {op} spec, got {spec.op}")
        return spec

    def compile_forward(self, spec: Any, arch: str | None = None) -> Any:
        """Build (cached) the forward kernel of ``spec`` for the current device, or with
        ``arch`` (no GPU needed) only compile it: NVRTC returns the module, Numba the PTX."""
        return self._impl.compile_forward(self._check(spec, self._fwd), arch)

    def compile_backward(self, spec: Any, arch: str | None = None) -> Any:
        """As :meth:`compile_forward`, for the backward kernel and its dgamma/dbeta finalize."""
        return self._impl.compile_backward(self._check(spec, self._bwd), arch)

    def occupancy_forward(self, spec: Any) -> int:
        """Max resident CTAs per SM of the forward kernel on the current device."""
        return self._impl.occupancy_forward(self._check(spec, self._fwd))

    def occupancy_backward(self, spec: Any) -> int:
        """Max resident CTAs per SM of the backward kernel on the current device."""
        return self._impl.occupancy_backward(self._check(spec, self._bwd))

    def active_clusters(self, spec: Any, cluster: int) -> int:
        """Clusters of ``cluster`` CTAs of the spec's main kernel the current device can hold
        at once (sm_90+; the planner's ``max_active_clusters``)."""
        if spec.op not in (self._fwd, self._bwd):
            raise ValueError(f"expected a {self._fwd} or {self._bwd} spec, got {spec.op}")
        return self._impl.active_clusters(spec, cluster)

    def exports(self) -> tuple:
        """(compile_forward, compile_backward, occupancy_forward, occupancy_backward,
        active_clusters, forward, backward, launchers): the module-level names of an op
        module, in that order."""
        return (
            self.compile_forward, self.compile_backward, self.occupancy_forward,
            self.occupancy_backward, self.active_clusters, self.forward, self.backward,
            self.launchers,
        )  # fmt: skip


NORM_OP_EXPORTS = [
    "active_clusters",
    "backward",
    "compile_backward",
    "compile_forward",
    "forward",
    "launchers",
    "occupancy_backward",
    "occupancy_forward",
]
