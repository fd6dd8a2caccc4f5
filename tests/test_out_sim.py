"""Caller-provided outputs (``out=``) under the CUDA simulator: numbers and errors.

The calls must write into the given arrays (and return them), leave everything outside the
addressed elements alone (padded rows), allocate the entries given as None, and reject outputs
of the wrong dtype, shape or layout and outputs that share memory with another argument.
"""

from __future__ import annotations

import numpy as np
import pytest

import numba_norms as nn
from numba_norms import reference as ref
from tests.conftest import SIMULATOR, assert_close

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="needs NUMBA_ENABLE_CUDASIM=1")

SENTINEL = 7.5


def rand(shape, dtype, rng, scale=1.0, shift=0.0):
    return (rng.standard_normal(shape) * scale + shift).astype(ref.NP[dtype])


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_layernorm_writes_into_given_arrays_and_padding_stays(dtype):
    rng = np.random.default_rng(11)
    rows, cols = 5, 40
    x = rand((rows, cols), dtype, rng, 2.0, 0.5)
    g = rand(cols, dtype, rng, 0.5, 1.0)
    b = rand(cols, dtype, rng, 0.1)
    y_base = np.full((rows, cols + 8), SENTINEL, ref.NP[dtype])
    y = y_base[:, :cols]  # rows padded by 8 elements
    mu = np.full(rows, SENTINEL, np.float32)
    rs = np.full(rows, SENTINEL, np.float32)
    outs = nn.layernorm_fwd(x, g, b, 1e-5, out=(y, mu, rs))
    assert outs[0] is y and outs[1] is mu and outs[2] is rs
    ey, emu, ers = ref.layernorm_fwd(x, g, b, 1e-5)
    assert_close(mu, emu, "fp32", scale=10, what="mu")
    assert_close(rs, ers, "fp32", scale=10, what="rsigma")
    assert_close(y, ey, dtype, scale=2, what="y")
    assert np.all(y_base[:, cols:].astype(np.float32) == SENTINEL)

    dy = rand((rows, cols), dtype, rng)
    dx = np.full((rows, cols), SENTINEL, ref.NP[dtype])
    dbeta = np.full(cols, SENTINEL, ref.NP[dtype])
    got = nn.layernorm_bwd(dy, x, mu, rs, g, out=(dx, None, dbeta))  # dgamma allocated
    assert got[0] is dx and got[2] is dbeta and got[1].shape == (cols,)
    edx, edg, edb = ref.layernorm_bwd(dy, x, mu, rs, g)
    assert_close(dx, edx, dtype, scale=4, what="dx")
    assert_close(got[1], edg, dtype, scale=4 * rows, what="dgamma")
    assert_close(dbeta, edb, dtype, scale=4 * rows, what="dbeta")


def test_rmsnorm_into_device_arrays_with_leading_dims():
    from numba import cuda

    rng = np.random.default_rng(12)
    x = rand((2, 3, 24), "fp32", rng, 1.5)
    g = rand(24, "fp32", rng, 0.2, 1.0)
    y_d = cuda.to_device(np.full(x.shape, SENTINEL, np.float32))
    rs_d = cuda.to_device(np.full(6, SENTINEL, np.float32))
    y, rs = nn.rmsnorm_fwd(cuda.to_device(x), cuda.to_device(g), 1e-6, out=(y_d, rs_d))
    assert y is y_d and rs is rs_d
    ey, ers = ref.rmsnorm_fwd(x.reshape(6, 24), g, 1e-6)
    assert_close(rs_d.copy_to_host(), ers, "fp32", scale=10, what="rsigma")
    assert_close(y_d.copy_to_host().reshape(6, 24), ey, "fp32", scale=2, what="y")

    dy = rand(x.shape, "fp32", rng)
    dx_d = cuda.to_device(np.zeros(x.shape, np.float32))
    dg_d = cuda.to_device(np.zeros(24, np.float32))
    dx, dg = nn.rmsnorm_bwd(
        cuda.to_device(dy), cuda.to_device(x), rs_d, cuda.to_device(g), out=[dx_d, dg_d]
    )
    assert dx is dx_d and dg is dg_d
    edx, edg = ref.rmsnorm_bwd(dy.reshape(6, 24), x.reshape(6, 24), ers, g)
    assert_close(dx_d.copy_to_host().reshape(6, 24), edx, "fp32", scale=4, what="dx")
    assert_close(dg_d.copy_to_host(), edg, "fp32", scale=4 * 6, what="dgamma")


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_softmax_forward_and_backward_into_given_arrays(dtype):
    rng = np.random.default_rng(13)
    x = rand((2, 2, 3, 20), dtype, rng, 2.0)
    y = np.full(x.shape, SENTINEL, ref.NP[dtype])
    assert nn.scaled_softmax_fwd(x, 0.7, out=y) is y
    assert_close(y, ref.scaled_softmax(x, 0.7), dtype, what="y")
    dy = rand(x.shape, dtype, rng)
    dx = np.full(x.shape, SENTINEL, ref.NP[dtype])
    assert nn.scaled_softmax_bwd(dy, y, 0.7, out=dx) is dx
    assert_close(dx, ref.softmax_bwd(dy, y, 0.7), dtype, scale=4, what="dx")

    c = rand((4, 6, 6), dtype, rng)
    yc = np.full(c.shape, SENTINEL, ref.NP[dtype])
    assert nn.scaled_upper_triang_masked_softmax_fwd(c, 1.0, out=yc) is yc
    assert_close(yc, ref.scaled_upper_triang_softmax(c, 1.0), dtype, what="causal y")


