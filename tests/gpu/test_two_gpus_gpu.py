"""Calls on tensors of the second GPU while the first is current (one process driving several
GPUs, as a model split over devices does), both backends; needs two GPUs."""

from __future__ import annotations

import numpy as np
import pytest

import numba_norms as nn
from numba_norms import reference as ref
from tests.conftest import HAS_GPU, assert_close

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU"),
]
torch = pytest.importorskip("torch") if HAS_GPU else None


@pytest.fixture
def two_gpus():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
    torch.cuda.set_device(0)
    yield
    torch.cuda.set_device(0)


def N(t):
    return t.detach().float().cpu().numpy().astype(np.float64)


@pytest.mark.parametrize("cols", [1024, 65536])
def test_norms_on_the_second_gpu(backend, two_gpus, cols):
    rng = np.random.default_rng(cols)
    for rep in range(3):  # general path, then the fast path; a call on cuda:0 in between
        dev = "cuda:1" if rep != 1 else "cuda:0"
        x = torch.as_tensor(rng.standard_normal((37, cols)), dtype=torch.bfloat16, device=dev)
        g = torch.as_tensor(rng.standard_normal(cols) * 0.3 + 1, dtype=torch.bfloat16, device=dev)
        b = torch.as_tensor(rng.standard_normal(cols) * 0.1, dtype=torch.bfloat16, device=dev)
        y, mu, rs = nn.layernorm_fwd(x, g, b, 1e-5)
        assert nn.last_backend() == backend and y.device == x.device
        assert torch.cuda.current_device() == 0
        ey, emu, ers = ref.layernorm_fwd(N(x), N(g), N(b), 1e-5)
        assert_close(N(y), ey, "bf16", scale=2, what=f"y on {dev}")
        assert_close(N(rs), ers, "fp32", scale=50, what="rsigma")
        dy = torch.as_tensor(rng.standard_normal((37, cols)), dtype=torch.bfloat16, device=dev)
        dx, dg, db = nn.layernorm_bwd(dy, x, mu, rs, g)
        edx, edg, _ = ref.layernorm_bwd(N(dy), N(x), N(mu), N(rs), N(g))
        assert_close(N(dx), edx, "bf16", scale=4, what=f"dx on {dev}")
        assert_close(N(dg), edg, "bf16", scale=4 * np.sqrt(37), what="dgamma")
        yr, rsr = nn.rmsnorm_fwd(x, g, 1e-6)
        assert_close(N(yr), ref.rmsnorm_fwd(N(x), N(g), 1e-6)[0], "bf16", scale=2, what="rms y")
    torch.cuda.synchronize(1)


@pytest.mark.parametrize("sk", [1000, 131072])
def test_softmax_on_the_second_gpu(backend, two_gpus, sk):
    rng = np.random.default_rng(sk)
    for rep in range(3):
        dev = "cuda:1" if rep != 1 else "cuda:0"
        x = torch.as_tensor(rng.standard_normal((1, 2, 3, sk)) * 3, dtype=torch.float16).to(dev)
        y = nn.scaled_softmax_fwd(x, 0.8)
        assert nn.last_backend() == backend and y.device == x.device
        assert torch.cuda.current_device() == 0
        assert_close(N(y), ref.scaled_softmax(N(x), 0.8), "fp16", what=f"y on {dev}")
        dy = torch.as_tensor(rng.standard_normal(x.shape), dtype=torch.float16).to(dev)
        dx = nn.scaled_softmax_bwd(dy, y, 0.8)
        assert_close(N(dx), ref.softmax_bwd(N(dy), N(y), 0.8), "fp16", scale=4, what="dx")
    torch.cuda.synchronize(1)
