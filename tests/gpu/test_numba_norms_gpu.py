"""The Numba backend's norm kernels on a GPU, through its launchers, against float64 references.

Covers tuned (768 / 1024 / 4096 / 8192) and general (1000 / 4095 / 5003 columns) kernels,
multi-CTA rows (LayerNorm tuned 65536, general 131072: thread-block clusters on sm_90+ and
cooperative launches with the workspace barrier), several row trips per CTA, zero-centred
gamma, the fused add of RMSNorm backward and bitwise-identical repeats.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import HAS_GPU, SIMULATOR

pytestmark = pytest.mark.gpu
if not HAS_GPU or SIMULATOR:
    pytest.skip("needs a CUDA GPU (and no simulator)", allow_module_level=True)

from numba import cuda  # noqa: E402

from numba_norms import planner, registry  # noqa: E402
from tests import test_numba_norms  # noqa: E402
from tests.test_numba_norms import (  # noqa: E402
    MODULES,
    check_backward,
    check_forward,
    device_limits,
    inputs,
    rounded,
    run_backward,
    run_forward,
)

SAME = {d: (d, d, d) for d in ("fp32", "fp16", "bf16")}
OPS = ["layernorm", "rmsnorm"]


def _fwd_bwd(op, dtypes, rows, cols, *, general, zero_centered=False, add=False, seed=0):
    """Forward, then backward on the forward's statistics; returns both plans."""
    x, g, b, dy = inputs(rows, cols, dtypes, seed, zero_centered=zero_centered)
    y, mu, rs, fplan = run_forward(
        op, dtypes, x, g, b, zero_centered=zero_centered, general=general
    )
    check_forward(op, dtypes, x, g, b, y, mu, rs, eps=1e-5, zero_centered=zero_centered)
    a = None
    if add:
        a = rounded(np.random.default_rng(seed + 1).standard_normal((rows, cols)), dtypes[1])
    dx, dg, db, bplan = run_backward(
        op, dtypes, dy, x, mu, rs, g, add=a, zero_centered=zero_centered, general=general
    )
    check_backward(op, dtypes, dy, x, mu, rs, g, dx, dg, db, add=a, zero_centered=zero_centered)
    return fplan, bplan


def _has_tuned(op: str, dtypes, cols: int) -> bool:
    return any(
        c.kind == "tuned" and c.op == op and c.hidden_size == cols
        and (c.weight, c.input, c.output) == dtypes
        for c in registry.norm_configs()
    )  # fmt: skip


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("cols", [768, 1024, 4096, 8192])
@pytest.mark.parametrize("op", OPS)
def test_tuned(op, cols, dtype):
    dtypes = SAME[dtype]
    fplan, bplan = _fwd_bwd(op, dtypes, 64, cols, general=False, seed=cols)
    assert fplan.spec.general is not _has_tuned(f"{op}_fwd", dtypes, cols)
    assert bplan.spec.general is not _has_tuned(f"{op}_bwd", dtypes, cols)
    assert fplan.ctas_per_row == 1 and not MODULES[op].compile_forward(fplan.spec).cooperative


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("cols", [1000, 4095, 5003])
@pytest.mark.parametrize("op", OPS)
def test_general(op, cols, dtype):
    fplan, bplan = _fwd_bwd(
        op, SAME[dtype], 37, cols, general=True, zero_centered=cols == 4095, seed=cols
    )
    assert fplan.spec.general and bplan.spec.general


@pytest.mark.parametrize("general", [False, True])
def test_mixed_dtypes(general):
    # TE's mixed entries: fp32 x -> bf16 y (forward), bf16 gamma and dy with fp32 x (backward)
    fwd, bwd = ("fp32", "fp32", "bf16"), ("bf16", "fp32", "bf16")
    x, g, b, dy = inputs(16, 4096, bwd, 3)
    y, mu, rs, _ = run_forward("layernorm", fwd, x, g, b, general=general)
    check_forward("layernorm", fwd, x, g, b, y, mu, rs, eps=1e-5, zero_centered=False)
    dx, dg, db, _ = run_backward("layernorm", bwd, dy, x, mu, rs, g, general=general)
    check_backward("layernorm", bwd, dy, x, mu, rs, g, dx, dg, db, zero_centered=False)


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("cols, general", [(1000, True), (4096, False)])
def test_rmsnorm_backward_with_add(cols, general, dtype):
    _, bplan = _fwd_bwd("rmsnorm", SAME[dtype], 40, cols, general=general, add=True, seed=5)
    assert bplan.spec.config.fused_add


# conftest's row_sync replaces the limits the shared launch helpers plan with
ROW_SYNC_LIMITS = (test_numba_norms, "device_limits")


def _cluster(plan) -> int:
    """The cluster size the plan should have under the limits in force."""
    return planner.cluster_size(plan.ctas_per_row, test_numba_norms.device_limits())


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize(
    "op, cols, general",
    [("layernorm", 65536, False), ("layernorm", 131072, True), ("rmsnorm", 131072, True)],
)
def test_multi_cta_rows(monkeypatch, op, cols, general, dtype, row_sync):
    # TE's entries: several CTAs a row (the measured ones may take one); TE's 65536 rows take
    # 8 CTAs (a cluster where the device has them), the general 131072 ones 16 (the counter)
    te_select = registry.select_norm
    monkeypatch.setattr(
        registry, "select_norm", lambda *a, **k: te_select(*a, **{**k, "measured": False})
    )
    rows = 8 if general else 12
    fplan, bplan = _fwd_bwd(op, SAME[dtype], rows, cols, general=general, zero_centered=True)
    for plan in (fplan, bplan):
        assert plan.ctas_per_row > 1
        assert plan.cluster == _cluster(plan)
        assert plan.cooperative == (plan.cluster == 1)
    mod = MODULES[op]
    assert mod.compile_forward(fplan.spec).cooperative
    assert mod.compile_backward(bplan.spec).cooperative


