"""Numba softmax backend (``backends/numba/softmax.py``) on the CPU.

Two halves, one per pass of ``tests/run_cpu.sh``:

* with ``NUMBA_ENABLE_CUDASIM=1``: numerics of every variant, forward and backward, fp32/fp16/
  bf16, through the launchers with the simulator's limits, against float64 references;
* without it: every registry entry compiles to PTX for sm_90 (no GPU needed), and the PTX has
  the properties the design relies on (registers only, 16-byte vectors, warp shuffles).
"""

from __future__ import annotations

import dataclasses
import os
import re
import time

import numpy as np
import pytest

from numba_norms import planner, registry
from numba_norms import reference as ref
from numba_norms.backends.common import SoftmaxBwdArgs, SoftmaxFwdArgs
from tests.conftest import assert_close, queue_behind_failing_build

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM", "") == "1"
sim_only = pytest.mark.skipif(
    not SIMULATOR,
    reason="numerics run under Numba's CUDA simulator: set NUMBA_ENABLE_CUDASIM=1 "
    "(the first pass of tests/run_cpu.sh)",
)
ptx_only = pytest.mark.skipif(
    SIMULATOR, reason="compile_ptx does not exist under Numba's CUDA simulator (second pass)"
)

DTYPES = ["fp32", "fp16", "bf16"]
VARIANTS = ["scaled", "masked", "upper_triang", "aligned_causal"]
STORAGE = {"fp32": np.float32, "fp16": np.float16, "bf16": np.uint16}
SIM_LIMITS = planner.DeviceLimits.simulator()
H200 = planner.DeviceLimits(sm_count=132, name="H200")


def _sm():
    from numba_norms.backends.numba import softmax

    return softmax


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _alignment(a: np.ndarray) -> int:
    """Largest power of two (<= 256) dividing the address and the row pitch in bytes."""
    al = min(256, a.ctypes.data & -a.ctypes.data)
    if a.ndim > 1 and a.shape[0] > 1:
        pitch = a.strides[0]
        al = min(al, pitch & -pitch)
    return al


def _rows(shape, dtype: str, rng, pitch: int | None = None, fill=None) -> np.ndarray:
    """A ``rows x cols`` array of ``dtype`` (logical numpy dtype), optionally row-strided.

    With a pitch, the padding holds a canary (NaN / 0xAB) so stray writes show up.
    """
    rows, cols = shape
    npd = ref.NP[dtype]
    pitch = pitch or cols
    base = np.full((rows, pitch), np.nan, dtype=np.float32).astype(npd)
    view = base[:, :cols]
    view[...] = (rng.standard_normal((rows, cols)) if fill is None else fill).astype(npd)
    return view


def _storage(a: np.ndarray, dtype: str) -> np.ndarray:
    return a.view(np.uint16) if dtype == "bf16" else a


def _plan(op: str, variant: str, dtype: str, rows: int, cols: int, arrays, cfg=None):
    sm = _sm()
    cfg = cfg or registry.select_softmax(op, variant, dtype, cols)
    pairs = [(_alignment(a), a.dtype.itemsize) for a in arrays]
    vec = planner.vector_elements(pairs, cfg.num_elts)
    spec = planner.softmax_spec(cfg, cols, vec, SIM_LIMITS)
    occ = sm.occupancy_backward(spec) if cfg.is_backward else sm.occupancy_forward(spec)
    return planner.softmax_plan(spec, rows, cols, SIM_LIMITS, occ)


def _reference_fwd(variant, x4, scale, mask4=None):
    if variant == "masked":
        return ref.scaled_masked_softmax(x4, mask4, scale)
    keep = np.broadcast_to(ref.softmax_keep(variant, x4.shape[-2], x4.shape[-1]), x4.shape)
    return ref.softmax_kept(x4.astype(np.float64) * scale, keep)


def run_forward(variant, dtype, b, h, sq, sk, *, mask_batch=1, pitch=None, scale=0.7, cfg=None,
                seed=0, full_mask_rows=()):  # fmt: skip
    """Launch the forward kernel and return (x4, y4 float64, expected, mask4, plan)."""
    rng = np.random.default_rng(seed)
    rows = b * h * sq
    x = _rows((rows, sk), dtype, rng, pitch)
    y = _rows((rows, sk), dtype, rng, pitch, fill=np.zeros((rows, sk)))
    mask = mask4 = None
    arrays = [_storage(x, dtype), _storage(y, dtype)]
    if variant == "masked":
        mask = (rng.random((mask_batch * sq, sk)) < 0.3).astype(np.uint8)
        for r in full_mask_rows:
            mask[r % (mask_batch * sq)] = 1
        mask4 = mask.reshape(mask_batch, 1, sq, sk)
        arrays.append(mask)
    plan = _plan("softmax_fwd", variant, dtype, rows, sk, arrays, cfg)
    args = SoftmaxFwdArgs(arrays[0], arrays[1], mask, scale, sq, h, mask_batch)
    _sm().forward(plan, args, 0)
    if pitch:  # nothing written outside the rows
        pad = y.base[:, sk:].astype(np.float32)
        assert np.isnan(pad).all(), "forward wrote into the row padding"
    x4 = x.reshape(b, h, sq, sk)
    expected = _reference_fwd(variant, x4, scale, mask4)
    return x4, y.astype(np.float64).reshape(b, h, sq, sk), expected, mask4, plan


