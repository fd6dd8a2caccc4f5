"""NVRTC fused-softmax kernels on a GPU, driven directly through the backend launchers.

No dispatch and no ``ops`` layer: each case selects the registry entry, specialises and plans it
with the planner (the device's real limits and the kernel's occupancy), launches through
``numba_norms.backends.nvrtc.softmax`` on Numba device arrays and compares with float64 numpy
references. Covers all four variants forward and the backward for fp32/fp16/bf16 over key
lengths from 1 to 131072 (several CTAs a row past 32768, past 16384 in the fp32 backward:
cooperative launches with the inter-CTA barrier), odd batch/head/query counts, masks with
fully-masked rows and mask batch 1 vs b, aligned causal with sk < sq, padded rows (the partial
last vector), exact zeros at masked and excluded positions, untouched padding and
bitwise-identical repeated runs.
"""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np
import pytest
from numba import cuda

import rtc
from numba_norms import dispatch, planner, registry
from numba_norms import reference as ref
from numba_norms.backends.common import SoftmaxBwdArgs, SoftmaxFwdArgs
from numba_norms.backends.nvrtc import softmax as nv
from tests.conftest import HAS_GPU

pytestmark = [pytest.mark.gpu]
if not HAS_GPU:
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

DTYPES = ["fp32", "fp16", "bf16"]
VARIANTS = ["scaled", "masked", "upper_triang", "aligned_causal"]
KEYS = [1, 7, 32, 128, 1000, 2048, 4097, 16384, 32768, 131072]
NP = {"fp32": np.float32, "fp16": np.float16, "bf16": ml_dtypes.bfloat16}
STORAGE = {"fp32": np.float32, "fp16": np.uint16, "bf16": np.uint16, "uint8": np.uint8}
# Relative to max|reference|.
TOL = {"fp32": 1e-5, "fp16": 2e-3, "bf16": 1e-2}
SCALE = 0.37


LIMITS = dispatch.device_limits(None)  # the real device's (the simulator is off here)


ROW_SYNC_LIMITS = (sys.modules[__name__], "LIMITS")  # what conftest's row_sync replaces


def _check_row_sync(plan) -> None:
    """One CTA a row: neither; several: a cluster where the limits allow one, else the counter
    of a cooperative launch."""
    multi = plan.ctas_per_row > 1
    assert plan.cluster == planner.cluster_size(plan.ctas_per_row, LIMITS)
    assert plan.cooperative == (multi and plan.cluster == 1)
    assert (plan.barrier_bytes > 0) == plan.cooperative


