"""The Numba backend's norm kernels on the CPU.

Two kinds of tests, because Numba's CUDA simulator is a process-wide switch read at import:

* with ``NUMBA_ENABLE_CUDASIM=1``: numerics of the launchers at small sizes (LayerNorm and
  RMSNorm, forward and backward, fp32/fp16/bf16, zero-centred gamma, fused add, odd sizes,
  row-strided input, tuned and general kernels) against float64 references;
* without it: every kernel of the registry compiles to PTX for sm_90 (no GPU needed), with the
  properties the design relies on checked in the PTX (16-byte vector accesses, rows in
  registers, cooperative launch only for multi-CTA kernels).

The helpers here are shared with ``tests/gpu/test_numba_norms_gpu.py``.
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
import re
import time

import ml_dtypes
import numpy as np
import pytest

from numba_norms import planner, registry
from numba_norms import reference as ref
from numba_norms.backends.common import NormBwdArgs, NormFwdArgs
from numba_norms.backends.numba import _norms
from numba_norms.backends.numba import layernorm as nb_layernorm
from numba_norms.backends.numba import rmsnorm as nb_rmsnorm
from tests.conftest import SIMULATOR, TOLERANCE, assert_close, finalize_in_order

MODULES = {"layernorm": nb_layernorm, "rmsnorm": nb_rmsnorm}
BF16 = ("bf16", "bf16", "bf16")
FP32 = ("fp32", "fp32", "fp32")
STORAGE = {"fp32": np.float32, "fp16": np.float16, "bf16": np.uint16}

needs_sim = pytest.mark.skipif(
    not SIMULATOR, reason="numerics on the CPU need NUMBA_ENABLE_CUDASIM=1 (run_cpu.sh pass 1)"
)
needs_compiler = pytest.mark.skipif(
    SIMULATOR, reason="compile_ptx is not available under the simulator (run_cpu.sh pass 2)"
)


# ---------------------------------------------------------------------------------------------
# helpers (also used by the GPU tests)
# ---------------------------------------------------------------------------------------------


def to_storage(a: np.ndarray, dtype: str) -> np.ndarray:
    """Values -> the kernels' storage array (bf16 as its uint16 bits)."""
    if dtype == "bf16":
        return np.asarray(a).astype(ml_dtypes.bfloat16).view(np.uint16)
    return np.asarray(a).astype(STORAGE[dtype])


def from_storage(a: np.ndarray, dtype: str) -> np.ndarray:
    """Storage array -> float64 values."""
    a = np.asarray(a)
    if dtype == "bf16":
        a = a.view(ml_dtypes.bfloat16)
    return a.astype(np.float64)


