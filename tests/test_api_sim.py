"""The public functions end to end on the Numba path under Numba's CUDA simulator.

Runs only with NUMBA_ENABLE_CUDASIM=1 (tests/run_cpu.sh's first pass): numpy in, numpy out, at
small sizes, against float64 references.
"""

from __future__ import annotations

import numpy as np
import pytest

import numba_norms as nn
from numba_norms import reference as ref
from numba_norms.registry import SOFTMAX_VARIANTS
from tests.conftest import (
    SIMULATOR,
    assert_close,
    check_huge_rows,
    check_non_finite_rows,
    huge_scores,
    non_finite_scores,
    softmax_of,
)

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="needs NUMBA_ENABLE_CUDASIM=1")

DTYPES = ["fp32", "fp16", "bf16"]


def rand(shape, dtype, rng, scale=1.0, shift=0.0):
    return (rng.standard_normal(shape) * scale + shift).astype(ref.NP[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows, cols", [(1, 7), (3, 33), (5, 100), (4, 256)])
@pytest.mark.parametrize("zero_centered", [False, True])
def test_layernorm_forward_and_backward(dtype, rows, cols, zero_centered):
    rng = np.random.default_rng(rows * 1000 + cols)
    x = rand((rows, cols), dtype, rng, 2.0, 0.5)
    g = rand(cols, dtype, rng, 0.5, 0.0 if zero_centered else 1.0)
    b = rand(cols, dtype, rng, 0.1)
    y, mu, rs = nn.layernorm_fwd(x, g, b, 1e-5, zero_centered_gamma=zero_centered)
    assert nn.last_backend() == "numba"
    assert isinstance(y, np.ndarray) and y.dtype == x.dtype and y.shape == x.shape
    assert mu.dtype == np.float32 and rs.dtype == np.float32 and mu.shape == (rows,)
    ey, emu, ers = ref.layernorm_fwd(x, g, b, 1e-5, zero_centered)
    assert_close(mu, emu, "fp32", scale=10, what="mu")
    assert_close(rs, ers, "fp32", scale=10, what="rsigma")
    assert_close(y, ey, dtype, scale=2, what="y")

    dy = rand((rows, cols), dtype, rng)
    dx, dg, db = nn.layernorm_bwd(dy, x, mu, rs, g, zero_centered_gamma=zero_centered)
    edx, edg, edb = ref.layernorm_bwd(dy, x, mu, rs, g, zero_centered)
    assert dx.dtype == x.dtype and dg.dtype == g.dtype and db.dtype == g.dtype
    assert_close(dx, edx, dtype, scale=4, what="dx")
    assert_close(dg, edg, dtype, scale=4 * rows, what="dgamma")
    assert_close(db, edb, dtype, scale=4 * rows, what="dbeta")


@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
def test_largest_eps(op):
    """eps = FLT_MAX is taken as is (just above it is refused: inf in the kernels' fp32)."""
    rng = np.random.default_rng(41)
    x, g, b = rand((3, 40), "fp32", rng, 3.0), rand(40, "fp32", rng), rand(40, "fp32", rng)
    eps = float(np.finfo(np.float32).max)
    if op == "layernorm":
        y, mu, rs = nn.layernorm_fwd(x, g, b, eps)
        ey, _, ers = ref.layernorm_fwd(x, g, b, eps)
    else:
        y, rs = nn.rmsnorm_fwd(x, g, eps)
        ey, ers = ref.rmsnorm_fwd(x, g, eps)
    assert np.all(rs > 0) and np.all(np.isfinite(y))
    assert_close(rs, ers, "fp32", scale=10, what="rsigma")
    assert_close(y, ey, "fp32", scale=2, what="y")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows, cols", [(1, 7), (3, 33), (5, 100)])
@pytest.mark.parametrize("with_add", [False, True])
def test_rmsnorm_forward_and_backward(dtype, rows, cols, with_add):
    rng = np.random.default_rng(rows * 7 + cols)
    x = rand((rows, cols), dtype, rng, 1.5)
    g = rand(cols, dtype, rng, 0.2, 1.0)
    y, rs = nn.rmsnorm_fwd(x, g, 1e-6)
    ey, ers = ref.rmsnorm_fwd(x, g, 1e-6)
    assert_close(rs, ers, "fp32", scale=10, what="rsigma")
    assert_close(y, ey, dtype, scale=2, what="y")
    dy = rand((rows, cols), dtype, rng)
    add = rand((rows, cols), dtype, rng) if with_add else None
    dx, dg = nn.rmsnorm_bwd(dy, x, rs, g, add=add)
    edx, edg = ref.rmsnorm_bwd(dy, x, rs, g, add=add)
    assert_close(dx, edx, dtype, scale=4, what="dx")
    assert_close(dg, edg, dtype, scale=4 * rows, what="dgamma")


def test_zero_centered_rmsnorm_and_leading_dims():
    rng = np.random.default_rng(3)
    x = rand((2, 3, 40), "fp32", rng)
    g = rand(40, "fp32", rng, 0.1)
    y, rs = nn.rmsnorm_fwd(x, g, 1e-5, zero_centered_gamma=True)
    ey, ers = ref.rmsnorm_fwd(x.reshape(6, 40), g, 1e-5, True)
    assert y.shape == (2, 3, 40) and rs.shape == (6,)
    assert_close(y.reshape(6, 40), ey, "fp32", scale=2)


def test_mixed_dtypes_fp32_in_bf16_out_and_fp32_x_bf16_grad():
    rng = np.random.default_rng(4)
    x = rand((4, 64), "fp32", rng)
    g = rand(64, "fp32", rng, 0.3, 1.0)
    b = rand(64, "fp32", rng, 0.1)
    y, mu, rs = nn.layernorm_fwd(x, g, b, out_dtype="bf16")
    assert y.dtype == ref.NP["bf16"]
    assert_close(y, ref.layernorm_fwd(x, g, b, 1e-5)[0], "bf16")
    gb = g.astype(ref.NP["bf16"])
    dy = rand((4, 64), "bf16", rng)
    dx, dg, db = nn.layernorm_bwd(dy, x, mu, rs, gb)
    assert dx.dtype == np.float32 and dg.dtype == ref.NP["bf16"]
    edx, edg, _ = ref.layernorm_bwd(dy, x, mu, rs, gb)
    assert_close(dx, edx, "fp32", scale=10)
    assert_close(dg, edg, "bf16", scale=4)


def test_row_strided_view():
    rng = np.random.default_rng(5)
    base = rand((6, 96), "fp32", rng)
    x = base[::2, :64]
    g = rand(64, "fp32", rng, 0.2, 1.0)
    b = rand(64, "fp32", rng)
    y, _, _ = nn.layernorm_fwd(x, g, b)
    assert_close(y, ref.layernorm_fwd(x, g, b, 1e-5)[0], "fp32", scale=2)


def test_zero_rows_give_empty_outputs_and_zero_gradients():
    g = np.ones(16, np.float32)
    x = np.zeros((0, 16), np.float32)
    y, mu, rs = nn.layernorm_fwd(x, g, g)
    assert y.shape == (0, 16) and mu.shape == (0,) and rs.shape == (0,)
    dx, dg, db = nn.layernorm_bwd(x, x, mu, rs, g)
    assert dx.shape == (0, 16)
    np.testing.assert_array_equal(dg, np.zeros(16, np.float32))
    np.testing.assert_array_equal(db, np.zeros(16, np.float32))


# ----- softmax ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sk", [1, 7, 33, 100])
def test_scaled_softmax(dtype, sk):
    rng = np.random.default_rng(sk)
    x = rand((2, 3, 5, sk), dtype, rng, 2.0)
    y = nn.scaled_softmax_fwd(x, 0.7)
    assert y.dtype == x.dtype and y.shape == x.shape
    assert_close(y, ref.scaled_softmax(x, 0.7), dtype, what="y")
    dy = rand(x.shape, dtype, rng)
    dx = nn.scaled_softmax_bwd(dy, y, 0.7)
    assert_close(dx, ref.softmax_bwd(dy, y, 0.7), dtype, scale=4, what="dx")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mask_batch", [1, 2])
def test_scaled_masked_softmax_with_fully_masked_rows(dtype, mask_batch):
    rng = np.random.default_rng(11)
    x = rand((2, 3, 5, 37), dtype, rng)
    mask = rng.random((mask_batch, 1, 5, 37)) < 0.3
    mask[0, 0, 2, :] = True  # one fully masked row
    y = nn.scaled_masked_softmax_fwd(x, mask, 1.3)
    expected = ref.scaled_masked_softmax(x, mask, 1.3)
    assert_close(y, expected, dtype, what="y")
    assert not np.asarray(y, np.float64)[0, :, 2, :].any()
    y8 = nn.scaled_masked_softmax_fwd(x, mask.astype(np.uint8), 1.3)
    np.testing.assert_array_equal(np.asarray(y8, np.float64), np.asarray(y, np.float64))
    dy = rand(x.shape, dtype, rng)
    assert_close(
        nn.scaled_masked_softmax_bwd(dy, y, 1.3), ref.softmax_bwd(dy, y, 1.3), dtype, scale=4
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("variant", SOFTMAX_VARIANTS)
def test_rows_with_non_finite_scores(dtype, variant):
    """NaN / +inf / all -inf rows give NaN at their kept positions (tests/conftest.py)."""
    x, mask = non_finite_scores(12, dtype, np.random.default_rng(13))
    y = softmax_of(nn, variant, x, mask, 0.9)
    check_non_finite_rows(variant, y, softmax_of(ref, variant, x, mask, 0.9), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("variant", SOFTMAX_VARIANTS)
def test_rows_of_huge_scores(dtype, variant):
    """Scores near the dtype's limits (a row of finfo.min padding, finfo.max, -1e9, 1000 plus
    noise) give TE's finite rows (tests/conftest.py); the first came out NaN while the kernels
    scaled every score by scale * log2(e) on load (e8b3b8b)."""
    x, mask = huge_scores(12, 12, dtype, np.random.default_rng(14))
    y = softmax_of(nn, variant, x, mask, 1.0)
    check_huge_rows(variant, y, softmax_of(ref, variant, x, mask, 1.0), dtype)
    assert np.asarray(y, np.float64)[..., 2, 0].item() == 1.0  # finfo.max wins outright
    # fp32's largest scale is taken (it was refused beyond FLT_MAX / log2(e))
    ones = np.ones((1, 1, 12, 12), ref.NP[dtype])
    big = float(np.finfo(np.float32).max)
    check_huge_rows(variant, softmax_of(nn, variant, ones, mask, big),
                    softmax_of(ref, variant, ones, mask, big), dtype)  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
def test_upper_triangular_softmax(dtype):
    rng = np.random.default_rng(12)
    x = rand((3, 9, 9), dtype, rng)
    y = nn.scaled_upper_triang_masked_softmax_fwd(x, 0.5)
    assert_close(y, ref.scaled_upper_triang_softmax(x, 0.5), dtype)
    upper = np.triu(np.ones((9, 9), bool), 1)
    assert (np.asarray(y, np.float64)[:, upper] == 0).all()
    dy = rand(x.shape, dtype, rng)
    dx = nn.scaled_upper_triang_masked_softmax_bwd(dy, y, 0.5)
    assert_close(dx, ref.softmax_bwd(dy, y, 0.5), dtype, scale=4)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sq, sk", [(5, 9), (9, 5), (4, 4)])
def test_aligned_causal_softmax(dtype, sq, sk):
    rng = np.random.default_rng(sq * 10 + sk)
    x = rand((1, 2, sq, sk), dtype, rng)
    y = nn.scaled_aligned_causal_masked_softmax_fwd(x, 1.0)
    expected = ref.scaled_aligned_causal_softmax(x, 1.0)
    assert_close(y, expected, dtype)
    keep = ref.causal_keep(sq, sk)
    assert (np.asarray(y, np.float64)[..., ~keep] == 0).all()
    dy = rand(x.shape, dtype, rng)
    dx = nn.scaled_aligned_causal_masked_softmax_bwd(dy, y, 1.0)
    assert_close(dx, ref.softmax_bwd(dy, y, 1.0), dtype, scale=4)
