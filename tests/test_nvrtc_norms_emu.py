"""Host emulation of the NVRTC norm forward (norms.cu).

The CUDA C is compiled with g++ against the CUDA stand-in of ``tests/test_nvrtc_softmax.py``
(one pthread per CUDA thread, real barriers for ``__syncthreads`` and the warp collectives, the
PTX of asm statements rewritten to C++) and run on the CPU: the kernels' slices, row loop
(several trips a CTA, the last past the rows), software pipeline, folded row addressing and
general (bounds-checked) columns, and the general kernel's rows of several CTAs (the exchange
through ``stats`` and the arrival counters) are checked against the float64 reference without a
GPU.
"""

from __future__ import annotations

import ctypes
import re
from pathlib import Path

import numpy as np
import pytest

from numba_norms import planner, registry
from numba_norms import reference as ref
from numba_norms.backends.nvrtc import _norms
from tests.test_nvrtc_softmax import (
    _EMU_BITS,
    _EMU_FILL,
    _EMU_MOCK,
    _EMU_NP,
    _ptr,
    emu_build,
    emu_workdir,
)

pytestmark = pytest.mark.slow

H200 = planner.DeviceLimits(sm_count=132)

# What norms.cu needs beyond softmax.cu's stand-in: float4, __shfl_sync, __ldg, rsqrtf, atomicMax.
_MOCK_MORE = r"""
struct alignas(16) float4 { float x, y, z, w; };
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
template <typename V> V __shfl_sync(unsigned, V v, int k) {
  Warp& w = my_warp(); unsigned l = threadIdx.x % 32; unsigned long long b = 0;
  std::memcpy(&b, &v, sizeof(V)); w.buf[l] = b; w.bar.arrive_and_wait();
  unsigned long long r = w.buf[k & 31]; w.bar.arrive_and_wait(); V out;
  std::memcpy(&out, &r, sizeof(V)); return out; }
template <typename T> T __ldg(const T* p) { return *p; }
inline float rsqrtf(float x) { return 1.f / std::sqrt(x); }
inline int atomicMax(int* p, int v) {
  int old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST,
                                                 __ATOMIC_SEQ_CST)) {}
  return old; }
"""

_MAIN = r"""
#include "mock.h"
#include "norms.cu"
extern "C" void run_fwd(int gy, int threads, const void* x, const void* g, const void* b,
    void* y, float* mu, float* rs, int rows, int cols, long long xs, long long ys, float eps) {
  emu_launch(dim3{1, (unsigned)gy, 1}, dim3{(unsigned)threads, 1, 1}, [&] {
    KERNEL((const TI*)x, (const TI*)g, (const TI*)b, (TI*)y, mu, rs, rows, cols, xs, ys, eps, 0,
           nullptr, nullptr, nullptr, nullptr, nullptr); });
}
// Rows of gx CTAs: the exchange's workspace and arrival counters as the launcher passes them.
extern "C" void run_fwd_multi(int gx, int gy, int threads, const void* x, const void* g,
    const void* b, void* y, float* mu, float* rs, int rows, int cols, long long xs, long long ys,
    float eps, float* stats, int* barrier) {
  emu_launch(dim3{(unsigned)gx, (unsigned)gy, 1}, dim3{(unsigned)threads, 1, 1}, [&] {
    KERNEL((const TI*)x, (const TI*)g, (const TI*)b, (TI*)y, mu, rs, rows, cols, xs, ys, eps, 0,
           stats, barrier, nullptr, nullptr, nullptr); });
}
"""


def _bracket_sizes(text: str) -> str:
    """Shared array sizes with a comparison in parentheses (the stand-in makes each array a
    template argument, where a bare ``>`` would end the list)."""
    return re.sub(
        r"(__shared__\s+\w+\s+\w+)\[([^\]]*[<>][^\]]*)\]", lambda m: f"{m[1]}[({m[2]})]", text
    )


@pytest.fixture(scope="module")
def emu_dir(tmp_path_factory):
    src = Path(_norms.__file__).resolve().parent
    files = {name: _bracket_sizes((src / name).read_text()) for name in ("norms.cuh", "norms.cu")}
    return emu_workdir(tmp_path_factory, "norms-emu", files, _MAIN, _EMU_MOCK + _MOCK_MORE)


def _lib(d: Path, expr: str) -> ctypes.CDLL:
    return emu_build(d, [f"KERNEL={expr}", f"TI={expr[expr.index('<') + 1 : expr.index(',')]}"])


