"""The ops' per-signature fast path for torch tensors (stand-in torch, fake driver, no GPU).

A call whose signature matches an earlier successful call skips ingestion, checks and planning;
it must hand the driver exactly the parameters the general path would, and every change of
signature (dtype, shape, strides, alignment, flags, backend switch) must go the general way.
"""

from __future__ import annotations

import sys

import pytest

import numba_norms as nn
from numba_norms import arrays, dispatch
from numba_norms.backends.nvrtc import _norms as nv_norms
from numba_norms.ops import _fast, _norm
from numba_norms.planner import DeviceLimits
from tests.conftest import SIMULATOR
from tests.fakes import FakeTorchDevice, make_fake_torch

pytestmark = pytest.mark.skipif(SIMULATOR, reason="the fast path is for GPU (torch) calls")

DEV = FakeTorchDevice("cuda", 0)


@pytest.fixture
def env(monkeypatch, recorder):
    """Stand-in torch, the NVRTC norm launches recorded (``recorder``, tests/conftest.py), an
    H200's planning limits and an empty fast path."""
    torch, log = make_fake_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(arrays, "_TORCH_DTYPES", {})
    monkeypatch.setattr(nv_norms, "occupancy", lambda spec: 4)
    monkeypatch.setattr(dispatch, "_limits_cache", {0: DeviceLimits(sm_count=132)})
    monkeypatch.setattr(dispatch, "_plan_cache", {})
    monkeypatch.delenv("DISABLE_NVRTC", raising=False)
    monkeypatch.setattr(_fast, "_tensor_type", _fast._Unbound)
    for name in ("_empty", "_empty_like", "_raw_stream", "_uint8", "_float32"):
        monkeypatch.setattr(_fast, name, None)
    for table in ("_fwd", "_bwd", "_sm_fwd", "_sm_bwd"):
        monkeypatch.setattr(_fast, table, {})
    drv = recorder
    general = []
    real_call = arrays.Call

    def counting_call(*a, **kw):
        general.append(1)
        return real_call(*a, **kw)

    monkeypatch.setattr(_norm.arrays, "Call", counting_call)

    def tensor(shape, dtype, ptr, strides=None):
        if strides is None:
            strides = arrays._c_strides(tuple(shape))
        return torch.Tensor(tuple(shape), tuple(strides), dtype, DEV, ptr)

    return torch, drv, general, tensor


def _remembered_layernorm(torch, tensor, general) -> tuple:
    """8 x 4096 bf16 layernorm inputs whose signature a general-path call has remembered (and
    a second call repeated)."""
    x = tensor((8, 4096), torch.bfloat16, 0x10000)
    g, b = tensor((4096,), torch.bfloat16, 0x20000), tensor((4096,), torch.bfloat16, 0x30000)
    nn.layernorm_fwd(x, g, b)
    nn.layernorm_fwd(x, g, b)
    assert len(general) == 1
    return x, g, b


POINTER_SLOTS_FWD = (3, 4, 5)  # y, mu, rsigma: fresh outputs every call


def _same_but(a: tuple, b: tuple, slots) -> bool:
    return all(u == v for i, (u, v) in enumerate(zip(a, b, strict=True)) if i not in slots)


