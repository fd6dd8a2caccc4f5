"""The torch fast path (ops/_fast.py) on a GPU, both backends.

A repeated call takes the fast path (no general-path ``Call``) and must give the same bytes as
the general path gave for the same inputs; the CPU tests (tests/test_fast_path.py) check the
parameters it hands the driver.
"""

from __future__ import annotations

import pytest

from tests.conftest import HAS_GPU

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")]
torch = pytest.importorskip("torch") if HAS_GPU else None

import numba_norms as nn  # noqa: E402
from numba_norms import arrays  # noqa: E402
from numba_norms.ops import _norm, softmax  # noqa: E402


@pytest.fixture
def general_calls(monkeypatch):
    """Counts calls that went through the general path (a ``Call`` was built)."""
    count = []
    real = arrays.Call

    def counting(*a, **kw):
        count.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(_norm.arrays, "Call", counting)
    monkeypatch.setattr(softmax.arrays, "Call", counting)
    return count


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a.view(-1), b.view(-1))


def _twice(fn, general_calls) -> tuple:
    first = fn()
    torch.cuda.synchronize()
    n = len(general_calls)
    second = fn()
    torch.cuda.synchronize()
    assert len(general_calls) == n, "the repeated call went through the general path"
    return first, second


@pytest.mark.parametrize("rows, cols", [(64, 4096), (37, 1000)])
def test_norms_repeat_bitwise(backend, general_calls, rows, cols):
    bf = torch.bfloat16
    x = torch.randn(rows, cols, device="cuda", dtype=bf)
    g = torch.nn.Parameter(torch.randn(cols, device="cuda", dtype=bf) * 0.2 + 1)
    b = torch.randn(cols, device="cuda", dtype=bf) * 0.1
    dy = torch.randn(rows, cols, device="cuda", dtype=bf)
    for first, second in (
        _twice(lambda: nn.layernorm_fwd(x, g, b, 1e-5), general_calls),
        _twice(lambda: nn.rmsnorm_fwd(x, g, 1e-5), general_calls),
    ):
        assert all(_same(u, v) for u, v in zip(first, second, strict=True))
    _, mu, rs = nn.layernorm_fwd(x, g, b, 1e-5)
    first, second = _twice(lambda: nn.layernorm_bwd(dy, x, mu, rs, g), general_calls)
    assert all(_same(u, v) for u, v in zip(first, second, strict=True))
    _, rs = nn.rmsnorm_fwd(x, g, 1e-5)
    first, second = _twice(lambda: nn.rmsnorm_bwd(dy, x, rs, g), general_calls)
    assert all(_same(u, v) for u, v in zip(first, second, strict=True))
    assert nn.last_backend() == backend


def test_softmax_repeat_bitwise(backend, general_calls):
    h = torch.float16
    x = torch.randn(2, 4, 64, 512, device="cuda", dtype=h)
    mask = torch.rand(2, 1, 64, 512, device="cuda") < 0.3
    xt = torch.randn(8, 64, 64, device="cuda", dtype=h)
    for fn in (
        lambda: nn.scaled_softmax_fwd(x, 0.5),
        lambda: nn.scaled_masked_softmax_fwd(x, mask, 0.5),
        lambda: nn.scaled_upper_triang_masked_softmax_fwd(xt, 0.5),
        lambda: nn.scaled_aligned_causal_masked_softmax_fwd(x, 0.5),
    ):
        first, second = _twice(fn, general_calls)
        assert _same(first, second)
    y = nn.scaled_softmax_fwd(x, 0.5)
    dy = torch.randn_like(y)
    first, second = _twice(lambda: nn.scaled_softmax_bwd(dy, y, 0.5), general_calls)
    assert _same(first, second)
    assert nn.last_backend() == backend