# (op, dtype, warps_n, vectors a thread, rows, CTAs, prefetch, fold, cols): every case runs
# several trips a CTA, the last of some CTAs past the rows; cols None: the tuned row length
# (warps_n * 32 * vector * vectors), else a general kernel's bounds-checked row.
_CASES = [
    ("layernorm_fwd", "bf16", 2, 2, 13, 3, False, False, None),
    ("layernorm_fwd", "bf16", 2, 2, 13, 3, True, False, None),  # the next row loaded early
    ("layernorm_fwd", "fp32", 2, 2, 9, 4, True, False, None),
    ("rmsnorm_fwd", "fp16", 1, 3, 7, 2, False, False, None),  # one warp: it may leave early
    ("rmsnorm_fwd", "bf16", 2, 2, 10, 4, False, True, None),  # folded: one address a row
    ("layernorm_fwd", "bf16", 1, 4, 6, 2, False, False, 1000),  # general: a partial last pass
    # general, several warps a row (their counts through shared memory): 512 / 488 elements,
    # one warp empty (200 / 0), and 256 / 256 / 188 / 0
    ("layernorm_fwd", "bf16", 2, 2, 13, 3, False, False, 1000),
    ("layernorm_fwd", "bf16", 2, 2, 7, 2, False, False, 200),
    ("layernorm_fwd", "fp16", 4, 1, 9, 2, True, False, 700),
    ("rmsnorm_fwd", "fp32", 1, 2, 5, 2, True, False, 200),
]


def _id(c) -> str:
    op, dtype, wn, ldgs, rows, ctas, pf, fold, cols = c
    extra = ("-pf" if pf else "") + ("-fold" if fold else "") + (f"-g{cols}" if cols else "")
    return f"{op}-{dtype}-w{wn}-l{ldgs}-r{rows}x{ctas}{extra}"


@pytest.mark.parametrize("case", _CASES, ids=_id)
def test_emulated_forward(emu_dir, case):
    op, dtype, warps_n, ldgs, rows, ctas, prefetch, fold, general = case
    n = 16 // registry.itemsize(dtype)
    tile = warps_n * 32 * n * ldgs
    key = registry.NormKey(op, dtype, dtype, dtype)
    if general is None:
        cols = tile
        cfg = registry.NormConfig.tuned_for(
            key, cols, ctas_per_row=1, warps_m=1, warps_n=warps_n, origin="measured",
            prefetch=prefetch, fold=fold,
        )  # fmt: skip
    else:
        cols = general
        cfg = registry.NormConfig.general_for(
            key, tile, warps_m=1, warps_n=warps_n, bytes_per_ldg=16, origin="measured",
            prefetch=prefetch,
        )  # fmt: skip
    spec = planner.norm_spec(cfg, cols, n, H200)
    assert spec.ldgs == ldgs and spec.ctas_per_row == 1 and spec.general == (general is not None)
    lib = _lib(emu_dir, _norms.forward_name(spec))
    x, g, b, y, mu, rs, pitch = _inputs(dtype, rows, cols, n)
    lib.run_fwd(
        ctypes.c_int(ctas), ctypes.c_int(warps_n * 32),
        _ptr(x), _ptr(g), _ptr(b), _ptr(y), _ptr(mu), _ptr(rs),
        ctypes.c_int(rows), ctypes.c_int(cols), ctypes.c_longlong(pitch),
        ctypes.c_longlong(pitch), ctypes.c_float(1e-5),
    )  # fmt: skip
    _check(op, dtype, cols, x, g, b, y, mu, rs)


def _inputs(dtype: str, rows: int, cols: int, n: int):
    """Random rows 16-byte aligned but not contiguous, and outputs filled with canaries."""
    pitch = cols + 2 * n
    rng = np.random.default_rng(cols * rows)
    x = (rng.standard_normal((rows, pitch)) * 2 + 0.5).astype(_EMU_NP[dtype])
    g = (1 + 0.3 * rng.standard_normal(cols)).astype(_EMU_NP[dtype])
    b = (0.2 * rng.standard_normal(cols)).astype(_EMU_NP[dtype])
    y = np.full((rows, pitch), _EMU_FILL[dtype], _EMU_BITS[dtype])
    mu, rs = np.full(rows, np.nan, np.float32), np.full(rows, np.nan, np.float32)
    return x, g, b, y, mu, rs, pitch


def _check(op, dtype, cols, x, g, b, y, mu, rs) -> None:
    assert np.all(y[:, cols:] == _EMU_FILL[dtype]), "padding written"
    got = y.view(_EMU_NP[dtype])[:, :cols].astype(np.float64)
    if op == "layernorm_fwd":
        want, want_mu, want_rs = ref.layernorm_fwd(x[:, :cols], g, b, 1e-5)
        np.testing.assert_allclose(mu, want_mu, rtol=1e-5, atol=1e-6)
    else:
        want, want_rs = ref.rmsnorm_fwd(x[:, :cols], g, 1e-5)
    np.testing.assert_allclose(rs, want_rs, rtol=1e-5)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err < {"fp32": 1e-5, "fp16": 2e-3, "bf16": 1e-2}[dtype], err


