"""The fused softmax family through the public API on a GPU, both backends (torch inputs)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import numba_norms as nn
from numba_norms import reference as ref
from numba_norms.registry import SOFTMAX_VARIANTS
from tests.conftest import (
    HAS_GPU,
    assert_close,
    check_huge_rows,
    check_non_finite_rows,
    huge_scores,
    non_finite_scores,
    softmax_of,
)

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU"),
]
torch = pytest.importorskip("torch") if HAS_GPU else None

TORCH = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
DTYPES = ["fp32", "fp16", "bf16"]
KEYS = [1, 7, 32, 128, 1000, 2048, 4097, 16384, 32768, 131072]


def T(a, dtype):
    return torch.as_tensor(np.asarray(a, np.float32)).to("cuda", getattr(torch, TORCH[dtype]))


def N(t):
    return t.detach().float().cpu().numpy().astype(np.float64)


def shape_for(sk):
    # Keep the element count moderate for long rows; odd b, h, sq throughout.
    if sk >= 16384:
        return (1, 3, 3, sk)
    return (3, 5, 7, sk)


@pytest.mark.parametrize("sk", KEYS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_scaled_softmax(backend, sk, dtype):
    rng = np.random.default_rng(sk)
    x = T(rng.standard_normal(shape_for(sk)) * 3, dtype)
    y = nn.scaled_softmax_fwd(x, 0.8)
    assert nn.last_backend() == backend and y.dtype == x.dtype
    assert_close(N(y), ref.scaled_softmax(N(x), 0.8), dtype, what="y")
    dy = T(rng.standard_normal(x.shape), dtype)
    dx = nn.scaled_softmax_bwd(dy, y, 0.8)
    assert_close(N(dx), ref.softmax_bwd(N(dy), N(y), 0.8), dtype, scale=4, what="dx")


@pytest.mark.parametrize("sk", KEYS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_scaled_masked_softmax(backend, sk, dtype):
    rng = np.random.default_rng(sk + 1)
    b, h, sq, _ = shape_for(sk)
    x = T(rng.standard_normal((b, h, sq, sk)), dtype)
    for mb in (1, b):
        m = rng.random((mb, 1, sq, sk)) < 0.25
        m[0, 0, sq - 1, :] = True  # a fully masked row
        mask = torch.as_tensor(m).cuda()
        y = nn.scaled_masked_softmax_fwd(x, mask, 1.5)
        assert_close(N(y), ref.scaled_masked_softmax(N(x), m, 1.5), dtype, what=f"y mb={mb}")
        assert not N(y)[0, :, sq - 1, :].any()
        dy = T(rng.standard_normal(x.shape), dtype)
        dx = nn.scaled_masked_softmax_bwd(dy, y, 1.5)
        assert_close(N(dx), ref.softmax_bwd(N(dy), N(y), 1.5), dtype, scale=4)


@pytest.mark.parametrize("sq", [1, 7, 128, 1000, 2048, 4097])
@pytest.mark.parametrize("dtype", DTYPES)
def test_upper_triangular(backend, sq, dtype):
    rng = np.random.default_rng(sq)
    x = T(rng.standard_normal((3, sq, sq)), dtype)
    y = nn.scaled_upper_triang_masked_softmax_fwd(x, 0.5)
    assert_close(N(y), ref.scaled_upper_triang_softmax(N(x), 0.5), dtype)
    assert (N(y)[:, ~ref.causal_keep(sq, sq)] == 0).all()
    dy = T(rng.standard_normal(x.shape), dtype)
    dx = nn.scaled_upper_triang_masked_softmax_bwd(dy, y, 0.5)
    assert_close(N(dx), ref.softmax_bwd(N(dy), N(y), 0.5), dtype, scale=4)


@pytest.mark.parametrize("sq, sk", [(7, 7), (5, 1000), (1000, 5), (33, 4097), (3, 131072)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_aligned_causal(backend, sq, sk, dtype):
    rng = np.random.default_rng(sq + sk)
    x = T(rng.standard_normal((1, 3, sq, sk)), dtype)
    y = nn.scaled_aligned_causal_masked_softmax_fwd(x, 1.0)
    assert_close(N(y), ref.scaled_aligned_causal_softmax(N(x), 1.0), dtype)
    assert (N(y)[..., ~ref.causal_keep(sq, sk)] == 0).all()
    dy = T(rng.standard_normal(x.shape), dtype)
    dx = nn.scaled_aligned_causal_masked_softmax_bwd(dy, y, 1.0)
    assert_close(N(dx), ref.softmax_bwd(N(dy), N(y), 1.0), dtype, scale=4)


@pytest.mark.parametrize("sk", [1000, 4097, 131072])
def test_backends_agree_and_repeat_bitwise(sk):
    rng = np.random.default_rng(3)
    x = T(rng.standard_normal((1, 2, 3, sk)) * 4, "bf16")
    dy = T(rng.standard_normal((1, 2, 3, sk)), "bf16")
    outs = {}
    for name in ("nvrtc", "numba"):
        if name == "numba":
            os.environ["DISABLE_NVRTC"] = "1"
        try:
            runs = []
            for _ in range(3):
                y = nn.scaled_aligned_causal_masked_softmax_fwd(x, 0.9)
                dx = nn.scaled_aligned_causal_masked_softmax_bwd(dy, y, 0.9)
                runs.append((y.clone(), dx.clone()))
            for y, dx in runs[1:]:
                assert torch.equal(y.view(torch.int16), runs[0][0].view(torch.int16))
                assert torch.equal(dx.view(torch.int16), runs[0][1].view(torch.int16))
            outs[name] = runs[0]
        finally:
            os.environ.pop("DISABLE_NVRTC", None)
    for a, b in zip(outs["nvrtc"], outs["numba"]):
        np.testing.assert_allclose(N(a), N(b), rtol=8e-3, atol=2e-3)


@pytest.mark.parametrize("n", [1000, 4097])
@pytest.mark.parametrize("variant", SOFTMAX_VARIANTS)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_rows_with_non_finite_scores(backend, dtype, variant, n):
    """NaN / +inf / all -inf rows give NaN at their kept positions (tests/conftest.py), on the
    GPU kernels' vector paths (numpy in and out)."""
    x, mask = non_finite_scores(n, dtype, np.random.default_rng(n))
    y = softmax_of(nn, variant, x, mask, 0.9)
    assert nn.last_backend() == backend
    check_non_finite_rows(variant, y, softmax_of(ref, variant, x, mask, 0.9), dtype)


