"""LayerNorm / RMSNorm through the public API on a GPU, both backends (torch inputs)."""

from __future__ import annotations

import numpy as np
import pytest

import numba_norms as nn
from numba_norms import reference as ref
from numba_norms import registry
from tests.conftest import HAS_GPU, assert_close

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU"),
]
torch = pytest.importorskip("torch") if HAS_GPU else None

TORCH = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
BACKENDS = ["nvrtc", "numba"]
LN_TUNED = sorted(
    {
        c.hidden_size
        for c in registry.norm_configs()
        if c.op == "layernorm_fwd" and c.kind == "tuned"
    }
)
RMS_TUNED = sorted(
    {c.hidden_size for c in registry.norm_configs() if c.op == "rmsnorm_fwd" and c.kind == "tuned"}
)


def T(a, dtype):
    return torch.as_tensor(np.asarray(a, np.float32)).to("cuda", getattr(torch, TORCH[dtype]))


def N(t):
    return t.detach().float().cpu().numpy().astype(np.float64)


def rand(shape, rng, scale=1.0, shift=0.0):
    return rng.standard_normal(shape) * scale + shift


def check_layernorm(backend, rows, cols, wt, it, ot, zero_centered=False, x=None, seed=0):
    rng = np.random.default_rng(seed + cols)
    x = T(rand((rows, cols), rng, 2.0, 0.3), it) if x is None else x
    g = T(rand(cols, rng, 0.3, 0.0 if zero_centered else 1.0), wt)
    b = T(rand(cols, rng, 0.1), wt)
    ey, emu, ers = ref.layernorm_fwd(N(x), N(g), N(b), 1e-5, zero_centered)
    if (wt, it, ot) in registry.supported_norm_dtypes("layernorm_fwd"):
        y, mu, rs = nn.layernorm_fwd(
            x, g, b, 1e-5, zero_centered_gamma=zero_centered, out_dtype=getattr(torch, TORCH[ot])
        )
        assert nn.last_backend() == backend
        assert y.dtype == getattr(torch, TORCH[ot]) and y.shape == x.shape and y.is_cuda
        assert_close(N(mu), emu, "fp32", scale=20, what="mu")
        assert_close(N(rs), ers, "fp32", scale=50, what="rsigma")
        assert_close(N(y), ey, ot, scale=2, what="y")
    else:  # a backward-only combination of TE's (fp32 x with 16-bit weights)
        mu = torch.as_tensor(emu, dtype=torch.float32, device="cuda")
        rs = torch.as_tensor(ers, dtype=torch.float32, device="cuda")
    dy = T(rand((rows, cols), rng), ot)
    dx, dg, db = nn.layernorm_bwd(dy, x, mu, rs, g, zero_centered_gamma=zero_centered)
    edx, edg, edb = ref.layernorm_bwd(N(dy), N(x), N(mu), N(rs), N(g), zero_centered)
    assert dx.dtype == x.dtype and dg.dtype == g.dtype and db.dtype == g.dtype
    assert_close(N(dx), edx, it, scale=4, what="dx")
    gscale = 4 * max(1.0, np.sqrt(rows))
    assert_close(N(dg), edg, wt, scale=gscale, what="dgamma")
    assert_close(N(db), edb, wt, scale=gscale, what="dbeta")


def check_rmsnorm(backend, rows, cols, wt, it, ot, zero_centered=False, with_add=False, seed=0):
    rng = np.random.default_rng(seed + cols)
    x = T(rand((rows, cols), rng, 1.5), it)
    g = T(rand(cols, rng, 0.3, 0.0 if zero_centered else 1.0), wt)
    ey, ers = ref.rmsnorm_fwd(N(x), N(g), 1e-6, zero_centered)
    if (wt, it, ot) in registry.supported_norm_dtypes("rmsnorm_fwd"):
        y, rs = nn.rmsnorm_fwd(
            x, g, 1e-6, zero_centered_gamma=zero_centered, out_dtype=getattr(torch, TORCH[ot])
        )
        assert nn.last_backend() == backend
        assert_close(N(rs), ers, "fp32", scale=50, what="rsigma")
        assert_close(N(y), ey, ot, scale=2, what="y")
    else:
        rs = torch.as_tensor(ers, dtype=torch.float32, device="cuda")
    dy = T(rand((rows, cols), rng), ot)
    add = T(rand((rows, cols), rng), it) if with_add else None
    dx, dg = nn.rmsnorm_bwd(dy, x, rs, g, zero_centered_gamma=zero_centered, add=add)
    edx, edg = ref.rmsnorm_bwd(
        N(dy), N(x), N(rs), N(g), zero_centered, None if add is None else N(add)
    )
    assert_close(N(dx), edx, it, scale=4, what="dx")
    assert_close(N(dg), edg, wt, scale=4 * max(1.0, np.sqrt(rows)), what="dgamma")