class DevTensor:
    """The part of ``numba_norms.arrays.Tensor`` the Numba backend uses, over a device array."""

    def __init__(self, arr, dtype: str) -> None:
        self.obj = arr
        self.dtype = dtype
        self.shape = tuple(arr.shape)
        self.itemsize = arr.dtype.itemsize
        self.strides = tuple(s // self.itemsize for s in arr.strides)

    @property
    def ptr(self) -> int:
        return 0 if SIMULATOR else int(self.obj.__cuda_array_interface__["data"][0])

    def as_numba(self):
        return self.obj

    def rows_cols(self) -> tuple[int, int, int]:
        if len(self.shape) == 1:
            return 1, self.shape[0], self.shape[0]
        rows, cols = self.shape
        return rows, cols, (self.strides[0] if rows > 1 else cols)

    def alignment(self) -> int:
        """Device allocations are 256-byte aligned; the row pitch may lower it."""
        rows, _, stride = self.rows_cols()
        pitch = stride * self.itemsize
        return 256 if rows <= 1 else min(256, pitch & -pitch)

    def host(self) -> np.ndarray:
        return from_storage(self.obj.copy_to_host(), self.dtype)


def device_tensor(values: np.ndarray, dtype: str, row_stride: int | None = None) -> DevTensor:
    """Upload ``values`` (rounded to ``dtype``); 2-D arrays may get a row pitch > cols."""
    from numba import cuda

    st = to_storage(values, dtype)
    if row_stride is not None and st.ndim == 2 and row_stride != st.shape[1]:
        padded = np.zeros((st.shape[0], row_stride), st.dtype)
        padded[:, : st.shape[1]] = st
        return DevTensor(cuda.to_device(padded)[:, : st.shape[1]], dtype)
    return DevTensor(cuda.to_device(np.ascontiguousarray(st)), dtype)


def empty_tensor(shape: tuple[int, ...], dtype: str) -> DevTensor:
    from numba import cuda

    return DevTensor(cuda.device_array(shape, dtype=STORAGE[dtype]), dtype)


def device_limits() -> planner.DeviceLimits:
    if SIMULATOR:
        return planner.DeviceLimits.simulator()
    from numba import cuda

    dev = cuda.get_current_device()
    return planner.DeviceLimits(
        sm_count=dev.MULTIPROCESSOR_COUNT,
        max_threads_per_block=dev.MAX_THREADS_PER_BLOCK,
        cooperative=bool(dev.COOPERATIVE_LAUNCH),
        clusters=tuple(dev.compute_capability) >= planner.CLUSTER_CC,
    )


def make_plan(key: registry.NormKey, rows: int, cols: int, tensors, *, general: bool):
    """Spec and plan as dispatch makes them (``general`` forces the general kernels)."""
    limits = device_limits()
    pairs = [(t.alignment(), t.itemsize) for t in tensors]
    alignment = min(a for a, _ in pairs)
    cfg = registry.select_norm(key, cols, rows, alignment, allow_tuned=not general)
    spec = planner.norm_spec(cfg, cols, planner.vector_elements(pairs, cfg.num_elts), limits)
    mod = MODULES[key.op.split("_")[0]]
    occ = mod.occupancy_backward(spec) if cfg.is_backward else mod.occupancy_forward(spec)
    return planner.norm_plan(spec, rows, cols, limits, occ)


def _scratch(plan) -> DevTensor:
    from numba import cuda

    return DevTensor(cuda.device_array(max(plan.scratch_bytes, 4), dtype=np.uint8), "fp32")


def run_forward(
    op, dtypes, x, gamma, beta=None, *, eps=1e-5, zero_centered=False, general=True,
    x_stride=None,
):  # fmt: skip
    """Launch the Numba forward kernel; returns (y, mu or None, rsigma, plan) in float64."""
    weight, inp, out = dtypes
    rows, cols = x.shape
    xt = device_tensor(x, inp, x_stride)
    gt = device_tensor(gamma, weight)
    bt = device_tensor(beta, weight) if op == "layernorm" else None
    yt = empty_tensor((rows, cols), out)
    mut = empty_tensor((rows,), "fp32") if op == "layernorm" else None
    rst = empty_tensor((rows,), "fp32")
    key = registry.NormKey(f"{op}_fwd", weight, inp, out)
    used = [xt, gt, yt] + ([bt] if bt is not None else [])
    plan = make_plan(key, rows, cols, used, general=general)
    args = NormFwdArgs(xt, gt, bt, yt, mut, rst, eps, zero_centered, scratch=_scratch(plan))
    MODULES[op].forward(plan, args, 0)
    return yt.host(), (mut.host() if mut is not None else None), rst.host(), plan


def run_backward(
    op, dtypes, dy, x, mu, rsigma, gamma, *, add=None, zero_centered=False, general=True,
    row_stride=None,
):  # fmt: skip
    """Launch the Numba backward (+ finalize); returns (dx, dgamma, dbeta or None, plan)."""
    weight, inp, out = dtypes
    rows, cols = x.shape
    dyt = device_tensor(dy, out, row_stride)
    xt = device_tensor(x, inp, row_stride)
    mut = device_tensor(mu, "fp32") if op == "layernorm" else None
    rst = device_tensor(rsigma, "fp32")
    gt = device_tensor(gamma, weight)
    addt = device_tensor(add, inp, row_stride) if add is not None else None
    dxt = empty_tensor((rows, cols), inp)
    dgt = empty_tensor((cols,), weight)
    dbt = empty_tensor((cols,), weight) if op == "layernorm" else None
    key = registry.NormKey(f"{op}_bwd", weight, inp, out, add is not None)
    used = [dyt, xt, gt, dxt] + ([addt] if addt is not None else [])
    plan = make_plan(key, rows, cols, used, general=general)
    args = NormBwdArgs(
        dyt, xt, mut, rst, gt, dxt, addt, dgt, dbt, zero_centered, scratch=_scratch(plan)
    )
    MODULES[op].backward(plan, args, 0)
    return dxt.host(), dgt.host(), (dbt.host() if dbt is not None else None), plan


def rounded(a: np.ndarray, dtype: str) -> np.ndarray:
    """``a`` as the kernel sees it after storing it in ``dtype``."""
    return from_storage(to_storage(a, dtype), dtype)


def inputs(rows, cols, dtypes, seed, *, zero_centered=False):
    """Random x, gamma, beta, dy (rounded to their dtypes) of one test case."""
    weight, inp, out = dtypes
    rng = np.random.default_rng(seed)
    x = rounded(rng.standard_normal((rows, cols)) * 2.0 + 0.5, inp)
    g = rounded(rng.standard_normal(cols) * 0.5 + (0.0 if zero_centered else 1.0), weight)
    b = rounded(rng.standard_normal(cols) * 0.1, weight)
    dy = rounded(rng.standard_normal((rows, cols)), out)
    return x, g, b, dy


def check_param_grad(actual, expected, terms_abs, dtype, what):
    """dgamma/dbeta: final rounding to ``dtype`` plus fp32 accumulation over the rows."""
    atol, rtol = TOLERANCE[dtype]
    bound = atol + rtol * np.abs(expected) + 4e-6 * terms_abs
    err = np.abs(np.asarray(actual, np.float64) - expected)
    assert not np.isnan(actual).any(), f"{what}: NaN"
    assert (err <= bound).all(), f"{what}: max excess {np.max(err - bound):.3g}"


def check_forward(op, dtypes, x, g, b, y, mu, rs, *, eps, zero_centered):
    out = dtypes[2]
    if op == "layernorm":
        ey, emu, ers = ref.layernorm_fwd(x, g, b, eps, zero_centered)
        assert_close(mu, emu, "fp32", scale=10, what="mu")
    else:
        ey, ers = ref.rmsnorm_fwd(x, g, eps, zero_centered)
    assert_close(rs, ers, "fp32", scale=10, what="rsigma")
    assert_close(y, ey, out, scale=2, what="y")


def check_backward(op, dtypes, dy, x, mu, rs, g, dx, dg, db, *, add=None, zero_centered):
    weight, inp, _ = dtypes
    if op == "layernorm":
        edx, edg, edb = ref.layernorm_bwd(dy, x, mu, rs, g, zero_centered)
        xhat = (x - mu[:, None]) * rs[:, None]
    else:
        edx, edg = ref.rmsnorm_bwd(dy, x, rs, g, zero_centered, add)
        xhat = x * rs[:, None]
    assert_close(dx, edx, inp, scale=4, what="dx")
    check_param_grad(dg, edg, np.abs(dy * xhat).sum(0), weight, "dgamma")
    if op == "layernorm":
        check_param_grad(db, edb, np.abs(dy).sum(0), weight, "dbeta")


# ---------------------------------------------------------------------------------------------
# numerics under the simulator
# ---------------------------------------------------------------------------------------------

# (forward, backward) dtypes as (weight, input, output); the mixed pair is TE's fp32 x with a
# bf16 y (forward) and a bf16 gamma and dy (backward)
DTYPE_COMBOS = [
    (("fp32", "fp32", "fp32"),) * 2,
    (("fp16", "fp16", "fp16"),) * 2,
    (("bf16", "bf16", "bf16"),) * 2,
    (("fp32", "fp32", "bf16"), ("bf16", "fp32", "bf16")),
]
SHAPES = [(1, 7), (3, 33), (5, 100)]


def _combo_id(combo) -> str:
    return "/".join(combo[0]) if combo[0] == combo[1] else "mixed"


@needs_sim
@pytest.mark.parametrize("combo", DTYPE_COMBOS, ids=_combo_id)
@pytest.mark.parametrize("rows, cols", SHAPES)
@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
def test_forward_and_backward_general(op, rows, cols, combo):
    fwd, bwd = combo
    zc = rows == 3  # zero-centred gamma on one of the shapes
    # gamma rounded to the narrower weight dtype is exact in both
    x, g, b, dy = inputs(rows, cols, bwd, rows * 100 + cols, zero_centered=zc)
    y, mu, rs, plan = run_forward(op, fwd, x, g, b, zero_centered=zc)
    assert plan.spec.general and plan.ctas_per_row == 1
    check_forward(op, fwd, x, g, b, y, mu, rs, eps=1e-5, zero_centered=zc)

    dx, dg, db, _ = run_backward(op, bwd, dy, x, mu, rs, g, zero_centered=zc)
    check_backward(op, bwd, dy, x, mu, rs, g, dx, dg, db, zero_centered=zc)


@needs_sim
@pytest.mark.parametrize("dtypes", [c[0] for c in DTYPE_COMBOS[:3]], ids="/".join)
@pytest.mark.parametrize("rows, cols", SHAPES)
def test_rmsnorm_backward_with_add(rows, cols, dtypes):
    x, g, _, dy = inputs(rows, cols, dtypes, rows + cols)
    add = rounded(np.random.default_rng(7).standard_normal((rows, cols)), dtypes[1])
    _, _, rs, _ = run_forward("rmsnorm", dtypes, x, g)
    dx, dg, _, plan = run_backward("rmsnorm", dtypes, dy, x, None, rs, g, add=add)
    assert plan.spec.config.fused_add
    check_backward(
        "rmsnorm", dtypes, dy, x, None, rs, g, dx, dg, None, add=add, zero_centered=False
    )


@needs_sim
@pytest.mark.parametrize(
    "wm, wn, hidden, cols, rows, dtype",
    [
        (1, 2, 512, 300, 5, "bf16"),  # warp 1 covers 44 columns
        (1, 4, 1024, 200, 5, "bf16"),  # warps 1-3 cover nothing
        (2, 2, 512, 450, 7, "bf16"),  # two warp rows, an odd row count
        (2, 4, 512, 70, 3, "fp32"),
        (1, 4, 1024, 200, 5, "fp32"),  # 128 / 72 / 0 / 0 elements
    ],
)
def test_general_forward_several_warps_a_row(monkeypatch, wm, wn, hidden, cols, rows, dtype):
    """LayerNorm's general forward with partial and empty warps: the warps' element counts
    weigh their (mean, M2) parts in Chan's merge (held per thread for 16-bit outputs, in shared
    memory for the others)."""
    dtypes = (dtype,) * 3
    key = registry.NormKey("layernorm_fwd", *dtypes)
    cfg = registry.NormConfig.general_for(
        key, hidden, warps_m=wm, warps_n=wn, bytes_per_ldg=16, origin="measured"
    )
    monkeypatch.setattr(registry, "select_norm", lambda *a, **k: cfg)
    x, g, b, _ = inputs(rows, cols, dtypes, cols)
    y, mu, rs, plan = run_forward("layernorm", dtypes, x, g, b)
    assert plan.spec.config is cfg and plan.spec.general
    check_forward("layernorm", dtypes, x, g, b, y, mu, rs, eps=1e-5, zero_centered=False)


@needs_sim
@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
def test_row_strided_input(op):
    dtypes = ("fp32", "fp32", "fp32")
    rows, cols, stride = 4, 33, 40
    x, g, b, dy = inputs(rows, cols, dtypes, 3)
    y, mu, rs, _ = run_forward(op, dtypes, x, g, b, x_stride=stride)
    check_forward(op, dtypes, x, g, b, y, mu, rs, eps=1e-5, zero_centered=False)
    dx, dg, db, _ = run_backward(op, dtypes, dy, x, mu, rs, g, row_stride=stride)
    check_backward(op, dtypes, dy, x, mu, rs, g, dx, dg, db, zero_centered=False)


@needs_sim
def test_vector_tail_is_bounds_checked():
    # one row: the pitch does not limit the vector width, so 7 columns are read as a full
    # 4-wide vector and a partial one
    dtypes = ("fp32", "fp32", "fp32")
    x, g, b, dy = inputs(1, 7, dtypes, 11)
    y, mu, rs, plan = run_forward("layernorm", dtypes, x, g, b)
    assert plan.spec.num_elts == 4
    check_forward("layernorm", dtypes, x, g, b, y, mu, rs, eps=1e-5, zero_centered=False)
    dx, dg, db, _ = run_backward("layernorm", dtypes, dy, x, mu, rs, g)
    check_backward("layernorm", dtypes, dy, x, mu, rs, g, dx, dg, db, zero_centered=False)


@needs_sim
@pytest.mark.parametrize("weight", ["fp32", "bf16"])
@pytest.mark.parametrize(("partial_rows", "cols"), [(37, 70), (3, 33), (300, 40)])
def test_finalize_sums_partials_in_the_documented_order(partial_rows, cols, weight):
    from numba import cuda

    grid, block = planner.finalize_shape(partial_rows, cols)
    assert block[1] == {37: 8, 3: 1, 300: 32}[partial_rows]
    rng = np.random.default_rng(partial_rows + cols)
    pg = (rng.standard_normal((partial_rows, cols)) * 10).astype(np.float32)
    pb = (rng.standard_normal((partial_rows, cols)) * 10).astype(np.float32)
    dg, db = empty_tensor((cols,), weight), empty_tensor((cols,), weight)
    kernel = cuda.jit(_norms._finalize_kernel(True, False, False))
    kernel[grid, block](
        cuda.to_device(pg.ravel()), cuda.to_device(pb.ravel()), dg.obj, db.obj, partial_rows, cols
    )
    for got, parts, what in ((dg.host(), pg, "dgamma"), (db.host(), pb, "dbeta")):
        want = rounded(finalize_in_order(parts, block[1]), weight)
        np.testing.assert_array_equal(got, want, err_msg=what)  # the order, bit for bit
        assert_close(got, parts.astype(np.float64).sum(0), weight, scale=50, what=what)


@needs_sim
@pytest.mark.parametrize("dtypes", [FP32, BF16], ids="/".join)
@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
def test_tuned_kernels(op, dtypes):
    rows, cols = 4, 768
    x, g, b, dy = inputs(rows, cols, dtypes, 5, zero_centered=True)
    y, mu, rs, plan = run_forward(op, dtypes, x, g, b, zero_centered=True, general=False)
    assert not plan.spec.general
    check_forward(op, dtypes, x, g, b, y, mu, rs, eps=1e-5, zero_centered=True)
    dx, dg, db, plan = run_backward(op, dtypes, dy, x, mu, rs, g, zero_centered=True, general=False)
    assert not plan.spec.general
    check_backward(op, dtypes, dy, x, mu, rs, g, dx, dg, db, zero_centered=True)


@needs_sim
def test_several_row_trips_per_cta():
    # 2 simulated SMs x occupancy 2 = 4 CTAs of 4 rows: 37 rows take 3 trips (the last partial)
    dtypes = ("bf16", "bf16", "bf16")
    x, g, b, dy = inputs(37, 64, dtypes, 13)
    y, mu, rs, plan = run_forward("layernorm", dtypes, x, g, b)
    assert plan.row_iterations == 3
    check_forward("layernorm", dtypes, x, g, b, y, mu, rs, eps=1e-5, zero_centered=False)
    dx, dg, db, plan = run_backward("layernorm", dtypes, dy, x, mu, rs, g)
    assert plan.row_iterations == 3
    check_backward("layernorm", dtypes, dy, x, mu, rs, g, dx, dg, db, zero_centered=False)


@needs_sim
@pytest.mark.parametrize("max_grid_y", [65535, 2])
@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
def test_grid_of_rows(monkeypatch, op, max_grid_y):
    """A forward entry with grid "rows": a row group of 2 rows per CTA (11 rows: 6 CTAs, the
    last half empty), and, where the grid's y limit is 2, CTAs looping over 3 trips."""
    dtypes = ("bf16", "bf16", "bf16")
    key = registry.NormKey(f"{op}_fwd", *dtypes)
    cfg = registry.NormConfig.tuned_for(
        key, 256, ctas_per_row=1, warps_m=2, warps_n=1, origin="measured", prefetch=True,
        grid="rows",
    )  # fmt: skip
    limits = dataclasses.replace(planner.DeviceLimits.simulator(), max_grid_y=max_grid_y)
    monkeypatch.setattr(registry, "select_norm", lambda *a, **k: cfg)
    monkeypatch.setattr(planner.DeviceLimits, "simulator", classmethod(lambda cls: limits))
    x, g, b, _ = inputs(11, 256, dtypes, 21)
    y, mu, rs, plan = run_forward(op, dtypes, x, g, b, general=False)
    assert plan.spec.config is cfg and plan.spec.grid_of_rows
    assert plan.grid == (1, min(6, max_grid_y), 1)
    assert plan.row_iterations == (1 if max_grid_y > 6 else 3)
    check_forward(op, dtypes, x, g, b, y, mu, rs, eps=1e-5, zero_centered=False)


@needs_sim
@pytest.mark.parametrize("prefetch", [False, True])
@pytest.mark.parametrize("op,w", [("layernorm", 1), ("layernorm", 2), ("rmsnorm", 1)])
def test_backward_sums_in_shared_memory(monkeypatch, op, w, prefetch):
    """A backward entry with wgrad_smem (dbeta, then dgamma, in per-thread shared-memory
    slots): 2 warp rows a CTA, 2 vectors a thread, 37 rows over several trips."""
    dtypes = ("bf16", "bf16", "bf16")
    key = registry.NormKey(f"{op}_bwd", *dtypes)
    cfg = registry.NormConfig.tuned_for(
        key, 512, ctas_per_row=1, warps_m=2, warps_n=1, origin="measured", prefetch=prefetch,
        wgrad_smem=w,
    )  # fmt: skip
    x, g, b, dy = inputs(37, 512, dtypes, 31)
    y, mu, rs, _ = run_forward(op, dtypes, x, g, b, general=False)
    monkeypatch.setattr(registry, "select_norm", lambda *a, **k: cfg)
    dx, dg, db, plan = run_backward(op, dtypes, dy, x, mu, rs, g, general=False)
    assert plan.spec.config is cfg and plan.spec.ldgs == 2 and plan.row_iterations > 1
    check_backward(op, dtypes, dy, x, mu, rs, g, dx, dg, db, zero_centered=False)


@needs_sim
def test_column_counts_match_brute_force():
    # the general kernels' element counts (used by Chan's combination) for several CTAs a row
    rng = np.random.default_rng(0)
    for _ in range(200):
        wn, ne, ldgs, cpr = (
            int(rng.choice(v)) for v in ([1, 4, 8], [1, 2, 4, 8], [1, 3, 4], [1, 2, 5])
        )
        cols = int(rng.integers(1, cpr * wn * 32 * ne * ldgs + 1))
        owner = np.zeros(cols, int) - 1
        for cta in range(cpr):
            for w in range(wn):
                got = _norms._warp_count(cols, cta, w, cpr, wn, ne, ldgs)
                brute = sum(
                    max(0, min(cols - ((it * cpr + cta) * wn + w) * 32 * ne, 32 * ne))
                    for it in range(ldgs)
                )
                assert got == brute
                for it in range(ldgs):
                    start = ((it * cpr + cta) * wn + w) * 32 * ne
                    owner[start : min(start + 32 * ne, cols)] = cta
            assert _norms._cta_count(cols, cta, cpr, wn * 32 * ne, ldgs) == (owner == cta).sum()
        assert (owner >= 0).all()


def test_bf16_rounding_matches_ml_dtypes():
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32)
    special = np.array(
        [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0x7F7FFFFF,
         0x3F808000, 0x3F818000, 0x3F80FFFF, 0x00000001, 0x00008000, 0x00018000],
        np.uint32,
    )  # fmt: skip
    vals = np.concatenate([bits, special]).view(np.float32)
    got = np.array([_norms.f32_to_bf16_bits(v) for v in vals], np.uint16)
    with np.errstate(invalid="ignore"):
        want = vals.astype(ml_dtypes.bfloat16).view(np.uint16)
    nan = np.isnan(vals)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    assert np.isnan(got[nan].view(ml_dtypes.bfloat16).astype(np.float32)).all()
    back = np.array([_norms.bf16_bits_to_f32(u) for u in want[~nan]], np.float32)
    np.testing.assert_array_equal(back, want[~nan].view(ml_dtypes.bfloat16).astype(np.float32))