def _rows_for_trips(op: str, dtypes, cols: int, general: bool, trips: int) -> int:
    """A row count that makes every CTA run ``trips`` row trips (the last one partial)."""
    key = registry.NormKey(f"{op}_fwd", *dtypes)
    cfg = registry.select_norm(key, cols, 4, 256, allow_tuned=not general)
    limits = device_limits()
    spec = planner.norm_spec(cfg, cols, cfg.num_elts, limits)
    plan = planner.norm_plan(spec, 10**7, cols, limits, MODULES[op].occupancy_forward(spec))
    return (trips - 1) * plan.ctas_per_col * spec.warps_m + 4


@pytest.mark.parametrize(
    "op, cols, general", [("layernorm", 1024, False), ("layernorm", 65536, False)]
)
def test_several_row_trips(op, cols, general):
    dtypes = SAME["bf16"]
    rows = _rows_for_trips(op, dtypes, cols, general, 3)
    fplan, _ = _fwd_bwd(op, dtypes, rows, cols, general=general, seed=9)
    assert fplan.row_iterations == 3


def test_multi_cta_several_row_trips(monkeypatch, row_sync):
    """TE's 65536 rows (8 CTAs) over three trips: both parity buffers of the statistics reused,
    as a cluster and through the counter."""
    te_select = registry.select_norm
    monkeypatch.setattr(
        registry, "select_norm", lambda *a, **k: te_select(*a, **{**k, "measured": False})
    )
    dtypes = SAME["bf16"]
    rows = _rows_for_trips("layernorm", dtypes, 65536, False, 3)
    rows += -rows % 4  # TE's tuned entries want whole groups of 4 rows
    fplan, bplan = _fwd_bwd("layernorm", dtypes, rows, 65536, general=False, seed=4)
    assert not fplan.spec.general and fplan.ctas_per_row > 1 and fplan.row_iterations >= 3
    assert fplan.cluster == _cluster(fplan)
    assert bplan.ctas_per_row > 1 and bplan.row_iterations >= 2


@pytest.mark.parametrize(
    "op, cols, general",
    [("layernorm", 4096, False), ("layernorm", 65536, False), ("rmsnorm", 131072, True)],
)
def test_bitwise_identical_repeats(op, cols, general):
    dtypes = SAME["bf16"]
    x, g, b, dy = inputs(24, cols, dtypes, 1)
    first = run_forward(op, dtypes, x, g, b, general=general)
    again = run_forward(op, dtypes, x, g, b, general=general)
    for u, v in zip(first[:3], again[:3], strict=True):
        if u is not None:
            np.testing.assert_array_equal(u, v)
    mu, rs = first[1], first[2]
    g1 = run_backward(op, dtypes, dy, x, mu, rs, g, general=general)
    g2 = run_backward(op, dtypes, dy, x, mu, rs, g, general=general)
    for u, v in zip(g1[:3], g2[:3], strict=True):
        if u is not None:
            np.testing.assert_array_equal(u, v)
    cuda.synchronize()


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize(
    "op, cols, ctas, warps_n, w",
    [("layernorm", 16384, 8, 1, 2), ("layernorm", 65536, 8, 4, 1), ("rmsnorm", 8192, 1, 8, 1)],
)
def test_backward_sums_in_shared_memory(monkeypatch, op, cols, ctas, warps_n, w, dtype):
    """Backward entries with dgamma / dbeta in shared-memory slots (``wgrad_smem``; the first
    two are the NVRTC table's layernorm_bwd bf16 shapes), rows of one CTA and 8-CTA clusters."""
    dtypes = SAME[dtype]
    cfg = registry.NormConfig.tuned_for(
        registry.NormKey(f"{op}_bwd", *dtypes), cols, ctas_per_row=ctas, warps_m=1,
        warps_n=warps_n, origin="measured", prefetch=True, wgrad_smem=w,
    )  # fmt: skip
    select = registry.select_norm
    monkeypatch.setattr(
        registry,
        "select_norm",
        lambda key, *a, **k: cfg if key.op.endswith("_bwd") else select(key, *a, **k),
    )
    _, bplan = _fwd_bwd(op, dtypes, 40, cols, general=False, seed=5)
    assert bplan.spec.config is cfg and bplan.ctas_per_row == ctas


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize(
    "op, cols, warps_n, add",
    [("layernorm", 4104, 4, False), ("layernorm", 8200, 8, False), ("rmsnorm", 8200, 8, True)],
)
def test_general_lean_backward_pipeline(monkeypatch, op, cols, warps_n, add, dtype):
    """The lean general backward's pipeline (the next row's words loaded beside this row's
    kept words; 40 elements a thread at one CTA an SM), over several row trips with a partial
    last vector, the fused add included."""
    from numba_norms.backends.numba import _norms

    dtypes = SAME[dtype]
    key = registry.NormKey(f"{op}_bwd", *dtypes, add)
    cfg = registry._one_cta_general(key, cols, 16, 1, warps_n, 1, True)
    select = registry.select_norm
    monkeypatch.setattr(
        registry,
        "select_norm",
        lambda k, *a, **kw: cfg if k.op.endswith("_bwd") else select(k, *a, **kw),
    )
    _, bplan = _fwd_bwd(op, dtypes, 1500, cols, general=True, add=add, seed=9)
    assert bplan.spec.config is cfg and bplan.spec.num_elts * bplan.spec.ldgs == 40
    assert _norms._backward_form(bplan.spec) == (True, True, True)
    assert bplan.row_iterations >= 3