def test_backend_switch(monkeypatch):
    x = T(np.ones((4, 1024)), "bf16")
    g = T(np.ones(1024), "bf16")
    monkeypatch.setenv("DISABLE_NVRTC", "1")
    nn.rmsnorm_fwd(x, g)
    assert nn.last_backend() == "numba"
    monkeypatch.delenv("DISABLE_NVRTC")
    nn.rmsnorm_fwd(x, g)
    assert nn.last_backend() == "nvrtc"


@pytest.mark.parametrize("cols", LN_TUNED)
def test_layernorm_every_tuned_size_bf16(backend, cols):
    check_layernorm(backend, 64, cols, "bf16", "bf16", "bf16")


@pytest.mark.parametrize("cols", RMS_TUNED)
def test_rmsnorm_every_tuned_size_bf16(backend, cols):
    check_rmsnorm(backend, 64, cols, "bf16", "bf16", "bf16", with_add=True)


@pytest.mark.parametrize("cols", [768, 4096])
@pytest.mark.parametrize(
    "combo", [("fp32",) * 3, ("fp16",) * 3, ("fp32", "fp32", "bf16"), ("fp32", "fp32", "fp16")]
)
def test_forward_dtype_combinations(backend, cols, combo):
    wt, it, ot = combo
    rng = np.random.default_rng(cols)
    x = T(rand((32, cols), rng), it)
    g = T(rand(cols, rng, 0.2, 1.0), wt)
    b = T(rand(cols, rng, 0.1), wt)
    y, _, _ = nn.layernorm_fwd(x, g, b, out_dtype=getattr(torch, TORCH[ot]))
    assert_close(N(y), ref.layernorm_fwd(N(x), N(g), N(b), 1e-5)[0], ot, scale=2)
    y, _ = nn.rmsnorm_fwd(x, g, out_dtype=getattr(torch, TORCH[ot]))
    assert_close(N(y), ref.rmsnorm_fwd(N(x), N(g), 1e-5)[0], ot, scale=2)


@pytest.mark.parametrize(
    "combo", [("fp32",) * 3, ("fp16",) * 3, ("bf16", "fp32", "bf16"), ("fp16", "fp32", "fp16")]
)
@pytest.mark.parametrize("cols", [1024, 1000])
def test_backward_dtype_combinations(backend, combo, cols):
    wt, it, ot = combo
    check_layernorm(backend, 32, cols, wt, it, ot)
    check_rmsnorm(backend, 32, cols, wt, it, ot)


# 2053 / 5003 / 12289: the three row-length buckets of the measured one-CTA shapes for rows
# without 16-byte vectors (registry._NARROW_GENERAL); 4095 in the first bucket's upper half.
@pytest.mark.parametrize("cols", [1000, 2053, 4095, 5003, 12289])
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_general_sizes(backend, cols, dtype):
    check_layernorm(backend, 37, cols, dtype, dtype, dtype)
    check_rmsnorm(backend, 37, cols, dtype, dtype, dtype, with_add=True)


@pytest.mark.parametrize("cols", [65536, 131072])
@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_multi_cta_rows(backend, cols, dtype):
    check_layernorm(backend, 16, cols, dtype, dtype, dtype)
    check_rmsnorm(backend, 16, cols, dtype, dtype, dtype)


@pytest.mark.parametrize("rows", [1, 3, 7, 4097])
def test_row_counts(backend, rows):
    check_layernorm(backend, rows, 2048, "bf16", "bf16", "bf16", zero_centered=True)
    check_rmsnorm(backend, rows, 2048, "bf16", "bf16", "bf16", zero_centered=True)


def test_misaligned_views(backend):
    rng = np.random.default_rng(9)
    base = T(rand((16, 4097), rng), "bf16")
    x = base[:, 1:]  # row pitch 4097 elements, first element misaligned
    check_layernorm(backend, 16, 4096, "bf16", "bf16", "bf16", x=x)


