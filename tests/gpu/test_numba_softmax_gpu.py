"""Numba softmax backend on a real GPU: every variant and dtype over short to very long rows.

Launches ``backends/numba/softmax.py`` directly from planner plans on Numba device arrays
(one CTA a row up to 32768 keys, or 16384 in the fp32 backward; several cooperating CTAs
beyond), against float64 references; checks exact zeros, untouched row padding and
bitwise-identical repeats.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from numba_norms import planner, registry
from numba_norms import reference as ref
from numba_norms.backends.common import SoftmaxBwdArgs, SoftmaxFwdArgs
from tests.conftest import HAS_GPU, SIMULATOR, assert_close

pytestmark = pytest.mark.gpu
if SIMULATOR or not HAS_GPU:
    pytest.skip("needs a CUDA GPU (and not Numba's simulator)", allow_module_level=True)

from numba import cuda  # noqa: E402

from numba_norms.backends.numba import softmax as sm  # noqa: E402

DTYPES = ["fp32", "fp16", "bf16"]
VARIANTS = ["scaled", "masked", "upper_triang", "aligned_causal"]
SKS = [1, 7, 32, 128, 1000, 2048, 4097, 16384, 32768, 131072]


def _limits() -> planner.DeviceLimits:
    dev = cuda.get_current_device()
    return planner.DeviceLimits(
        sm_count=dev.MULTIPROCESSOR_COUNT,
        max_threads_per_block=dev.MAX_THREADS_PER_BLOCK,
        cooperative=bool(getattr(dev, "COOPERATIVE_LAUNCH", 1)),
        clusters=tuple(dev.compute_capability) >= planner.CLUSTER_CC,
        name=dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name),
    )


LIMITS = _limits()


ROW_SYNC_LIMITS = (sys.modules[__name__], "LIMITS")  # what conftest's row_sync replaces


def _shape(sk: int, variant: str) -> tuple[int, int, int]:
    """(b, h, sq): odd sizes, few rows for long keys; aligned causal gets sq > sk when short."""
    if sk >= 32768:
        return (1, 1, 3)
    if sk >= 4097:
        return (1, 3, 3)
    if variant == "aligned_causal" and sk <= 32:
        return (3, 1, sk + 4)  # the first 4 rows keep nothing
    return (3, 5, 7)


def _storage(a: np.ndarray, dtype: str) -> np.ndarray:
    return a.view(np.uint16) if dtype == "bf16" else a


def _vec(arrays, cfg) -> int:
    pairs = []
    for a in arrays:
        ptr = a.__cuda_array_interface__["data"][0]
        al = min(256, ptr & -ptr)
        if a.shape[0] > 1:
            pitch = a.strides[0]
            al = min(al, pitch & -pitch)
        pairs.append((al, a.dtype.itemsize))
    return planner.vector_elements(pairs, cfg.num_elts)


def _plan(op, variant, dtype, rows, cols, arrays, cfg=None):
    """The plan the Numba path makes (its own measured entries first), or ``cfg``'s."""
    if cfg is None:
        cfg = registry.select_softmax(op, variant, dtype, cols, backend="numba")
    spec = planner.softmax_spec(cfg, cols, _vec(arrays, cfg), LIMITS)
    occ = sm.occupancy_backward(spec) if cfg.is_backward else sm.occupancy_forward(spec)
    return planner.softmax_plan(spec, rows, cols, LIMITS, occ)


def _scratch(plan):
    return cuda.device_array(plan.scratch_bytes, np.uint8) if plan.scratch_bytes else None


def _check(y, expected, dtype, n, what, scale=1.0):
    """assert_close on values scaled by ``n`` (about the kept count), so that long rows, whose
    entries are ~1/n, are checked relative to their size rather than against atol."""
    n = np.maximum(np.asarray(n, dtype=np.float64), 1.0)
    assert_close(y * n, expected * n, dtype, scale=scale, what=what)


def _host(d, dtype):
    h = d.copy_to_host()
    return h.view(ref.NP[dtype]) if dtype == "bf16" else h