@pytest.mark.parametrize("kind", ["layernorm", "rmsnorm"])
def test_forward_repeats_take_the_fast_path_with_identical_parameters(env, kind):
    torch, drv, general, tensor = env
    x = tensor((8, 4096), torch.bfloat16, 0x10000)
    g, b = tensor((4096,), torch.bfloat16, 0x20000), tensor((4096,), torch.bfloat16, 0x30000)

    def call():
        if kind == "layernorm":
            return nn.layernorm_fwd(x, g, b, 1e-5)
        return nn.rmsnorm_fwd(x, g, 1e-5)

    first = call()
    assert len(general) == 1 and len(_fast._fwd) == 1
    second = call()
    assert len(general) == 1, "the repeat went through the general path"
    assert dispatch.last_backend() == "nvrtc"
    (l1, g1, b1, a1, s1, c1), (l2, g2, b2, a2, s2, c2) = drv.launches
    assert (l1, g1, b1, s1, c1) == (l2, g2, b2, s2, c2) == ("MAIN", g1, b1, 0x1230, False)
    assert _same_but(a1, a2, POINTER_SLOTS_FWD)
    assert [type(v) for v in a1] == [type(v) for v in a2]
    outs = (second[0], second[-1]) + ((second[1],) if kind == "layernorm" else ())
    assert a2[3] == outs[0].data_ptr() and a2[5] == outs[1].data_ptr()
    if kind == "layernorm":
        assert a2[4] == outs[2].data_ptr()
    else:
        assert a2[4] == 0 and a2[2] == 0
    for u, v in zip(first, second, strict=True):
        assert (u.shape, u.dtype, u.stride()) == (v.shape, v.dtype, v.stride())
        assert u.data_ptr() != v.data_ptr()


def test_forward_signature_changes_take_the_general_path(env):
    torch, drv, general, tensor = env
    x, g, b = _remembered_layernorm(torch, tensor, general)
    g32, b32 = tensor((4096,), torch.float32, 0x20000), tensor((4096,), torch.float32, 0x30000)
    cases = [
        (tensor((8, 4096), torch.bfloat16, 0x10000, (4160, 1)), g, b, {}),  # row pitch
        (tensor((8, 4096), torch.bfloat16, 0x10002), g, b, {}),  # 2-byte aligned: general plan
        (tensor((16, 4096), torch.bfloat16, 0x10000), g, b, {}),  # rows
        (tensor((8, 4096), torch.float32, 0x10000), g32, b32, {"out_dtype": torch.bfloat16}),
        (x, g, b, {"zero_centered_gamma": True}),
        (x, g, b, {"out_dtype": "bf16"}),  # same kernel, another spelling: a new signature
    ]
    for n, (xx, gg, bb, kw) in enumerate(cases, start=2):
        nn.layernorm_fwd(xx, gg, bb, **kw)
        assert len(general) == n, (n, kw)
    # the pitch and the misaligned pointer reach the kernel
    assert drv.launches[2][3][8] == 4160
    assert drv.launches[3][3][0] == 0x10002
    # the eps check still runs (a bad eps is never taken by the fast path)
    with pytest.raises(ValueError, match="eps"):
        nn.layernorm_fwd(x, g, b, -1.0)
    with pytest.raises(ValueError, match="eps: expected eps <="):  # inf in the kernels' fp32
        nn.layernorm_fwd(x, g, b, 3.5e38)
    # so does the flag's: "False" (truthy) must not repeat the remembered True signature
    with pytest.raises(TypeError, match="zero_centered_gamma"):
        nn.layernorm_fwd(x, g, b, zero_centered_gamma="False")
    # DISABLE_NVRTC is read per call: another value is another signature
    env_general = len(general)
    import os

    os.environ["DISABLE_NVRTC"] = "0"
    try:
        nn.layernorm_fwd(x, g, b)
    finally:
        del os.environ["DISABLE_NVRTC"]
    assert len(general) == env_general + 1


def test_explicit_stream_fp8_and_multi_cta_rows_stay_general(env):
    torch, drv, general, tensor = env
    x = tensor((8, 4096), torch.bfloat16, 0x10000)
    g, b = tensor((4096,), torch.bfloat16, 0x20000), tensor((4096,), torch.bfloat16, 0x30000)
    for _ in range(2):
        nn.layernorm_fwd(x, g, b, stream=0x777)
    assert len(general) == 2 and drv.launches[-1][4] == 0x777
    xl = tensor((4, 65536), torch.float32, 0x10000)  # fp32: 2 CTAs a row in the table
    gl = tensor((65536,), torch.float32, 0x20000)
    for _ in range(2):
        nn.rmsnorm_fwd(xl, gl)  # several CTAs a row if the plan says so: never remembered
    plan = next(p for p in dispatch._plan_cache.values() if p.cols == 65536)
    assert plan.scratch_bytes > 0 and len(drv.memsets) == 2  # several CTAs a row on the H200
    assert len(general) == 4