@pytest.mark.parametrize("sk", [1000, 4097, 32768, 131072])
@pytest.mark.parametrize("variant", SOFTMAX_VARIANTS)
@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
def test_rows_of_huge_scores(backend, dtype, variant, sk):
    """Scores near the dtype's limits give TE's finite rows (tests/conftest.py) on the GPU
    kernels: held rows, rows over several CTAs and the streaming kernels (numpy in and out)."""
    sq = sk if variant == "upper_triang" else 16
    if sq > 4097:
        pytest.skip("the upper-triangular variant takes square scores only")
    x, mask = huge_scores(sq, sk, dtype, np.random.default_rng(sk))
    y = softmax_of(nn, variant, x, mask, 1.0)
    assert nn.last_backend() == backend
    check_huge_rows(variant, y, softmax_of(ref, variant, x, mask, 1.0), dtype)


@pytest.mark.parametrize("variant", ["scaled", "masked", "aligned_causal"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_minus_inf_rows_over_several_ctas(backend, dtype, variant, monkeypatch):
    """Rows held by 5 CTAs (an entry of 2048 columns a CTA forced on 8193 keys): a row whose
    kept scores are all -inf is NaN there as on one CTA (it was 0: the CTAs' maximum was -inf
    and, masked, a sum of +0 read as "keeps nothing"); with masked positions it is 1 / count
    there; a -inf row but one column (in the fourth CTA of five) is 1 there."""
    from numba_norms import dispatch, registry

    seen = []

    def held(op, variant_, dt, cols, **kw):
        cfg = registry.SoftmaxConfig(op, "block", 2048, dt, 1, 4, 16, variant_, 2)
        seen.append(cfg)
        return cfg

    monkeypatch.setattr(registry, "select_softmax", held)
    monkeypatch.setattr(dispatch, "_plan_cache", {})
    sq, sk = 4, 8193
    x = np.random.default_rng(8).standard_normal((1, 1, sq, sk)).astype(np.float32)
    x[..., 0:2, :] = -np.inf
    x[..., 3, :] = -np.inf
    x[..., 3, sk - 5] = 0.0
    mask = np.zeros(x.shape, bool)
    mask[..., 1, 100:110] = True
    if dtype == "bf16":
        x = x.astype(ref.NP["bf16"])
    y = np.asarray(softmax_of(nn, variant, x, mask, 1.0), np.float64)
    assert nn.last_backend() == backend and seen, "the forced entry was not used"
    want = softmax_of(ref, variant, x, mask, 1.0)
    keep = np.broadcast_to(ref.softmax_keep(variant, sq, sk), y.shape)
    nan_rows = [0, 1] if variant != "masked" else [0]
    for r in nan_rows:
        assert np.isnan(want[..., r, :][keep[..., r, :]]).all()
        assert np.isnan(y[..., r, :][keep[..., r, :]]).all(), f"row {r}: not NaN"
    ok = [r for r in range(sq) if r not in nan_rows]
    assert_close(y[..., ok, :], want[..., ok, :], dtype, what="finite rows")
