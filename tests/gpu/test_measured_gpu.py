"""Every entry of the measured tables (``data/measured_norms.json`` and the Numba backend's own
``measured_norms_numba.json``) through the public API.

The sweep that chose these shapes compared each candidate's outputs with TE's entry; here each
one is checked against the float64 reference, with enough rows that every CTA runs at least two
row trips (the software pipeline's prefetch of the next row is exercised). Numba runs the
entries of 512 threads and more (the register-tight ones) and one of each op.
"""

from __future__ import annotations

import pytest

from numba_norms import dispatch, planner, registry
from tests.conftest import HAS_GPU

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU"),
]
api = pytest.importorskip("tests.gpu.test_norms_api_gpu") if HAS_GPU else None

MEASURED = [c for c in registry.measured_configs() if not c.output.startswith("fp8")]
_first_of_op = {c.op: c for c in reversed(MEASURED)}
NUMBA = [c for c in MEASURED if c.threads >= 512 or _first_of_op[c.op] is c]
# the Numba backend's own entries (data/measured_norms_numba.json; FP8 outputs: test_fp8_gpu);
# where one serves a hidden size, the Numba path does not run the shared entry
NUMBA_OWN = [c for c in registry.measured_configs("numba") if not c.output.startswith("fp8")]
_replaced = {(c.key, c.hidden_size) for c in NUMBA_OWN}
NUMBA = [c for c in NUMBA if (c.key, c.hidden_size) not in _replaced]


def _rows(cfg, cols: int | None = None, backend: str = "nvrtc") -> int:
    """A few more rows than ``backend``'s kernel's resident row groups hold (two trips for some
    CTAs), a multiple of 4 (tuned entries need it)."""
    limits = dispatch.device_limits(None)
    spec = planner.norm_spec(cfg, cols or cfg.hidden_size, cfg.num_elts, limits)
    mod = dispatch.backend_module(backend, cfg.op.split("_")[0])
    occ = (mod.occupancy_backward if cfg.is_backward else mod.occupancy_forward)(spec)
    resident_rows = limits.sm_count * occ // spec.ctas_per_row * cfg.warps_m
    return (resident_rows + 8) // 4 * 4


def _plan_of(backend, cfg, rows: int, cols: int):
    """Check ``cfg``'s op at rows x cols against the reference; the plan that used ``cfg``."""
    dispatch._plan_cache.clear()
    dtypes = (cfg.weight, cfg.input, cfg.output)
    if cfg.op.startswith("layernorm"):
        api.check_layernorm(backend, rows, cols, *dtypes)
    else:
        api.check_rmsnorm(backend, rows, cols, *dtypes)
    plans = [p for p in dispatch._plan_cache.values() if p.spec.config == cfg]
    assert plans, f"the measured entry was not used: {cfg}"
    return plans[0]


def _run(backend, cfg):
    plan = _plan_of(backend, cfg, _rows(cfg), cfg.hidden_size)
    # a grid of all rows gives each CTA one trip: the pipeline has no next row to load
    assert plan.row_iterations >= 2 or backend == "numba" or plan.spec.grid_of_rows


def _id(c) -> str:
    return f"{c.op}-{c.input}-{c.hidden_size}-{c.warps_m}x{c.warps_n}-m{c.min_ctas_per_sm}" + (
        "-pf" if c.prefetch else ""
    )


@pytest.mark.parametrize("cfg", MEASURED, ids=_id)
def test_measured_entry_nvrtc(monkeypatch, cfg):
    monkeypatch.delenv("DISABLE_NVRTC", raising=False)
    _run("nvrtc", cfg)


@pytest.mark.parametrize("cfg", NUMBA, ids=_id)
def test_measured_entry_numba(monkeypatch, cfg):
    monkeypatch.setenv("DISABLE_NVRTC", "1")
    _run("numba", cfg)


@pytest.mark.parametrize("cfg", NUMBA_OWN, ids=_id)
def test_numba_own_entry(monkeypatch, cfg):
    """The Numba path picks its own entry (the check asserts the plan used it) and gets the
    reference's numbers with it."""
    monkeypatch.setenv("DISABLE_NVRTC", "1")
    _run("numba", cfg)


_VECTOR = [
    (backend, op, dt)
    for backend, table in registry._VECTOR_GENERAL.items()
    for op in table
    for dt in ("bf16", "fp16")
]