# ---------------------------------------------------------------------------------------------
# the GPU memory primitives' IR, run on the CPU (llvmlite's JIT)
# ---------------------------------------------------------------------------------------------


def _aligned(nbytes: int) -> np.ndarray:
    buf = np.zeros(nbytes + 64, np.uint8)
    off = (-buf.ctypes.data) % 64
    return buf[off : off + nbytes]


def _jit_access(kind: str, n: int, op: str, guarded: bool):
    """``void f(storage* g, float* a, i64 avail)`` doing one (guarded) access of ``n`` elements."""
    import ctypes

    import llvmlite.binding as llvm
    from llvmlite import ir

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    mod = ir.Module(name="access")
    st = {"fp32": ir.FloatType(), "fp16": ir.HalfType(), "bf16": ir.IntType(16)}[kind]
    i64 = ir.IntType(64)
    fnty = ir.FunctionType(ir.VoidType(), [st.as_pointer(), ir.FloatType().as_pointer(), i64])
    fn = ir.Function(mod, fnty, name="access")
    b = ir.IRBuilder(fn.append_basic_block())
    g, a, avail = fn.args

    def at(p, j):
        return b.gep(p, [ir.Constant(i64, j)])

    if op == "load":
        full = lambda: _norms._emit_load(b, kind, g, a, n)  # noqa: E731
        one = lambda j: _norms._emit_load(b, kind, at(g, j), at(a, j), 1)  # noqa: E731
        none = lambda j: b.store(ir.Constant(ir.FloatType(), 0.0), at(a, j))  # noqa: E731
    else:  # software rounding: the PTX cvt instructions cannot run on the CPU
        full = lambda: _norms._emit_store(b, kind, g, a, n, False)  # noqa: E731
        one = lambda j: _norms._emit_store(b, kind, at(g, j), at(a, j), 1, False)  # noqa: E731
        none = None
    if guarded:
        _norms._guarded(b, n, avail, full, one, none)
    else:
        full()
    b.ret_void()
    module = llvm.parse_assembly(str(mod))
    module.verify()
    tm = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(module, tm)
    engine.finalize_object()
    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    return engine, proto(engine.get_function_address("access"))


