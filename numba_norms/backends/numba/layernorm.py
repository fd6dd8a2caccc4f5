"""LayerNorm launchers of the Numba backend (kernels and shared launch code: ``_norms``)."""

from __future__ import annotations

from typing import Any

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


def _check(spec: NormSpec, op: str) -> NormSpec:
    if spec.op != op:
        raise ValueError(f"expected a {op} spec, got {spec.op}")
    return spec


def compile_forward(spec: NormSpec, arch: str | None = None) -> Any:
    """Build (cached) the forward kernel of ``spec``.

    Parameters
    ----------
    spec : NormSpec
        A ``layernorm_fwd`` spec.
    arch : str, optional
        E.g. ``"sm_90"``. Without a GPU this only compiles and returns the PTX text.

    Returns
    -------
    object
        The compiled kernel (cached per ``spec.kernel_key``), or the PTX string.
    """
    return _norms.compile_forward(_check(spec, _FWD), arch)


def compile_backward(spec: NormSpec, arch: str | None = None) -> Any:
    """Build (cached) the backward kernel of ``spec`` and its dgamma/dbeta finalize.

    With ``arch`` and no GPU this only compiles and returns the PTX text of both kernels.
    """
    return _norms.compile_backward(_check(spec, _BWD), arch)


def occupancy_forward(spec: NormSpec) -> int:
    """Max active CTAs per SM of the forward kernel (a fixed 2 under the simulator)."""
    return _norms.occupancy_forward(_check(spec, _FWD))


def occupancy_backward(spec: NormSpec) -> int:
    """Max active CTAs per SM of the backward kernel (a fixed 2 under the simulator)."""
    return _norms.occupancy_backward(_check(spec, _BWD))


def forward(plan: NormPlan, args: NormFwdArgs, stream: int = 0) -> None:
    """Launch LayerNorm forward for ``plan`` on ``stream`` (a raw CUstream handle)."""
    _norms.forward(plan, args, stream)


def backward(plan: NormPlan, args: NormBwdArgs, stream: int = 0) -> None:
    """Launch LayerNorm backward and its dgamma/dbeta finalize on ``stream``."""
    _norms.backward(plan, args, stream)


def launchers(plan: NormPlan, device: int) -> tuple[Any, Any]:
    """The :class:`rtc.Launcher` objects of ``plan`` (main kernel, finalize kernel or None), for
    callers that pack the shared parameter layouts themselves (the ops' fast path)."""
    return _norms.launchers(plan, device)