@pytest.mark.parametrize(("backend", "op", "dtype"), _VECTOR, ids=lambda v: str(v))
def test_vector_general_entry(monkeypatch, backend, op, dtype):
    """registry._VECTOR_GENERAL's shapes at 1000 columns, with a few more rows than the resident
    CTAs hold (several row trips: the pipelined ones prefetch the next row)."""
    cfg, plan = _select_and_check(monkeypatch, backend, op, 1000, 16, dtype)
    assert cfg.origin == "measured" and cfg.kind == "general"
    assert plan.row_iterations >= 2


def _select_and_check(monkeypatch, backend, op, cols, align, dtype="bf16"):
    """The entry ``backend`` selects for ``op`` at ``cols`` (rows with ``align``-byte pitch),
    checked against the reference with a few more rows than its resident CTAs hold; the entry
    and the plan that used it."""
    if backend == "numba":
        monkeypatch.setenv("DISABLE_NVRTC", "1")
    else:
        monkeypatch.delenv("DISABLE_NVRTC", raising=False)
    key = registry.NormKey(op, dtype, dtype, dtype)
    cfg = registry.select_norm(key, cols, 4, align, backend=backend)
    return cfg, _plan_of(backend, cfg, _rows(cfg, cols, backend), cols)


# generated entries: where the scaled CTA count tiles nothing (registry._GEN_FALLBACK_CTAS), and
# forwards scaled from the measured entries (registry._nearest_tuned: one or two CTAs where
# TE's neighbours gave 4-9)
_GENERATED = [
    (backend, op, cols, dt)
    for backend in ("nvrtc", "numba")
    for op, cols, dt in (
        ("rmsnorm_bwd", 12544, "bf16"),
        ("layernorm_bwd", 13312, "bf16"),
        ("rmsnorm_bwd", 26112, "bf16"),
        ("layernorm_fwd", 58880, "bf16"),
        ("rmsnorm_fwd", 58368, "bf16"),
        ("layernorm_bwd", 58368, "bf16"),  # 4 CTAs of 19 warps (an odd count: cluster slots)
        ("layernorm_fwd", 28160, "bf16"),
        ("rmsnorm_fwd", 47104, "fp16"),
        ("rmsnorm_fwd", 49152, "fp32"),
        ("layernorm_fwd", 53760, "fp32"),
        ("layernorm_fwd", 12544, "bf16"),  # the pipeline on 56 elements a thread (7 warps)
        ("layernorm_fwd", 25088, "bf16"),  # NVRTC: 8-byte vectors, 16 would run without it
        ("layernorm_fwd", 19712, "fp16"),
    )
]


@pytest.mark.parametrize(("backend", "op", "cols", "dtype"), _GENERATED, ids=lambda v: str(v))
def test_generated_entry(monkeypatch, backend, op, cols, dtype):
    key = registry.NormKey(op, dtype, dtype, dtype)
    gen = registry.generated_tuned(key, cols, narrow=backend != "numba")
    assert gen is not None and gen.origin == "generated"
    assert _select_and_check(monkeypatch, backend, op, cols, 16, dtype)[0] == gen


# Each backend's one-CTA shapes for 16-bit vector multiples that nothing tiles (4104 = 8 x 513,
# ...), a length in each band
_WIDE = [
    (backend, op, cols, dt)
    for backend, by_op in registry._WIDE_VECTOR_GENERAL.items()
    for op, bands in by_op.items()
    for (upto, *shape), cols in zip(bands, (4104, 8200, 18944, 22784, 26368))
    if shape[0] is not None
    for dt in ("bf16", "fp16")
]


@pytest.mark.parametrize(("backend", "op", "cols", "dtype"), _WIDE, ids=lambda v: str(v))
def test_wide_vector_general_entry(monkeypatch, backend, op, cols, dtype):
    cfg, _ = _select_and_check(monkeypatch, backend, op, cols, 16, dtype)
    assert (cfg.kind, cfg.origin, cfg.bytes_per_ldg) == ("general", "measured", 16)


# TE's general entries under register caps past those bands (several CTAs a row): NVRTC's
# (registry._general_cap) and the Numba path's (_CAPPED_GENERAL_NUMBA, past 20480 columns)
_CAPPED = [
    (backend, op, cols, dt)
    for backend in ("nvrtc", "numba")
    for op in registry.NORM_OPS
    for cols in (46336,)
    for dt in ("bf16", "fp16")
]


@pytest.mark.parametrize(("backend", "op", "cols", "dtype"), _CAPPED, ids=lambda v: str(v))
def test_capped_general_entry(monkeypatch, backend, op, cols, dtype):
    cfg, plan = _select_and_check(monkeypatch, backend, op, cols, 16, dtype)
    assert (cfg.kind, cfg.origin, cfg.min_ctas_per_sm) == (
        "general", "measured", registry._general_cap(cfg.key, backend)[0],
    )  # fmt: skip
    assert plan.spec.ctas_per_row > 1 and plan.row_iterations >= 2