@pytest.mark.parametrize("sk", SKS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_forward(variant, dtype, sk):
    _forward(variant, dtype, sk)


def _forward(variant, dtype, sk, cfg=None):
    b, h, sq = _shape(sk, variant)
    rows = b * h * sq
    rng = np.random.default_rng(sk * 7 + len(variant))
    x = (rng.standard_normal((rows, sk)) * 3).astype(ref.NP[dtype])
    d_x = cuda.to_device(_storage(x, dtype))
    d_y = cuda.device_array(d_x.shape, d_x.dtype)
    mask = mask4 = d_mask = None
    mask_batch = b if sk % 2 else 1
    arrays = [d_x, d_y]
    if variant == "masked":
        mask = (rng.random((mask_batch * sq, sk)) < 0.3).astype(np.uint8)
        mask[min(1, mask_batch * sq - 1)] = 1  # a fully masked row
        mask4 = mask.reshape(mask_batch, 1, sq, sk)
        d_mask = cuda.to_device(mask)
        arrays.append(d_mask)
    plan = _plan("softmax_fwd", variant, dtype, rows, sk, arrays, cfg)
    scratch = _scratch(plan)
    args = SoftmaxFwdArgs(d_x, d_y, d_mask, 0.6, sq, h, mask_batch, scratch)
    sm.forward(plan, args, 0)
    first = d_y.copy_to_host()
    for _ in range(2):  # bitwise reproducible, barrier counters re-zeroed every launch
        sm.forward(plan, args, 0)
        assert np.array_equal(d_y.copy_to_host().view(np.uint8), first.view(np.uint8))
    y = _host(d_y, dtype).astype(np.float64).reshape(b, h, sq, sk)
    x4 = x.reshape(b, h, sq, sk)
    if variant == "masked":
        expected = ref.scaled_masked_softmax(x4, mask4, 0.6)
        full = np.broadcast_to(mask4.astype(bool).all(-1, keepdims=True), y.shape)
        assert (y[full] == 0).all()
    else:
        keep = np.broadcast_to(ref.softmax_keep(variant, sq, sk), y.shape)
        expected = ref.softmax_kept(x4.astype(np.float64) * 0.6, keep)
        assert (y[~keep] == 0).all(), "excluded positions must be exactly 0"
    # values ~1/kept: compare relative to the row (the reference's row max sets the scale)
    n = 1.0 / np.maximum(expected.max(-1, keepdims=True), 1e-30)
    _check(y, expected, dtype, n, f"{variant} y (ctas_per_row={plan.ctas_per_row})")


@pytest.mark.parametrize("sk", SKS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_backward(dtype, sk):
    _backward(dtype, sk)


def _backward(dtype, sk, cfg=None):
    b, h, sq = _shape(sk, "scaled")
    rows = b * h * sq
    rng = np.random.default_rng(sk)
    y = ref.scaled_softmax(rng.standard_normal((rows, sk)) * 2, 1.0).astype(ref.NP[dtype])
    dy = rng.standard_normal((rows, sk)).astype(ref.NP[dtype])
    d_y = cuda.to_device(_storage(y, dtype))
    d_dy = cuda.to_device(_storage(dy, dtype))
    d_dx = cuda.device_array(d_y.shape, d_y.dtype)
    plan = _plan("softmax_bwd", "scaled", dtype, rows, sk, [d_dy, d_y, d_dx], cfg)
    args = SoftmaxBwdArgs(d_dy, d_y, d_dx, 0.6, _scratch(plan))
    sm.backward(plan, args, 0)
    first = d_dx.copy_to_host()
    sm.backward(plan, args, 0)
    assert np.array_equal(d_dx.copy_to_host().view(np.uint8), first.view(np.uint8))
    # Long rows: |dx| <= scale * y * (|dy| + |sum|) is tiny; compare on the rows' scale.
    dx = _host(d_dx, dtype).astype(np.float64)
    expected = ref.softmax_bwd(dy, y, 0.6)
    n = 1.0 / np.maximum(np.abs(expected).max(-1, keepdims=True), 1e-30)
    _check(dx, expected, dtype, n, f"dx (ctas_per_row={plan.ctas_per_row})", scale=4)


def _streaming(op: str, variant: str, dtype: str, reverse: bool, part: int):
    """A streaming entry of 8 warps, 2 vectors a step, 2 CTAs an SM, ``part`` keys a CTA."""
    return registry.SoftmaxConfig(
        op, "block", part, dtype, 1, 8, 16, variant, 2, chunk=2, reverse=reverse
    )


@pytest.mark.parametrize("part", [32768, 2048])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sk", [4097, 32768])
def test_streaming_kernels(sk, dtype, reverse, part, row_sync):
    """The streaming forward (every variant) and backward, the second pass walked forwards and
    back, on rows of many chunks a thread (a partial last vector at 4097 keys), one CTA a row
    or several (3: a cluster; 16: the counter)."""
    for variant in VARIANTS:
        _forward(variant, dtype, sk, _streaming("softmax_fwd", variant, dtype, reverse, part))
    _backward(dtype, sk, _streaming("softmax_bwd", "scaled", dtype, reverse, part))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sk", [4097, 32768])
def test_staged_streaming_forward(sk, dtype):
    """The staged forward (``stage``: the row's words kept in dynamic shared memory between the
    passes, a CTA a row on the grid of rows) in every variant."""
    for variant in VARIANTS:
        cfg = registry.SoftmaxConfig(
            "softmax_fwd", "block", 32768, dtype, 1, 16, 16, variant, 2, chunk=4, grid="rows",
            stage=True,
        )  # fmt: skip
        _forward(variant, dtype, sk, cfg)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sk", [120001, 131072])
def test_staged_rows_of_a_cluster(sk, dtype):
    """A staged entry timed on 131072 keys: four CTAs a row, a cluster a row on the grid of
    rows, each keeping its part's words in shared memory. Odd rows take one-element vectors: a
    masked part then needs a word an element and a word a mask byte (240 KB), more than a CTA
    may have, so there is no staged plan (dispatch plans the entry unstaged)."""
    for variant in ("scaled", "masked", "aligned_causal"):
        cfg = registry.SoftmaxConfig(
            "softmax_fwd", "block", 32768, dtype, 1, 16, 16, variant, 1, keys=131072, chunk=4,
            grid="rows", stage=True,
        )  # fmt: skip
        if variant == "masked" and sk % 2:
            spec = planner.softmax_spec(cfg, sk, 1, LIMITS)
            with pytest.raises(planner.PlanError, match="240020 bytes of shared memory"):
                planner.softmax_plan(spec, 8, sk, LIMITS, 1)
            continue
        _forward(variant, dtype, sk, cfg)


OWN = registry.measured_softmax_configs("numba")


@pytest.mark.parametrize(
    "cfg", OWN, ids=lambda c: f"{c.op}-{c.variant}-{c.dtype}-{c.keys}-{c.kind}{c.max_cols}"
)
def test_own_measured_entry(cfg):
    """Each entry of the Numba backend's own table at the key length it was timed at (and the
    selection gives it to the Numba path, not to NVRTC's)."""
    picked = registry.select_softmax(cfg.op, cfg.variant, cfg.dtype, cfg.keys, backend="numba")
    assert picked == cfg
    assert registry.select_softmax(cfg.op, cfg.variant, cfg.dtype, cfg.keys) != cfg
    if cfg.is_backward:
        _backward(cfg.dtype, cfg.keys, cfg)
    else:
        _forward(cfg.variant, cfg.dtype, cfg.keys, cfg)


@pytest.mark.parametrize("dtype", DTYPES)
def test_row_strided_on_a_stream(dtype):
    """Row pitch > sk (16-byte aligned), a partial last vector, a non-default stream."""
    rows, sk, pitch = 37, 1000 + 3, 1024
    rng = np.random.default_rng(5)
    npd = ref.NP[dtype]
    x = np.full((rows, pitch), np.nan, np.float32).astype(npd)
    x[:, :sk] = rng.standard_normal((rows, sk)).astype(npd)
    stream = cuda.stream()
    d_xfull = cuda.to_device(_storage(x, dtype), stream=stream)
    d_yfull = cuda.to_device(_storage(x, dtype), stream=stream)  # NaN padding as a canary
    d_x, d_y = d_xfull[:, :sk], d_yfull[:, :sk]
    plan = _plan("softmax_fwd", "scaled", dtype, rows, sk, [d_x, d_y])
    assert plan.spec.num_elts == plan.spec.config.num_elts
    h_ = stream.handle
    handle = int(getattr(h_, "value", h_) or 0)
    sm.forward(plan, SoftmaxFwdArgs(d_x, d_y, None, 1.0, rows, scratch=_scratch(plan)), handle)
    stream.synchronize()
    y = d_yfull.copy_to_host()
    y = (y.view(npd) if dtype == "bf16" else y).astype(np.float64)
    assert np.isnan(y[:, sk:]).all(), "wrote into the row padding"
    expected = ref.softmax_kept(x[:, :sk].astype(np.float64), np.ones((rows, sk), bool))
    assert_close(y[:, :sk], expected, dtype, what="y")


@pytest.mark.parametrize("cols", [40000, 131072])
def test_multi_cta_many_row_groups(cols, row_sync):
    """Multi-CTA rows with more rows than resident row groups (several trips and barriers)."""
    rng = np.random.default_rng(3)
    rows = 300 if cols < 100000 else 40
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    d_x = cuda.to_device(x)
    d_y = cuda.device_array_like(d_x)
    plan = _plan("softmax_fwd", "aligned_causal", "fp32", rows, cols, [d_x, d_y])
    assert plan.ctas_per_row > 1
    assert plan.cluster == planner.cluster_size(plan.ctas_per_row, LIMITS)
    assert plan.cooperative == (plan.cluster == 1) == (row_sync == "counter")
    sm.forward(plan, SoftmaxFwdArgs(d_x, d_y, None, 1.0, rows, scratch=_scratch(plan)), 0)
    y = d_y.copy_to_host().astype(np.float64)
    keep = ref.softmax_keep("aligned_causal", rows, cols)
    assert (y[~keep] == 0).all()
    want = ref.softmax_kept(x.astype(np.float64), keep)
    _check(y, want, "fp32", keep.sum(-1, keepdims=True), "y")


@pytest.mark.parametrize("sk", [1000, 4097, 32768])
@pytest.mark.parametrize("dtype", DTYPES)
def test_agrees_with_nvrtc(monkeypatch, dtype, sk):
    """Same algorithm as the CUDA C kernels: the public API on both backends agrees closely."""
    import numba_norms as nn
    from numba_norms import dispatch

    if not dispatch.nvrtc_status()[0]:
        pytest.skip("NVRTC unavailable")
    pytest.importorskip("numba_norms.backends.nvrtc.softmax")
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((1, 3, 5, sk)) * 3).astype(ref.NP[dtype])
    d_x = cuda.to_device(_storage(x, dtype))
    if dtype == "bf16":
        d_x = d_x.view(ref.NP["bf16"])
    out = {}
    for backend in ("nvrtc", "numba"):
        monkeypatch.setenv("DISABLE_NVRTC", "1" if backend == "numba" else "0")
        y = nn.scaled_aligned_causal_masked_softmax_fwd(d_x, 0.8)
        assert nn.last_backend() == backend
        out[backend] = np.asarray(y.copy_to_host()).view(np.uint8)
    a = out["numba"].view(_storage(x, dtype).dtype)
    b = out["nvrtc"].view(_storage(x, dtype).dtype)
    same = np.mean(a == b)
    print(f"{dtype} sk={sk}: {same:.4%} of outputs bitwise equal to NVRTC's")
    fa = (a.view(ref.NP[dtype]) if dtype == "bf16" else a).astype(np.float64)
    fb = (b.view(ref.NP[dtype]) if dtype == "bf16" else b).astype(np.float64)
    n = 1.0 / np.maximum(fb.max(-1, keepdims=True), 1e-30)
    _check(fa, fb, dtype, n, "numba vs nvrtc")


@pytest.mark.parametrize(
    "op, variant, dtype, cols",
    [
        ("softmax_bwd", "scaled", "bf16", 8192),  # capped (run 41's shape, without the pipeline)
        ("softmax_fwd", "upper_triang", "bf16", 16384),  # streaming, 8 CTAs an SM
        ("softmax_fwd", "upper_triang", "bf16", 8192),  # capped and pipelined
    ],
)
def test_capped_entries_do_not_spill_much(op, variant, dtype, cols):
    """Measured caps and pipelines that make NVVM's code spill heavily fall back to builds that
    spill at most ``SPILL_LIMIT`` bytes (or to the uncapped, unpipelined build). The entries
    are the Numba path's (its own where it keeps one: since run 197 the shared entries at
    these lengths are uncapped)."""
    cfg = registry.select_softmax(op, variant, dtype, cols, backend="numba")
    assert cfg.min_ctas_per_sm > 1 or cfg.prefetch
    spec = planner.softmax_spec(cfg, cols, cfg.num_elts, LIMITS)
    compiled = sm.compile_backward(spec) if cfg.is_backward else sm.compile_forward(spec)
    assert compiled.kernel.local_bytes <= sm.SPILL_LIMIT
    # the choice is made on the frame sizes in the cubins (no GPU needed): the driver agrees
    from numba_norms.backends.numba import _cubin

    cc = tuple(cuda.get_current_device().compute_capability)
    build = sm._numba_build(spec)
    for mc, pf in sm._fallbacks(build.config):
        key, s, sig, bounds = sm._build_args(build, mc, pf)
        mod = _cubin.module(key, lambda s=s: sm._pyfunc(s, cc), sig, bounds, cc)
        assert mod.frame_bytes("kernel") == mod.kernel("kernel").local_bytes, (mc, pf)
