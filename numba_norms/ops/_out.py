"""Caller-provided outputs (``out=``) of the public calls: ingestion and checks.

A provided output is ingested like an in-out argument (numpy arrays are staged and written
back by ``Call.finish``), must have exactly the dtype and shape the call would allocate, a
row layout the kernels can address (vectors: stride 1; rows that do not overlap each other)
and no memory in common with the call's inputs or its other outputs: the kernels read rows in
several passes and across CTAs, so an output written over an input is not a defined in-place
operation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arrays import Call, Tensor

__all__ = ["check_disjoint", "output", "outputs", "unpack"]


def unpack(out: Any, names: tuple[str, ...]) -> tuple:
    """The per-output elements of ``out``: all None when ``out`` is None.

    One name: ``out`` is the array itself. Several: a tuple or list of that many entries, each
    an array or None (None: allocated by the call).
    """
    n = len(names)
    if out is None:
        return (None,) * n
    if n == 1:
        return (out,)
    if not isinstance(out, (tuple, list)) or len(out) != n:
        got = f"{len(out)} entries" if isinstance(out, (tuple, list)) else type(out).__name__
        raise TypeError(
            f"out: expected None or a tuple of {n} arrays or None ({', '.join(names)}), got {got}"
        )
    return tuple(out)


def _label(name: str, index: int | None) -> str:
    return f"out ({name})" if index is None else f"out[{index}] ({name})"


def output(
    call: Call, obj: Any, name: str, shape: tuple[int, ...], dtype: str, index: int | None
) -> Tensor:
    """``obj`` ingested as the output ``name`` (or a new one when ``obj`` is None)."""
    if obj is None:
        return call.output(shape, dtype, name)
    label = _label(name, index)
    t = call.inout(obj, label, dtypes=(dtype,))
    if t.dtype != dtype:
        raise TypeError(f"{label}: expected dtype {dtype}, got {t.dtype}")
    if t.shape != tuple(shape):
        raise ValueError(f"{label}: expected shape {tuple(shape)}, got {t.shape}")
    rows, cols, pitch = t.rows_cols()  # rows of one pitch, contiguous columns, else ValueError
    if rows > 1 and pitch < cols:
        raise ValueError(
            f"{label}: rows overlap (row stride {pitch} < {cols} columns); each output element "
            "needs memory of its own"
        )
    return t


def _extent(t: Tensor) -> tuple[int, int]:
    """Byte range ``[lo, hi)`` the tensor's elements occupy (empty: ``(0, 0)``)."""
    if t.size == 0:
        return 0, 0
    lo = hi = t.ptr
    for n, s in zip(t.shape, t.strides, strict=True):
        step = (n - 1) * s * t.itemsize
        if step < 0:
            lo += step
        else:
            hi += step
    return lo, hi + t.itemsize


def _overlap(a: Tensor, b: Tensor) -> bool:
    na, nb = a._native, b._native
    if isinstance(na, np.ndarray) and isinstance(nb, np.ndarray):  # staged: compare the host
        try:  # exact (interleaved views of one buffer share nothing), within a work bound
            return bool(np.shares_memory(na, nb, max_work=1 << 20))
        except getattr(np, "exceptions", np).TooHardError:  # numpy.exceptions from 1.25
            return True
    if a.device != b.device:
        return False
    lo_a, hi_a = _extent(a)
    lo_b, hi_b = _extent(b)
    return lo_a < hi_b and lo_b < hi_a


def check_disjoint(provided: list[Tensor], others: list[Tensor | None]) -> None:
    """Raise ValueError if a provided output shares memory with an input or another output.

    ``provided``: the outputs the caller gave; ``others``: every other array of the call.
    """
    for i, o in enumerate(provided):
        if o.size == 0:
            continue
        for t in others + provided[i + 1 :]:
            if t is not None and t is not o and _overlap(o, t):
                host = isinstance(o._native, np.ndarray) and isinstance(t._native, np.ndarray)
                how = "" if host else " (their address ranges overlap)"
                raise ValueError(
                    f"{o.name}: shares memory with {t.name}{how}; an output must not overlap "
                    "the inputs or the other outputs"
                )


def outputs(
    call: Call, out: Any, specs: list[tuple[str, tuple[int, ...], str]], inputs: list
) -> list[Tensor]:
    """The outputs ``specs`` (name, shape, dtype) of a call: taken from ``out`` where given
    (checked by :func:`output` and against ``inputs`` and each other), else allocated."""
    names = tuple(name for name, _, _ in specs)
    given = unpack(out, names)
    index = (lambda i: i) if len(specs) > 1 else (lambda i: None)
    made = [
        output(call, obj, name, shape, dtype, index(i))
        for i, (obj, (name, shape, dtype)) in enumerate(zip(given, specs, strict=True))
    ]
    if out is not None:
        provided = [t for t, obj in zip(made, given, strict=True) if obj is not None]
        check_disjoint(provided, inputs)
    return made
