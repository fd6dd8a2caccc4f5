"""GPU tests of numba_norms.arrays: torch, CuPy, DLPack/CAI objects and Numba device arrays."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest


def _real_gpu() -> bool:
    try:
        from numba import config

        if config.ENABLE_CUDASIM:  # the simulator claims a device; it is not one
            return False
        from numba import cuda

        return bool(cuda.is_available())
    except Exception:
        return False


pytestmark = pytest.mark.gpu
if not _real_gpu():
    pytest.skip("needs a CUDA GPU (not the simulator)", allow_module_level=True)

from numba import cuda  # noqa: E402

from numba_norms import arrays as A  # noqa: E402
from numba_norms.arrays import Call, resolve_stream  # noqa: E402


@cuda.jit
def copy2d(src, dst):
    i, j = cuda.grid(2)
    if i < dst.shape[0] and j < dst.shape[1]:
        dst[i, j] = src[i, j]


def _copy(call, src, dst):
    rows, cols = dst.shape
    copy2d[((rows + 15) // 16, (cols + 15) // 16), (16, 16), call.numba_stream](src, dst)


# ---------------------------------------------------------------------------------------------
# torch
# ---------------------------------------------------------------------------------------------


def test_torch_bf16_recognised_with_ptr_and_strides():
    torch = pytest.importorskip("torch")
    x = torch.randn(6, 16, device="cuda", dtype=torch.bfloat16)
    c = Call()
    t = c.input(x, "x", dtypes=("fp32", "fp16", "bf16"), ndim=2)
    assert c.kind == "torch" and c.device == x.device.index
    assert t.dtype == "bf16" and t.itemsize == 2
    assert t.ptr == x.data_ptr() and t.shape == (6, 16) and t.strides == (16, 1)
    assert t.rows_cols() == (6, 16, 16)

    v = x[1:, 2:10]
    tv = Call().input(v, "x")
    assert tv.ptr == x.data_ptr() + (16 + 2) * 2
    assert tv.strides == (16, 1) and tv.rows_cols() == (5, 8, 16)

    with pytest.raises(ValueError, match="x: innermost dimension must be contiguous"):
        Call().input(x.t(), "x").rows_cols()


def test_torch_fp8_and_bool_recognised():
    torch = pytest.importorskip("torch")
    x = torch.zeros(4, 8, device="cuda").to(torch.float8_e4m3fn)
    assert Call().input(x, "x").dtype == "fp8e4m3"
    y = torch.zeros(4, 8, device="cuda").to(torch.float8_e5m2)
    assert Call().input(y, "x").dtype == "fp8e5m2"
    m = torch.ones(4, 8, device="cuda", dtype=torch.bool)
    t = Call().input(m, "mask")
    assert t.dtype == "bool" and t.as_numba().dtype == np.uint8
    with pytest.raises(TypeError, match="^x: expected dtype one of fp32, fp16, bf16; got int64"):
        Call().input(
            torch.zeros(3, device="cuda", dtype=torch.int64), "x", dtypes=("fp32", "fp16", "bf16")
        )


def test_torch_outputs_are_torch():
    torch = pytest.importorskip("torch")
    x = torch.randn(6, 16, device="cuda", dtype=torch.float16)
    c = Call()
    c.input(x, "x")
    for name, tdtype in [
        ("bf16", torch.bfloat16),
        ("fp16", torch.float16),
        ("fp32", torch.float32),
        ("fp8e4m3", torch.float8_e4m3fn),
        ("fp8e5m2", torch.float8_e5m2),
    ]:
        o = c.output((6, 16), name, "y")
        assert isinstance(o.obj, torch.Tensor)
        assert o.obj.dtype == tdtype and o.obj.device == x.device
        assert o.obj.is_contiguous() and tuple(o.obj.shape) == (6, 16)
        assert o.ptr == o.obj.data_ptr() and o.strides == (16, 1)
        (native,) = c.finish(o)
        assert native is o.obj
    s = c.scratch(1000)
    assert isinstance(s.obj, torch.Tensor) and s.obj.dtype == torch.uint8 and s.obj.numel() == 1000
    assert c.output((4, 64), "fp32", "z").alignment() == 256


def test_torch_as_numba_zero_copy_round_trip():
    torch = pytest.importorskip("torch")
    for tdtype in (torch.float32, torch.bfloat16):
        x = torch.randn(33, 70, device="cuda", dtype=tdtype)
        c = Call()
        t = c.input(x, "x")
        o = c.output(t.shape, t.dtype, "y")
        src = t.as_numba()
        assert src.dtype == A.storage_dtype(t.dtype)
        assert src.device_ctypes_pointer.value == x.data_ptr()
        _copy(c, src, o.as_numba())
        (y,) = c.finish(o)
        torch.cuda.synchronize()
        assert torch.equal(y, x)


def test_torch_cpu_tensor_rejected():
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="^x: torch tensor is on cpu; expected a CUDA tensor"):
        Call().input(torch.zeros(4), "x")


def test_torch_and_numpy_mixed_raises():
    torch = pytest.importorskip("torch")
    x = torch.zeros(4, 8, device="cuda")
    g = np.ones(8, np.float32)
    c = Call()
    c.input(x, "x")
    with pytest.raises(ValueError) as info:
        c.input(g, "gamma")
    assert str(info.value) == (
        "gamma is a host (numpy) array but x is a device array; pass all host or all device arrays"
    )
    c = Call()
    c.input(g, "gamma")
    with pytest.raises(ValueError, match=r"^gamma is a host \(numpy\) array but x is a device"):
        c.input(x, "x")


def test_tensors_on_different_devices_raise():
    torch = pytest.importorskip("torch")
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
    x = torch.zeros(4, 8, device="cuda:0")
    g = torch.ones(8, device="cuda:1")
    c = Call()
    c.input(x, "x")
    with pytest.raises(ValueError, match=r"^gamma is on cuda:1 but x is on cuda:0$"):
        c.input(g, "gamma")


def test_torch_streams():
    torch = pytest.importorskip("torch")
    x = torch.zeros(4, 8, device="cuda")
    c = Call()
    c.input(x, "x")
    assert c.stream_handle == torch.cuda.current_stream().cuda_stream
    assert resolve_stream(None, x) == torch.cuda.current_stream().cuda_stream

    side = torch.cuda.Stream()
    assert resolve_stream(side) == side.cuda_stream
    with torch.cuda.stream(side):
        c = Call()
        c.input(x, "x")
        assert c.stream_handle == side.cuda_stream
        assert int(c.numba_stream) == side.cuda_stream

    # an explicit stream that is not torch's current one: outputs still allocate fine
    c = Call(stream=side)
    c.input(x, "x")
    o = c.output((4, 8), "fp32", "y")
    _copy(c, c.input(x, "x2").as_numba(), o.as_numba())
    side.synchronize()
    assert torch.equal(o.obj, x)


# ---------------------------------------------------------------------------------------------
# CuPy
# ---------------------------------------------------------------------------------------------


def test_cupy_float16_recognised():
    cupy = pytest.importorskip("cupy")
    a = cupy.arange(24, dtype=cupy.float16).reshape(4, 6)
    c = Call()
    t = c.input(a, "x", dtypes=("fp32", "fp16", "bf16"))
    assert c.kind == "cupy" and t.dtype == "fp16"
    assert t.ptr == a.data.ptr and t.shape == (4, 6) and t.strides == (6, 1)
    assert c.stream_handle == cupy.cuda.get_current_stream().ptr
    o = c.output((4, 6), "fp16", "y")
    assert isinstance(o.obj, cupy.ndarray) and o.obj.dtype == np.float16
    _copy(c, t.as_numba(), o.as_numba())
    (y,) = c.finish(o)
    cupy.cuda.runtime.deviceSynchronize()
    assert bool((y == a).all())
    b = c.output((4, 6), "bf16", "z").obj  # logical dtype where CuPy has it, else uint16 bits
    assert b.dtype in (np.dtype(ml_dtypes.bfloat16), np.dtype(np.uint16))
    assert Call().input(A.reinterpret(b.view(np.uint16), "bf16"), "z").dtype == "bf16"


# ---------------------------------------------------------------------------------------------
# Numba device arrays and other protocol objects
# ---------------------------------------------------------------------------------------------


def test_numba_device_array_round_trip():
    x = np.linspace(-3, 3, 40 * 24, dtype=np.float32).reshape(40, 24).astype(ml_dtypes.bfloat16)
    bits = cuda.to_device(x.view(np.uint16))  # Numba cannot transfer ml_dtypes arrays
    d = bits.view(ml_dtypes.bfloat16)
    c = Call()
    t = c.input(d, "x", dtypes=("bf16",))
    assert c.kind == "numba" and t.dtype == "bf16"
    assert t.ptr == bits.device_ctypes_pointer.value
    assert t.device == cuda.get_current_device().id
    o = c.output(t.shape, t.dtype, "y")
    _copy(c, t.as_numba(), o.as_numba())
    (y,) = c.finish(o)
    assert y.dtype == np.uint16  # storage dtype for Numba outputs
    np.testing.assert_array_equal(y.copy_to_host(), x.view(np.uint16))
    t2 = Call().input(A.reinterpret(y, "bf16"), "y")
    assert t2.dtype == "bf16" and t2.ptr == y.device_ctypes_pointer.value


def test_numpy_round_trip_on_gpu():
    x = np.arange(12 * 20, dtype=np.float32).reshape(12, 20)[:, 3:17]
    c = Call()
    t = c.input(x, "x")
    assert t.strides == (20, 1) and t.ptr != 0
    o = c.output(t.shape, "fp32", "y")
    _copy(c, t.as_numba(), o.as_numba())
    (y,) = c.finish(o)
    np.testing.assert_array_equal(y, x)


class _DLPackOnly:
    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


class _CAIOnly:
    def __init__(self, a):
        self.a = a

    @property
    def __cuda_array_interface__(self):
        return self.a.__cuda_array_interface__


def test_foreign_dlpack_bf16_through_strided_memory_view():
    torch = pytest.importorskip("torch")
    x = torch.randn(8, 32, device="cuda", dtype=torch.bfloat16)[:, :16]
    c = Call()
    t = c.input(_DLPackOnly(x), "x")
    assert c.kind == "foreign" and t.dtype == "bf16"
    assert t.ptr == x.data_ptr() and t.strides == (32, 1) and t.shape == (8, 16)
    o = c.output(t.shape, "bf16", "y")  # foreign calls get Numba outputs (storage dtype)
    _copy(c, t.as_numba(), o.as_numba())
    (y,) = c.finish(o)
    assert y.dtype == np.uint16
    torch.cuda.synchronize()
    expected = x.contiguous().view(torch.int16).cpu().numpy().view(np.uint16)
    np.testing.assert_array_equal(y.copy_to_host(), expected)


def test_foreign_cuda_array_interface():
    d = cuda.to_device(np.arange(12, dtype=np.float32).reshape(3, 4))
    c = Call()
    t = c.input(_CAIOnly(d), "x", dtypes=("fp32",))
    assert c.kind == "foreign" and t.ptr == d.device_ctypes_pointer.value
    assert t.shape == (3, 4) and t.strides == (4, 1)
    np.testing.assert_array_equal(t.as_numba().copy_to_host(), d.copy_to_host())