def test_softmax_cluster_rows_repeat_bitwise(backend, general_calls):
    """Rows of several CTAs in one cluster (fp32 at 131072 keys: 4 CTAs a row on the H200)
    repeat on the fast path with fresh statistics scratch; back-to-back repeats (no sync, the
    scratch blocks reused in stream order) give the general path's bytes."""
    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("thread-block clusters need sm_90")
    from numba_norms import dispatch

    x = torch.randn(1, 1, 8, 131072, device="cuda", dtype=torch.float32)
    mask = torch.rand(1, 1, 8, 131072, device="cuda") < 0.3
    dy = torch.randn_like(x)
    y = nn.scaled_softmax_fwd(x, 0.5)
    for fn in (
        lambda: nn.scaled_masked_softmax_fwd(x, mask, 0.5),
        lambda: nn.scaled_softmax_fwd(x, 0.5),
        lambda: nn.scaled_softmax_bwd(dy, y, 0.5),
    ):
        first, second = _twice(fn, general_calls)
        assert _same(first, second)
        n = len(general_calls)
        more = [fn() for _ in range(4)]
        torch.cuda.synchronize()
        assert len(general_calls) == n and all(_same(first, m) for m in more)
    multi = [p for p in dispatch._plan_cache.values() if p.cols == 131072 and p.ctas_per_row > 1]
    assert multi and all(p.cluster == p.ctas_per_row and not p.barrier_bytes for p in multi)
    assert nn.last_backend() == backend


def test_fast_path_follows_the_current_stream(general_calls):
    x = torch.randn(16, 2048, device="cuda", dtype=torch.bfloat16)
    g = torch.ones(2048, device="cuda", dtype=torch.bfloat16)
    want = nn.rmsnorm_fwd(x, g)[0]
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        n = len(general_calls)
        got = nn.rmsnorm_fwd(x, g)[0]  # remembered signature: launched on s
        assert len(general_calls) == n
    s.synchronize()
    assert torch.equal(got, want)


@pytest.mark.parametrize("pad", [0, 64])
def test_outputs_given_match_allocated_bitwise(backend, general_calls, pad):
    """out= (first call general, the repeat fast) writes the bytes the allocating call returns,
    also into row-padded y / dx, and leaves the padding alone."""
    bf = torch.bfloat16
    rows, cols = 64, 4096
    x = torch.randn(rows, cols, device="cuda", dtype=bf)
    g = torch.randn(cols, device="cuda", dtype=bf) * 0.2 + 1
    b = torch.randn(cols, device="cuda", dtype=bf) * 0.1
    dy = torch.randn(rows, cols, device="cuda", dtype=bf)
    want_f = nn.layernorm_fwd(x, g, b)
    want_b = nn.layernorm_bwd(dy, x, want_f[1], want_f[2], g)

    def fresh_fwd():
        base = torch.full((rows, cols + pad), 3.0, device="cuda", dtype=bf)
        y = base[:, :cols]
        stats = [torch.full((rows,), 3.0, device="cuda") for _ in range(2)]
        return base, (y, *stats)

    for _ in range(2):  # general path, then the fast path
        base, out = fresh_fwd()
        n = len(general_calls)
        got = nn.layernorm_fwd(x, g, b, out=out)
        assert all(u is v for u, v in zip(got, out, strict=True))
        assert all(_same(u.contiguous(), v) for u, v in zip(got, want_f, strict=True))
        assert bool((base[:, cols:] == 3.0).all())
    assert len(general_calls) == n, "the repeat went through the general path"
    for _ in range(2):
        dx = torch.full((rows, cols + pad), 3.0, device="cuda", dtype=bf)[:, :cols]
        grads = (dx, torch.empty(cols, device="cuda", dtype=bf), None)
        got = nn.layernorm_bwd(dy, x, want_f[1], want_f[2], g, out=grads)
        assert got[0] is dx and got[1] is grads[1]
        assert all(_same(u.contiguous(), v) for u, v in zip(got, want_b, strict=True))
    assert len(general_calls) == n + 1
    y = torch.empty(2, 4, 64, 512, device="cuda", dtype=bf)
    s = torch.randn(2, 4, 64, 512, device="cuda", dtype=bf)
    want = nn.scaled_softmax_fwd(s, 0.5)
    for _ in range(2):
        assert nn.scaled_softmax_fwd(s, 0.5, out=y) is y and _same(y, want)
    assert nn.last_backend() == backend


def test_outputs_given_as_cupy_arrays(backend):
    cp = pytest.importorskip("cupy")
    x = cp.random.standard_normal((32, 2048)).astype(cp.float32)
    g = cp.ones(2048, cp.float32) * 0.5
    y_want, rs_want = nn.rmsnorm_fwd(x, g)
    y, rs = cp.empty_like(x), cp.empty(32, cp.float32)
    got = nn.rmsnorm_fwd(x, g, out=(y, rs))
    assert got[0] is y and got[1] is rs
    assert bool((y == y_want).all()) and bool((rs == rs_want).all())
    with pytest.raises(ValueError, match="shares memory with x"):
        nn.rmsnorm_fwd(x, g, out=(x, rs))