@pytest.mark.parametrize("kind", ["layernorm", "rmsnorm"])
def test_backward_repeats_take_the_fast_path_with_identical_parameters(env, kind):
    torch, drv, general, tensor = env
    dy, x = tensor((8, 4096), torch.bfloat16, 0x10000), tensor((8, 4096), torch.bfloat16, 0x50000)
    mu, rs = tensor((8,), torch.float32, 0x60000), tensor((8,), torch.float32, 0x70000)
    g = tensor((4096,), torch.bfloat16, 0x20000)

    def call():
        if kind == "layernorm":
            return nn.layernorm_bwd(dy, x, mu, rs, g)
        return nn.rmsnorm_bwd(dy, x, rs, g)

    first = call()
    second = call()
    assert len(general) == 1 and len(_fast._bwd) == 1
    (m1, f1), (m2, f2) = drv.launches[:2], drv.launches[2:]
    assert (m1[0], f1[0], m2[0], f2[0]) == ("MAIN", "FINALIZE", "MAIN", "FINALIZE")
    assert m1[1:3] == m2[1:3] and f1[1:3] == f2[1:3] and m2[4] == f2[4] == 0x1230
    # dx and the partials (scratch) are fresh each call
    assert _same_but(m1[3], m2[3], (5, 7, 8))
    assert _same_but(f1[3], f2[3], (0, 1, 2, 3))
    dx, dgamma = second[0], second[1]
    assert m2[3][5] == dx.data_ptr() and f2[3][2] == dgamma.data_ptr()
    assert f2[3][0] == m2[3][7] and f2[3][1] == m2[3][8]
    if kind == "layernorm":
        assert f2[3][3] == second[2].data_ptr() != 0
    else:
        assert m2[3][8] == 0 and f2[3][3] == 0
    for u, v in zip(first, second, strict=True):
        assert (u.shape, u.dtype) == (v.shape, v.dtype)


def test_parameters_subclassing_tensor_take_the_fast_path(env):
    torch, drv, general, tensor = env

    class Parameter(torch.Tensor):  # as torch.nn.Parameter
        pass

    x = tensor((8, 4096), torch.bfloat16, 0x10000)
    g = Parameter((4096,), (1,), torch.bfloat16, DEV, 0x20000)
    b = Parameter((4096,), (1,), torch.bfloat16, DEV, 0x30000)
    nn.layernorm_fwd(x, g, b)
    nn.layernorm_fwd(x, g, b)
    assert len(general) == 1 and drv.launches[1][3][1:3] == (0x20000, 0x30000)


@pytest.fixture
def sm_env(env, monkeypatch):
    from numba_norms.backends.nvrtc import softmax as nv_softmax

    monkeypatch.setattr(nv_softmax, "load", lambda spec, device=None: 0xB1)
    monkeypatch.setattr(nv_softmax, "occupancy_forward", lambda spec: 4)
    monkeypatch.setattr(nv_softmax, "occupancy_backward", lambda spec: 4)
    monkeypatch.setattr(nv_softmax, "_launches", {})
    return env