@needs_compiler
@pytest.mark.parametrize("guarded", [False, True])
@pytest.mark.parametrize("n", [1, 2, 4, 8])
@pytest.mark.parametrize("kind", ["fp32", "fp16", "bf16"])
def test_vector_access_ir_on_cpu(kind, n, guarded):
    # word splitting / packing, element order, chunking beyond 16 bytes, bounds checks and the
    # storage <-> fp32 conversions, exactly as emitted for the GPU (bf16 rounding in software)
    rng = np.random.default_rng(n)
    vals = rng.standard_normal(n).astype(np.float32) * 100
    vals[: min(n, 4)] = np.array([np.nan, -np.inf, 1.00390625, 3.4e38], np.float32)[: min(n, 4)]
    with np.errstate(invalid="ignore", over="ignore"):
        stored = to_storage(vals, kind)
    isz = stored.itemsize
    for avail in [n, n - 1, 0] if guarded else [n]:
        keep, load = _jit_access(kind, n, "load", guarded)
        src = _aligned(isz * n).view(stored.dtype)
        src[:] = stored
        dst = _aligned(4 * n).view(np.float32)
        dst[:] = 7.0
        load(src.ctypes.data, dst.ctypes.data, avail)
        want = from_storage(stored, kind).astype(np.float32)
        want[max(avail, 0) :] = 0.0
        np.testing.assert_array_equal(dst, want)

        keep, store = _jit_access(kind, n, "store", guarded)
        out = _aligned(isz * n).view(stored.dtype)
        out[:] = 0
        srcf = _aligned(4 * n).view(np.float32)
        srcf[:] = vals
        store(out.ctypes.data, srcf.ctypes.data, avail)
        expect = stored.copy()
        expect[max(avail, 0) :] = 0
        np.testing.assert_array_equal(out.view(np.uint8), expect.view(np.uint8))
        del keep


# ---------------------------------------------------------------------------------------------
# compilation to PTX (no GPU)
# ---------------------------------------------------------------------------------------------


def all_specs() -> list[planner.NormSpec]:
    """One spec per distinct compiled kernel of the registry (``kernel_key`` carries multi-CTA)."""
    limits = planner.DeviceLimits(sm_count=132)
    specs: dict[tuple, planner.NormSpec] = {}
    for cfg in registry.norm_configs(backend="numba"):  # the shared entries and Numba's own
        spec = planner.norm_spec(cfg, cfg.hidden_size, cfg.num_elts, limits)
        specs.setdefault(spec.kernel_key, spec)
    return list(specs.values())


def find_spec(op, kind, hidden, dtypes, fused_add=False, te=False) -> planner.NormSpec:
    """The spec of the first registry entry that matches (measured entries first; ``te``: TE's
    entry only)."""
    weight, inp, out = dtypes
    for cfg in registry.norm_configs():
        if (cfg.op, cfg.kind, cfg.hidden_size, cfg.weight, cfg.input, cfg.output) == (
            op, kind, hidden, weight, inp, out,
        ) and cfg.fused_add == fused_add and (cfg.origin == "te" or not te):  # fmt: skip
            limits = planner.DeviceLimits(sm_count=132)
            return planner.norm_spec(cfg, hidden, cfg.num_elts, limits)
    raise LookupError((op, kind, hidden, dtypes, fused_add))


def compile_ptx(spec: planner.NormSpec, arch: str = "sm_90") -> str:
    mod = MODULES[spec.op.split("_")[0]]
    if spec.config.is_backward:
        return mod.compile_backward(spec, arch)
    return mod.compile_forward(spec, arch)


def ptx_count(ptx: str, pattern: str) -> int:
    return len(re.findall(pattern, ptx))


# PTX parameter types each rtc.Launcher code may be declared as.
_PTX_TYPES = {"P": {"u64", "b64"}, "q": {"u64", "s64", "b64"}, "i": {"u32", "s32", "b32"},
              "f": {"f32"}}  # fmt: skip


def assert_entry_layouts(ptx: str, *layouts: str) -> None:
    """The ``.entry`` points of ``ptx``, in order, take exactly the parameters ``layouts`` name
    (what rtc.Launcher packs for them)."""
    entries = re.findall(r"\.entry\s+\S+\s*\((.*?)\)", ptx, re.S)
    assert len(entries) == len(layouts)
    for params, layout in zip(entries, layouts):
        declared = re.findall(r"\.param\s+\.(\w+)", params)
        assert len(declared) == len(layout), (declared, layout)
        assert all(t in _PTX_TYPES[c] for t, c in zip(declared, layout)), (declared, layout)


@needs_compiler
@pytest.mark.parametrize("op", ["layernorm_fwd", "rmsnorm_bwd"])
def test_ptx_parameters_match_the_launcher_layouts(op):
    from numba_norms.backends.common import (
        NORM_BWD_PARAMS,
        NORM_FINALIZE_PARAMS,
        NORM_FWD_PARAMS,
    )

    ptx = compile_ptx(find_spec(op, "tuned", 4096, BF16))
    if op.endswith("_bwd"):
        assert_entry_layouts(ptx, NORM_BWD_PARAMS, NORM_FINALIZE_PARAMS)
    else:
        assert_entry_layouts(ptx, NORM_FWD_PARAMS)


@needs_compiler
def test_ptx_tuned_forward_vectorised_in_registers_not_cooperative():
    spec = find_spec("layernorm_fwd", "tuned", 4096, BF16)
    ptx = compile_ptx(spec)
    assert ".local" not in ptx, "the row must stay in registers"
    # x, gamma and beta: one 16-byte read-only load per vector (x twice in the code with the
    # pipeline: the first row, then the next one in the loop); y: one 16-byte store
    from numba_norms.backends.numba import _norms

    _reread, prefetch = _norms._forward_form(spec)
    x_loads = (2 if prefetch else 1) * spec.ldgs
    assert ptx_count(ptx, r"ld\.global\.nc\.v4\.u32") == x_loads + 2 * spec.ldgs
    assert ptx_count(ptx, r"st\.global\.v4\.u32") == spec.ldgs
    assert ptx_count(ptx, r"cvt\.rn\.bf16x2\.f32") == spec.ldgs * spec.num_elts // 2
    assert ptx_count(ptx, r"shfl\.sync\.bfly") == 10
    assert "cudaCG" not in ptx and "atom." not in ptx  # no grid group: a normal launch


@needs_compiler
def test_ptx_multi_cta_kernels_are_cooperative():
    for spec in (  # TE's entries: several CTAs a row (the measured ones may take one)
        find_spec("layernorm_fwd", "tuned", 65536, BF16, te=True),
        find_spec("layernorm_bwd", "tuned", 65536, FP32, te=True),
    ):
        assert spec.ctas_per_row > 1
        ptx = compile_ptx(spec)
        assert "cudaCGGetIntrinsicHandle" in ptx  # numba-cuda launches it cooperatively
        assert ptx_count(ptx, r"atom\.global\.add") >= 2  # the workspace barrier
        assert ".local" not in ptx


