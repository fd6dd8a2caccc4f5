"""Scalar arguments of the entry points (eps, scale, flags), checked one way for every op."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["as_flag", "as_real"]


def as_real(value, name: str) -> float:
    """``value`` as a finite Python float. Strings, bools, complex numbers and arrays of such
    are refused, though float() would take "1e-5", True, np.array("1e-5") or np.complex128."""
    kind = getattr(getattr(value, "dtype", None), "kind", "f")
    if isinstance(value, (str, bytes, bool, np.bool_, complex)) or kind not in "iuf":
        raise TypeError(f"{name}: expected a float, got {_what(value)}")
    try:
        value = float(value)
    except OverflowError:
        raise ValueError(f"{name}: expected a finite value, got one beyond float range") from None
    except (TypeError, ValueError):
        raise TypeError(f"{name}: expected a float, got {_what(value)}") from None
    if not math.isfinite(value):
        raise ValueError(f"{name}: expected a finite value, got {value}")
    return value


def as_flag(value, name: str) -> bool:
    """``value`` as a bool: a bool or an integer (numpy's too); anything else is refused, as
    bool() would take "False", [False] or None without a word."""
    if isinstance(value, (bool, int, np.bool_, np.integer)):
        return bool(value)
    raise TypeError(f"{name}: expected a bool, got {_what(value)}")


def _what(value) -> str:
    """The type of ``value`` for a message (with the dtype of an array)."""
    return type(value).__name__ + (
        f" of dtype {value.dtype}" if isinstance(value, np.ndarray) else ""
    )