def run_backward(dtype, rows, sk, *, pitch=None, scale=0.7, cfg=None, seed=1):
    rng = np.random.default_rng(seed)
    yv = ref.scaled_softmax(rng.standard_normal((rows, sk)) * 2, 1.0)
    y = _rows((rows, sk), dtype, rng, pitch, fill=yv)
    dy = _rows((rows, sk), dtype, rng, pitch)
    dx = _rows((rows, sk), dtype, rng, pitch, fill=np.zeros((rows, sk)))
    arrays = [_storage(dy, dtype), _storage(y, dtype), _storage(dx, dtype)]
    plan = _plan("softmax_bwd", "scaled", dtype, rows, sk, arrays, cfg)
    _sm().backward(plan, SoftmaxBwdArgs(arrays[0], arrays[1], arrays[2], scale), 0)
    if pitch:
        assert np.isnan(dx.base[:, sk:].astype(np.float32)).all(), "backward wrote into padding"
    return dx.astype(np.float64), ref.softmax_bwd(dy, y, scale), plan


# --------------------------------------------------------------------------------------------
# simulator: numerics
# --------------------------------------------------------------------------------------------

# (b, h, sq) per variant: odd sizes; aligned causal with sk < sq for some rows keeping nothing.
SHAPES = {
    "scaled": (1, 3, 5),
    "masked": (2, 3, 3),  # several heads: rows run heads fastest
    "upper_triang": (1, 1, 7),
    "aligned_causal": (1, 1, 9),
}


@sim_only
@pytest.mark.parametrize("sk", [1, 7, 33, 100])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_forward(variant, dtype, sk):
    b, h, sq = SHAPES[variant]
    mask_batch = b if (sk % 2) else 1  # both mask batch layouts across the sk values
    x4, y, expected, mask4, _ = run_forward(
        variant, dtype, b, h, sq, sk, mask_batch=mask_batch, full_mask_rows=(1,)
    )
    assert_close(y, expected, dtype, what=f"{variant} y")
    if variant in ("upper_triang", "aligned_causal"):
        excluded = ~np.broadcast_to(ref.softmax_keep(variant, sq, sk), y.shape)
        assert (y[excluded] == 0).all(), "excluded positions must be exactly 0"
        # aligned causal, sk < sq: rows keeping nothing
        empty = ~ref.softmax_keep(variant, sq, sk).any(-1)
        assert (y[..., empty, :] == 0).all()
    if variant == "masked":
        full = np.broadcast_to(mask4.astype(bool).all(-1, keepdims=True), y.shape)
        assert full.any() and (y[full] == 0).all(), "fully masked rows must be all zeros"


@sim_only
@pytest.mark.parametrize("sk", [1, 7, 33, 100])
@pytest.mark.parametrize("dtype", DTYPES)
def test_backward(dtype, sk):
    rows = 9  # odd, and more rows than one CTA holds
    dx, expected, _ = run_backward(dtype, rows, sk)
    assert_close(dx, expected, dtype, scale=4, what="dx")


@sim_only
@pytest.mark.parametrize("dtype", DTYPES)
def test_row_strided_vectors_and_tail(dtype):
    """Row pitch > sk keeps full-width vectors; sk % vector != 0 takes the partial-vector path."""
    pitch = 256  # 16-byte aligned rows; 250 % vector width != 0
    x4, y, expected, _, plan = run_forward("scaled", dtype, 1, 1, 3, 250, pitch=pitch)
    assert plan.spec.num_elts == 16 // np.dtype(STORAGE[dtype]).itemsize
    assert_close(y, expected, dtype, what="y")
    dx, dexp, bplan = run_backward(dtype, 3, 250, pitch=pitch)
    assert bplan.spec.num_elts == plan.spec.num_elts
    assert_close(dx, dexp, dtype, scale=4, what="dx")