@needs_compiler
@pytest.mark.parametrize(
    "op, kind, hidden, dtypes, fused_add",
    [
        ("layernorm_bwd", "tuned", 4096, BF16, False),
        ("rmsnorm_bwd", "general", 1024, ("fp16", "fp16", "fp16"), True),
        ("layernorm_bwd", "general", 4096, ("bf16", "fp32", "bf16"), False),
        ("layernorm_fwd", "general", 8192, ("fp32", "fp32", "bf16"), False),
        ("rmsnorm_fwd", "tuned", 8192, ("fp16", "fp16", "fp16"), False),
        ("layernorm_fwd", "tuned", 4096, ("fp32", "fp32", "fp16"), False),
        ("layernorm_fwd", "tuned", 10240, BF16, False),  # 10 vectors a thread: still unrolled
    ],
)
def test_ptx_representative_kernels(op, kind, hidden, dtypes, fused_add):
    spec = find_spec(op, kind, hidden, dtypes, fused_add)
    t0 = time.perf_counter()
    ptx = compile_ptx(spec)
    elapsed = time.perf_counter() - t0
    assert ".local" not in ptx
    assert "ld.global.nc.v4.u32" in ptx or spec.num_elts * 2 < 16
    assert (ptx_count(ptx, r"cudaCG") > 0) == (spec.ctas_per_row > 1)
    assert elapsed < 60


@needs_compiler
@pytest.mark.parametrize(
    "op, dtype, out",
    [(op, "bf16", "bf16") for op in registry.NORM_OPS]
    + [("layernorm_fwd", "bf16", "fp8e4m3"), ("layernorm_fwd", "fp16", "fp16")],
)
def test_ptx_capped_general_entries(op, dtype, out):
    """Rows past the Numba path's last band (registry._WIDE_VECTOR_GENERAL) that no shape
    tiles: TE's general entry (several CTAs a row) with the Numba cap in the launch bounds;
    the 16-bit forwards at their lean form's cap (the lean form compiled, its y loop unrolled:
    with gamma and beta checked apart, fp16's stayed a loop and the words went to local
    memory)."""
    from numba_norms.backends.numba import _norms

    key = registry.NormKey(op, dtype, dtype, out)
    cfg = registry.select_norm(key, 46336, 16384, 16, backend="numba")
    lean = out == dtype and op in registry._CAPPED_GENERAL_NUMBA_LEAN
    cap = (registry._CAPPED_GENERAL_NUMBA_LEAN if lean else registry._CAPPED_GENERAL_NUMBA)[op][0]
    assert (cfg.kind, cfg.origin, cfg.min_ctas_per_sm) == ("general", "measured", cap)
    spec = planner.norm_spec(cfg, 46336, cfg.num_elts, planner.DeviceLimits(sm_count=132))
    assert spec.ctas_per_row > 1
    assert not op.endswith("_fwd") or _norms._forward_lean(spec) == lean
    ptx = compile_ptx(spec)
    ptx = ptx if isinstance(ptx, str) else "".join(map(str, ptx))
    assert f".minnctapersm {cap}" in ptx and ".local" not in ptx
    assert "cudaCG" in ptx  # the multi-CTA row barrier


@needs_compiler
def test_ptx_tuned_layernorm_lean():
    """The tuned bf16 LayerNorm forward at 65536 (1 x 32 warps, 64 elements a thread under 64
    registers) compiles in the lean form, its row in registers."""
    from numba_norms.backends.numba import _norms

    key = registry.NormKey("layernorm_fwd", *BF16)
    cfg = registry.select_norm(key, 65536, 16384, 16, backend="numba")
    assert (cfg.kind, cfg.warps_n, cfg.min_ctas_per_sm) == ("tuned", 32, 1)
    spec = planner.norm_spec(cfg, 65536, cfg.num_elts, planner.DeviceLimits(sm_count=132))
    assert _norms._forward_lean(spec)
    ptx = compile_ptx(spec)
    assert ".local" not in ptx and "ld.global.nc.v4.u32" in ptx


# the first and the last untiled length (8 x odd) of each of the Numba bands of
# registry._WIDE_VECTOR_GENERAL (a thread holds the most vectors at the last)
_BANDS = [
    (op, lo + 8, upto - 8)
    for op, bands in registry._WIDE_VECTOR_GENERAL["numba"].items()
    for lo, (upto, *shape) in zip((registry._VECTOR_GENERAL_COLS[1], *(b[0] for b in bands)), bands)
    if shape[0] is not None
]


@needs_compiler
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("op, at, last", _BANDS)
def test_ptx_wide_vector_band_entries(op, at, last, dtype):
    """The Numba one-CTA shapes of 16-bit rows no shape tiles (registry._WIDE_VECTOR_GENERAL):
    one CTA a row, 16-byte loads, the row slice in registers (no local arrays in the PTX) at
    the band's end, the cap in the launch bounds. (ptxas may still spill under the cap: 304 B
    for layernorm_fwd's 4 x 4 warps at 2 CTAs an SM, the sweep's fastest all the same.) fp16
    too: its conversions make loop bodies bigger, and NVVM left one rolled (session 50)."""
    key = registry.NormKey(op, dtype, dtype, dtype)
    first = registry.select_norm(key, at, 16384, 16, backend="numba")
    cfg = registry.select_norm(key, last, 16384, 16, backend="numba")
    assert (cfg.kind, cfg.origin) == ("general", "measured")
    shape = operator.attrgetter("warps_m", "warps_n", "min_ctas_per_sm", "prefetch", "origin")
    assert shape(first) == shape(cfg)  # one band (its hidden size follows the row)
    spec = planner.norm_spec(cfg, last, cfg.num_elts, planner.DeviceLimits(sm_count=132))
    assert spec.ctas_per_row == 1
    ptx = compile_ptx(spec)
    ptx = ptx if isinstance(ptx, str) else "".join(map(str, ptx))
    assert ".local" not in ptx and "ld.global.nc.v4.u32" in ptx
    assert "cudaCG" not in ptx  # no row barrier
    if cfg.min_ctas_per_sm > 1:
        assert f".minnctapersm {cfg.min_ctas_per_sm}" in ptx
    if op == "layernorm_fwd":
        # Chan's merge over the row's warps unrolled: each warp's mean, M2, count and ratio
        # read from shared memory in straight-line code (a branch per warp and signed slot
        # indices left it a loop at 16 warps: 16 loads)
        assert ptx_count(ptx, r"ld\.shared\.f32") >= 4 * cfg.warps_n
    if op.endswith("_fwd"):
        # the band's pipeline (measured with it or without) is the one the kernel compiles:
        # the register rule of _forward_form does not drop it at the band's end
        from numba_norms.backends.numba import _norms

        assert _norms._forward_form(spec)[1] == cfg.prefetch
    else:
        # 16-bit general backwards take the lean form (H100, session 53: 1.3-2.1x the wide one),
        # and the bands measured with the pipeline run it at their end too (session 59)
        from numba_norms.backends.numba import _norms

        assert _norms._backward_form(spec)[1:] == (True, cfg.prefetch)


@needs_compiler
@pytest.mark.parametrize("op", ["layernorm_fwd", "rmsnorm_fwd", "layernorm_bwd", "rmsnorm_bwd"])
def test_ptx_general_bounds_checks_are_32_bit(op):
    """General kernels check each vector of the row (x, the weights, y, dx) against the columns
    left, and the LayerNorm forward masks M2 per element: as 32-bit compares (a 64-bit one is
    two ISETP; H100, session 52: general layernorm_fwd 1.07-1.20x, backwards 1.01-1.07x)."""
    key = registry.NormKey(op, "bf16", "bf16", "bf16")
    cfg = registry.select_norm(key, 8200, 16384, 16, backend="numba")
    assert cfg.kind == "general"
    spec = planner.norm_spec(cfg, 8200, cfg.num_elts, planner.DeviceLimits(sm_count=132))
    ptx = compile_ptx(spec)
    ptx = ptx if isinstance(ptx, str) else "".join(map(str, ptx))
    wide = ptx_count(ptx, r"setp\.(?:lt|le|gt|ge)\.s64")
    narrow = ptx_count(ptx, r"setp\.(?:lt|le|gt|ge)\.s32")
    assert wide < 24 and narrow >= spec.num_elts * spec.ldgs, (wide, narrow)  # 160+ before


@needs_compiler
def test_ptx_before_sm80_rounds_bf16_in_software():
    spec = find_spec("layernorm_fwd", "tuned", 4096, BF16)
    ptx = compile_ptx(spec, "sm_75")
    assert "cvt.rn.bf16" not in ptx and ".local" not in ptx


