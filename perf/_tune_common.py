"""What the launch-shape sweeps (``tune_norms.py``, ``tune_softmax.py``) share (no torch)."""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable, Iterable
from typing import Any

from numba_norms import planner

__all__ = ["compile_ahead"]


def compile_ahead(
    pool: cf.Executor, cfgs: Iterable[Any], spec_of: Callable[[Any], Any], build: Callable
) -> None:
    """Compile the kernels of ``cfgs`` on ``pool`` before they are timed one by one.

    ``spec_of(cfg)`` makes the spec (configurations the planner rejects are skipped: the timed
    call reports them), ``build(spec)`` compiles it into the caches the timed call reads.
    """
    specs = []
    for cfg in cfgs:
        try:
            specs.append(spec_of(cfg))
        except planner.PlanError:
            pass
    list(pool.map(build, specs))