@sim_only
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_backward_tail_before_the_last_vector(dtype):
    """The partial vector is not the thread's last one: later vectors must add zeros."""
    dx, dexp, plan = run_backward(dtype, 3, 258, pitch=264)
    spec = plan.spec
    assert 258 % spec.num_elts and spec.ldgs * spec.num_elts * 32 * spec.warps_n >= 258 + 128
    assert_close(dx, dexp, dtype, scale=4, what="dx")


@sim_only
def test_narrow_vectors_odd_pitch():
    """An odd row pitch allows only one element a vector: the scalar path."""
    x4, y, expected, mask4, plan = run_forward("masked", "fp16", 1, 1, 5, 21, pitch=23)
    assert plan.spec.num_elts == 1
    assert_close(y, expected, "fp16", what="y")


@sim_only
def test_persistent_rows_loop():
    """More rows than resident warps: every CTA loops over several row groups."""
    x4, y, expected, _, plan = run_forward("aligned_causal", "fp32", 2, 3, 7, 12)
    assert plan.row_iterations > 1
    assert_close(y, expected, "fp32", what="y")


@sim_only
@pytest.mark.parametrize(
    "variant, max_grid_y", [("scaled", 65535), ("masked", 3), ("aligned_causal", 3)]
)
def test_grid_of_rows(monkeypatch, variant, max_grid_y):
    """Entries with grid "rows": a row group of 2 rows per CTA (15 rows: 8 CTAs, the last half
    empty), and, where the grid's y limit is 3, CTAs looping over 3 trips with the pipeline;
    the backward on that grid (masked case)."""
    limits = dataclasses.replace(SIM_LIMITS, max_grid_y=max_grid_y)
    monkeypatch.setitem(globals(), "SIM_LIMITS", limits)
    base = registry.select_softmax("softmax_fwd", variant, "bf16", 64, measured=False)
    cfg = dataclasses.replace(base, warps_m=2, prefetch=True, grid="rows")
    x4, y, expected, _, plan = run_forward(variant, "bf16", 1, 3, 5, 64, cfg=cfg, seed=3)
    assert plan.spec.grid_of_rows and plan.grid == (1, min(8, max_grid_y), 1)
    assert plan.row_iterations == (1 if max_grid_y > 8 else 3)
    assert_close(y, expected, "bf16", what=f"{variant} y (grid of {plan.grid[1]} CTAs)")
    if variant != "masked":
        return
    bwd = dataclasses.replace(cfg, op="softmax_bwd", variant="scaled")
    dx, want, bplan = run_backward("bf16", 15, 64, cfg=bwd)
    assert bplan.spec.grid_of_rows and bplan.row_iterations == plan.row_iterations
    assert_close(dx, want, "bf16", what="dx")


@sim_only
@pytest.mark.parametrize(
    "variant, dtype, kind, bhq, sk, pitch",
    [
        ("scaled", "bf16", "warp", (2, 3, 7), 100, 104),  # partial last vector of every row
        ("masked", "fp16", "block", (1, 1, 9), 250, 256),  # several warps a row, mask vectors
        ("upper_triang", "fp32", "warp", (2, 3, 7), 40, None),
        ("aligned_causal", "bf16", "block", (1, 1, 12), 9, None),  # rows keeping nothing
    ],
)
def test_forward_pipeline(variant, dtype, kind, bhq, sk, pitch):
    """The software pipeline (``prefetch``): each trip reduces the row loaded the trip before
    while the next one loads. Several trips a CTA, against the reference and against the same
    configuration without the pipeline, bit for bit."""
    base = next(
        c
        for c in registry.softmax_configs(measured=False)
        if (c.op, c.variant, c.dtype, c.kind) == ("softmax_fwd", variant, dtype, kind)
        and c.max_cols >= sk
    )
    b, h, sq = bhq
    outs = []
    for prefetch in (True, False):
        cfg = dataclasses.replace(base, prefetch=prefetch)
        x4, y, expected, _, plan = run_forward(
            variant, dtype, b, h, sq, sk, pitch=pitch, cfg=cfg, full_mask_rows=(3,), seed=5
        )
        assert plan.row_iterations > 2 and plan.spec.config.prefetch == prefetch
        assert_close(y, expected, dtype, what=f"{variant} y (prefetch={prefetch})")
        outs.append(y)
    assert np.array_equal(outs[0], outs[1]), "the pipeline changed the results"