def test_softmax_repeats_take_the_fast_path(sm_env):
    torch, drv, general, tensor = sm_env
    x = tensor((2, 4, 16, 1024), torch.bfloat16, 0x10000)
    mask = tensor((2, 1, 16, 1024), torch.bool, 0x20000)
    y1 = nn.scaled_masked_softmax_fwd(x, mask, 0.5)
    y2 = nn.scaled_masked_softmax_fwd(x, mask, 0.25)  # the scale is a per-call value
    assert len(general) == 1
    (_, g1, b1, a1, s1, _), (_, g2, b2, a2, s2, _) = drv.launches
    assert (g1, b1, s1) == (g2, b2, s2) and s2 == 0x1230
    assert _same_but(a1, a2, (2, 11)) and (a1[11], a2[11]) == (0.5, 0.25)
    assert a2[2] == y2.data_ptr() != y1.data_ptr() and y2.shape == x.shape
    assert a2[8:11] == (16, 4, 2)  # sq, heads, mask batch
    # a scale the kernels' fp32 cannot take goes the general way, which refuses it
    with pytest.raises(ValueError, match="scale"):
        nn.scaled_masked_softmax_fwd(x, mask, 3.5e38)
    # another variant with the same x is another signature
    nn.scaled_softmax_fwd(x, 0.5)
    assert len(general) == 2
    dy = tensor((2, 4, 16, 1024), torch.bfloat16, 0x30000)
    nn.scaled_softmax_bwd(dy, y2, 2.0)
    dx = nn.scaled_softmax_bwd(dy, y2, 2.0)
    assert len(general) == 3
    a = drv.launches[-1][3]
    assert a == (0x30000, y2.data_ptr(), dx.data_ptr(), 128, 1024, 1024, 1024, 1024, 2.0, 0, 0)


def test_softmax_cluster_rows_repeat_with_fresh_statistics(sm_env, monkeypatch):
    """Rows of several CTAs launched as one cluster (sm_90) meet at the cluster barrier, so
    there are no counters to zero: repeats take the fast path, each with statistics scratch of
    its own, no barrier and no memset. Without clusters (the counter) they stay general."""
    from numba_norms.backends.nvrtc import softmax as nv_softmax

    torch, drv, general, tensor = sm_env
    monkeypatch.setattr(dispatch, "_limits_cache", {0: DeviceLimits(sm_count=132, clusters=True)})
    monkeypatch.setattr(nv_softmax, "active_clusters", lambda spec, cluster: 30)
    x = tensor((1, 1, 8, 131072), torch.float32, 0x10000)
    mask = tensor((1, 1, 8, 131072), torch.bool, 0x4000_0000)
    y1 = nn.scaled_masked_softmax_fwd(x, mask, 0.5)
    y2 = nn.scaled_masked_softmax_fwd(x, mask, 0.25)
    assert len(general) == 1
    (plan,) = dispatch._plan_cache.values()
    assert plan.ctas_per_row == plan.cluster == 4 and plan.barrier_bytes == 0
    assert plan.scratch_bytes > 0 and plan.grid == (4, 8, 1)  # one row group a row (8 rows)
    (_, g1, b1, a1, s1, c1), (_, g2, b2, a2, s2, c2) = drv.launches
    assert (g1, b1, s1, c1) == (g2, b2, s2, c2) and drv.clusters == {0: (4, 1, 1), 1: (4, 1, 1)}
    assert _same_but(a1, a2, (2, 11, 12, 13)) and a2[2] == y2.data_ptr() != y1.data_ptr()
    assert a1[12] and a2[12] and a2[12] != a1[12]  # fresh statistics scratch each call
    assert a2[13] == 0 and not drv.memsets
    dy = tensor((1, 1, 8, 131072), torch.float32, 0x8000_0000)
    dx1 = nn.scaled_softmax_bwd(dy, y2, 2.0)
    dx2 = nn.scaled_softmax_bwd(dy, y2, 2.0)
    assert len(general) == 2 and len(dispatch._plan_cache) == 2
    bwd = drv.launches[-1][3]
    assert bwd[:3] == (0x8000_0000, y2.data_ptr(), dx2.data_ptr())
    assert dx2.data_ptr() != dx1.data_ptr()
    assert bwd[9] and bwd[10] == 0 and not drv.memsets
    # the counter path (no clusters) keeps every call general: its counters need zeroing
    monkeypatch.setattr(dispatch, "_limits_cache", {0: DeviceLimits(sm_count=132)})
    monkeypatch.setattr(dispatch, "_plan_cache", {})
    for _ in range(2):
        nn.scaled_masked_softmax_fwd(x, mask, 0.5)
    assert len(general) == 4 and len(drv.memsets) == 2