@needs_compiler
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("op", ["layernorm_fwd", "layernorm_bwd"])
def test_ptx_kernels_start_with_the_dependent_launch_prologue(op, arch):
    """As NVRTC's: every kernel (the backward's finalize included) waits for the stream's
    previous kernel and lets the next be scheduled before any memory access; not below sm_90."""
    from tests.conftest import assert_dependent_prologue

    ptx = compile_ptx(find_spec(op, "tuned", 4096, BF16), arch)
    assert_dependent_prologue(ptx, 2 if op.endswith("bwd") else 1, arch)


@needs_compiler
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("op", ["layernorm_fwd", "layernorm_bwd"])
def test_ptx_multi_cta_barrier_has_the_cluster_branch_from_sm90(op, arch):
    """As NVRTC's: the multi-CTA row barrier reads %cluster_nctarank and has the cluster
    barrier on sm_90 (the counter path kept beside it); sm_80 keeps only the counter."""
    spec = find_spec(op, "tuned", 65536, BF16, te=True)
    assert spec.ctas_per_row > 1
    ptx = compile_ptx(spec, arch)
    if isinstance(ptx, tuple):
        ptx = "\n".join(ptx)
    want = arch == "sm_90"
    assert ("%cluster_nctarank" in ptx) is want
    assert ("barrier.cluster.arrive.release.aligned" in ptx) is want
    assert ("barrier.cluster.wait.acquire.aligned" in ptx) is want
    # the pairs go into the other CTAs' shared memory (distributed shared memory)
    assert ("mapa.shared::cluster" in ptx and "st.shared::cluster.v2.f32" in ptx) is want
    assert ptx_count(ptx, r"atom\.global(\.\w+)*\.add") >= 2  # arrive and poll


def cluster_slots_aligned(ptx: str, nbytes: int) -> bool:
    """Whether ``ptx`` declares a shared array of ``nbytes`` bytes aligned to 8 or more (the
    slots the exchange's v2 stores address in the other CTAs of a cluster)."""
    decls = re.findall(r"\.shared\s+\.align\s+(\d+)\s+\.b8\s+\w+\[(\d+)\]", ptx)
    return any(int(align) >= 8 and int(size) == nbytes for align, size in decls)


@needs_compiler
@pytest.mark.parametrize(
    "op, out", [("layernorm_fwd", "fp8e4m3"), ("rmsnorm_fwd", "fp8e4m3"), ("rmsnorm_bwd", "bf16")]
)
def test_ptx_cluster_slots_are_8_byte_aligned(op, out):
    """The exchange stores a pair of floats at once into another CTA's slots
    (``st.shared::cluster.v2``), so the slots' array must be 8-byte aligned whatever the sizes of
    the arrays around it. Numba aligns float32 arrays to 4 bytes: at 58368 columns (4 CTAs of 19
    warps) with an FP8 output (an amax slot a warp) the slots fell on an odd word and the Numba
    kernel faulted with a misaligned address (H200, run 155)."""
    key = registry.NormKey(op, "bf16", "bf16", out)
    cfg = registry.select_norm(key, 58368, 16384, 16, backend="numba")
    assert cfg.ctas_per_row > 1 and cfg.warps_n % 2 == 1
    spec = planner.norm_spec(cfg, 58368, cfg.num_elts, planner.DeviceLimits(sm_count=132))
    ptx = compile_ptx(spec)
    if isinstance(ptx, tuple):
        ptx = "\n".join(ptx)
    assert "st.shared::cluster.v2.f32" in ptx
    assert cluster_slots_aligned(ptx, 4 * cfg.warps_m * _norms._CL_SLOTS * 2)


@needs_compiler
@pytest.mark.slow
def test_ptx_every_registry_kernel():
    """All distinct kernels (~380; several minutes on two cores): none keeps its row in memory."""
    times, failures = [], []
    for spec in all_specs():
        t0 = time.perf_counter()
        ptx = compile_ptx(spec)
        times.append(time.perf_counter() - t0)
        if ".local" in ptx or (("cudaCG" in ptx) != (spec.ctas_per_row > 1)):
            failures.append(spec)
    print(
        f"\n{len(times)} kernels: total {sum(times):.0f} s, median {np.median(times):.2f} s, "
        f"max {max(times):.2f} s"
    )
    assert not failures, failures[:5]


@needs_compiler
@pytest.mark.parametrize(
    "op, cols, fused_add",
    [("layernorm_fwd", 5003, False), ("rmsnorm_bwd", 2053, True), ("layernorm_bwd", 12289, False)],
)
def test_ptx_narrow_general_kernels(op, cols, fused_add):
    """The measured one-CTA shapes for rows without 16-byte vectors (scalar accesses)."""
    key = registry.NormKey(op, *BF16, fused_add)
    cfg = registry.select_norm(key, cols, 16384, 2, backend="numba")
    assert cfg.origin == "measured"
    spec = planner.norm_spec(cfg, cols, cfg.num_elts, planner.DeviceLimits(sm_count=132))
    assert spec.ctas_per_row == 1 and spec.num_elts == 1
    ptx = compile_ptx(spec)
    assert "cudaCG" not in ptx and "ld.global.nc.u16" in ptx


@needs_compiler
@pytest.mark.parametrize("op", sorted(registry._VECTOR_GENERAL["numba"]))
def test_ptx_vector_general_kernels(op):
    """Numba's measured one-CTA shapes for 16-byte-aligned rows without a tuned entry."""
    key = registry.NormKey(op, *BF16)
    cfg = registry.select_norm(key, 1000, 16384, 16, backend="numba")
    assert cfg.origin == "measured" and cfg.kind == "general"
    spec = planner.norm_spec(cfg, 1000, cfg.num_elts, planner.DeviceLimits(sm_count=132))
    assert spec.ctas_per_row == 1 and spec.num_elts == 8
    ptx = compile_ptx(spec)
    assert "cudaCG" not in ptx and "ld.global.nc.v4" in ptx


@needs_compiler
@pytest.mark.parametrize("op", ["layernorm_bwd", "rmsnorm_bwd"])
def test_ptx_general_lean_pipeline(op):
    """A lean general backward whose entry asks for the pipeline (NVRTC's 1 x 4 shape at 4104
    bf16 columns, 40 elements a thread) runs it where both rows' words fit beside the kept
    words (one CTA an SM: 255 registers), each vector of the next row loaded once in the loop
    besides the first row's before it, and compiles as without it at three CTAs an SM (168)."""
    from numba_norms.backends.numba import _norms

    key = registry.NormKey(op, *BF16)
    limits = planner.DeviceLimits(sm_count=132)
    ptxs = {}
    for ctas, pf in itertools.product((1, 3), (True, False)):
        cfg = registry._one_cta_general(key, 4104, 16, 1, 4, ctas, pf)
        spec = planner.norm_spec(cfg, 4104, cfg.num_elts, limits)
        assert spec.num_elts * spec.ldgs == 40
        assert _norms._backward_form(spec) == (True, True, pf and ctas == 1)
        # the kernel's code from the entry on, without the per-build name parts
        ptx = compile_ptx(spec)
        ptxs[ctas, pf] = re.sub(r"B\d+v\d+B|_cudapy_smem_\d+", "#", ptx[ptx.index(".entry") :])
    assert ptxs[3, True] == ptxs[3, False]
    assert not any(".local" in p for p in ptxs.values())
    loads = {k: ptx_count(p, r"ld\.global\.nc\.v4") for k, p in ptxs.items()}
    # 5 vectors each of x and dy, gamma twice (re-read); the pipeline's x and dy twice
    assert loads[1, False] == 20 and loads[1, True] == 30


def test_runs_pipeline_follows_the_register_rule():
    """What ``tune_norms.py --backend numba`` asks before timing an entry's pipeline: the
    kernel runs it only where the form rules take it (the tuned layernorm_bwd bf16 4096 entry
    does; a lean general backward does where two rows' words fit, at one CTA an SM, and not at
    three, so the sweep times that one once)."""
    from numba_norms.backends.numba import _norms

    limits = planner.DeviceLimits(sm_count=132)
    key = registry.NormKey("layernorm_bwd", *BF16)
    tuned = registry.select_norm(key, 4096, 16384, 256, backend="numba")
    general = registry._one_cta_general(key, 4104, 16, 1, 4, 1, True)
    assert tuned.prefetch and general.prefetch
    assert _norms.runs_pipeline(planner.norm_spec(tuned, 4096, 8, limits))
    assert _norms.runs_pipeline(planner.norm_spec(general, 4104, general.num_elts, limits))
    three = dataclasses.replace(general, min_ctas_per_sm=3)  # 40 + 40 + 80 + 64 > 168
    assert not _norms.runs_pipeline(planner.norm_spec(three, 4104, general.num_elts, limits))
    fwd = registry.NormConfig.tuned_for(
        registry.NormKey("rmsnorm_fwd", *BF16), 4096, ctas_per_row=1, warps_m=1, warps_n=4,
        origin="measured", prefetch=True,
    )  # fmt: skip
    assert _norms.runs_pipeline(planner.norm_spec(fwd, 4096, 8, limits))  # 32 elements, 255
    capped = dataclasses.replace(fwd, min_ctas_per_sm=16)  # 32 registers: no room
    assert not _norms.runs_pipeline(planner.norm_spec(capped, 4096, 8, limits))