@sim_only
@pytest.mark.parametrize("variant", ["masked", "aligned_causal"])
def test_block_kernel_cross_warp_reductions(variant):
    """A one-row-per-CTA entry (8 warps a row): the shared-memory stage of the reductions."""
    cfg = next(
        c
        for c in registry.softmax_configs()
        if c.op == "softmax_fwd" and c.kind == "block" and c.variant == variant
        and c.dtype == "fp32" and c.warps_n == 8
    )  # fmt: skip
    x4, y, expected, mask4, plan = run_forward(
        variant, "fp32", 1, 1, 5, 100, cfg=cfg, full_mask_rows=(2,)
    )
    assert plan.block == (256, 1, 1)
    assert_close(y, expected, "fp32", what="y")
    bcfg = next(
        c
        for c in registry.softmax_configs()
        if c.op == "softmax_bwd" and c.kind == "block" and c.dtype == "fp32" and c.warps_n == 8
    )
    dx, dexp, _ = run_backward("fp32", 3, 100, cfg=bcfg)
    assert_close(dx, dexp, "fp32", scale=4, what="dx")


# The streaming forward (SoftmaxConfig.chunk): (variant, dtype, (warps_n, chunk, reverse),
# (b, h, sq), sk, pitch); every case runs several chunks a row or rows keeping nothing.
_STREAM_SIM = [
    ("scaled", "bf16", (1, 2, False), (1, 2, 3), 601, 608),  # partial last vector
    ("scaled", "fp16", (1, 2, True), (1, 2, 3), 601, 608),  # the same walked back
    ("masked", "fp16", (2, 2, False), (2, 1, 3), 1100, 1104),  # cross-warp merge, masked row
    ("upper_triang", "fp32", (1, 3, True), (1, 1, 5), 450, None),
    ("aligned_causal", "bf16", (2, 2, False), (1, 1, 12), 9, None),  # rows keeping nothing
]


@sim_only
@pytest.mark.parametrize("variant, dtype, shape, bhq, sk, pitch", _STREAM_SIM)
def test_stream_forward(variant, dtype, shape, bhq, sk, pitch):
    """The streaming forward against the reference: online (max, sum) over several chunks a
    thread, the CTA's merge, the second read (forwards or from the last chunk back); one CTA a
    row on a grid of fewer CTAs."""
    wn, chunk, reverse = shape
    vec = 16 // registry.itemsize(dtype)
    cfg = registry.SoftmaxConfig(
        "softmax_fwd", "block", wn * 32 * vec, dtype, 1, wn, 16, variant, 1, chunk=chunk,
        reverse=reverse,
    )  # fmt: skip
    b, h, sq = bhq
    x4, y, expected, _, plan = run_forward(
        variant, dtype, b, h, sq, sk, pitch=pitch, cfg=cfg, full_mask_rows=(1,), seed=3
    )
    assert plan.spec.stream and plan.ctas_per_row == 1 and plan.ctas_per_col < b * h * sq
    assert_close(y, expected, dtype, what=f"{variant} y (stream)")


# The staged streaming forward (SoftmaxConfig.stage): the cases above on the grid of rows, the
# row (and its mask bytes) kept in dynamic shared memory between the passes; max_grid_y 4 makes
# CTAs loop over rows (a thread overwrites its own slots row after row).
_STAGE_SIM = [c + (g,) for c in _STREAM_SIM for g in (65535, 4)]


