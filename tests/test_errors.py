"""Bad inputs raise clear errors that name the argument (simulator pass: numpy inputs)."""

from __future__ import annotations

import numpy as np
import pytest

import numba_norms as nn
from tests.conftest import SIMULATOR

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="needs NUMBA_ENABLE_CUDASIM=1")

F32 = np.float32


def ones(*shape, dtype=F32):
    return np.ones(shape, dtype)


def _overlapping_rows(rows: int, cols: int, pitch: int) -> np.ndarray:
    """A [rows, cols] fp32 view whose rows start ``pitch`` (< cols) elements apart."""
    buf = np.zeros((rows - 1) * pitch + cols, F32)
    return np.lib.stride_tricks.as_strided(buf, (rows, cols), (pitch * 4, 4))


class _HostDLPack:
    """A DLPack exporter of a CPU array that is not numpy (as a JAX or array-API CPU array)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


class _CudaArrayInterface:
    """A CUDA Array Interface exporter (as a JAX or PyCUDA array), over host memory here."""

    def __init__(self, a):
        self.a = a

    @property
    def __cuda_array_interface__(self):
        a = self.a
        return {"shape": a.shape, "typestr": a.dtype.str, "data": (a.ctypes.data, False),
                "strides": None, "version": 3}  # fmt: skip


def _fp8_aliased(first: str, second: str):
    """An FP8 forward given one array as both ``first`` and ``second`` (of scale, amax and
    scale_inv)."""
    one = np.ones(1, F32)
    kw = {"scale": np.ones(1, F32), "amax": np.zeros(1, F32), "scale_inv": np.zeros(1, F32)}
    kw[first] = kw[second] = one
    return nn.layernorm_fwd(ones(4, 8), ones(8), ones(8), out_dtype="fp8e4m3", **kw)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: nn.layernorm_fwd(ones(4, 8, dtype=np.int64), ones(8), ones(8)), TypeError, "x:"),
        (lambda: nn.layernorm_fwd(ones(4, 8), ones(9), ones(9)), ValueError, "gamma"),
        (lambda: nn.layernorm_fwd(ones(4, 8), ones(8), ones(7)), ValueError, "beta"),
        (
            lambda: nn.layernorm_fwd(ones(4, 8), ones(8), ones(8, dtype=np.float16)),
            TypeError,
            "beta",
        ),
        (lambda: nn.layernorm_fwd(ones(4, 0), ones(0), ones(0)), ValueError, "hidden size"),
        (lambda: nn.layernorm_fwd(ones(4, 8), ones(8), ones(8), -1.0), ValueError, "eps"),
        (lambda: nn.layernorm_fwd(ones(4, 16)[:, ::2], ones(8), ones(8)), ValueError, "x:"),
        (lambda: nn.layernorm_fwd([[1.0, 2.0]], ones(2), ones(2)), TypeError, "x"),
        (
            lambda: nn.layernorm_fwd(
                ones(4, 8, dtype=np.float16),
                ones(8, dtype=np.float16),
                ones(8, dtype=np.float16),
                out_dtype="bf16",
            ),
            TypeError,
            "supported",
        ),
        (
            lambda: nn.layernorm_fwd(
                ones(4, 8, dtype=np.float16), ones(8, dtype=np.float32), ones(8)
            ),
            TypeError,
            "supported",
        ),
        (lambda: nn.rmsnorm_fwd(ones(4, 8), ones(8), out_dtype="int8"), TypeError, "dtype"),
        (
            lambda: nn.layernorm_bwd(ones(4, 9), ones(4, 8), ones(4), ones(4), ones(8)),
            ValueError,
            "dy",
        ),
        (
            lambda: nn.layernorm_bwd(ones(4, 8), ones(4, 8), ones(3), ones(4), ones(8)),
            ValueError,
            "mu",
        ),
        (  # the right count in a shape no forward returns
            lambda: nn.layernorm_bwd(ones(4, 8), ones(4, 8), ones(2, 2), ones(4), ones(8)),
            ValueError,
            r"mu: expected one value per row of x, shape \(4,\) or \(4, 1\); got \(2, 2\)$",
        ),
        (
            lambda: nn.rmsnorm_bwd(ones(2, 3, 8), ones(2, 3, 8), ones(3, 2), ones(8)),
            ValueError,
            r"rsigma: expected one value per row of x, shape \(6,\), \(2, 3\) or \(2, 3, 1\)",
        ),
        (
            lambda: nn.rmsnorm_bwd(ones(4, 8), ones(4, 8), ones(4), ones(8), add=ones(4, 7)),
            ValueError,
            "add",
        ),
        (lambda: nn.scaled_softmax_fwd(ones(4, 8), 1.0), ValueError, "x"),
        (lambda: nn.scaled_softmax_fwd(ones(1, 1, 4, 8), float("nan")), ValueError, "scale"),
        (
            lambda: nn.scaled_upper_triang_masked_softmax_fwd(ones(2, 4, 5), 1.0),
            ValueError,
            "square",
        ),
        (
            lambda: nn.scaled_masked_softmax_fwd(
                ones(2, 2, 4, 8), ones(2, 2, 4, 8, dtype=bool), 1.0
            ),
            ValueError,
            "mask",
        ),
        (
            lambda: nn.scaled_masked_softmax_fwd(
                ones(2, 2, 4, 8), ones(3, 1, 4, 8, dtype=bool), 1.0
            ),
            ValueError,
            "mask",
        ),
        (
            lambda: nn.scaled_masked_softmax_fwd(ones(2, 2, 4, 8), ones(1, 1, 4, 8), 1.0),
            TypeError,
            "mask",
        ),
        (
            lambda: nn.scaled_softmax_bwd(ones(1, 1, 4, 8), ones(1, 1, 4, 7), 1.0),
            ValueError,
            "dy",
        ),
        (lambda: nn.layernorm_fwd(ones(4, 8), ones(8), ones(8), stream="s"), TypeError, "stream"),
        # the kernels read gamma, beta, mu and rsigma from their base pointer: views refused
        (lambda: nn.layernorm_fwd(ones(4, 8), ones(16)[::2], ones(8)), ValueError, "gamma:"),
        (
            lambda: nn.layernorm_fwd(ones(4, 8), ones(8), np.broadcast_to(F32(0), (8,))),
            ValueError,
            "beta: expected contiguous",
        ),
        (
            lambda: nn.layernorm_bwd(ones(4, 8), ones(4, 8), ones(8)[::2], ones(4), ones(8)),
            ValueError,
            "mu: expected contiguous",
        ),
        (
            lambda: nn.rmsnorm_bwd(ones(4, 8), ones(4, 8), ones(4, 2)[:, 0], ones(8)),
            ValueError,
            "rsigma: expected contiguous",
        ),
        (lambda: nn.rmsnorm_fwd(ones(4, 8), ones(8), "1e-5"), TypeError, "eps"),
        (lambda: nn.rmsnorm_fwd(ones(4, 8), ones(8), True), TypeError, "eps"),
        (
            lambda: nn.rmsnorm_fwd(ones(4, 8), ones(8), zero_centered_gamma="False"),
            TypeError,
            "zero_centered_gamma",
        ),
        (
            lambda: nn.rmsnorm_bwd(
                ones(4, 8), ones(4, 8), ones(4), ones(8), zero_centered_gamma="1"
            ),
            TypeError,
            "zero_centered_gamma",
        ),
        (lambda: nn.scaled_softmax_fwd(ones(1, 1, 4, 8), "2"), TypeError, "scale"),
        (
            lambda: nn.scaled_softmax_bwd(ones(1, 1, 4, 8), ones(1, 1, 4, 8), True),
            TypeError,
            "scale",
        ),
        (lambda: nn.scaled_softmax_fwd(ones(1, 1, 4, 8), 3.41e38), ValueError, "scale"),
        (lambda: nn.scaled_softmax_fwd(ones(1, 1, 4, 8), -1e39), ValueError, "scale"),
        (
            lambda: nn.scaled_upper_triang_masked_softmax_bwd(ones(2, 4, 5), ones(2, 4, 5), 1.0),
            ValueError,
            "square",
        ),
        (
            lambda: nn.rmsnorm_fwd(ones(4, 8), ones(8), out=(_overlapping_rows(4, 8, 4), None)),
            ValueError,
            "rows overlap",
        ),
        (
            lambda: nn.scaled_softmax_fwd(
                ones(1, 1, 4, 8), 1.0, out=_overlapping_rows(4, 8, 0).reshape(1, 1, 4, 8)
            ),
            ValueError,
            "rows overlap",
        ),
        (lambda: _fp8_aliased("amax", "scale"), ValueError, "amax: shares memory with scale"),
        (lambda: _fp8_aliased("amax", "scale_inv"), ValueError, "amax: shares memory"),
        (lambda: nn.rmsnorm_fwd(ones(4, 8).astype(">f4"), ones(8)), TypeError, "byte order"),
        # session 38's input fuzz (helper repros): each gave another exception type, a
        # message not naming the argument, or was taken silently
        (lambda: nn.rmsnorm_fwd(ones(4, 8), ones(8), 10**400), ValueError, "^eps: .*finite"),
        # session 41's docs check: an eps above FLT_MAX was inf in the kernels (y = beta)
        (lambda: nn.layernorm_fwd(ones(4, 8), ones(8), ones(8), 1e39), ValueError, "^eps: .*fp32"),
        (lambda: nn.scaled_softmax_fwd(ones(1, 1, 4, 8), 10**400), ValueError, "^scale: "),
        (lambda: nn.rmsnorm_fwd(ones(4, 8), ones(8), np.array("0.5")), TypeError, "^eps: "),
        (lambda: nn.rmsnorm_fwd(ones(4, 8), ones(8), np.array(True)), TypeError, "^eps: "),
        (lambda: nn.scaled_softmax_fwd(ones(1, 1, 4, 8), np.complex128(1)), TypeError, "^scale"),
        (lambda: nn.rmsnorm_fwd(ones(4, 8), ones(8), out_dtype=5), TypeError, "^out_dtype: "),
        (
            lambda: nn.rmsnorm_fwd(ones(4, 8), ones(8), zero_centered_gamma=[False]),
            TypeError,
            "^zero_centered_gamma: expected a bool",
        ),
        (
            lambda: nn.rmsnorm_fwd(ones(4, 8), ones(8), zero_centered_gamma=None),
            TypeError,
            "^zero_centered_gamma: ",
        ),
        (
            lambda: nn.rmsnorm_fwd(ones(4, 8), _HostDLPack(ones(8))),
            ValueError,
            "^gamma: _HostDLPack array is in host memory",
        ),
        (  # a device array the simulator cannot see (needs the driver to be read)
            lambda: nn.scaled_softmax_fwd(_CudaArrayInterface(ones(1, 1, 4, 8)), 1.0),
            TypeError,
            "^x: _CudaArrayInterface device arrays cannot be used under the CUDA simulator",
        ),
        (
            lambda: nn.rmsnorm_fwd(ones(4, 8), ones(8), out=(np.zeros((4, 8)), None)),
            TypeError,
            r"^out\[0\] \(y\): expected dtype fp32; got float64",
        ),
        (
            lambda: nn.scaled_masked_softmax_fwd(ones(1, 2, 4, 8), np.zeros((1, 1, 4, 7), bool), 1),
            ValueError,
            r"^mask: expected shape \[1, 1, 4, 8\]",
        ),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_unsupported_combination_message_lists_combinations():
    with pytest.raises(TypeError) as info:
        nn.layernorm_fwd(ones(4, 8, dtype=np.float16), ones(8), ones(8))
    text = str(info.value)
    assert "fp16/fp16/fp16" in text and "bf16/bf16/bf16" in text


@pytest.mark.parametrize(
    "call",
    [
        lambda: nn.rmsnorm_fwd(ones(8, 8), ones(8)),
        lambda: nn.layernorm_bwd(ones(8, 8), ones(8, 8), ones(8), ones(8), ones(8)),
        lambda: nn.scaled_softmax_fwd(ones(1, 2, 4, 8), 1.0),
        lambda: nn.scaled_upper_triang_masked_softmax_bwd(ones(2, 4, 4), ones(2, 4, 4), 1.0),
    ],
)
def test_more_rows_than_the_kernels_index_are_refused(monkeypatch, call):
    """The kernels count rows in 32-bit ints (a call may have at most planner.MAX_ROWS rows,
    2**30): checked before anything is allocated, here with the limit lowered to 4."""
    from numba_norms import planner

    monkeypatch.setattr(planner, "MAX_ROWS", 4)
    with pytest.raises(ValueError, match="8 rows; the kernels take at most 4"):
        call()


@pytest.mark.parametrize("shape", [(6,), (2, 3), (2, 3, 1)])
def test_row_statistics_in_any_row_shape(shape):
    """mu / rsigma as the forward returns them, in x's leading shape, or with torch's trailing
    1 (native_layer_norm) give the same gradients."""
    rng = np.random.default_rng(3)
    x, dy = rng.standard_normal((2, 2, 3, 8)).astype(F32)
    g = rng.standard_normal(8).astype(F32)
    _, mu, rs = nn.layernorm_fwd(x, g, g, 1e-5)
    want = nn.layernorm_bwd(dy, x, mu, rs, g)
    got = nn.layernorm_bwd(dy, x, mu.reshape(shape), rs.reshape(shape), g)
    for w, v in zip(want, got):
        np.testing.assert_array_equal(v, w)