@needs_compiler
def test_ptx_lean_dx_from_kept_words():
    """The lean general backward's dx pass widens the kept words where they fit under the cap
    (rmsnorm_bwd bf16 6152 on 2 x 8 warps, 32 elements: 128 registers) and reads the row again
    where they do not (the same entry at 2 CTAs an SM: 64): only the second read loads x and dy
    through the plain (not read-only) path."""
    from numba_norms.backends.numba import _norms

    key = registry.NormKey("rmsnorm_bwd", *BF16)
    loads = []
    for ctas, keep in ((1, True), (2, False)):
        cfg = registry._one_cta_general(key, 6152, 16, 2, 8, ctas, False)
        spec = planner.norm_spec(cfg, 6152, cfg.num_elts, planner.DeviceLimits(sm_count=132))
        reread, lean, _ = _norms._backward_form(spec)
        assert lean and reread and _norms._backward_keeps_words(spec, reread) == keep
        ptx = compile_ptx(spec)
        ptx = ptx[ptx.index(".entry") :]
        loads.append((ptx_count(ptx, r"ld\.global\.nc\.v4"), ptx_count(ptx, r"ld\.global\.v4")))
    # kept: x, dy and gamma, then gamma again, each of the 4 vectors unrolled; none plain
    assert loads[0] == (16, 0)
    assert loads[1][1] > 0


@needs_sim
@pytest.mark.parametrize(
    "op, dtypes, cols, kind, add",
    [
        ("layernorm", FP32, 1000, "general", False),
        ("layernorm", BF16, 1024, "tuned", False),
        ("rmsnorm", BF16, 1000, "general", True),
    ],
)
def test_backward_pipeline_and_reread_gamma(monkeypatch, op, dtypes, cols, kind, add):
    """The software pipeline (next row loaded before this row's reductions, kept as loaded; a
    general fp32 row's words past the row end as 0) over several row trips with a partial last
    one, on a slice long enough (32 elements) to re-read gamma. (The general bf16 kernel takes
    the lean form, whose pipeline keeps both rows' words.)"""
    weight, inp, out = dtypes
    key = registry.NormKey(f"{op}_bwd", weight, inp, out, add)
    if kind == "tuned":
        cfg = registry.NormConfig.tuned_for(
            key, cols, ctas_per_row=1, warps_m=1, warps_n=1, origin="measured", prefetch=True
        )
    else:
        cfg = registry.NormConfig.general_for(
            key, 32 * 32, warps_m=1, warps_n=1, bytes_per_ldg=16, origin="measured", prefetch=True
        )
    monkeypatch.setattr(registry, "select_norm", lambda *a, **k: cfg)
    rows = 12 if kind == "tuned" else 11
    x, g, b, dy = inputs(rows, cols, dtypes, cols + rows, zero_centered=True)
    add_in = rounded(np.random.default_rng(3).standard_normal((rows, cols)), inp) if add else None
    monkeypatch.undo()
    _, mu, rs, _ = run_forward(op, dtypes, x, g, b, zero_centered=True)
    monkeypatch.setattr(registry, "select_norm", lambda *a, **k: cfg)
    dx, dg, db, plan = run_backward(
        op, dtypes, dy, x, mu, rs, g, add=add_in, zero_centered=True, general=kind != "tuned"
    )
    assert plan.spec.config.prefetch and plan.spec.ldgs * plan.spec.num_elts == 32
    reread, lean, pipeline = _norms._backward_form(plan.spec)
    assert reread and pipeline and lean == (kind == "general" and dtypes == BF16)
    assert plan.row_iterations >= 3
    check_backward(op, dtypes, dy, x, mu, rs, g, dx, dg, db, add=add_in, zero_centered=True)


@needs_sim
@pytest.mark.parametrize(
    "op, dtype, wm, wn, hidden, cols, rows, add, pf, ctas, keep, pipe",
    [
        # warp 1: 44 columns, a vector of 4
        ("layernorm", "bf16", 1, 2, 512, 300, 7, False, False, 1, True, False),
        ("layernorm", "bf16", 1, 2, 512, 300, 7, False, True, 1, True, True),
        ("layernorm", "bf16", 1, 2, 512, 300, 7, False, False, 32, False, False),  # 32 registers
        ("layernorm", "bf16", 1, 2, 512, 300, 7, False, True, 32, False, False),
        # warps 1-3 without columns
        ("rmsnorm", "bf16", 1, 4, 1024, 200, 5, True, True, 1, True, True),
        ("rmsnorm", "bf16", 1, 4, 1024, 200, 5, True, False, 16, False, False),
        ("layernorm", "fp16", 2, 2, 2048, 1900, 9, False, True, 1, True, True),  # gamma re-read
        ("layernorm", "fp16", 2, 2, 2048, 1900, 9, False, False, 16, False, False),
        # 32 elements: words fit (32 + 64 + 64 of 168), two rows' words do not (64 + 64 + 64)
        ("layernorm", "fp16", 2, 2, 2048, 1900, 9, False, True, 3, True, False),
        ("rmsnorm", "fp16", 1, 1, 256, 203, 1, False, False, 1, True, False),  # one row, 3 wide
    ],
)
def test_general_backward_lean(
    monkeypatch, op, dtype, wm, wn, hidden, cols, rows, add, pf, ctas, keep, pipe
):
    """General 16-bit backwards take the lean form (x and dy kept as loaded, the columns past
    the row end as 0 bits; dx from the kept words where they fit under the cap, else read
    again with bounds checks): partial and empty warps, partial vectors, several row trips,
    the fused add, entries that ask for the pipeline (``pf``: the next row's words loaded
    during this row where both rows' words fit, ``pipe``) and entries that do not; fp32 rows
    keep the wide form."""
    from numba_norms.backends.numba import _norms

    dtypes = (dtype,) * 3
    key = registry.NormKey(f"{op}_bwd", *dtypes, add)
    cfg = registry.NormConfig.general_for(
        key, hidden, warps_m=wm, warps_n=wn, bytes_per_ldg=16, origin="measured", prefetch=pf,
        min_ctas_per_sm=ctas,
    )  # fmt: skip
    x, g, b, dy = inputs(rows, cols, dtypes, cols + rows, zero_centered=True)
    add_in = rounded(np.random.default_rng(5).standard_normal((rows, cols)), dtype) if add else None
    _, mu, rs, _ = run_forward(op, dtypes, x, g, b, zero_centered=True)
    monkeypatch.setattr(registry, "select_norm", lambda *a, **k: cfg)
    dx, dg, db, plan = run_backward(op, dtypes, dy, x, mu, rs, g, add=add_in, zero_centered=True)
    spec = plan.spec
    assert spec.config is cfg and spec.general
    reread, lean, pipeline = _norms._backward_form(spec)
    assert lean and pipeline == pipe
    assert _norms._backward_keeps_words(spec, reread) == keep
    fp32 = dataclasses.replace(spec, config=dataclasses.replace(cfg, input="fp32", output="fp32"))
    assert not _norms._backward_form(fp32)[1]
    assert rows == 1 or plan.row_iterations >= 2
    check_backward(op, dtypes, dy, x, mu, rs, g, dx, dg, db, add=add_in, zero_centered=True)