def test_softmax_backward_signatures_keep_the_rank_check(sm_env):
    torch, drv, general, tensor = sm_env
    dy, y = tensor((4, 64, 64), torch.float16, 0x10000), tensor((4, 64, 64), torch.float16, 0x20000)
    nn.scaled_upper_triang_masked_softmax_bwd(dy, y, 1.0)
    nn.scaled_upper_triang_masked_softmax_bwd(dy, y, 1.0)
    assert len(general) == 1
    with pytest.raises(ValueError, match="dimension"):
        nn.scaled_softmax_bwd(dy, y, 1.0)  # [b, h, sq, sk] required here
    with pytest.raises((TypeError, ValueError), match="scale"):
        nn.scaled_upper_triang_masked_softmax_bwd(dy, y, float("nan"))


def test_a_cleared_plan_cache_ends_the_fast_path(env, monkeypatch):
    """Tools re-plan by clearing dispatch's plan cache (the tuner, tests steering the registry):
    a remembered signature must not outlive the plan it repeats."""
    torch, drv, general, tensor = env
    x, g, b = _remembered_layernorm(torch, tensor, general)
    dispatch._plan_cache.clear()
    nn.layernorm_fwd(x, g, b)
    assert len(general) == 2
    nn.layernorm_fwd(x, g, b)
    assert len(general) == 2  # remembered again, with the new plan
    monkeypatch.setattr(dispatch, "_plan_cache", {})  # replaced rather than cleared
    nn.layernorm_fwd(x, g, b)
    assert len(general) == 3


def test_row_pitched_inputs_repeat_with_contiguous_outputs(env):
    torch, drv, general, tensor = env
    x = tensor((8, 4096), torch.bfloat16, 0x10000, (4160, 1))  # rows 4160 elements apart
    g, b = tensor((4096,), torch.bfloat16, 0x20000), tensor((4096,), torch.bfloat16, 0x30000)
    y1 = nn.layernorm_fwd(x, g, b)[0]
    y2, mu, rs = nn.layernorm_fwd(x, g, b)
    assert len(general) == 1
    for y in (y1, y2):
        assert y.shape == (8, 4096) and y.stride() == (4096, 1) and y.dtype == torch.bfloat16
    assert mu.shape == rs.shape == (8,) and mu.dtype == rs.dtype == torch.float32
    a = drv.launches[-1][3]
    assert (a[8], a[9]) == (4160, 4096)  # x and y row pitches
    dy = tensor((8, 4096), torch.bfloat16, 0x40000, (4160, 1))
    nn.layernorm_bwd(dy, x, mu, rs, g)
    dx = nn.layernorm_bwd(dy, x, mu, rs, g)[0]
    assert len(general) == 2 and dx.stride() == (4096, 1)
    assert drv.launches[-2][3][11:15] == (4160, 4160, 4096, 0)  # dy, x, dx, add pitches


def test_threads_share_the_remembered_signatures(env):
    """Threads calling with one signature each get their own inputs and outputs launched."""
    import threading

    torch, drv, general, tensor = env
    g, b = tensor((4096,), torch.bfloat16, 0x20000), tensor((4096,), torch.bfloat16, 0x30000)
    xs = [tensor((8, 4096), torch.bfloat16, 0x1_0000_0000 * (t + 1)) for t in range(6)]
    nn.layernorm_fwd(xs[0], g, b)  # remember the signature (same for every thread)
    outs: dict[int, list] = {t: [] for t in range(6)}
    errors = []

    def worker(t: int) -> None:
        try:
            for _ in range(50):
                outs[t].append(nn.layernorm_fwd(xs[t], g, b)[0].data_ptr())
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors and len(general) == 1
    y_of_x = {}
    for _, _, _, a, _, _ in drv.launches[1:]:
        y_of_x.setdefault(a[0], set()).add(a[3])
    assert set(y_of_x) == {x.data_ptr() for x in xs}
    for t, x in enumerate(xs):
        assert y_of_x[x.data_ptr()] == set(outs[t])  # each thread launched its own y


