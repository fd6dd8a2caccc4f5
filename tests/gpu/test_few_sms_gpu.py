"""Long rows on a GPU of few SMs (this GPU, planned as if it had only ``SMS``), both backends.

Rows that TE gives more CTAs than such a device holds at once are planned on as many CTAs as
are resident, each with a longer part of the row (``dispatch.fitted_plan``); before, the call
raised a PlanError.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import numba_norms as nn
from numba_norms import dispatch
from numba_norms import reference as ref
from tests.conftest import HAS_GPU, assert_close
from tests.gpu.test_norms_api_gpu import N, T, check_layernorm, check_rmsnorm

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU"),
]
torch = pytest.importorskip("torch") if HAS_GPU else None

SMS = 2


@pytest.fixture
def few_sms(monkeypatch):
    """Plans made as if this GPU had ``SMS`` SMs; yields those limits."""
    limits = dataclasses.replace(dispatch.device_limits(None), sm_count=SMS)
    monkeypatch.setattr(dispatch, "device_limits", lambda device: limits)
    monkeypatch.setattr(dispatch, "_plan_cache", {})  # also retires the fast path's entries
    return limits


def _assert_rows_resident(backend: str, limits, capped: bool) -> None:
    """Every plan made with rows of several CTAs has them all resident at once; ``capped``:
    some plan has rows of fewer CTAs than its entry asked for (run 223, H100 planned as 2 SMs:
    the bf16 softmax at 131072 keys fitted uncapped)."""
    plans = [p for k, p in dispatch._plan_cache.items() if k[0] == backend]
    multi = [p for p in plans if p.ctas_per_row > 1]
    assert multi, "no plan with rows of several CTAs was made"
    for plan in multi:
        op = plan.spec.config.op
        mod = dispatch.backend_module(backend, op.split("_")[0] if "norm" in op else "softmax")
        occ = mod.occupancy_backward if plan.spec.config.is_backward else mod.occupancy_forward
        assert plan.ctas_per_row <= limits.sm_count * occ(plan.spec), plan
    if capped:
        assert any(p.ctas_per_row < _asked(p.spec, p.cols) for p in plans), "nothing was capped"


def _asked(spec, cols: int) -> int:
    """CTAs a row the spec's entry asks for on a device that holds them all."""
    c = spec.config
    if hasattr(c, "max_cols"):
        return -(-cols // c.max_cols)
    return c.ctas_per_row if c.kind == "tuned" else -(-cols // c.hidden_size)


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_long_norm_rows(backend, few_sms, dtype):
    check_layernorm(backend, 9, 65536, dtype, dtype, dtype)
    check_rmsnorm(backend, 9, 65536, dtype, dtype, dtype)
    _assert_rows_resident(backend, few_sms, capped=True)


@pytest.mark.parametrize("sk", [131072, 262144])
@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_long_softmax_rows(backend, few_sms, sk, dtype):
    rng = np.random.default_rng(sk)
    x = T(rng.standard_normal((1, 1, 3, sk)) * 3, dtype)
    m = rng.random((1, 1, 3, sk)) < 0.25
    y = nn.scaled_masked_softmax_fwd(x, torch.as_tensor(m).cuda(), 1.5)
    assert nn.last_backend() == backend
    assert_close(N(y), ref.scaled_masked_softmax(N(x), m, 1.5), dtype, what="y")
    y = nn.scaled_softmax_fwd(x, 0.8)
    assert_close(N(y), ref.scaled_softmax(N(x), 0.8), dtype, what="y")
    dy = T(rng.standard_normal(x.shape), dtype)
    dx = nn.scaled_softmax_bwd(dy, y, 0.8)
    assert_close(N(dx), ref.softmax_bwd(N(dy), N(y), 0.8), dtype, scale=4, what="dx")
    _assert_rows_resident(backend, few_sms, capped=dtype == "fp32" or sk > 131072)