@needs_sim
@pytest.mark.parametrize(
    "op, dtypes, add, cols, min_ctas",
    [
        ("layernorm", BF16, False, 1024, 32),
        ("layernorm", FP32, False, 512, 32),
        ("rmsnorm", BF16, True, 1024, 32),
        ("rmsnorm", BF16, True, 2048, 8),
    ],
)
def test_backward_lean_form(monkeypatch, op, dtypes, add, cols, min_ctas):
    """The lean backward (x and dy kept as loaded; for dx widened again where the words fit
    the cap, else read again one vector at a time) over several row trips with a partial last
    one: 16-64 element slices under register caps (32 or 8 one-warp CTAs an SM: 64 or 248
    registers) the wide form exceeds; the entry's pipeline is not run."""
    from numba_norms.backends.numba import _norms

    weight, inp, out = dtypes
    key = registry.NormKey(f"{op}_bwd", weight, inp, out, add)
    cfg = registry.NormConfig.tuned_for(
        key, cols, ctas_per_row=1, warps_m=1, warps_n=1, origin="measured",
        min_ctas_per_sm=min_ctas, prefetch=True,
    )  # fmt: skip
    rows = 11
    x, g, b, dy = inputs(rows, cols, dtypes, cols + rows, zero_centered=True)
    add_in = rounded(np.random.default_rng(4).standard_normal((rows, cols)), inp) if add else None
    _, mu, rs, _ = run_forward(op, dtypes, x, g, b, zero_centered=True)
    monkeypatch.setattr(registry, "select_norm", lambda *a, **k: cfg)
    dx, dg, db, plan = run_backward(
        op, dtypes, dy, x, mu, rs, g, add=add_in, zero_centered=True, general=False
    )
    assert _norms._backward_form(plan.spec)[1]
    assert plan.row_iterations >= 3
    check_backward(op, dtypes, dy, x, mu, rs, g, dx, dg, db, add=add_in, zero_centered=True)


@needs_sim
@pytest.mark.parametrize(
    "op, dtypes, cols",
    [
        ("layernorm", BF16, 1024),  # 32 elements a thread: weights re-read each row
        ("rmsnorm", BF16, 512),  # 16: weights held
        ("layernorm", FP32, 512),  # 16 fp32 words a row in flight
    ],
)
def test_forward_pipeline(monkeypatch, op, dtypes, cols):
    """The forward's software pipeline (the next row loaded as stored before this row's sums)
    over several row trips with a partial last one, with held and re-read weights."""
    from numba_norms.backends.numba import _norms

    weight, inp, out = dtypes
    key = registry.NormKey(f"{op}_fwd", weight, inp, out)
    cfg = registry.NormConfig.tuned_for(
        key, cols, ctas_per_row=1, warps_m=1, warps_n=1, origin="measured", prefetch=True
    )
    monkeypatch.setattr(registry, "select_norm", lambda *a, **k: cfg)
    rows = 11
    x, g, b, _ = inputs(rows, cols, dtypes, cols + 7, zero_centered=True)
    y, mu, rs, plan = run_forward(op, dtypes, x, g, b, zero_centered=True, general=False)
    reread, prefetch = _norms._forward_form(plan.spec)
    assert prefetch and reread == (plan.spec.num_elts * plan.spec.ldgs >= 32)
    assert plan.row_iterations >= 3
    check_forward(op, dtypes, x, g, b, y, mu, rs, eps=1e-5, zero_centered=True)


@needs_sim
@pytest.mark.parametrize(
    "op, wm, wn, hidden, cols, rows, dtype",
    [
        ("layernorm", 1, 4, 1024, 600, 9, "bf16"),  # warps 2-3 partly / not covered
        ("layernorm", 2, 2, 512, 450, 19, "bf16"),  # two warp rows, an odd row count
        ("rmsnorm", 1, 2, 512, 300, 9, "bf16"),
        ("layernorm", 1, 2, 512, 301, 1, "bf16"),  # one row: a partial vector of 5
        ("rmsnorm", 1, 2, 256, 203, 1, "fp32"),  # one row: a partial vector of 3
    ],
)
def test_general_forward_pipeline(monkeypatch, op, wm, wn, hidden, cols, rows, dtype):
    """The general forward's software pipeline: the next row's words loaded with the columns
    past the row end as 0 (several row trips, partial and empty warps, partial vectors)."""
    from numba_norms.backends.numba import _norms

    dtypes = (dtype,) * 3
    key = registry.NormKey(f"{op}_fwd", *dtypes)
    cfg = registry.NormConfig.general_for(
        key, hidden, warps_m=wm, warps_n=wn, bytes_per_ldg=16, origin="measured", prefetch=True
    )
    monkeypatch.setattr(registry, "select_norm", lambda *a, **k: cfg)
    x, g, b, _ = inputs(rows, cols, dtypes, cols + 3)
    y, mu, rs, plan = run_forward(op, dtypes, x, g, b)
    assert plan.spec.config is cfg and plan.spec.general
    assert _norms._forward_form(plan.spec)[1], "the pipeline must run"
    assert rows == 1 or plan.row_iterations >= 2
    check_forward(op, dtypes, x, g, b, y, mu, rs, eps=1e-5, zero_centered=False)


@needs_sim
@pytest.mark.parametrize(
    "kind, op, wm, wn, hidden, cols, rows, dtype",
    [
        ("general", "layernorm", 1, 2, 512, 500, 7, "bf16"),  # a partial last vector
        ("general", "layernorm", 2, 2, 2048, 1900, 9, "fp16"),  # 32 elements: weights re-read
        ("general", "rmsnorm", 1, 4, 1024, 700, 5, "bf16"),  # warp 3 without columns
        ("tuned", "layernorm", 1, 2, 1024, 1024, 5, "bf16"),  # 16 elements: held weights
        ("tuned", "layernorm", 2, 1, 2048, 2048, 3, "fp16"),  # 32 elements: weights re-read
        ("tuned", "rmsnorm", 1, 2, 1024, 1024, 5, "bf16"),  # tuned RMSNorm keeps the wide form
    ],
)
def test_forward_lean(monkeypatch, kind, op, wm, wn, hidden, cols, rows, dtype):
    """The forward's lean form (x kept as loaded, widened again for M2 and y) under a tight
    register cap, general kernels and tuned LayerNorm ones: against the reference and bit for
    bit against the wide form of the same shape (the same arithmetic in the same order)."""
    from numba_norms.backends.numba import _norms

    dtypes = (dtype,) * 3
    key = registry.NormKey(f"{op}_fwd", *dtypes)
    x, g, b, _ = inputs(rows, cols, dtypes, cols + 11)
    outs = {}
    for ctas in (1, 2048 // (32 * wm * wn)):
        shape = {"warps_m": wm, "warps_n": wn, "origin": "measured", "min_ctas_per_sm": ctas}
        if kind == "general":
            cfg = registry.NormConfig.general_for(key, hidden, bytes_per_ldg=16, **shape)
        else:
            cfg = registry.NormConfig.tuned_for(key, hidden, ctas_per_row=1, **shape)
        monkeypatch.setattr(registry, "select_norm", lambda *a, c=cfg, **k: c)
        y, mu, rs, plan = run_forward(op, dtypes, x, g, b)
        assert plan.spec.config is cfg and plan.spec.general == (kind == "general")
        assert plan.row_iterations >= 2 or kind == "tuned"
        check_forward(op, dtypes, x, g, b, y, mu, rs, eps=1e-5, zero_centered=False)
        outs[_norms._forward_lean(plan.spec)] = (y, mu, rs)
    assert set(outs) == ({False} if (kind, op) == ("tuned", "rmsnorm") else {False, True})
    for wide, lean in zip(outs[False], outs.get(True, ()), strict=False):
        if wide is not None:
            np.testing.assert_array_equal(lean, wide)


@needs_compiler
def test_wgrad_smem_slots_in_the_ptx():
    """The shared table's entries with dgamma / dbeta sums in shared memory (NVRTC-measured) do
    not reach the Numba backend through the registry (it has its own entries there); given one,
    the Numba kernel declares the slots: 4 bytes a column and moved sum."""
    assert any(c.wgrad_smem for c in registry.norm_configs())
    assert not any(c.wgrad_smem for c in registry.norm_configs(backend="numba"))
    spec = find_spec("layernorm_bwd", "tuned", 65536, BF16)
    assert spec.config.wgrad_smem == 1
    slots = 4 * spec.threads * spec.ldgs * spec.num_elts
    sizes = [
        int(n) for n in re.findall(r"\.shared \.align \d+ \.b8 \S+\[(\d+)\]", compile_ptx(spec))
    ]
    assert slots in sizes, sizes
    plain = planner.norm_spec(
        dataclasses.replace(spec.config, wgrad_smem=0), 65536, 8, planner.DeviceLimits(sm_count=132)
    )
    sizes = [
        int(n) for n in re.findall(r"\.shared \.align \d+ \.b8 \S+\[(\d+)\]", compile_ptx(plain))
    ]
    assert slots not in sizes, sizes