# ----- caller-provided outputs (out=) -------------------------------------------------------


def test_forward_outputs_given_repeat_into_the_given_tensors(env):
    torch, drv, general, tensor = env
    x, g, b = _remembered_layernorm(torch, tensor, general)

    def outs(base):  # y with rows 4160 elements apart, mu, rsigma
        return (
            tensor((8, 4096), torch.bfloat16, base, (4160, 1)),
            tensor((8,), torch.float32, base + 0x100000),
            tensor((8,), torch.float32, base + 0x200000),
        )

    first, second = outs(0x1000000), outs(0x2000000)
    assert nn.layernorm_fwd(x, g, b, out=first) == first
    assert len(general) == 2  # out= is another signature
    got = nn.layernorm_fwd(x, g, b, out=second)
    assert len(general) == 2 and got == second
    a = drv.launches[-1][3]
    assert a[3:6] == tuple(t.data_ptr() for t in second) and (a[8], a[9]) == (4096, 4160)
    assert _same_but(drv.launches[-2][3], a, POINTER_SLOTS_FWD)
    # entries left None are allocated on the fast path too
    y, mu, rs = nn.layernorm_fwd(x, g, b, out=(second[0], None, second[2]))
    nn.layernorm_fwd(x, g, b, out=(first[0], None, first[2]))
    assert len(general) == 3 and drv.launches[-1][3][4] not in (0, mu.data_ptr())
    # a list is the same signature as the tuple
    nn.layernorm_fwd(x, g, b, out=list(first))
    assert len(general) == 3


def test_overlapping_outputs_on_a_remembered_signature_still_raise(env):
    torch, drv, general, tensor = env
    x = tensor((8, 4096), torch.bfloat16, 0x10000)
    g = tensor((4096,), torch.bfloat16, 0x200000)
    y, rs = tensor((8, 4096), torch.bfloat16, 0x400000), tensor((8,), torch.float32, 0x600000)
    nn.rmsnorm_fwd(x, g, out=(y, rs))
    nn.rmsnorm_fwd(x, g, out=(y, rs))
    assert len(general) == 1
    launches = len(drv.launches)
    with pytest.raises(ValueError, match=r"out\[0\] \(y\): shares memory with x"):
        nn.rmsnorm_fwd(x, g, out=(x, rs))  # same signature as y: the fast path must refuse
    inside = tensor((8,), torch.float32, 0x400000 + 2 * 4096 * 7)  # in y's last row
    with pytest.raises(ValueError, match=r"out\[0\] \(y\): shares memory with out\[1\]"):
        nn.rmsnorm_fwd(x, g, out=(y, inside))
    assert len(drv.launches) == launches  # nothing launched


def test_backward_outputs_given_reach_main_and_finalize(env):
    torch, drv, general, tensor = env
    dy, x = tensor((8, 4096), torch.bfloat16, 0x10000), tensor((8, 4096), torch.bfloat16, 0x50000)
    mu, rs = tensor((8,), torch.float32, 0x60000), tensor((8,), torch.float32, 0x70000)
    g = tensor((4096,), torch.bfloat16, 0x80000)

    def outs(base):
        return tuple(
            tensor(shape, torch.bfloat16, base + i * 0x100000)
            for i, shape in enumerate([(8, 4096), (4096,), (4096,)])
        )

    nn.layernorm_bwd(dy, x, mu, rs, g, out=outs(0x1000000))
    dx, dg, db = outs(0x2000000)
    assert nn.layernorm_bwd(dy, x, mu, rs, g, out=(dx, dg, db)) == (dx, dg, db)
    assert len(general) == 1
    main, fin = drv.launches[-2][3], drv.launches[-1][3]
    assert main[5] == dx.data_ptr() and fin[2:4] == (dg.data_ptr(), db.data_ptr())
    with pytest.raises(ValueError, match=r"out\[1\] \(dgamma\): shares memory with gamma"):
        nn.layernorm_bwd(dy, x, mu, rs, g, out=(dx, g, db))


