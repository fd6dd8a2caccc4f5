"""LayerNorm launchers of the NVRTC backend (kernels: ``norms.cu``; shared code: ``_norms``)."""

from __future__ import annotations

from typing import Any

import rtc

from ...planner import NormPlan, NormSpec
from ..common import NormBwdArgs, NormFwdArgs
from . import _norms

__all__ = [
    "backward",
    "compile_backward",
    "compile_forward",
    "forward",
    "launchers",
    "occupancy_backward",
    "occupancy_forward",
]

_FWD = "layernorm_fwd"
_BWD = "layernorm_bwd"


def compile_forward(spec: NormSpec, arch: str | None = None) -> rtc.CompiledModule:
    """Build (cached) the forward kernel of ``spec``; with ``arch`` only compile to CUBIN."""
    return _norms.compile_op(spec, _FWD, arch)


def compile_backward(spec: NormSpec, arch: str | None = None) -> rtc.CompiledModule:
    """Build (cached) the backward and finalize kernels; with ``arch`` only compile."""
    return _norms.compile_op(spec, _BWD, arch)


def occupancy_forward(spec: NormSpec) -> int:
    """Max active CTAs per SM of the forward kernel on the current device."""
    return _norms.occupancy_op(spec, _FWD)


def occupancy_backward(spec: NormSpec) -> int:
    """Max active CTAs per SM of the backward kernel on the current device."""
    return _norms.occupancy_op(spec, _BWD)


def forward(plan: NormPlan, args: NormFwdArgs, stream: int) -> None:
    """Launch LayerNorm forward for ``plan`` on ``stream`` (a raw CUstream handle)."""
    _norms.forward(plan, args, stream)


def backward(plan: NormPlan, args: NormBwdArgs, stream: int) -> None:
    """Launch LayerNorm backward (and its dgamma/dbeta finalize) for ``plan`` on ``stream``."""
    _norms.backward(plan, args, stream)


def launchers(plan: NormPlan, device: int) -> tuple[Any, Any]:
    """The :class:`rtc.Launcher` objects of ``plan`` (main kernel, finalize kernel or None), for
    callers that pack the shared parameter layouts themselves (the ops' fast path)."""
    return _norms.launchers(plan, device)