F32 = np.float32


def ones(*shape, dtype=F32):
    return np.ones(shape, dtype)


def _overlapping_y():
    x = ones(4, 8)
    return nn.layernorm_fwd(x, ones(8), ones(8), out=(x, None, None))


def _shared_stats():
    s = ones(4)
    return nn.layernorm_fwd(ones(4, 8), ones(8), ones(8), out=(None, s, s))


def _stats_in_view_of_y():
    y = ones(4, 8)
    return nn.rmsnorm_fwd(ones(4, 8), ones(8), out=(y, y[3, :4]))


def _device_out_for_host_inputs():
    from numba import cuda

    y = cuda.device_array((4, 8), np.float32)
    return nn.rmsnorm_fwd(ones(4, 8), ones(8), out=(y, None))


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: nn.rmsnorm_fwd(ones(4, 8), ones(8), out=ones(4, 8)), TypeError, "out: expected"),
        (
            lambda: nn.layernorm_fwd(ones(4, 8), ones(8), ones(8), out=(ones(4, 8), ones(4))),
            TypeError,
            "tuple of 3",
        ),
        (
            lambda: nn.rmsnorm_fwd(ones(4, 8), ones(8), out=(ones(4, 8, dtype=np.float16), None)),
            TypeError,
            r"out\[0\] \(y\): expected dtype fp32",
        ),
        (
            lambda: nn.rmsnorm_fwd(ones(4, 8), ones(8), out=(ones(4, 9), None)),
            ValueError,
            r"out\[0\] \(y\): expected shape \(4, 8\)",
        ),
        (
            lambda: nn.rmsnorm_fwd(ones(4, 8), ones(8), out=(None, ones(8)[::2])),
            ValueError,
            r"out\[1\] \(rsigma\): innermost dimension must be contiguous",
        ),
        (
            lambda: nn.rmsnorm_fwd(ones(4, 8), ones(8), out=(ones(4, 16)[:, ::2], None)),
            ValueError,
            "innermost dimension",
        ),
        (_overlapping_y, ValueError, r"out\[0\] \(y\): shares memory with x"),
        (_shared_stats, ValueError, r"out\[1\] \(mu\): shares memory with out\[2\]"),
        (_stats_in_view_of_y, ValueError, "shares memory"),
        (_device_out_for_host_inputs, ValueError, "host"),
        (
            lambda: nn.layernorm_bwd(
                ones(4, 8), ones(4, 8), ones(4), ones(4), ones(8), out=(None, ones(8), ones(9))
            ),
            ValueError,
            r"out\[2\] \(dbeta\): expected shape \(8,\)",
        ),
        (
            lambda: nn.scaled_softmax_fwd(ones(1, 1, 2, 8), 1.0, out=ones(1, 1, 2, 7)),
            ValueError,
            r"out \(y\): expected shape",
        ),
        (
            lambda: nn.scaled_softmax_fwd(ones(1, 1, 2, 8), 1.0, out=(ones(1, 1, 2, 8),)),
            TypeError,
            r"out \(y\)",
        ),
    ],
)
def test_bad_outputs_raise_naming_the_output(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_softmax_backward_in_place_over_dy_is_refused():
    dy, y = ones(1, 1, 2, 8), ones(1, 1, 2, 8)
    with pytest.raises(ValueError, match=r"out \(dx\): shares memory with dy"):
        nn.scaled_softmax_bwd(dy, y, 1.0, out=dy)


def test_interleaved_views_of_one_buffer_share_no_memory():
    """y beside x in the same rows of one buffer: the address ranges overlap, no element is
    shared; numpy's exact test lets it through, and the columns of x stay as they were."""
    rng = np.random.default_rng(7)
    buf = rand((4, 32), "fp32", rng)
    x, y = buf[:, :16], buf[:, 16:]
    g, b = rand((16,), "fp32", rng), rand((16,), "fp32", rng)
    x_before = x.copy()
    got = nn.layernorm_fwd(x, g, b, out=(y, None, None))
    assert got[0] is y
    np.testing.assert_array_equal(buf[:, :16], x_before)
    assert_close(y, ref.layernorm_fwd(x_before, g, b, 1e-5)[0], "fp32", what="y")