# Rows of several CTAs: the general forward of several warps a row (the capped general entries'
# kernel: 1 x 4 warps a CTA, several CTAs a row), whose (mean, M2) parts merge across the CTAs
# through `stats` and the arrival counters. The stand-in runs every thread of the grid at once
# and has no clusters (`%cluster_nctarank` reads 1), so this is the counter path of a device
# without clusters (sm_90 launches rows of up to 8 CTAs as clusters instead).
# (op, dtype, warps_n, vectors a thread, min CTAs an SM, rows, row groups, prefetch, cols, CTAs a
# row); rows are never a multiple of the row groups: some CTAs run a trip past the last row.
_MULTI_CASES = [
    # warp elements 512 / 512 | 512 / 364: CTA 1's last warp ends inside its second vector
    ("layernorm_fwd", "bf16", 2, 2, 1, 7, 3, False, 1900, 2),
    # 512 / 512 | 420 / 256: CTA 1's last warp has no second vector
    ("layernorm_fwd", "bf16", 2, 2, 1, 5, 2, False, 1700, 2),
    ("layernorm_fwd", "fp32", 2, 2, 1, 7, 2, False, 700, 2),  # 256 / 188 | 128 / 128
    # 3 CTAs, the last with one warp of 252 elements and three empty ones
    ("layernorm_fwd", "fp16", 4, 1, 1, 5, 2, True, 2300, 3),
    ("rmsnorm_fwd", "bf16", 2, 2, 1, 7, 3, True, 1900, 2),
    # the capped bf16 entry's shape (4 warps, 8 CTAs an SM: x kept packed, weights re-read),
    # shorter: 3072 / 3072 / 2856 elements a CTA (the last warp 552)
    ("layernorm_fwd", "bf16", 4, 4, 8, 5, 2, False, 9000, 3),
]


def _multi_id(c) -> str:
    op, dtype, wn, ldgs, min_ctas, rows, gy, pf, cols, cpr = c
    return f"{op}-{dtype}-w{wn}-l{ldgs}-m{min_ctas}-r{rows}x{gy}{'-pf' if pf else ''}-{cpr}x{cols}"


@pytest.mark.parametrize("case", _MULTI_CASES, ids=_multi_id)
def test_emulated_forward_multi_cta(emu_dir, case):
    op, dtype, warps_n, ldgs, min_ctas, rows, gy, prefetch, cols, cpr = case
    n = 16 // registry.itemsize(dtype)
    key = registry.NormKey(op, dtype, dtype, dtype)
    cfg = registry.NormConfig.general_for(
        key, warps_n * 32 * n * ldgs, warps_m=1, warps_n=warps_n, bytes_per_ldg=16,
        origin="measured", min_ctas_per_sm=min_ctas, prefetch=prefetch,
    )  # fmt: skip
    spec = planner.norm_spec(cfg, cols, n, H200)
    assert spec.general and spec.ldgs == ldgs and spec.ctas_per_row == cpr > 1
    assert _norms.exchange(spec)
    # a device of exactly gy row groups, so that the planner sizes the scratch for this grid
    plan = planner.row_plan(spec, rows, cols, planner.DeviceLimits(sm_count=cpr * gy), 1)
    assert plan.grid == (cpr, gy, 1) and plan.cluster == 1 and plan.barrier_bytes == 4 * gy
    # NaN, not zeroed (the launcher zeroes only the counters): a read of a slot before its
    # store shows; the guard after the planner's size catches stores past it
    guard = 64
    stats = np.full(plan.stats_bytes // 4 + guard, np.nan, np.float32)
    barrier = np.zeros(plan.barrier_bytes // 4, np.int32)
    lib = _lib(emu_dir, _norms.forward_name(spec))
    x, g, b, y, mu, rs, pitch = _inputs(dtype, rows, cols, n)
    lib.run_fwd_multi(
        ctypes.c_int(cpr), ctypes.c_int(gy), ctypes.c_int(warps_n * 32),
        _ptr(x), _ptr(g), _ptr(b), _ptr(y), _ptr(mu), _ptr(rs),
        ctypes.c_int(rows), ctypes.c_int(cols), ctypes.c_longlong(pitch),
        ctypes.c_longlong(pitch), ctypes.c_float(1e-5), _ptr(stats), _ptr(barrier),
    )  # fmt: skip
    assert np.isnan(stats[-guard:]).all(), "stats written past the planner's size"
    # every CTA of a row group met at the barrier once a trip, the trips past the rows included
    assert np.all(barrier == plan.row_iterations * cpr), barrier
    _check(op, dtype, cols, x, g, b, y, mu, rs)