class DevTensor:
    """The Tensor attributes the NVRTC launcher reads, over a 2-D Numba device array view."""

    def __init__(self, base, dtype: str, cols: int | None = None) -> None:
        self.base = base  # keeps the allocation alive; copied back whole
        view = base if cols is None else base[:, :cols]
        self.dtype = dtype
        self.itemsize = base.dtype.itemsize
        self.ptr = int(view.__cuda_array_interface__["data"][0])
        self.shape = tuple(view.shape)
        self.strides = tuple(s // self.itemsize for s in view.strides)
        self.device = cuda.get_current_device().id

    def rows_cols(self) -> tuple[int, int, int]:
        if len(self.shape) == 1:
            return 1, self.shape[0], self.shape[0]
        return self.shape[0], self.shape[1], self.strides[0]

    def alignment(self) -> int:
        a = min(256, self.ptr & -self.ptr)
        if len(self.shape) == 2 and self.shape[0] > 1:
            pitch = self.strides[0] * self.itemsize
            a = min(a, pitch & -pitch)
        return a

    def raw(self) -> np.ndarray:
        return self.base.copy_to_host()

    def bits(self) -> np.ndarray:
        """The raw bytes (NaN padding compares equal to itself)."""
        return self.raw().view(np.uint8)

    def host(self, cols: int | None = None) -> np.ndarray:
        a = self.raw()
        if self.dtype != "uint8":
            a = a.view(NP[self.dtype])
        a = a.astype(np.float64)
        return a if cols is None else a[:, :cols]


def _device(a: np.ndarray, dtype: str, cols: int | None = None) -> tuple[DevTensor, np.ndarray]:
    """``a`` rounded to ``dtype`` on the device, and the rounded values (float64)."""
    typed = np.asarray(a, np.float64).astype(NP[dtype])
    t = DevTensor(cuda.to_device(np.ascontiguousarray(typed.view(STORAGE[dtype]))), dtype, cols)
    vals = typed.astype(np.float64)
    return t, (vals if cols is None else vals[:, :cols])


# NaN bit patterns: padding past `cols` must come back untouched.
_FILL = {"fp32": np.uint32(0x7FC00001), "fp16": np.uint16(0x7E01), "bf16": np.uint16(0x7FC1)}


def _empty(shape, dtype: str, cols: int | None = None) -> DevTensor:
    fill = np.full(shape, _FILL[dtype]).view(STORAGE[dtype])
    return DevTensor(cuda.to_device(fill), dtype, cols)


def _padding_intact(t: DevTensor, cols: int) -> bool:
    fill = _FILL[t.dtype]
    return bool(np.all(t.raw().view(fill.dtype)[:, cols:] == fill))


def _plan(op: str, variant: str, dtype: str, rows: int, cols: int, tensors):
    """The plan dispatch makes on ``LIMITS`` (falling back as it does: a staged entry without
    clusters runs unstaged on the counter path)."""
    cfg = registry.select_softmax(op, variant, dtype, cols)
    pairs = [(t.alignment(), t.itemsize) for t in tensors]

    def plan_of(c):
        spec = planner.softmax_spec(c, cols, planner.vector_elements(pairs, c.num_elts), LIMITS)
        occ = nv.occupancy_backward(spec) if c.is_backward else nv.occupancy_forward(spec)
        return planner.softmax_plan(spec, rows, cols, LIMITS, occ)

    tries = dispatch.softmax_fallbacks(cfg, op, variant, dtype, cols, "nvrtc")
    plan = dispatch.first_plan(tries, plan_of)
    scratch = None
    if plan.scratch_bytes:
        scratch = DevTensor(cuda.device_array((1, plan.scratch_bytes), np.uint8), "uint8")
    return plan, scratch


def _shape(variant: str, sk: int) -> tuple[int, int, int, int, int | None]:
    """(b, h, sq, mask_batch, rows) with odd counts; few rows for long keys.

    ``rows`` None means all ``b * h * sq``; upper_triang past 4097 keys checks the first 9
    rows of a square problem (the kernel only sees i = row % sq).
    """
    if variant == "upper_triang":
        if sk <= 128:
            return 3, 1, sk, 1, None
        return (1, 1, sk, 1, None) if sk <= 4097 else (1, 1, sk, 1, 9)
    if sk >= 16384:
        return 1, 3, 3, 1, None
    if sk >= 2048:
        return 3, 1, 5, 3, None
    return 3, 5, 7, 3, None


# ------------------------------------------------------------------------------------------------
# references (float64), rows of a [rows, cols] view with query index i = r % sq
# ------------------------------------------------------------------------------------------------


def _check(got, want, dtype, what):
    assert not np.isnan(got).any(), f"{what}: NaN in result"
    scale = max(float(np.abs(want).max()), 1e-30)
    err = float(np.abs(got - want).max()) / scale
    assert err <= TOL[dtype], f"{what}: max error {err:.3g} relative to max|ref| > {TOL[dtype]}"


def _run_fwd(variant, dtype, b, h, sq, sk, mask_batch, rng, pad=0, repeat=False, rows=None):
    rows = rows or b * h * sq
    x, xv = _device(rng.standard_normal((rows, sk + pad)) * 3, dtype, sk)
    mask = mt = None
    if variant == "masked":
        m = (rng.random((mask_batch * sq, sk + pad)) < 0.3).astype(np.uint8)
        m[0] = 1  # a fully masked row (for every batch when mask_batch == 1)
        m[min(2, len(m) - 1), : sk // 2] = 2  # nonzero means masked
        mt = DevTensor(cuda.to_device(m), "uint8", sk)
        mask = m[:, :sk]
    y = _empty((rows, sk + pad), dtype, sk)
    used = [x, y] + ([mt] if mt is not None else [])
    plan, scratch = _plan("softmax_fwd", variant, dtype, rows, sk, used)
    args = SoftmaxFwdArgs(x, y, mt, SCALE, sq, h, mask_batch, scratch)
    nv.forward(plan, args, 0)
    cuda.synchronize()
    got = y.host(sk)
    want, keep = ref.softmax_rows(xv, variant, sq, SCALE, mask, h, mask_batch)
    what = f"{variant} {dtype} b={b} h={h} sq={sq} sk={sk} ctas={plan.ctas_per_row}"
    _check(got, want, dtype, what)
    assert np.all(got[~keep] == 0.0), f"{what}: masked/excluded positions are not exactly 0"
    if pad:
        assert _padding_intact(y, sk), f"{what}: padding written"
    if repeat:
        first = y.bits()
        for _ in range(2):
            nv.forward(plan, args, 0)
            cuda.synchronize()
            assert np.array_equal(y.bits(), first), f"{what}: repeated runs differ"
    return plan


# ------------------------------------------------------------------------------------------------
# forward
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sk", KEYS)
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_forward(dtype, variant, sk):
    b, h, sq, mb, rows = _shape(variant, sk)
    rng = np.random.default_rng(sk * 7 + VARIANTS.index(variant))
    plan = _run_fwd(variant, dtype, b, h, sq, sk, mb, rng, repeat=sk >= 16384, rows=rows)
    # each CTA holds (or streams, run 166's and run 175's entries) the entry's max_cols keys
    # (32768 for most entries, 8192-16384 for the multi-CTA winners of runs 82-84): longer
    # rows take several CTAs
    assert plan.ctas_per_row == -(-sk // plan.spec.config.max_cols)
    _check_row_sync(plan)


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_mask_batch_one(dtype):
    rng = np.random.default_rng(11)
    _run_fwd("masked", dtype, 3, 5, 7, 1000, 1, rng)
    _run_fwd("masked", dtype, 1, 3, 3, 32768, 1, rng)


@pytest.mark.parametrize("sk", [7, 1000, 4097, 32768])
@pytest.mark.parametrize("dtype", DTYPES)
def test_aligned_causal_short_keys(dtype, sk):
    """sk < sq: the first sq - sk rows keep nothing and must be all zeros."""
    rng = np.random.default_rng(sk)
    sq = sk + 5 if sk > 1000 else sk + sk // 2 + 3
    if sk <= 1000:
        _run_fwd("aligned_causal", dtype, 1, 1, sq, sk, 1, rng)
        return
    # Long keys: rows 0..4 of a (sk + 5)-query problem keep nothing; rows 5..8 keep 1..4.
    rows = 9
    x, _ = _device(rng.standard_normal((rows, sk)), dtype)
    y = _empty((rows, sk), dtype)
    plan, scratch = _plan("softmax_fwd", "aligned_causal", dtype, rows, sk, [x, y])
    nv.forward(plan, SoftmaxFwdArgs(x, y, None, SCALE, sq, 1, 1, scratch), 0)
    cuda.synchronize()
    got = y.host()
    want, keep = ref.softmax_rows(x.host(), "aligned_causal", sq, SCALE)
    _check(got, want, dtype, f"aligned_causal sk={sk} sq={sq}")
    assert np.all(got[~keep] == 0.0)
    assert np.all(got[:5] == 0.0)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_padded_rows(dtype, variant):
    """Row pitch > sk with aligned pitch: full-width vectors plus a partial last vector."""
    rng = np.random.default_rng(5)
    for sk in (1001, 4093, 20001):
        b, h, sq, mb = (1, 1, 9, 1) if variant == "upper_triang" else (1, 3, 3, 1)
        plan = _run_fwd(variant, dtype, b, h, sq, sk, mb, rng, pad=16 - sk % 8, repeat=True)
        assert plan.spec.num_elts == plan.spec.config.num_elts, "expected full-width vectors"


# ------------------------------------------------------------------------------------------------
# backward
# ------------------------------------------------------------------------------------------------


def _run_bwd(dtype, rows, sk, rng, pad=0, repeat=False, zero_cols=0):
    p = rng.random((rows, sk + pad)) ** 4
    if zero_cols:
        p[:, sk - zero_cols : sk] = 0.0  # like masked / excluded positions
    p /= p[:, :sk].sum(1, keepdims=True)
    y, yv = _device(p, dtype, sk)
    dy, dyv = _device(rng.standard_normal((rows, sk + pad)), dtype, sk)
    dx = _empty((rows, sk + pad), dtype, sk)
    plan, scratch = _plan("softmax_bwd", "scaled", dtype, rows, sk, [dy, y, dx])
    args = SoftmaxBwdArgs(dy, y, dx, SCALE, scratch)
    nv.backward(plan, args, 0)
    cuda.synchronize()
    got = dx.host(sk)
    want = SCALE * yv * (dyv - (dyv * yv).sum(1, keepdims=True))
    what = f"bwd {dtype} rows={rows} sk={sk} ctas={plan.ctas_per_row}"
    _check(got, want, dtype, what)
    if zero_cols:
        assert np.all(got[:, sk - zero_cols :] == 0.0), f"{what}: y == 0 must give dx == 0"
    if pad:
        assert _padding_intact(dx, sk), f"{what}: padding written"
    if repeat:
        first = dx.bits()
        for _ in range(2):
            nv.backward(plan, args, 0)
            cuda.synchronize()
            assert np.array_equal(dx.bits(), first), f"{what}: repeated runs differ"
    return plan


@pytest.mark.parametrize("sk", KEYS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_backward(dtype, sk):
    rows = 7 if sk >= 16384 else 105
    rng = np.random.default_rng(sk + 3)
    plan = _run_bwd(dtype, rows, sk, rng, repeat=sk >= 16384, zero_cols=sk // 3)
    assert (plan.ctas_per_row > 1) == (sk > plan.spec.config.max_cols)
    _check_row_sync(plan)
    if sk > 32768:  # held or streaming (run 175), rows of 131072 keys take several CTAs
        assert plan.ctas_per_row > 1


@pytest.mark.parametrize("part", [32768, 8192, 2048])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_streaming_kernels(dtype, reverse, part, monkeypatch):
    """The streaming forward (every variant) and backward whatever the table serves (8 warps,
    2 vectors a step, 2 CTAs an SM, ``part`` keys a CTA: rows of 1, 3-4 (a cluster) and 10-16
    CTAs (the counter)), the second pass walked forwards and back: rows of many chunks a
    thread, padded rows with a partial last vector and narrower vectors, more rows than CTAs
    (several rows a CTA), bitwise-identical repeats."""

    def streaming(op, variant, dt, cols, **kw):
        return registry.SoftmaxConfig(
            op, "block", part, dt, 1, 8, 16, variant, 2, chunk=2, reverse=reverse
        )

    monkeypatch.setattr(registry, "select_softmax", streaming)
    rng = np.random.default_rng(5)
    for variant in VARIANTS:
        plan = _run_fwd(variant, dtype, 2, 3, 5, 20001, 2, rng, pad=3, repeat=True)
        assert plan.spec.stream and plan.spec.config.reverse == reverse
        assert plan.ctas_per_row == -(-20001 // part)
        _check_row_sync(plan)
    rows = 2 * LIMITS.sm_count * 2 + 3
    for sk, pad in ((20001, 7), (32768, 0)):
        plan = _run_bwd(dtype, rows, sk, rng, pad=pad, repeat=True, zero_cols=sk // 3)
        assert plan.spec.stream and plan.ctas_per_row == -(-sk // part)
        assert plan.row_iterations > 1
        _check_row_sync(plan)


@pytest.mark.parametrize("dtype", DTYPES)
def test_staged_streaming_forward(dtype, monkeypatch):
    """The staged forward (``stage``: the row kept in dynamic shared memory between the passes,
    a CTA a row on the grid of rows) in every variant: rows of many chunks a thread,
    padded rows (a partial last vector, narrower vectors), full 32768-key rows (64-128 KB of
    shared memory a CTA), bitwise-identical repeats."""

    def staged(op, variant, dt, cols, **kw):
        return registry.SoftmaxConfig(
            op, "block", 32768, dt, 1, 16, 16, variant, 2, chunk=4, grid="rows", stage=True
        )

    monkeypatch.setattr(registry, "select_softmax", staged)
    rng = np.random.default_rng(11)
    for variant in ("scaled", "masked", "upper_triang", "aligned_causal"):
        for sk, pad in ((20001, 3), (32768, 0)):
            plan = _run_fwd(variant, dtype, 2, 3, 5, sk, 2, rng, pad=pad, repeat=True)
            assert plan.spec.config.stage and plan.grid == (1, 30, 1)
            assert plan.shared_bytes >= sk * registry.itemsize(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_staged_rows_of_a_cluster(dtype, monkeypatch):
    """A staged entry timed on 131072 keys: rows of four CTAs, a cluster a row on the grid of
    rows, each CTA keeping its part in shared memory (the last part shorter where the row is
    not a multiple of four vectors); bitwise-identical repeats."""
    if not LIMITS.clusters:
        pytest.skip("clusters need sm_90")

    def staged(op, variant, dt, cols, **kw):
        return registry.SoftmaxConfig(
            op, "block", 32768, dt, 1, 16, 16, variant, 1, keys=131072, chunk=4, grid="rows",
            stage=True,
        )  # fmt: skip

    monkeypatch.setattr(registry, "select_softmax", staged)
    rng = np.random.default_rng(12)
    for variant in ("scaled", "masked", "aligned_causal"):
        for sk, pad in ((120001, 3), (131072, 0)):
            plan = _run_fwd(variant, dtype, 1, 2, 5, sk, 1, rng, pad=pad, repeat=True)
            assert plan.spec.config.stage and plan.cluster == 4 and plan.grid == (4, 10, 1)
            # a part of ceil(sk / 4) columns in whole vectors (4 elements: the padded rows)
            ne = plan.spec.num_elts
            vectors = -(-sk // (4 * ne))
            size = vectors * ne * registry.itemsize(dtype)
            if variant == "masked":
                size = -(-size // 16) * 16 + vectors * 4 * -(-ne // 4)
            assert ne == (4 if pad else 16 // registry.itemsize(dtype))
            assert plan.shared_bytes == size


@pytest.mark.parametrize("dtype", DTYPES)
def test_backward_padded(dtype):
    rng = np.random.default_rng(9)
    for sk in (1001, 20001):
        _run_bwd(dtype, 5, sk, rng, pad=16 - sk % 8, repeat=True)


# ------------------------------------------------------------------------------------------------
# many rows per CTA (persistent row loop) and the launcher's caches
# ------------------------------------------------------------------------------------------------


def _trips_or_cluster_rows(plan, rows: int) -> None:
    """Several row trips for some CTAs, or (an entry timed on the grid of rows with rows of
    several CTAs, run 201) a cluster a row on the grid of all rows."""
    if plan.cluster > 1 and plan.spec.config.grid == "rows":
        assert plan.ctas_per_col == rows and plan.row_iterations == 1
    else:
        assert plan.row_iterations > 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_many_rows(dtype, row_sync):
    """More rows than resident warps: every CTA loops over several rows (and trips), rows of
    several CTAs as clusters and through the counter (the counter's CTAs always loop; clusters
    of entries timed on the grid of rows take a row each)."""
    rng = np.random.default_rng(2)
    resident_rows = LIMITS.sm_count * 64
    plan = _run_fwd("masked", dtype, 3, 7, resident_rows // 20 + 1, 128, 3, rng)
    assert plan.row_iterations > 1
    rows = 3 * LIMITS.sm_count + 1
    plan = _run_fwd("scaled", dtype, 1, 1, rows, 65536, 1, rng, repeat=True)
    # rows stream since runs 166 / 175 (16-bit: one CTA a row, one an SM; fp32: 4 CTAs a row
    # of 16384 keys each since run 201, a cluster a row)
    assert plan.spec.stream
    _trips_or_cluster_rows(plan, rows)
    plan = _run_fwd("masked", dtype, 1, 1, rows, 65536, 1, rng, repeat=True)
    ctas = 65536 // plan.spec.config.max_cols  # 2 (fp32), 4 (fp16: runs 82-84; bf16: run 201)
    assert plan.ctas_per_row == ctas > 1
    _trips_or_cluster_rows(plan, rows)
    _check_row_sync(plan)
    assert (plan.cluster == ctas) == (row_sync == "cluster")
    bplan = _run_bwd(dtype, LIMITS.sm_count + 1, 131072, rng, repeat=True)
    assert bplan.ctas_per_row > 1
    _trips_or_cluster_rows(bplan, LIMITS.sm_count + 1)
    _check_row_sync(bplan)


def test_kernels_are_cached():
    rng = np.random.default_rng(0)
    _run_fwd("scaled", "bf16", 1, 1, 3, 1000, 1, rng)
    before = rtc.stats()["nvrtc_compiles"]
    _run_fwd("scaled", "bf16", 1, 1, 5, 1000, 1, rng)
    assert rtc.stats()["nvrtc_compiles"] == before
