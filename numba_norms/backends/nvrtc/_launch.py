"""Launch-record caching shared by the NVRTC op launchers.

A launch record holds what a launch of one plan needs that does not change between calls (loaded
kernel, grid, scalar arguments). Each op module keeps its own dict (tests swap it out); this is
the one lookup-or-build both use.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["CACHE_LIMIT", "cached_record"]

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