@pytest.mark.parametrize("cols", [2053, 3071, 5003, 12289])
def test_nvrtc_narrow_layernorm_fwd_entry(monkeypatch, cols):
    """registry._NARROW_GENERAL_NVRTC's layernorm_fwd shapes on odd bf16 rows (2-byte pitch)."""
    cfg, _ = _select_and_check(monkeypatch, "nvrtc", "layernorm_fwd", cols, 2)
    assert (cfg.kind, cfg.origin, cfg.num_elts) == ("general", "measured", 1)


@pytest.mark.parametrize(
    ("op", "rows", "cols", "dtype"),
    [
        ("layernorm_fwd", 0, 8200, "bf16"),  # whole vectors, several row trips
        ("rmsnorm_fwd", 0, 8200, "fp16"),
        ("layernorm_fwd", 1, 8197, "bf16"),  # one row: a partial vector of 5 elements
        ("rmsnorm_fwd", 1, 8199, "fp32"),  # of 3
    ],
)
def test_numba_general_forward_pipeline(monkeypatch, op, rows, cols, dtype):
    """The Numba general forward with the software pipeline on (guarded word loads: columns past
    the row end as 0), against the reference; rows 0: a few more than the resident CTAs hold."""
    monkeypatch.setenv("DISABLE_NVRTC", "1")
    key = registry.NormKey(op, dtype, dtype, dtype)
    cfg = registry.NormConfig.general_for(
        key, 10240, warps_m=1, warps_n=8, bytes_per_ldg=16, origin="measured", prefetch=True
    )
    select = registry.select_norm  # the check's backward keeps its own entry
    monkeypatch.setattr(
        registry, "select_norm", lambda k, *a, **kw: cfg if k == key else select(k, *a, **kw)
    )
    plan = _plan_of("numba", cfg, rows or _rows(cfg, cols, "numba"), cols)
    assert plan.spec.general and (rows == 1 or plan.row_iterations >= 2)


@pytest.mark.parametrize(
    "op, cols, dtype",
    [
        ("layernorm_fwd", 46336, "bf16"),  # TE's entry: 6 CTAs a row
        ("layernorm_fwd", 46340, "fp16"),  # vectors of 4 elements, a partial last CTA
        ("layernorm_fwd", 46336, "fp16"),  # gamma and beta under one check: the y loop unrolls
        ("rmsnorm_fwd", 46336, "bf16"),
    ],
)
def test_numba_lean_forward(monkeypatch, op, cols, dtype):
    """The Numba forward's lean form (x kept as loaded) on TE's several-CTA entry at 8 CTAs an
    SM: against the reference (with the backward), and bit for bit against the wide form at 4
    CTAs an SM (the same arithmetic in the same order)."""
    import dataclasses

    import numpy as np

    from numba_norms.backends.numba import _norms

    monkeypatch.setenv("DISABLE_NVRTC", "1")
    key = registry.NormKey(op, dtype, dtype, dtype)
    te = registry.select_norm(key, cols, 64, 16, allow_tuned=False, measured=False)
    select = registry.select_norm  # the check's backward keeps its own entry
    cfgs = [dataclasses.replace(te, min_ctas_per_sm=c, origin="measured") for c in (4, 8)]
    rows = max(_rows(c, cols, "numba") for c in cfgs)
    outs = {}
    for cfg in cfgs:
        monkeypatch.setattr(
            registry,
            "select_norm",
            lambda k, *a, c=cfg, **kw: c if k == key else select(k, *a, **kw),
        )
        plan = _plan_of("numba", cfg, rows, cols)
        assert plan.spec.ctas_per_row > 1 and plan.row_iterations >= 2
        rng = np.random.default_rng(cols)
        x = api.T(api.rand((rows, cols), rng, 2.0, 0.3), dtype)
        g = api.T(api.rand(cols, rng, 0.3, 1.0), dtype)
        if op == "layernorm_fwd":
            out = api.nn.layernorm_fwd(x, g, api.T(api.rand(cols, rng, 0.1), dtype))
        else:
            out = api.nn.rmsnorm_fwd(x, g)
        outs[_norms._forward_lean(plan.spec)] = [api.N(t) for t in out]
    assert set(outs) == {False, True}, "one form each"
    for wide, lean in zip(outs[False], outs[True], strict=True):
        np.testing.assert_array_equal(lean, wide)
