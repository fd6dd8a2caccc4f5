"""Scalar arguments of the entry points (eps, scale, flags), checked one way for every op."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["as_flag", "as_real"]


def as_real(value, name: str) -> float:
    """``value`` as a finite Python float; strings and bools are refused, though float() would
    take "1e-5" and True."""
    if isinstance(value, (str, bytes, bool, np.bool_)):
        raise TypeError(f"{name}: expected a float, got {type(value).__name__}")
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: expected a float, got {type(value).__name__}") from None
    if not math.isfinite(value):
        raise ValueError(f"{name}: expected a finite value, got {value}")
    return value


def as_flag(value, name: str) -> bool:
    """``value`` as a bool; strings are refused (bool("False") is True)."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name}: expected a bool, got {type(value).__name__} {value!r}")
    return bool(value)
