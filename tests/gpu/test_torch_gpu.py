"""numba_norms.torch: modules and autograd against torch.nn.functional (float64 references)."""

from __future__ import annotations

import pytest

from tests.conftest import HAS_GPU, assert_close

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")]
torch = pytest.importorskip("torch") if HAS_GPU else None
F = torch.nn.functional if torch else None

DT = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(1234)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("zero_centered", [False, True])
def test_layernorm_module_matches_functional(dtype, zero_centered):
    from numba_norms.torch import LayerNorm

    td = getattr(torch, DT[dtype])
    m = LayerNorm(1024, eps=1e-5, zero_centered_gamma=zero_centered, device="cuda", dtype=td)
    with torch.no_grad():
        m.weight.normal_(0, 0.2)
        m.bias.normal_(0, 0.1)
    x = torch.randn(3, 17, 1024, device="cuda", dtype=td, requires_grad=True)
    y = m(x)
    dy = torch.randn_like(y)
    dx, dw, db = torch.autograd.grad(y, (x, m.weight, m.bias), dy)

    x64 = x.detach().double().requires_grad_()
    w64 = m.weight.detach().double().requires_grad_()
    b64 = m.bias.detach().double().requires_grad_()
    g64 = w64 + 1 if zero_centered else w64
    y64 = F.layer_norm(x64, (1024,), g64, b64, 1e-5)
    ex, ew, eb = torch.autograd.grad(y64, (x64, w64, b64), dy.double())
    assert_close(y.detach().float().cpu(), y64.detach().cpu(), dtype, scale=2, what="y")
    assert_close(dx.detach().float().cpu(), ex.cpu(), dtype, scale=4, what="dx")
    assert_close(dw.detach().float().cpu(), ew.cpu(), dtype, scale=40, what="dweight")
    assert_close(db.detach().float().cpu(), eb.cpu(), dtype, scale=40, what="dbias")


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_rmsnorm_module_matches_reference(dtype):
    from numba_norms.torch import RMSNorm

    td = getattr(torch, DT[dtype])
    m = RMSNorm(2048, eps=1e-6, device="cuda", dtype=td)
    with torch.no_grad():
        m.weight.normal_(1, 0.2)
    x = torch.randn(64, 2048, device="cuda", dtype=td, requires_grad=True)
    y = m(x)
    dy = torch.randn_like(y)
    dx, dw = torch.autograd.grad(y, (x, m.weight), dy)
    x64 = x.detach().double().requires_grad_()
    w64 = m.weight.detach().double().requires_grad_()
    y64 = F.rms_norm(x64, (2048,), w64, 1e-6)
    ex, ew = torch.autograd.grad(y64, (x64, w64), dy.double())
    assert_close(y.detach().float().cpu(), y64.detach().cpu(), dtype, scale=2, what="y")
    assert_close(dx.detach().float().cpu(), ex.cpu(), dtype, scale=4, what="dx")
    assert_close(dw.detach().float().cpu(), ew.cpu(), dtype, scale=40, what="dweight")


