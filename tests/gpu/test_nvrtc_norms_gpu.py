"""NVRTC LayerNorm/RMSNorm kernels on a GPU, driven directly through the backend launchers.

No dispatch and no ``ops`` layer: each test picks a registry entry, specialises and plans it with
the planner (the device's real limits and the kernel's occupancy), launches through
``numba_norms.backends.nvrtc.{layernorm,rmsnorm}`` on Numba device arrays and compares with the
float64 references of :mod:`numba_norms.reference`. Covers tuned and general entries, rows split
over several CTAs (thread-block clusters on sm_90+, cooperative launches with the counter
barrier), ragged and padded rows,
zero-centered gamma, the fused add and bitwise reproducibility.
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import pytest
from numba import cuda

from numba_norms import dispatch, planner, registry
from numba_norms import reference as ref
from numba_norms.backends.common import NormBwdArgs, NormFwdArgs
from numba_norms.backends.nvrtc import _norms, layernorm, rmsnorm
from tests.conftest import HAS_GPU, assert_close, finalize_in_order

pytestmark = [pytest.mark.gpu]
if not HAS_GPU:
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

STORAGE = {"fp32": np.float32, "fp16": np.float16, "bf16": np.uint16}
EPS = 1e-5


LIMITS = dispatch.device_limits(None)  # the real device's (the simulator is off here)


class DevTensor:
    """The few Tensor attributes the NVRTC launchers read, over a Numba device array view."""

    def __init__(self, base, dtype: str, cols: int | None = None) -> None:
        self.base = base  # keeps the allocation alive; copied back whole
        # Numba device arrays take no Ellipsis: index the (1-D or 2-D) array explicitly.
        if cols is None:
            view = base
        else:
            view = base[:, :cols] if base.ndim == 2 else base[:cols]
        self.dtype = dtype
        self.ptr = int(view.__cuda_array_interface__["data"][0])
        self.shape = tuple(view.shape)
        item = base.dtype.itemsize
        self.strides = tuple(s // item for s in view.strides)
        self.device = cuda.get_current_device().id

    def rows_cols(self):
        if len(self.shape) == 1:
            return 1, self.shape[0], self.shape[0]
        return self.shape[0], self.shape[1], self.strides[0]

    def host(self, cols: int | None = None) -> np.ndarray:
        a = self.base.copy_to_host()
        if self.dtype == "bf16":
            a = a.view(ref.NP["bf16"])
        a = a.astype(np.float64)
        return a if cols is None else a[..., :cols]


def _rounded(a: np.ndarray, dtype: str) -> np.ndarray:
    """``a`` rounded to ``dtype`` (float64 values) and its storage array."""
    typed = np.asarray(a, np.float64).astype(ref.NP[dtype])
    return typed.astype(np.float64), typed.view(STORAGE[dtype])


def _device(a: np.ndarray, dtype: str, cols: int | None = None) -> tuple[DevTensor, np.ndarray]:
    vals, storage = _rounded(a, dtype)
    t = DevTensor(cuda.to_device(np.ascontiguousarray(storage)), dtype, cols)
    return t, (vals if cols is None else vals[..., :cols])


def _empty(shape, dtype: str, cols: int | None = None) -> DevTensor:
    # NaN-filled so that columns past `cols` (padding) can be checked untouched
    fill = np.full(shape, np.nan, np.float32).astype(ref.NP[dtype]).view(STORAGE[dtype])
    return DevTensor(cuda.to_device(fill), dtype, cols)


def _config(
    op, hidden, weight, inp, out, kind=None, add=False, measured=True
) -> registry.NormConfig:
    """The entry TE's rules pick for ``hidden`` columns (tuned unless ``kind='general'``;
    measured entries first unless ``measured`` is False)."""
    key = registry.NormKey(op, weight, inp, out, add)
    cfg = registry.select_norm(
        key, hidden, 4, 256, allow_tuned=kind != "general", measured=measured
    )
    if kind is not None:
        assert cfg.kind == kind, cfg
    return cfg


def _plan(cfg, rows, cols, vec):
    mod = layernorm if cfg.op.startswith("layernorm") else rmsnorm
    spec = planner.norm_spec(cfg, cols, vec, LIMITS)
    occ = mod.occupancy_backward(spec) if cfg.is_backward else mod.occupancy_forward(spec)
    return mod, planner.norm_plan(spec, rows, cols, LIMITS, occ)


def _vec(cfg, pitch: int) -> int:
    """Vector width the arrays allow: Numba allocations are 256-byte aligned, the pitch decides."""
    pairs = []
    for dt in {cfg.input, cfg.output, cfg.weight}:
        size = registry.itemsize(dt)
        nbytes = pitch * size
        pairs.append((min(256, nbytes & -nbytes), size))
    return planner.vector_elements(pairs, cfg.num_elts)


def _scratch(plan):
    if plan.scratch_bytes == 0:
        return None
    return DevTensor(cuda.device_array(plan.scratch_bytes, np.uint8), "uint8")


def run_forward(cfg, rows, cols, *, zero_centered=False, pitch=None, seed=0, repeat=1):
    """Launch forward ``repeat`` times; returns inputs, outputs of each run and the plan."""
    rng = np.random.default_rng(seed + cols)
    pitch = pitch or cols
    rms = cfg.is_rms
    x, xv = _device(rng.standard_normal((rows, pitch)) * 2.0 + 0.3, cfg.input, cols)
    g, gv = _device(rng.standard_normal(cols) * 0.3 + (0.0 if zero_centered else 1.0), cfg.weight)
    b, bv = (None, None) if rms else _device(rng.standard_normal(cols) * 0.1, cfg.weight)
    mod, plan = _plan(cfg, rows, cols, _vec(cfg, pitch))
    runs = []
    for _ in range(repeat):
        y = _empty((rows, pitch), cfg.output, cols)
        mu = None if rms else _empty((rows,), "fp32")
        rs = _empty((rows,), "fp32")
        args = NormFwdArgs(x, g, b, y, mu, rs, EPS, zero_centered, _scratch(plan))
        mod.forward(plan, args, 0)
        cuda.synchronize()
        runs.append((y.host(), None if rms else mu.host(), rs.host()))
    return (xv, gv, bv), runs, plan


def run_backward(cfg, rows, cols, *, zero_centered=False, pitch=None, seed=1, repeat=1):
    """Launch backward (+ finalize) ``repeat`` times on fp32 statistics of the reference."""
    rng = np.random.default_rng(seed + cols)
    pitch = pitch or cols
    rms = cfg.is_rms
    x, xv = _device(rng.standard_normal((rows, pitch)) * 1.5 + 0.2, cfg.input, cols)
    dy, dyv = _device(rng.standard_normal((rows, pitch)), cfg.output, cols)
    g, gv = _device(rng.standard_normal(cols) * 0.3 + (0.0 if zero_centered else 1.0), cfg.weight)
    add, addv = (None, None)
    if cfg.fused_add:
        add, addv = _device(rng.standard_normal((rows, pitch)), cfg.input, cols)
    if rms:
        _, rs_ref = ref.rmsnorm_fwd(xv, gv, EPS)
        mu_ref = None
    else:
        _, mu_ref, rs_ref = ref.layernorm_fwd(xv, gv, np.zeros(cols), EPS)
        mu_ref = mu_ref.astype(np.float32)
    rs_ref = rs_ref.astype(np.float32)
    rs = DevTensor(cuda.to_device(rs_ref), "fp32")
    mu = None if rms else DevTensor(cuda.to_device(mu_ref), "fp32")
    mod, plan = _plan(cfg, rows, cols, _vec(cfg, pitch))
    runs = []
    for _ in range(repeat):
        dx = _empty((rows, pitch), cfg.input, cols)
        dg = _empty((cols,), cfg.weight)
        db = None if rms else _empty((cols,), cfg.weight)
        args = NormBwdArgs(dy, x, mu, rs, g, dx, add, dg, db, zero_centered, _scratch(plan))
        mod.backward(plan, args, 0)
        cuda.synchronize()
        runs.append((dx.host(), dg.host(), None if rms else db.host()))
    inputs = (dyv, xv, mu_ref, rs_ref, gv, addv)
    return inputs, runs, plan


def check_forward(cfg, rows, cols, **kw):
    (xv, gv, bv), runs, plan = run_forward(cfg, rows, cols, **kw)
    y, mu, rs = runs[0]
    zc = kw.get("zero_centered", False)
    if cfg.is_rms:
        ey, ers = ref.rmsnorm_fwd(xv, gv, EPS, zc)
    else:
        ey, emu, ers = ref.layernorm_fwd(xv, gv, bv, EPS, zc)
        assert_close(mu, emu, "fp32", scale=20, what="mu")
    assert_close(rs, ers, "fp32", scale=50, what="rsigma")
    assert_close(y[:, :cols], ey, cfg.output, scale=2, what="y")
    assert np.isnan(y[:, cols:]).all(), "wrote past the last column"
    return plan


def check_backward(cfg, rows, cols, **kw):
    (dyv, xv, mu, rs, gv, addv), runs, plan = run_backward(cfg, rows, cols, **kw)
    dx, dg, db = runs[0]
    zc = kw.get("zero_centered", False)
    gscale = 4 * max(1.0, np.sqrt(rows))
    if cfg.is_rms:
        edx, edg = ref.rmsnorm_bwd(dyv, xv, rs, gv, zc, addv)
    else:
        edx, edg, edb = ref.layernorm_bwd(dyv, xv, mu, rs, gv, zc)
        assert_close(db, edb, cfg.weight, scale=gscale, what="dbeta")
    assert_close(dx[:, :cols], edx, cfg.input, scale=4, what="dx")
    assert_close(dg, edg, cfg.weight, scale=gscale, what="dgamma")
    assert np.isnan(dx[:, cols:]).all(), "wrote past the last column"
    return plan


DTYPES = [("fp32",) * 3, ("fp16",) * 3, ("bf16",) * 3]
TUNED = [768, 1024, 4096, 8192]
GENERAL = [1000, 4095, 5003]


# ------------------------------------------------------------------------------------------------
# tuned entries
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d[0])
@pytest.mark.parametrize("cols", TUNED)
@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
def test_tuned_forward(op, cols, dt):
    cfg = _config(f"{op}_fwd", cols, *dt, kind="tuned")
    check_forward(cfg, 300, cols)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d[0])
@pytest.mark.parametrize("cols", TUNED)
@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
def test_tuned_backward(op, cols, dt):
    cfg = _config(f"{op}_bwd", cols, *dt, kind="tuned")
    check_backward(cfg, 300, cols)


# (op, cols, ctas_per_row, warps_n, min_ctas_per_sm, prefetch): wide and lean forms (the lean
# one from 32 elements a thread under the cap), one CTA and clusters of several a row
WGRAD_SHAPES = [
    ("layernorm_bwd", 4096, 1, 4, 1, True),
    ("layernorm_bwd", 16384, 4, 4, 3, True),
    ("layernorm_bwd", 16384, 2, 8, 2, True),
    ("rmsnorm_bwd", 8192, 1, 8, 1, False),
    ("rmsnorm_bwd", 65536, 8, 8, 2, True),
]


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d[0])
@pytest.mark.parametrize("shape", WGRAD_SHAPES, ids=lambda s: f"{s[0]}-{s[1]}-{s[2]}x{s[3]}")
def test_wgrad_smem_matches_reference_and_repeats(shape, dt):
    # dgamma / dbeta sums in shared memory (each setting the shape allows) give the reference's
    # values, and the same bits on a second launch (each thread owns its slots: no race). Not
    # bitwise the register form's: the freed registers may switch the kernel from its lean form
    # (x-hat and dy * gamma computed again for dx) to the wide one (norms.cu BwdRegisters; fp16
    # rmsnorm_bwd 65536 on 8 CTAs of 8 warps: the outputs were not bitwise equal, run 117).
    op, cols, ctas, wn, cap, pf = shape
    base = registry.NormConfig.tuned_for(
        registry.NormKey(op, *dt), cols, ctas_per_row=ctas, warps_m=1, warps_n=wn,
        bytes_per_ldg=16, origin="measured", min_ctas_per_sm=cap, prefetch=pf,
    )  # fmt: skip
    rows = 150
    for w in range(1, 2 if base.is_rms else 3):
        try:
            cfg = dataclasses.replace(base, wgrad_smem=w)
        except ValueError:  # slots larger than the static shared memory
            continue
        check_backward(cfg, rows, cols)
        _, runs, _ = run_backward(cfg, rows, cols, repeat=2)
        for first, second in zip(*runs):
            if first is not None:
                assert np.array_equal(first, second, equal_nan=True), (w, shape)
    if base.is_rms:  # the fused add beside it
        add = dataclasses.replace(base, fused_add=True, wgrad_smem=1)
        check_backward(add, rows, cols)


@pytest.mark.parametrize("combo", [("fp32", "fp32", "bf16"), ("fp32", "fp32", "fp16")])
def test_tuned_forward_mixed_output(combo):
    check_forward(_config("layernorm_fwd", 4096, *combo, kind="tuned"), 64, 4096)
    check_forward(_config("rmsnorm_fwd", 4096, *combo, kind="general"), 64, 4096)


@pytest.mark.parametrize("combo", [("bf16", "fp32", "bf16"), ("fp16", "fp32", "fp16")])
def test_tuned_backward_fp32_input(combo):
    check_backward(_config("layernorm_bwd", 4096, *combo, kind="tuned"), 64, 4096)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d[0])
def test_rmsnorm_backward_fused_add(dt):
    check_backward(_config("rmsnorm_bwd", 4096, *dt, kind="tuned", add=True), 96, 4096)
    check_backward(_config("rmsnorm_bwd", 5003, *dt, kind="general", add=True), 37, 5003)


@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
def test_zero_centered_gamma(op):
    for cols, kind in ((4096, "tuned"), (1000, "general")):
        fwd = _config(f"{op}_fwd", cols, "bf16", "bf16", "bf16", kind=kind)
        check_forward(fwd, 128, cols, zero_centered=True)
        bwd = _config(f"{op}_bwd", cols, "bf16", "bf16", "bf16", kind=kind)
        check_backward(bwd, 128, cols, zero_centered=True)
    add = _config("rmsnorm_bwd", 4096, "bf16", "bf16", "bf16", kind="tuned", add=True)
    check_backward(add, 64, 4096, zero_centered=True)


# ------------------------------------------------------------------------------------------------
# general entries: ragged rows, misaligned rows, padded rows
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d[0])
@pytest.mark.parametrize("cols", GENERAL)
@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
def test_general(op, cols, dt):
    check_forward(_config(f"{op}_fwd", cols, *dt, kind="general"), 129, cols)
    check_backward(_config(f"{op}_bwd", cols, *dt, kind="general"), 129, cols)


@pytest.mark.parametrize("cols,pitch", [(1000, 1024), (1001, 1008), (4095, 4104), (77, 80)])
def test_general_padded_rows(cols, pitch):
    """Pitch > cols: vectors stay 16-byte aligned while the last one of a row is partial."""
    for op in ("layernorm", "rmsnorm"):
        fwd = _config(f"{op}_fwd", cols, "bf16", "bf16", "bf16", kind="general")
        assert _vec(fwd, pitch) == fwd.num_elts
        check_forward(fwd, 50, cols, pitch=pitch)
        bwd = _config(f"{op}_bwd", cols, "bf16", "bf16", "bf16", kind="general")
        check_backward(bwd, 50, cols, pitch=pitch)


def test_single_row_and_few_rows():
    for rows in (1, 2, 3, 5):
        check_forward(_config("layernorm_fwd", 4096, "bf16", "bf16", "bf16"), rows, 4096)
        check_backward(_config("layernorm_bwd", 4096, "bf16", "bf16", "bf16"), rows, 4096)
        check_forward(_config("rmsnorm_fwd", 1001, "fp16", "fp16", "fp16", "general"), rows, 1001)
        check_backward(_config("rmsnorm_bwd", 1001, "fp16", "fp16", "fp16", "general"), rows, 1001)


# ------------------------------------------------------------------------------------------------
# several CTAs per row (cooperative launch, inter-CTA statistics and barrier)
# ------------------------------------------------------------------------------------------------


ROW_SYNC_LIMITS = (sys.modules[__name__], "LIMITS")  # what conftest's row_sync replaces


def _check_row_sync(plan, row_sync):
    assert plan.ctas_per_row > 1
    if row_sync == "cluster":
        assert plan.cluster == plan.ctas_per_row and not plan.cooperative
    else:
        assert plan.cluster == 1 and plan.cooperative and plan.barrier_bytes > 0


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d[0])
def test_multi_cta_tuned_65536(dt, row_sync):
    # TE's entries: several CTAs a row (the measured ones may take one)
    fwd = _config("layernorm_fwd", 65536, *dt, kind="tuned", measured=False)
    _check_row_sync(check_forward(fwd, 64, 65536), row_sync)
    bwd = _config("layernorm_bwd", 65536, *dt, kind="tuned", measured=False)
    _check_row_sync(check_backward(bwd, 64, 65536), row_sync)


@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
def test_multi_cta_general_131072(op):
    fwd = _config(f"{op}_fwd", 131072, "bf16", "bf16", "bf16", kind="general")
    plan = check_forward(fwd, 40, 131072)
    assert plan.ctas_per_row > 1
    bwd = _config(f"{op}_bwd", 131072, "bf16", "bf16", "bf16", kind="general")
    plan = check_backward(bwd, 40, 131072)
    assert plan.ctas_per_row > 1


def test_multi_cta_general_ragged(row_sync):
    """Several CTAs per row whose last CTA covers only part of its columns."""
    for cols in (9001, 20000 + 8):
        fwd = _config("layernorm_fwd", cols, "fp32", "fp32", "fp32", "general")
        _check_row_sync(check_forward(fwd, 33, cols), row_sync)
        bwd = _config("layernorm_bwd", cols, "fp32", "fp32", "fp32", "general")
        _check_row_sync(check_backward(bwd, 33, cols), row_sync)
    # TE's general entry: the measured one-CTA shapes (registry.vector_general) take such rows
    add = _config("rmsnorm_bwd", 9001, "bf16", "bf16", "bf16", "general", add=True, measured=False)
    _check_row_sync(check_backward(add, 33, 9001), row_sync)


def test_multi_cta_many_trips(row_sync):
    """Several CTAs a row over many more rows than row groups: every group runs many trips
    through both parity buffers of the statistics (a stale exchange would show)."""
    fwd = _config("layernorm_fwd", 65536, "bf16", "bf16", "bf16", "tuned", measured=False)
    plan = check_forward(fwd, 700, 65536)
    _check_row_sync(plan, row_sync)
    assert plan.row_iterations >= 4
    bwd = _config("rmsnorm_bwd", 9001, "bf16", "bf16", "bf16", "general", measured=False)
    plan = check_backward(bwd, 3000, 9001)
    _check_row_sync(plan, row_sync)
    assert plan.row_iterations >= 4


def test_many_rows_many_trips():
    """Rows far beyond the persistent grid: many trips, barrier counts up to rows/ctas_per_col."""
    check_forward(_config("layernorm_fwd", 65536, "bf16", "bf16", "bf16", "tuned"), 1500, 65536)
    check_backward(_config("rmsnorm_bwd", 4096, "bf16", "bf16", "bf16", "tuned"), 5000, 4096)


# ------------------------------------------------------------------------------------------------
# reproducibility
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op,cols,kind",
    [
        ("layernorm", 4096, "tuned"),
        ("rmsnorm", 8192, "tuned"),
        ("layernorm", 65536, "tuned"),
        ("layernorm", 5003, "general"),
        ("rmsnorm", 131072, "general"),
    ],
)
def test_bitwise_identical_repeats(op, cols, kind):
    fwd = _config(f"{op}_fwd", cols, "bf16", "bf16", "bf16", kind=kind)
    _, runs, _ = run_forward(fwd, 200, cols, repeat=3)
    for other in runs[1:]:
        for a, b in zip(runs[0], other, strict=True):
            if a is not None:
                np.testing.assert_array_equal(a, b)
    bwd = _config(f"{op}_bwd", cols, "bf16", "bf16", "bf16", kind=kind)
    _, runs, _ = run_backward(bwd, 200, cols, repeat=3)
    for other in runs[1:]:
        for a, b in zip(runs[0], other, strict=True):
            if a is not None:
                np.testing.assert_array_equal(a, b)


def test_kernel_resources():
    """Registers and local memory of TE's bf16 4096 kernels. (Measured entries may spill a few
    bytes under their register caps and still time fastest: the sweep decides for them.)"""
    for op in ("layernorm_fwd", "layernorm_bwd", "rmsnorm_fwd", "rmsnorm_bwd"):
        key = registry.NormKey(op, "bf16", "bf16", "bf16")
        cfg = registry.select_norm(key, 4096, 4, 256, measured=False)
        assert cfg.kind == "tuned" and cfg.origin == "te"
        _, plan = _plan(cfg, 16384, 4096, cfg.num_elts)
        main, _ = _norms.load(plan.spec)
        assert main.local_bytes == 0, (op, main.local_bytes)
        occ = main.occupancy(plan.spec.threads, 0)
        assert occ >= 1
        print(f"{op}: {main.num_regs} registers, occupancy {occ} CTAs/SM, grid {plan.grid}")


@pytest.mark.parametrize("backend", ["nvrtc", "numba"])
@pytest.mark.parametrize(
    ("op", "weight", "cols"),
    [("layernorm", "fp32", 4096), ("rmsnorm", "fp32", 1000), ("layernorm", "bf16", 1024)],
)
def test_finalize_sums_partials_in_the_documented_order(backend, op, weight, cols):
    from numba_norms.backends.numba import _norms as nb_norms

    cfg = _config(f"{op}_bwd", cols, weight, weight, weight)
    _, plan = _plan(cfg, 16384, cols, _vec(cfg, cols))
    ty = plan.finalize_block[1]
    assert plan.partial_rows >= 8 * ty // 2  # a real plan: each thread row adds several rows
    rng = np.random.default_rng(cols)
    parts = (rng.standard_normal((2, plan.partial_rows, cols)) * 10).astype(np.float32)
    dparts = cuda.to_device(parts)
    pg = int(dparts.__cuda_array_interface__["data"][0])
    pb = pg + plan.partial_rows * cols * 4 if op == "layernorm" else 0
    dg, db = _empty((cols,), weight), _empty((cols,), weight)
    mod = _norms if backend == "nvrtc" else nb_norms
    _, fin = mod.launchers(plan, cuda.get_current_device().id)
    fin(0, pg, pb, dg.ptr, db.ptr if pb else 0, plan.partial_rows, cols)
    cuda.synchronize()
    for got, k, what in ((dg.host(), 0, "dgamma"), (db.host(), 1, "dbeta")):
        if what == "dbeta" and not pb:
            assert np.isnan(got).all(), "RMSNorm's finalize wrote dbeta"
            continue
        want = _rounded(finalize_in_order(parts[k], ty), weight)[0]
        np.testing.assert_array_equal(got, want, err_msg=what)  # the order, bit for bit
        assert_close(got, parts[k].astype(np.float64).sum(0), weight, scale=50, what=what)
