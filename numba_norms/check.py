"""``numba-norms check``: every public op on both backends against float64 references."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from . import dispatch, ops
from . import reference as ref

__all__ = ["CheckRow", "check_cases", "check_specs", "run_checks"]

DTYPES = ("fp32", "fp16", "bf16")


@dataclass
class CheckRow:
    op: str
    backend: str
    dtype: str
    shape: tuple[int, ...]
    worst: float  # worst |error| / tolerance over every output (<= 1 passes)
    error: str = ""

    @property
    def passed(self) -> bool:
        return not self.error and self.worst <= 1.0


def _ratio(actual, expected, dtype: str, widen: float = 1.0) -> float:
    atol, rtol = ref.TOLERANCE[dtype]
    a = np.asarray(actual, np.float64)
    e = np.asarray(expected, np.float64)
    if a.shape != e.shape or np.isnan(a).any():
        return float("inf")
    if a.size == 0:
        return 0.0
    return float((np.abs(a - e) / (widen * (atol + rtol * np.abs(e)))).max())


def _norm_case(kind: str, dtype: str, rows: int, cols: int) -> float:
    rng = np.random.default_rng(rows * 31 + cols)
    cast = ref.NP[dtype]
    x = (rng.standard_normal((rows, cols)) * 2 + 0.5).astype(cast)
    g = (rng.standard_normal(cols) * 0.3 + 1).astype(cast)
    dy = rng.standard_normal((rows, cols)).astype(cast)
    grad_widen = 4 * max(1.0, np.sqrt(rows))
    if kind == "layernorm":
        b = (rng.standard_normal(cols) * 0.1).astype(cast)
        y, mu, rs = ops.layernorm_fwd(x, g, b)
        ey, _, _ = ref.layernorm_fwd(x, g, b, 1e-5)
        dx, dg, db = ops.layernorm_bwd(dy, x, mu, rs, g)
        edx, edg, edb = ref.layernorm_bwd(dy, x, mu, rs, g)
        return max(
            _ratio(y, ey, dtype, 2),
            _ratio(dx, edx, dtype, 4),
            _ratio(dg, edg, dtype, grad_widen),
            _ratio(db, edb, dtype, grad_widen),
        )
    y, rs = ops.rmsnorm_fwd(x, g)
    ey, _ = ref.rmsnorm_fwd(x, g, 1e-5)
    dx, dg = ops.rmsnorm_bwd(dy, x, rs, g)
    edx, edg = ref.rmsnorm_bwd(dy, x, rs, g)
    return max(
        _ratio(y, ey, dtype, 2), _ratio(dx, edx, dtype, 4), _ratio(dg, edg, dtype, grad_widen)
    )


def _softmax_case(variant: str, dtype: str, shape: tuple[int, ...]) -> float:
    rng = np.random.default_rng(sum(shape))
    cast = ref.NP[dtype]
    x = (rng.standard_normal(shape) * 2).astype(cast)
    dy = rng.standard_normal(shape).astype(cast)
    scale = 0.8
    if variant == "scaled":
        y, ey = ops.scaled_softmax_fwd(x, scale), ref.scaled_softmax(x, scale)
        dx = ops.scaled_softmax_bwd(dy, y, scale)
    elif variant == "masked":
        mask = rng.random((shape[0], 1) + shape[2:]) < 0.25
        y = ops.scaled_masked_softmax_fwd(x, mask, scale)
        ey = ref.scaled_masked_softmax(x, mask, scale)
        dx = ops.scaled_masked_softmax_bwd(dy, y, scale)
    elif variant == "upper_triang":
        y = ops.scaled_upper_triang_masked_softmax_fwd(x, scale)
        ey = ref.scaled_upper_triang_softmax(x, scale)
        dx = ops.scaled_upper_triang_masked_softmax_bwd(dy, y, scale)
    else:
        y = ops.scaled_aligned_causal_masked_softmax_fwd(x, scale)
        ey = ref.scaled_aligned_causal_softmax(x, scale)
        dx = ops.scaled_aligned_causal_masked_softmax_bwd(dy, y, scale)
    return max(_ratio(y, ey, dtype), _ratio(dx, ref.softmax_bwd(dy, y, scale), dtype, 4))


def check_cases(small: bool) -> Iterator[tuple[str, str, tuple[int, ...], Callable[[], float]]]:
    """(op, dtype, shape, run) for every op and dtype; ``small`` for the simulator."""
    norm_shapes = [(3, 33), (4, 64)] if small else [(64, 1024), (37, 1000), (8, 65536)]
    soft_shapes = [(1, 2, 3, 7), (2, 1, 4, 33)] if small else [(2, 3, 17, 1000), (1, 2, 3, 4097)]
    for dtype in DTYPES:
        for kind in ("layernorm", "rmsnorm"):
            for rows, cols in norm_shapes:
                yield (
                    kind,
                    dtype,
                    (rows, cols),
                    lambda k=kind, d=dtype, r=rows, c=cols: _norm_case(k, d, r, c),
                )
        for variant in ("scaled", "masked", "upper_triang", "aligned_causal"):
            for shape in soft_shapes:
                if variant == "upper_triang":
                    shape = (shape[0] * shape[1], shape[2], shape[2])
                yield (
                    f"softmax_{variant}",
                    dtype,
                    shape,
                    lambda v=variant, d=dtype, s=shape: _softmax_case(v, d, s),
                )


def run_checks(backends: tuple[str, ...], small: bool, progress=None) -> list[CheckRow]:
    """Run every case on each backend (``DISABLE_NVRTC`` is set around the Numba runs)."""
    rows: list[CheckRow] = []
    cases = list(check_cases(small))
    saved = os.environ.get("DISABLE_NVRTC")
    try:
        for backend in backends:
            if backend == "numba":
                os.environ["DISABLE_NVRTC"] = "1"
            else:
                os.environ.pop("DISABLE_NVRTC", None)
            for op, dtype, shape, run in cases:
                try:
                    worst = run()
                    ran = dispatch.last_backend() or backend
                    rows.append(CheckRow(op, ran, dtype, shape, worst))
                except Exception as exc:  # a failing kernel is a row of the table, not a crash
                    rows.append(
                        CheckRow(
                            op, backend, dtype, shape, float("inf"), f"{type(exc).__name__}: {exc}"
                        )
                    )
                if progress is not None:
                    progress.update(1)
    finally:
        if saved is None:
            os.environ.pop("DISABLE_NVRTC", None)
        else:
            os.environ["DISABLE_NVRTC"] = saved
    return rows


def check_specs() -> list[tuple[str, bool, object]]:
    """(backend module, is_backward, spec) of every kernel the GPU-size cases launch.

    ``check`` on a machine without a GPU compiles exactly these with NVRTC, so it proves the
    kernels it would run build, without compiling the whole registry.
    """
    from . import planner, registry

    limits = planner.DeviceLimits(sm_count=132)
    out: dict[tuple, tuple[str, bool, object]] = {}
    for op, dtype, shape, _ in check_cases(small=False):
        rows = int(np.prod(shape[:-1]))
        cols = shape[-1]
        if op in ("layernorm", "rmsnorm"):
            for direction in ("fwd", "bwd"):
                key = registry.NormKey(f"{op}_{direction}", dtype, dtype, dtype)
                cfg = registry.select_norm(key, cols, rows, 256)
                spec = planner.norm_spec(cfg, cols, cfg.num_elts, limits)
                out.setdefault(spec.kernel_key, (op, direction == "bwd", spec))
            continue
        variant = op.removeprefix("softmax_")
        for sop in ("softmax_fwd", "softmax_bwd"):
            cfg = registry.select_softmax(sop, variant, dtype, cols)
            spec = planner.softmax_spec(cfg, cols, 1 if cols % 2 else cfg.num_elts, limits)
            out.setdefault(spec.kernel_key, ("softmax", sop == "softmax_bwd", spec))
    return list(out.values())
