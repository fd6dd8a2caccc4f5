"""Pieces shared by the NVRTC op launchers (norms and softmax).

Kernel sources next to this module, the current device, and launch-record caching: a launch
record holds what a launch of one plan needs that does not change between calls (loaded kernel,
grid, scalar arguments). Each op module keeps its own record dict (tests swap it out);
:func:`cached_record` is the one lookup-or-build both use.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["CACHE_LIMIT", "cached_record", "current_device", "kernel_source"]

_DIR = Path(__file__).resolve().parent


@functools.cache
def kernel_source(filename: str) -> str:
    """Text of a CUDA C file of this package directory, read once."""
    return (_DIR / filename).read_text()


def current_device(what: str) -> int:
    """Ordinal of the current CUDA device; without a GPU a RuntimeError naming ``what``."""
    from rtc.device import current_device_ordinal

    dev = current_device_ordinal()
    if dev is None:
        raise RuntimeError(f"no CUDA GPU: {what} can only be compiled (give arch=)")
    return dev


CACHE_LIMIT = 4096
_lock = threading.Lock()


def cached_record(cache: dict, make: Callable[[Any, int], Any], plan: Any, device: int) -> Any:
    """The record of ``(plan, device)`` in ``cache``, built with ``make`` on a miss.

    Keyed by the plan's identity (dispatch caches plans, so one plan object serves every call of
    a problem); each record keeps its plan alive (``rec.plan``) so the id is never reused while
    cached. The cache is bounded by clearing it when full.
    """
    key = (id(plan), device)
    rec = cache.get(key)
    if rec is not None and rec.plan is plan:
        return rec
    rec = make(plan, device)
    with _lock:
        if len(cache) >= CACHE_LIMIT:
            cache.clear()
        cache[key] = rec
    return rec