def test_softmax_outputs_given(sm_env):
    torch, drv, general, tensor = sm_env
    x = tensor((2, 4, 16, 1024), torch.bfloat16, 0x10000)
    ys = [tensor((2, 4, 16, 1024), torch.bfloat16, 0x1000000 * (i + 1)) for i in range(2)]
    assert nn.scaled_softmax_fwd(x, 0.5, out=ys[0]) is ys[0]
    assert nn.scaled_softmax_fwd(x, 0.5, out=ys[1]) is ys[1]
    assert len(general) == 1 and drv.launches[-1][3][2] == ys[1].data_ptr()
    dy = tensor((2, 4, 16, 1024), torch.bfloat16, 0x30000000)
    assert nn.scaled_softmax_bwd(dy, ys[1], 2.0, out=ys[0]) is ys[0]
    assert nn.scaled_softmax_bwd(dy, ys[1], 2.0, out=ys[0]) is ys[0]
    assert len(general) == 2 and drv.launches[-1][3][2] == ys[0].data_ptr()
    dx_over_dy = tensor((2, 4, 16, 1024), torch.bfloat16, 0x30000000)
    with pytest.raises(ValueError, match=r"out \(dx\): shares memory with dy"):
        nn.scaled_softmax_bwd(dy, ys[1], 2.0, out=dx_over_dy)


def test_backward_scratch_lives_until_its_launches_are_queued(env, monkeypatch):
    """The partial sums' scratch comes from torch's caching allocator: dropped before the
    launches, its block could go to another thread's tensor on the same stream first."""
    import weakref

    torch, drv, general, tensor = env
    dy, x = tensor((8, 4096), torch.bfloat16, 0x10000), tensor((8, 4096), torch.bfloat16, 0x50000)
    rs, g = tensor((8,), torch.float32, 0x70000), tensor((4096,), torch.bfloat16, 0x20000)
    nn.rmsnorm_bwd(dy, x, rs, g)  # remembered
    scratch = []
    real_empty, real_launch = _fast._empty, drv.cuLaunchKernelEx

    def empty(*size, dtype, device):
        t = real_empty(*size, dtype=dtype, device=device)
        if dtype is torch.uint8:
            scratch.append(weakref.ref(t))
        return t

    alive = []

    def launch(*a):
        alive.append([r() is not None for r in scratch])
        return real_launch(*a)

    monkeypatch.setattr(_fast, "_empty", empty)
    monkeypatch.setattr(drv, "cuLaunchKernelEx", launch)
    nn.rmsnorm_bwd(dy, x, rs, g)
    assert len(general) == 1 and len(scratch) == 1
    assert alive == [[True], [True]]  # at the main kernel's launch and at the finalize's


def test_a_switch_flipped_during_the_launch_files_the_signature_by_the_old_value(env, monkeypatch):
    """DISABLE_NVRTC set by another thread between the backend's choice and the signature's
    filing: the signature goes under the value the backend was chosen by, so the next call
    with DISABLE_NVRTC set does not repeat an NVRTC launch."""
    import os

    torch, drv, general, tensor = env
    x = tensor((8, 4096), torch.bfloat16, 0x10000)
    g, b = tensor((4096,), torch.bfloat16, 0x20000), tensor((4096,), torch.bfloat16, 0x30000)
    mod = dispatch.backend_module("nvrtc", "layernorm")
    real_forward = mod.forward

    def flipping(*a, **kw):
        os.environ["DISABLE_NVRTC"] = "1"
        return real_forward(*a, **kw)

    monkeypatch.setattr(mod, "forward", flipping)
    try:
        nn.layernorm_fwd(x, g, b)
    finally:
        os.environ.pop("DISABLE_NVRTC", None)
    (key,) = _fast._fwd
    assert key[1] is None  # unset when NVRTC was chosen
    nn.layernorm_fwd(x, g, b)  # unset again: the remembered NVRTC launch repeats
    assert len(general) == 1 and len(drv.launches) == 2