@sim_only
@pytest.mark.parametrize("variant, dtype, shape, bhq, sk, pitch, max_grid_y", _STAGE_SIM)
def test_staged_stream_forward(monkeypatch, variant, dtype, shape, bhq, sk, pitch, max_grid_y):
    """The staged forward against the reference: the second pass reads the first pass's copy in
    shared memory (partial last vectors, causal limits, rows keeping nothing, a fully masked
    row)."""
    monkeypatch.setitem(
        globals(), "SIM_LIMITS", dataclasses.replace(SIM_LIMITS, max_grid_y=max_grid_y)
    )
    wn, chunk, reverse = shape
    vec = 16 // registry.itemsize(dtype)
    cfg = registry.SoftmaxConfig(
        "softmax_fwd", "block", wn * 32 * vec, dtype, 1, wn, 16, variant, 1, chunk=chunk,
        reverse=reverse, grid="rows", stage=True,
    )  # fmt: skip
    b, h, sq = bhq
    x4, y, expected, _, plan = run_forward(
        variant, dtype, b, h, sq, sk, pitch=pitch, cfg=cfg, full_mask_rows=(1,)
    )
    ne = plan.spec.num_elts  # (narrower where the pitch allows no 16-byte vectors)
    staged = -(-sk // ne) * max(ne * registry.itemsize(dtype), 4)
    if variant == "masked":
        staged = -(-staged // 16) * 16 + -(-sk // ne) * 4 * -(-ne // 4)
    assert plan.shared_bytes == staged and plan.grid[1] == min(b * h * sq, max_grid_y)
    assert_close(y, expected, dtype, what=f"{variant} y (staged)")


# The streaming backward: (dtype, (warps_n, chunk, reverse), rows, sk, pitch); several chunks a
# row, threads whose last chunk is partial or empty.
_STREAM_BWD_SIM = [
    ("bf16", (1, 2, False), 5, 601, 608),  # partial last vector
    ("fp16", (2, 2, True), 4, 1100, 1104),  # cross-warp sum, walked back
    ("fp32", (1, 3, True), 3, 450, None),
    ("fp32", (2, 1, False), 3, 70, None),  # one chunk, most threads past the row
]


@sim_only
@pytest.mark.parametrize("dtype, shape, rows, sk, pitch", _STREAM_BWD_SIM)
def test_stream_backward(dtype, shape, rows, sk, pitch):
    """The streaming backward against the reference: sum(dy * y) over several chunks a thread,
    the CTA's sum by row parity, the second read; one CTA a row on a grid of fewer CTAs."""
    wn, chunk, reverse = shape
    vec = 16 // registry.itemsize(dtype)
    cfg = registry.SoftmaxConfig(
        "softmax_bwd", "block", wn * 32 * vec, dtype, 1, wn, 16, "scaled", 1, chunk=chunk,
        reverse=reverse,
    )  # fmt: skip
    dx, expected, plan = run_backward(dtype, rows, sk, pitch=pitch, cfg=cfg)
    assert plan.spec.stream and plan.ctas_per_row == 1 and plan.ctas_per_col < rows
    assert_close(dx, expected, dtype, scale=4, what="dx (stream)")


def test_spill_fallbacks():
    """Where a measured cap or pipeline makes the Numba kernel spill, the builds tried next."""
    sm = _sm()
    cfg = registry.SoftmaxConfig("softmax_fwd", "block", 8192, "bf16", 1, 8, 16, "scaled", 3)
    assert sm._fallbacks(cfg) == [(3, False), (2, False), (1, False)]
    piped = dataclasses.replace(cfg, prefetch=True)
    assert sm._fallbacks(piped) == [(3, True), (2, True), (1, True), (1, False)]
    assert sm._fallbacks(dataclasses.replace(cfg, min_ctas_per_sm=1)) == [(1, False)]


@sim_only
def test_misaligned_pointer_is_rejected():
    sm = _sm()
    rng = np.random.default_rng(0)
    x = _rows((3, 64), "fp32", rng)
    y = np.zeros_like(x)
    cfg = registry.select_softmax("softmax_fwd", "scaled", "fp32", 64)
    spec = planner.softmax_spec(cfg, 64, 4, SIM_LIMITS)
    plan = planner.softmax_plan(spec, 3, 64, SIM_LIMITS, sm.occupancy_forward(spec))
    bad = np.zeros((3, 66), np.float32)[:, 1:65]  # 4-byte aligned only
    with pytest.raises(ValueError, match="aligned"):
        sm.forward(plan, SoftmaxFwdArgs(bad, y, None, 1.0, 3), 0)
    with pytest.raises(ValueError, match="rows"):
        sm.forward(plan, SoftmaxFwdArgs(x[:2], y[:2], None, 1.0, 2), 0)
    with pytest.raises(ValueError, match="softmax_bwd"):
        sm.compile_backward(spec)


# --------------------------------------------------------------------------------------------
# no simulator: PTX for sm_90
# --------------------------------------------------------------------------------------------


def _spec(op, variant, dtype, cols, vec=16, limits=H200, measured=True):
    cfg = registry.select_softmax(op, variant, dtype, cols, measured=measured)
    return planner.softmax_spec(cfg, cols, vec, limits)


def _ptx(spec) -> str:
    sm = _sm()
    fn = sm.compile_backward if spec.config.is_backward else sm.compile_forward
    return fn(spec, "sm_90")


def _registry_specs():
    seen = {}
    for cfg in registry.softmax_configs(True, "numba"):  # the shared entries and Numba's own
        spec = planner.softmax_spec(cfg, cfg.max_cols, cfg.num_elts, H200)
        seen.setdefault(spec.kernel_key, spec)
    return list(seen.values())


def _compile_all(specs) -> float:
    t0 = time.perf_counter()
    for spec in specs:
        ptx = _ptx(spec)
        assert ".entry" in ptx
        assert ".local" not in ptx, f"{spec.kernel_key}: row spilled to local memory"
    return time.perf_counter() - t0


@ptx_only
def test_compile_representative_specs():
    """One kernel of each shape family (warp and block, every dtype and variant)."""
    specs = [
        _spec("softmax_fwd", "scaled", "fp32", 32),
        _spec("softmax_fwd", "masked", "fp16", 1000),
        _spec("softmax_fwd", "upper_triang", "bf16", 2048),
        _spec("softmax_fwd", "aligned_causal", "fp32", 4096),
        _spec("softmax_fwd", "masked", "bf16", 131072),
        _spec("softmax_bwd", "scaled", "bf16", 128),
        _spec("softmax_bwd", "scaled", "fp32", 16384),
        _spec("softmax_fwd", "scaled", "fp16", 100, vec=1),  # scalar accesses
    ]
    _compile_all(specs)


@ptx_only
@pytest.mark.slow
def test_compile_every_registry_entry():
    specs = _registry_specs()
    elapsed = _compile_all(specs)
    print(f"compiled {len(specs)} softmax kernels to PTX in {elapsed:.1f} s")


@ptx_only
@pytest.mark.parametrize("variant", ["scaled", "masked"])
def test_ptx_of_stream_forward(variant):
    """The streaming forward (run 164's shape): registers only; the first pass loads plainly, the
    second read and the stores of y are evict-first (.cs), one 16-byte access a vector."""
    cfg = registry.SoftmaxConfig(
        "softmax_fwd", "block", 32768, "bf16", 1, 16, 16, variant, 3, 32768, chunk=2
    )
    ptx = _ptx(planner.softmax_spec(cfg, 32768, 8, H200))
    assert ".local" not in ptx
    assert len(re.findall(r"ld\.global\.v4\.u32", ptx)) == 2
    assert len(re.findall(r"ld\.global\.cs\.v4\.u32", ptx)) == 2
    assert len(re.findall(r"st\.global\.cs\.v4\.u32", ptx)) == 2
    assert "st.global.v4" not in ptx


@ptx_only
def test_ptx_of_staged_stream_forward():
    """``stage``: the first pass keeps each loaded word in the dynamic shared array (4 words a
    16-byte vector, 2 vectors a chunk), the second reads them back instead of global memory."""
    cfg = registry.SoftmaxConfig(
        "softmax_fwd", "block", 32768, "bf16", 1, 16, 16, "scaled", 2, 32768, chunk=2,
        grid="rows", stage=True,
    )  # fmt: skip
    ptx = _ptx(planner.softmax_spec(cfg, 32768, 8, H200))
    assert ".local" not in ptx
    assert len(re.findall(r"ld\.global\.v4\.u32", ptx)) == 2
    assert "ld.global.cs" not in ptx
    assert len(re.findall(r"st\.shared\.u32", ptx)) == 8 + 1  # (+ the warp's keep flag)
    assert len(re.findall(r"ld\.shared\.u32", ptx)) == 8
    # masked: each vector's 8 mask bytes (2 words) staged beside it, read once from global
    ptx = _ptx(planner.softmax_spec(dataclasses.replace(cfg, variant="masked"), 32768, 8, H200))
    assert ".local" not in ptx and "ld.global.cs" not in ptx
    assert len(re.findall(r"ld\.global\.v2\.u32", ptx)) == 2
    assert len(re.findall(r"st\.shared\.u32", ptx)) == 8 + 4 + 1
    assert len(re.findall(r"ld\.shared\.u32", ptx)) == 8 + 4 + 16  # (+ 16 warps' keep flags)


@ptx_only
def test_ptx_of_staged_rows_of_a_cluster():
    """A staged entry timed on four CTAs a row: each CTA keeps its part's words in the dynamic
    shared array between the passes, and the CTAs exchange their (max, sum) pairs across the
    cluster; still no local memory."""
    cfg = registry.SoftmaxConfig(
        "softmax_fwd", "block", 32768, "bf16", 1, 16, 16, "aligned_causal", 1, 131072, chunk=2,
        grid="rows", stage=True,
    )  # fmt: skip
    spec = planner.softmax_spec(cfg, 131072, 8, H200)
    assert spec.ctas_per_row == 4 and spec.multi_cta and spec.stage_bytes(131072) == 65536
    ptx = _ptx(spec)
    assert ".local" not in ptx and "barrier.cluster.wait.acquire.aligned" in ptx
    assert len(re.findall(r"ld\.global\.v4\.u32", ptx)) == 2
    assert "ld.global.cs" not in ptx
    assert len(re.findall(r"ld\.shared\.u32", ptx)) >= 8


@ptx_only
@pytest.mark.parametrize("reverse", [False, True])
def test_ptx_of_stream_backward(reverse):
    """The streaming backward: registers only; the first pass loads dy and y plainly, the
    second read and the stores of dx are evict-first (.cs), one 16-byte access a vector; the
    reversed walk adds no memory access."""
    cfg = registry.SoftmaxConfig(
        "softmax_bwd", "block", 32768, "bf16", 1, 16, 16, "scaled", 2, 32768, chunk=2,
        reverse=reverse,
    )  # fmt: skip
    ptx = _ptx(planner.softmax_spec(cfg, 32768, 8, H200))
    assert ".local" not in ptx
    assert len(re.findall(r"ld\.global\.v4\.u32", ptx)) == 4
    assert len(re.findall(r"ld\.global\.cs\.v4\.u32", ptx)) == 4
    assert len(re.findall(r"st\.global\.cs\.v4\.u32", ptx)) == 2
    assert "st.global.v4" not in ptx


@ptx_only
@pytest.mark.parametrize("op", ["softmax_fwd", "softmax_bwd"])
@pytest.mark.parametrize("dtype, vec", [("fp32", 1), ("bf16", 2), ("fp16", 4), ("fp32", 2)])
def test_ptx_of_narrow_stream_vectors(op, dtype, vec):
    """The streaming kernels on rows whose alignment allows 4- or 8-byte vectors only (an odd
    pitch): the evict-first accesses take that width (one word: no vector suffix)."""
    cfg = registry.SoftmaxConfig(op, "block", 4096, dtype, 1, 8, 16, "scaled", 2, 4096, chunk=2)
    ptx = _ptx(planner.softmax_spec(cfg, 4097, vec, H200))
    nbytes = vec * registry.itemsize(dtype)
    width = ".u32" if nbytes == 4 else ".v2.u32"
    assert ".local" not in ptx
    assert f"ld.global.cs{width}" in ptx and f"st.global.cs{width}" in ptx


@ptx_only
def test_ptx_of_bf16_1024_forward():
    """The design's fast path: registers only, 16-byte accesses, shuffles, packed converts
    (the default table's warp entry: one warp a row, 32 elements a thread)."""
    ptx = _ptx(_spec("softmax_fwd", "scaled", "bf16", 1024, measured=False))
    assert ".local" not in ptx
    assert len(re.findall(r"ld\.global\.v4\.u32", ptx)) == 4  # 4 x 8 bf16 a thread
    assert len(re.findall(r"st\.global\.v4\.u32", ptx)) == 4
    assert ptx.count("shfl.sync.bfly.b32") == 10  # max and sum butterflies
    assert "cvt.rn.bf16x2.f32" in ptx and "ex2.approx.ftz.f32" in ptx
    assert "bar.sync" not in ptx  # one warp a row, one CTA a row: no CTA-wide barrier


@ptx_only
@pytest.mark.parametrize("op", ["softmax_fwd", "softmax_bwd"])
def test_ptx_starts_with_the_dependent_launch_prologue(op):
    """As NVRTC's: sm_90 kernels wait for the stream's previous kernel, then let the next be
    scheduled, before any memory access (sm_80: tests/test_numba_norms.py covers the switch)."""
    from tests.conftest import assert_dependent_prologue

    assert_dependent_prologue(_ptx(_spec(op, "scaled", "bf16", 1024)), 1, "sm_90")


@ptx_only
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("op", ["softmax_fwd", "softmax_bwd"])
def test_ptx_multi_cta_barrier_has_the_cluster_branch_from_sm90(op, arch):
    """As NVRTC's: rows of several CTAs meet at the cluster barrier when launched in a cluster
    (sm_90; %cluster_nctarank decides), at the counter otherwise; sm_80 only the counter."""
    variant = "masked" if op == "softmax_fwd" else "scaled"  # (the scaled forward streams)
    spec = _spec(op, variant, "bf16", 131072)
    assert spec.ctas_per_row > 1
    sm = _sm()
    ptx = (sm.compile_backward if spec.config.is_backward else sm.compile_forward)(spec, arch)
    want = arch == "sm_90"
    assert ("%cluster_nctarank" in ptx) is want
    assert ("barrier.cluster.arrive.release.aligned" in ptx) is want
    assert ("barrier.cluster.wait.acquire.aligned" in ptx) is want
    # the forward's pairs go into the other CTAs' shared memory (distributed shared memory);
    # the backward's through `stats` in L2 (its shared-memory form was slower, run 80)
    dsmem = want and op == "softmax_fwd"
    assert ("mapa.shared::cluster" in ptx and "st.shared::cluster.v2.f32" in ptx) is dsmem
    if dsmem:  # the pairs' array 8-byte aligned (test_numba_norms' cluster-slot test says why)
        from tests.test_numba_norms import cluster_slots_aligned

        assert cluster_slots_aligned(ptx, 4 * 2 * spec.config.warps_m * sm._CL_SLOTS)
    assert re.search(r"atom\.global(\.\w+)*\.add", ptx)


@ptx_only
def test_ptx_parameters_match_the_launcher_layouts():
    from numba_norms.backends.common import SOFTMAX_BWD_PARAMS, SOFTMAX_FWD_PARAMS
    from tests.test_numba_norms import assert_entry_layouts

    assert_entry_layouts(_ptx(_spec("softmax_fwd", "masked", "bf16", 1024)), SOFTMAX_FWD_PARAMS)
    assert_entry_layouts(_ptx(_spec("softmax_bwd", "scaled", "fp16", 2048)), SOFTMAX_BWD_PARAMS)


@ptx_only
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("op", ["softmax_fwd", "softmax_bwd"])
def test_ptx_multi_cta_stream_kernels(op, arch):
    """Streaming rows of several CTAs (a contiguous part each) exchange as the held kernels do:
    the cluster barrier from sm_90 (the forward's pairs in distributed shared memory, the
    backward's through `stats`), the counter otherwise; still no local memory."""
    cfg = registry.SoftmaxConfig(op, "block", 32768, "bf16", 1, 16, 16, "scaled", 1, chunk=2)
    spec = planner.softmax_spec(cfg, 131072, 8, H200)
    assert spec.ctas_per_row == 4 and spec.multi_cta
    sm = _sm()
    ptx = (sm.compile_backward if spec.config.is_backward else sm.compile_forward)(spec, arch)
    want = arch == "sm_90"
    assert ("barrier.cluster.wait.acquire.aligned" in ptx) is want
    assert ("st.shared::cluster.v2.f32" in ptx) is (want and op == "softmax_fwd")
    assert re.search(r"atom\.global(\.\w+)*\.add", ptx) and ".local" not in ptx
    assert len(re.findall(r"ld\.global\.cs\.v4\.u32", ptx)) == 2 * (1 + cfg.is_backward)


@ptx_only
def test_ptx_of_multi_cta_forward():
    spec = _spec("softmax_fwd", "masked", "fp16", 65536, measured=False)
    assert spec.ctas_per_row == 4
    ptx = _ptx(spec)
    assert ".local" not in ptx
    for needle in (
        "atom.global.add",
        "ld.volatile.global.u32",
        "membar.gl",
        "st.global.cg.v2.f32",
        "ld.global.cg.v2.f32",
        "vote.sync.any.pred",
    ):
        assert needle in ptx, needle  # fmt: skip


@ptx_only
def test_ptx_assembles_with_ptxas():
    """Inline PTX must also pass ptxas (through nvJitLink, no GPU needed)."""
    nvjitlink = pytest.importorskip("cuda.bindings.nvjitlink")
    for spec in (
        _spec("softmax_fwd", "masked", "bf16", 65536),
        _spec("softmax_bwd", "scaled", "fp16", 32768),
        _spec("softmax_fwd", "aligned_causal", "fp32", 7, vec=1),
    ):
        ptx = _ptx(spec).encode()
        try:
            h = nvjitlink.create(2, ["-arch=sm_90", "-O3"])
        except Exception as exc:  # the library is missing: nothing to check here
            pytest.skip(f"nvJitLink unavailable: {exc}")
        try:
            nvjitlink.add_data(h, nvjitlink.InputType.PTX, ptx, len(ptx), "softmax.ptx")
            nvjitlink.complete(h)
            assert nvjitlink.get_linked_cubin_size(h) > 0
        except Exception:
            log = bytearray(nvjitlink.get_error_log_size(h))
            nvjitlink.get_error_log(h, log)
            raise AssertionError(log.decode(errors="replace")) from None
        finally:
            nvjitlink.destroy(h)


def test_threads_queued_on_a_failing_build_share_its_error(monkeypatch):
    """The backend's kernel cache builds a key once however many threads ask; those queued
    behind a build that raises get its error (before, each built again in turn), and a call
    after it builds afresh."""
    from numba_norms.backends.numba import softmax as nb

    key = ("test-failing-build", time.monotonic_ns())
    builds, errors, _ = queue_behind_failing_build(
        monkeypatch, lambda build: nb._cached(key, build), RuntimeError("broken build"), queued=3
    )
    assert builds == 1 and len(errors) == 4
    assert all(str(e) == "broken build" for e in errors)
    assert nb._cached(key, lambda: "built") == "built"
    assert nb._cache.pop(key) == "built"