def test_fp32_weights_with_bf16_input_follow_autocast_habits():
    from numba_norms.torch import LayerNorm

    m = LayerNorm(512, device="cuda")  # fp32 parameters
    x = torch.randn(8, 512, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    y = m(x)
    y.float().sum().backward()
    assert y.dtype == torch.bfloat16 and m.weight.grad.dtype == torch.float32


def test_strided_weight_views_are_made_contiguous():
    """A weight that is a strided view (every other element of a larger parameter) reaches the
    kernels as a contiguous copy: the kernels take its base pointer alone."""
    import torch.nn.functional as F

    from numba_norms.torch import layer_norm, rms_norm

    x = torch.randn(16, 256, device="cuda", dtype=torch.float32)
    big = torch.randn(2, 512, device="cuda", dtype=torch.float32)
    w, b = big[0, ::2], big[1, ::2]
    assert not w.is_contiguous()
    want = F.layer_norm(x.double(), (256,), w.double(), b.double(), 1e-5)
    assert_close(layer_norm(x, w, b).cpu(), want.cpu(), "fp32", what="layer_norm")
    want = F.rms_norm(x.double(), (256,), w.double(), 1e-5)
    assert_close(rms_norm(x, w).cpu(), want.cpu(), "fp32", what="rms_norm")


@pytest.mark.parametrize("variant", ["scaled", "masked", "upper_triang", "aligned_causal"])
def test_softmax_functions_match_torch(variant):
    import numba_norms.torch as nt

    shape = (2, 3, 65, 65) if variant != "upper_triang" else (6, 65, 65)
    x = torch.randn(*shape, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    x64 = x.detach().double().requires_grad_()
    scale = 0.7
    v = x64 * scale
    if variant == "scaled":
        y = nt.scaled_softmax(x, scale)
        ref = torch.softmax(v, -1)
    elif variant == "masked":
        mask = torch.rand(2, 1, 65, 65, device="cuda") < 0.2
        y = nt.scaled_masked_softmax(x, mask, scale)
        ref = torch.softmax(v.masked_fill(mask, -10000.0), -1)
    else:
        keep = torch.ones(65, 65, device="cuda", dtype=torch.bool).tril()
        fn = (
            nt.scaled_upper_triang_masked_softmax
            if variant == "upper_triang"
            else nt.scaled_aligned_causal_masked_softmax
        )
        y = fn(x, scale)
        ref = torch.softmax(v.masked_fill(~keep, float("-inf")), -1)
    dy = torch.randn_like(y)
    (dx,) = torch.autograd.grad(y, x, dy)
    (edx,) = torch.autograd.grad(ref, x64, dy.double())
    assert_close(y.detach().float().cpu(), ref.detach().cpu(), "bf16", what="y")
    assert_close(dx.detach().float().cpu(), edx.cpu(), "bf16", scale=4, what="dx")


def test_cuda_graph_capture():
    from numba_norms.torch import LayerNorm

    m = LayerNorm(4096, device="cuda", dtype=torch.bfloat16)
    static_x = torch.randn(256, 4096, device="cuda", dtype=torch.bfloat16)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):  # warm up: compile and plan outside the capture
            m(static_x)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        static_y = m(static_x)
    new_x = torch.randn_like(static_x)
    static_x.copy_(new_x)
    graph.replay()
    torch.cuda.synchronize()
    with torch.no_grad():
        expected = F.layer_norm(new_x.double(), (4096,), m.weight.double(), m.bias.double(), 1e-5)
    assert_close(static_y.detach().float().cpu(), expected.cpu(), "bf16", scale=2)


def test_torch_compile_falls_back_around_the_module():
    from numba_norms.torch import RMSNorm

    m = RMSNorm(1024, device="cuda", dtype=torch.bfloat16)

    def block(x):
        return m(x * 2.0) + 1.0

    compiled = torch.compile(block)
    x = torch.randn(16, 1024, device="cuda", dtype=torch.bfloat16)
    got = compiled(x)
    with torch.no_grad():
        eps = torch.finfo(torch.bfloat16).eps  # eps=None, as torch.nn.RMSNorm's default
        expected = F.rms_norm((x * 2.0).double(), (1024,), m.weight.double(), eps) + 1.0
    assert_close(got.detach().float().cpu(), expected.cpu(), "bf16", scale=2)


def test_rmsnorm_default_eps_is_torchs():
    """``eps=None`` (the default of both) is the input dtype's machine epsilon."""
    from numba_norms.torch import RMSNorm

    ours, theirs = RMSNorm(256, device="cuda"), torch.nn.RMSNorm(256, device="cuda")
    x = torch.randn(8, 256, device="cuda") * 1e-3  # small rows: eps matters
    with torch.no_grad():
        assert_close(ours(x).cpu(), theirs(x).double().cpu(), "fp32", scale=2)