def test_backends_agree_closely():
    rng = np.random.default_rng(21)
    x = T(rand((256, 4096), rng, 2.0), "bf16")
    g = T(rand(4096, rng, 0.3, 1.0), "bf16")
    b = T(rand(4096, rng, 0.1), "bf16")
    dy = T(rand((256, 4096), rng), "bf16")
    outs = {}
    import os

    for name in BACKENDS:
        if name == "numba":
            os.environ["DISABLE_NVRTC"] = "1"
        else:
            os.environ.pop("DISABLE_NVRTC", None)
        try:
            y, mu, rs = nn.layernorm_fwd(x, g, b)
            dx, dg, db = nn.layernorm_bwd(dy, x, mu, rs, g)
        finally:
            os.environ.pop("DISABLE_NVRTC", None)
        outs[name] = [N(t) for t in (y, mu, rs, dx, dg, db)]
    for a, bb, what in zip(outs["nvrtc"], outs["numba"], ["y", "mu", "rs", "dx", "dg", "db"]):
        # fp32 statistics agree to a few ulps; bf16 outputs to one bf16 rounding step.
        np.testing.assert_allclose(a, bb, rtol=8e-3, atol=8e-3, err_msg=what)
    np.testing.assert_allclose(outs["nvrtc"][1], outs["numba"][1], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outs["nvrtc"][2], outs["numba"][2], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cols", [4096, 1000, 65536])
def test_bitwise_reproducible(backend, cols):
    rng = np.random.default_rng(5)
    rows = 64
    x = T(rand((rows, cols), rng), "bf16")
    g = T(rand(cols, rng, 0.3, 1.0), "bf16")
    b = T(rand(cols, rng, 0.1), "bf16")
    dy = T(rand((rows, cols), rng), "bf16")
    first = None
    for _ in range(3):
        y, mu, rs = nn.layernorm_fwd(x, g, b)
        dx, dg, db = nn.layernorm_bwd(dy, x, mu, rs, g)
        got = [
            t.view(torch.int16) if t.dtype == torch.bfloat16 else t for t in (y, mu, rs, dx, dg, db)
        ]
        got = [t.clone() for t in got]
        if first is None:
            first = got
        else:
            for a, bb in zip(first, got):
                assert torch.equal(a, bb)


def test_numba_and_cupy_inputs(backend):
    from numba import cuda

    rng = np.random.default_rng(2)
    x = rand((8, 1024), rng).astype(np.float32)
    g = rand(1024, rng, 0.2, 1.0).astype(np.float32)
    b = rand(1024, rng, 0.1).astype(np.float32)
    y, mu, rs = nn.layernorm_fwd(cuda.to_device(x), cuda.to_device(g), cuda.to_device(b))
    assert cuda.is_cuda_array(y)
    assert_close(y.copy_to_host(), ref.layernorm_fwd(x, g, b, 1e-5)[0], "fp32", scale=2)
    cupy = pytest.importorskip("cupy")
    y2, _, _ = nn.layernorm_fwd(cupy.asarray(x), cupy.asarray(g), cupy.asarray(b))
    assert isinstance(y2, cupy.ndarray)
    assert_close(cupy.asnumpy(y2), ref.layernorm_fwd(x, g, b, 1e-5)[0], "fp32", scale=2)


def test_numpy_inputs_round_trip(backend):
    import ml_dtypes

    rng = np.random.default_rng(8)
    x = rand((8, 768), rng).astype(ml_dtypes.bfloat16)
    g = rand(768, rng, 0.2, 1.0).astype(ml_dtypes.bfloat16)
    y, rs = nn.rmsnorm_fwd(x, g)
    assert isinstance(y, np.ndarray) and y.dtype == ml_dtypes.bfloat16
    assert_close(y, ref.rmsnorm_fwd(x, g, 1e-5)[0], "bf16", scale=2)


def test_torch_stream_is_respected(backend):
    s = torch.cuda.Stream()
    rng = np.random.default_rng(4)
    x = T(rand((512, 4096), rng), "bf16")
    g = T(rand(4096, rng, 0.2, 1.0), "bf16")
    with torch.cuda.stream(s):
        x2 = x * 2  # queued on s; our kernel must run after it on the same stream
        y, rs = nn.rmsnorm_fwd(x2, g)
    s.synchronize()
    assert_close(N(y), ref.rmsnorm_fwd(N(x) * 2, N(g), 1e-5)[0], "bf16", scale=2)


@pytest.mark.parametrize("cols", [1024, 4096])
def test_chained_kernels_read_what_the_previous_kernel_wrote(backend, cols):
    """On sm_90 the kernels are launched as programmatic dependents: they start before the
    stream's previous kernel has finished and wait for it inside. A chain of calls on one
    stream, each reading what the call (or the torch kernel) before it wrote, must give the
    bits of the same chain with the device synchronised after every call."""
    import rtc
    from numba_norms import dispatch

    sm90 = rtc.device_info().cc >= (9, 0)
    assert dispatch.device_limits(torch.cuda.current_device()).dependent_launch == sm90
    rng = np.random.default_rng(11)
    rows = 2048
    x0 = T(rand((rows, cols), rng), "bf16")
    g = T(rand(cols, rng, 0.3, 1.0), "bf16")
    b = T(rand(cols, rng, 0.1), "bf16")

    def chain(sync: bool) -> list:
        def step(v):
            if sync:
                torch.cuda.synchronize()
            return v

        x, kept = x0.clone(), []
        for _ in range(4):
            y, mu, rs = step(nn.layernorm_fwd(x, g, b))
            dx, dg, db = step(nn.layernorm_bwd(y, x, mu, rs, g))  # dy = y: read right after
            z, _ = step(nn.rmsnorm_fwd(dx, g))
            s = step(nn.scaled_softmax_fwd(z.view(1, 1, rows, cols), 0.5))
            ds = step(nn.scaled_softmax_bwd(s, s, 0.5))
            x = step(ds.view(rows, cols) * 512 + z)  # a torch kernel between ours
            kept += [y, mu, rs, dx, dg, db, z, s, ds]
        torch.cuda.synchronize()
        return [t.detach().clone() for t in kept]

    for a, c in zip(chain(False), chain(True), strict=True):
        assert torch.equal(a.view(torch.int16) if a.dtype == torch.bfloat16 else a,
                           c.view(torch.int16) if c.dtype == torch.bfloat16 else c)  # fmt: skip
    assert nn.last_backend() == backend


def _cupy_backward_case(cupy, seed: int):
    rng = np.random.default_rng(seed)
    x = rand((64, 1024), rng).astype(np.float32)
    dy = rand((64, 1024), rng).astype(np.float32)
    g = rand(1024, rng, 0.2, 1.0).astype(np.float32)
    _, mu, rs = ref.layernorm_fwd(x, g, g, 1e-5)
    host = (dy, x, mu.astype(np.float32).ravel(), rs.astype(np.float32).ravel(), g)
    return host, [cupy.asarray(a) for a in host]


def test_cupy_graph_capture_of_a_backward(backend):
    """A CuPy backward (partials in the pooled scratch) captured into a CUDA graph, replayed
    on new gradients."""
    cupy = pytest.importorskip("cupy")
    host, dev = _cupy_backward_case(cupy, 11)
    outs = (cupy.empty_like(dev[1]), cupy.empty(1024, np.float32), cupy.empty(1024, np.float32))
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        nn.layernorm_bwd(*dev, out=outs)  # warm up: compile, plan, the stream's scratch
        s.synchronize()
        s.begin_capture()
        nn.layernorm_bwd(*dev, out=outs)
        graph = s.end_capture()
    new_dy = rand((64, 1024), np.random.default_rng(12)).astype(np.float32)
    with s:  # on the graph's stream: a non-blocking stream does not wait for the null stream
        dev[0].set(new_dy)  # (with these on the null stream the replay raced the NaN fills:
        for o in outs:  # dbeta came back NaN once, H100, session 50)
            o.fill(np.nan)
    graph.launch(s)
    s.synchronize()
    want = ref.layernorm_bwd(new_dy, *host[1:])
    for got, w, what in zip(outs, want, ("dx", "dgamma", "dbeta")):
        assert_close(cupy.asnumpy(got), w, "fp32", scale=4, what=what)
    with s:  # eager again after the capture
        got = nn.layernorm_bwd(*dev)
        s.synchronize()
    assert_close(cupy.asnumpy(got[0]), want[0], "fp32", scale=4, what="dx after")


def test_cupy_streams_take_turns_on_the_pool(backend):
    """Backwards on many short-lived CuPy streams (each stream's handle may be a destroyed
    one's) and more streams than the pool keeps: every result right."""
    cupy = pytest.importorskip("cupy")
    host, dev = _cupy_backward_case(cupy, 13)
    want = ref.layernorm_bwd(*host)
    results = []
    for _ in range(20):
        s = cupy.cuda.Stream(non_blocking=True)
        with s:
            results.append(nn.layernorm_bwd(*dev))
        del s  # destroyed with its work possibly queued
    cupy.cuda.Device().synchronize()
    for got in results:
        for a, w, what in zip(got, want, ("dx", "dgamma", "dbeta")):
            assert_close(cupy.asnumpy(a), w, "fp32", scale=4, what=what)
