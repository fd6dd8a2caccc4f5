"""RMSNorm launchers of the Numba backend (kernels and shared launch code: ``_norms``).

The functions are those of :class:`~numba_norms.backends.common.NormOps` for ``rmsnorm``.
"""

from __future__ import annotations

from ..common import NORM_OP_EXPORTS, NormOps
from . import _norms

__all__ = NORM_OP_EXPORTS

(
    compile_forward,
    compile_backward,
    occupancy_forward,
    occupancy_backward,
    active_clusters,
    forward,
    backward,
    launchers,
) = NormOps("rmsnorm", _norms).exports()
