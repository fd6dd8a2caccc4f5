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
