"""CPU tests of numba_norms.arrays.

Tests named ``test_dev_*`` need a device: they run in-process under Numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``, as CI sets it) or on a real GPU. In a plain run without a GPU they
are skipped in-process and run instead by ``test_device_tests_under_simulator`` in a subprocess
with the simulator enabled.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from numba import cuda

from numba_norms import arrays as A
from numba_norms.arrays import Call, Tensor, dtype_name, resolve_stream
from tests.fakes import FakeTorchDevice, make_fake_torch


def _device_mode() -> str | None:
    from numba import config

    if config.ENABLE_CUDASIM:
        return "sim"
    try:
        return "gpu" if cuda.is_available() else None
    except Exception:
        return None


DEVICE = _device_mode()
needs_device = pytest.mark.skipif(
    DEVICE is None,
    reason="needs NUMBA_ENABLE_CUDASIM=1 or a GPU (run by test_device_tests_under_simulator)",
)


# ---------------------------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------------------------

LOGICAL = [
    (np.float32, "fp32"),
    (np.float16, "fp16"),
    (ml_dtypes.bfloat16, "bf16"),
    (ml_dtypes.float8_e4m3fn, "fp8e4m3"),
    (ml_dtypes.float8_e5m2, "fp8e5m2"),
    (np.uint8, "uint8"),
    (np.bool_, "bool"),
]


@pytest.mark.parametrize("scalar_type,name", LOGICAL)
def test_dtype_name_numpy_types_and_dtypes(scalar_type, name):
    assert dtype_name(scalar_type) == name
    assert dtype_name(np.dtype(scalar_type)) == name
    assert dtype_name(np.zeros(2, scalar_type).dtype) == name
    assert A.numpy_dtype(name) == np.dtype(scalar_type)
    assert A.itemsize(name) == np.dtype(scalar_type).itemsize
    assert A.storage_dtype(name).itemsize == np.dtype(scalar_type).itemsize


@pytest.mark.parametrize(
    "text,name",
    [
        ("fp32", "fp32"),
        ("float32", "fp32"),
        ("fp16", "fp16"),
        ("float16", "fp16"),
        ("half", "fp16"),
        ("bf16", "bf16"),
        ("bfloat16", "bf16"),
        ("BFloat16", "bf16"),
        ("torch.bfloat16", "bf16"),
        ("fp8e4m3", "fp8e4m3"),
        ("float8_e4m3fn", "fp8e4m3"),
        ("e4m3", "fp8e4m3"),
        ("fp8e5m2", "fp8e5m2"),
        ("float8_e5m2", "fp8e5m2"),
        ("e5m2", "fp8e5m2"),
        ("uint8", "uint8"),
        ("bool", "bool"),
    ],
)
def test_dtype_name_strings_and_aliases(text, name):
    assert dtype_name(text) == name
    assert A.numpy_dtype(text) == A.numpy_dtype(name)


def test_dtype_name_torch_like_dtype_object():
    # torch dtypes are recognised through their module and str() ("torch.float8_e4m3fn");
    # a stand-in with the same module and str() exercises that path without torch.
    fake = type("dtype", (), {"__module__": "torch", "__str__": lambda self: "torch.bfloat16"})
    fake8 = type(
        "dtype", (), {"__module__": "torch", "__str__": lambda self: "torch.float8_e4m3fn"}
    )
    assert dtype_name(fake()) == "bf16"
    assert dtype_name(fake8()) == "fp8e4m3"


def test_storage_dtypes():
    assert A.storage_dtype("bf16") == np.uint16
    assert A.storage_dtype("fp8e4m3") == np.uint8
    assert A.storage_dtype("fp8e5m2") == np.uint8
    assert A.storage_dtype("bool") == np.uint8
    assert A.storage_dtype("fp16") == np.float16
    assert A.storage_dtype("fp32") == np.float32
    assert A.DTYPE_NAMES == ("fp32", "fp16", "bf16", "fp8e4m3", "fp8e5m2", "uint8", "bool")


@pytest.mark.parametrize("bad", [np.int64, np.float64, "int64", "float", "float8_e4m3", object()])
def test_dtype_name_unknown_lists_supported(bad):
    with pytest.raises(TypeError) as info:
        dtype_name(bad)
    msg = str(info.value)
    assert "unsupported dtype" in msg
    for name in A.DTYPE_NAMES:
        assert name in msg


# ---------------------------------------------------------------------------------------------
# Tensor geometry
# ---------------------------------------------------------------------------------------------


def _t(shape, strides, dtype="fp32", ptr=0x1000, name="x"):
    return Tensor(name, ptr, tuple(shape), tuple(strides), dtype, 0, None)


def test_rows_cols_3d_contiguous():
    assert _t((2, 3, 8), (24, 8, 1)).rows_cols() == (6, 8, 8)


def test_rows_cols_row_sliced():
    assert _t((4, 8), (16, 1)).rows_cols() == (4, 8, 16)  # x[:, :8] of a (4, 16) array
    assert _t((2, 3, 8), (48, 16, 1)).rows_cols() == (6, 8, 16)


def test_rows_cols_unit_and_broadcast_dims():
    assert _t((4, 1, 8), (8, 999, 1)).rows_cols() == (4, 8, 8)
    assert _t((1, 1, 5), (7, 7, 1)).rows_cols() == (1, 5, 5)
    assert _t((3, 5), (0, 1)).rows_cols() == (3, 5, 0)  # broadcast rows
    assert _t((3, 1), (4, 9)).rows_cols() == (3, 1, 4)  # one column: its stride is free
    assert _t((0, 4), (4, 1)).rows_cols() == (0, 4, 4)
    assert _t((8,), (1,)).rows_cols() == (1, 8, 8)


def test_rows_cols_inner_stride_error():
    with pytest.raises(ValueError, match=r"^x: innermost dimension must be contiguous "):
        _t((4, 4), (8, 2)).rows_cols()
    with pytest.raises(ValueError, match=r"got stride 2$"):
        _t((4, 4), (8, 2)).rows_cols()


def test_rows_cols_not_collapsible():
    # e.g. np.zeros((4, 6, 8))[:, :3, :]: rows inside a block are 8 apart, blocks 48 apart
    with pytest.raises(ValueError, match=r"^gamma: leading dimensions .* uniform row stride"):
        _t((4, 3, 8), (48, 8, 1), name="gamma").rows_cols()


def test_rows_cols_zero_d_and_negative():
    with pytest.raises(ValueError, match="at least 1 dimension"):
        _t((), ()).rows_cols()
    with pytest.raises(ValueError, match="negative strides"):
        _t((4, 8), (-8, 1)).rows_cols()


def test_tensor_size_and_itemsize():
    t = _t((2, 3, 8), (24, 8, 1), dtype="bf16")
    assert t.size == 48 and t.ndim == 3 and t.itemsize == 2
    assert _t((0, 8), (8, 1)).size == 0


def test_alignment():
    assert _t((0, 8), (8, 1), ptr=0).alignment() == 256  # empty: ptr 0 counts as aligned
    assert _t((4, 64), (64, 1), ptr=0).alignment() == 256
    assert _t((4, 8), (8, 1), ptr=0).alignment() == 32  # the row pitch still counts
    assert _t((4, 8), (8, 1), ptr=0x1000).alignment() == 32  # 8 fp32 = 32-byte rows
    assert _t((4, 64), (64, 1), ptr=0x1000).alignment() == 256
    assert _t((4, 1024), (1024, 1), ptr=0x10000).alignment() == 256  # capped
    assert _t((4, 64), (64, 1), ptr=0x1004).alignment() == 4
    assert _t((4, 6), (6, 1), dtype="fp16", ptr=0x1000).alignment() == 4  # 12-byte rows
    assert _t((4, 6), (10, 1), dtype="bf16", ptr=0x1000).alignment() == 4  # 20-byte pitch
    assert _t((1, 5), (5, 1), ptr=0x100).alignment() == 256  # one row: pitch irrelevant
    assert _t((5,), (1,), ptr=0x10).alignment() == 16
    assert _t((4, 4), (8, 2), ptr=0x100).alignment() == 4  # not a row layout: itemsize


@pytest.mark.parametrize(
    "nbytes, expected",
    [(0, 256), (1, 1), (6, 2), (24, 8), (96, 32), (256, 256), (512, 256), (0x1004, 4), (2000, 16)],
)
def test_byte_alignment(nbytes, expected):
    from numba_norms.arrays import byte_alignment

    assert byte_alignment(nbytes) == expected


# ---------------------------------------------------------------------------------------------
# Call: argument errors (no device needed: they are raised before anything is staged)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [[1.0, 2.0], 3.0, 7, "abc", np.float32(1.0)])
def test_input_non_array_type_error(bad):
    with pytest.raises(TypeError, match=r"^x: expected an array \(numpy array, .*; got "):
        Call().input(bad, "x")


def test_input_none():
    c = Call()
    assert c.input(None, "bias", optional=True) is None
    with pytest.raises(TypeError, match="^bias: expected an array; got None"):
        c.input(None, "bias")


def test_input_unsupported_dtype():
    x = np.zeros((2, 4), np.int64)
    with pytest.raises(TypeError) as info:
        Call().input(x, "x", dtypes=("fp32", "fp16", "bf16"))
    assert str(info.value) == "x: expected dtype one of fp32, fp16, bf16; got int64"
    with pytest.raises(TypeError, match="^x: expected dtype one of fp32, fp16, bf16, fp8e4m3"):
        Call().input(np.zeros(3, np.float64), "x")


def test_input_dtype_not_allowed():
    x = np.zeros((2, 4), ml_dtypes.float8_e4m3fn)
    with pytest.raises(TypeError, match="^x: expected dtype one of fp32, bf16; got fp8e4m3$"):
        Call().input(x, "x", dtypes=("fp32", "bf16"))


def test_input_wrong_ndim():
    with pytest.raises(
        ValueError, match=r"^gamma: expected 1 dimensions; got 2 \(shape \(2, 4\)\)"
    ):
        Call().input(np.zeros((2, 4), np.float32), "gamma", ndim=1)
    with pytest.raises(ValueError, match="^x: expected at least 2 dimensions; got 1"):
        Call().input(np.zeros(4, np.float32), "x", min_ndim=2)


class _FakeDeviceArray:
    """Looks like a device array to classification; never actually read."""

    __cuda_array_interface__ = {
        "shape": (4,),
        "typestr": "<f4",
        "data": (0x1000, False),
        "version": 3,
    }


class _HostDLPack:
    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_foreign_view_through_strided_memory_view():
    base = np.zeros((4, 8), np.float16)
    x = base[:, ::2]
    view = A._view_foreign(_HostDLPack(x), 0)
    ptr, shape, strides, dtype, device, accessible, readonly = view
    assert ptr == x.ctypes.data
    assert shape == (4, 4) and strides == (8, 2)
    assert dtype == np.float16 and device == -1 and accessible is False and readonly is False


F32_DTYPE = np.dtype(np.float32)


class _DeviceDLPack(_HostDLPack):
    """Says its array is on a CUDA device (kDLCUDA) while the tests replace _view_foreign."""

    def __dlpack_device__(self):
        return (2, 0)


def _device_view(dtype=F32_DTYPE, readonly=False):
    """What _view_foreign would say of a (4, 8) device array (no GPU needed past it)."""
    return lambda obj, handle, name="array": (0x10000, (4, 8), (8, 1), dtype, 0, True, readonly)


def test_read_only_foreign_arrays_are_read_but_never_written(monkeypatch):
    monkeypatch.setattr(A, "_view_foreign", _device_view(readonly=True))
    obj = _DeviceDLPack(np.zeros((4, 8), np.float32))
    assert Call().input(obj, "x").ptr == 0x10000
    with pytest.raises(ValueError, match="^out: array is read-only but the operation writes it"):
        Call().inout(obj, "out")


def test_foreign_dtype_unknown_is_not_reinterpreted(monkeypatch):
    """Without the element size the strides cannot be checked against the forced dtype."""
    monkeypatch.setattr(A, "_view_foreign", _device_view(dtype=None))
    obj = _DeviceDLPack(np.zeros((4, 8), np.float32))
    with pytest.raises(TypeError, match="^x: expected dtype .* numpy cannot describe"):
        Call().input(A.reinterpret(obj, "fp16"), "x", dtypes=("fp16",))


def test_foreign_arrays_cuda_core_cannot_read_name_the_argument():
    class CAI:
        def __init__(self, **kw):
            self.__cuda_array_interface__ = {
                "shape": (4,), "typestr": "<f4", "data": (0x7F0000000000, False), "version": 3,
            } | kw  # fmt: skip

    for obj, why in [
        (CAI(version=2), "only CUDA Array Interface v3 or above"),
        (CAI(mask=CAI(typestr="|b1")), "mask is not supported"),
    ]:
        with pytest.raises(TypeError, match=f"^gamma: CAI array cannot be read: {why}"):
            Call().input(obj, "gamma")


def test_foreign_host_array_rejected():
    with pytest.raises(ValueError, match="^x: _HostDLPack array is in host memory"):
        Call().input(_HostDLPack(np.zeros(4, np.float32)), "x")


# ---------------------------------------------------------------------------------------------
# streams
# ---------------------------------------------------------------------------------------------


class _StreamMethod:
    def __cuda_stream__(self):
        return (0, 0xABC0)


class _StreamAttr:
    __cuda_stream__ = (0, 0xDEF0)


class _TorchLikeStream:
    cuda_stream = 0x5550


class _CupyLikeStream:
    ptr = 0x7770


def test_resolve_stream():
    assert resolve_stream(None) == 0
    assert resolve_stream(0) == 0
    assert resolve_stream(12345) == 12345
    assert resolve_stream(_StreamMethod()) == 0xABC0
    assert resolve_stream(_StreamAttr()) == 0xDEF0
    assert resolve_stream(_TorchLikeStream()) == 0x5550
    assert resolve_stream(_CupyLikeStream()) == 0x7770
    assert resolve_stream(None, np.zeros(3, np.float32)) == 0


@pytest.mark.parametrize("bad", ["s", 1.5, True, -1, object()])
def test_resolve_stream_errors(bad):
    with pytest.raises(TypeError, match="^stream: expected"):
        resolve_stream(bad)


def test_call_stream_handle():
    c = Call(stream=_StreamMethod())
    assert c.stream_handle == 0xABC0 and c.stream_arg == 0xABC0
    assert Call().stream_handle == 0
    with pytest.raises(TypeError, match="^stream:"):
        Call(stream="default")


def test_import_is_cheap():
    # Load arrays.py on its own in a fresh interpreter: it must not pull in numba, cuda.core,
    # torch or CuPy.
    path = Path(A.__file__)
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('arrays_alone', {str(path)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "heavy = sorted(k for k in sys.modules if k.split('.')[0] in "
        "('numba', 'cuda', 'torch', 'cupy', 'llvmlite'))\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.skipif(DEVICE == "sim", reason="this process already runs the simulator")
def test_device_tests_under_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k", "dev_"],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    summary = r.stdout.strip().splitlines()[-1]
    passed = re.search(r"(\d+) passed", summary)
    assert passed and int(passed.group(1)) >= 15 and "skipped" not in summary, summary


# ---------------------------------------------------------------------------------------------
# device tests (simulator or GPU)
# ---------------------------------------------------------------------------------------------

# Kernels are defined at module level: the simulator swaps the module-global ``cuda`` name.


@cuda.jit
def copy2d(src, dst):
    i, j = cuda.grid(2)
    if i < dst.shape[0] and j < dst.shape[1]:
        dst[i, j] = src[i, j]


@cuda.jit
def negate2d(a):
    i, j = cuda.grid(2)
    if i < a.shape[0] and j < a.shape[1]:
        a[i, j] = -a[i, j]


@cuda.jit
def flip_sign2d(a):
    i, j = cuda.grid(2)
    if i < a.shape[0] and j < a.shape[1]:
        a[i, j] = a[i, j] ^ 0x8000


def _launch(kernel, call, *arrays):
    shape = arrays[-1].shape
    grid = ((shape[0] + 7) // 8, (shape[1] + 7) // 8)
    kernel[grid, (8, 8), call.numba_stream](*arrays)


@needs_device
@pytest.mark.parametrize("scalar_type,name", LOGICAL[:5])
def test_dev_numpy_round_trip_keeps_logical_dtype(scalar_type, name):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 12)).astype(np.float32).astype(scalar_type)
    c = Call()
    t = c.input(x, "x", dtypes=("fp32", "fp16", "bf16", "fp8e4m3", "fp8e5m2"), ndim=2)
    assert c.kind == "numpy" and t.dtype == name
    assert t.shape == (5, 12) and t.strides == (12, 1) and t.device == 0
    src = t.as_numba()
    assert src.dtype == A.storage_dtype(name) and src.shape == (5, 12)
    assert t.as_numba() is src  # cached
    o = c.output(t.shape, t.dtype, "y")
    assert o.as_numba().dtype == A.storage_dtype(name)
    _launch(copy2d, c, src, o.as_numba())
    (y,) = c.finish(o)
    assert isinstance(y, np.ndarray) and y.dtype == np.dtype(scalar_type)
    assert y.view(A.storage_dtype(name)).tobytes() == x.view(A.storage_dtype(name)).tobytes()


@needs_device
def test_dev_numpy_3d_input():
    x = np.arange(2 * 3 * 8, dtype=np.float32).reshape(2, 3, 8)
    t = Call().input(x, "x", min_ndim=2)
    assert t.shape == (2, 3, 8) and t.strides == (24, 8, 1)
    assert t.rows_cols() == (6, 8, 8)
    assert t.as_numba().copy_to_host().tolist() == x.tolist()


@needs_device
def test_dev_numpy_row_sliced_view_keeps_row_stride():
    big = np.arange(8 * 10, dtype=np.float32).reshape(8, 10)
    v = big[:, 2:6]
    c = Call()
    t = c.input(v, "x")
    assert t.strides == (10, 1) and t.rows_cols() == (8, 4, 10)
    o = c.output(t.shape, "fp32", "y")
    _launch(copy2d, c, t.as_numba(), o.as_numba())
    (y,) = c.finish(o)
    np.testing.assert_array_equal(y, v)


@needs_device
def test_dev_numpy_layout_errors():
    big = np.zeros((4, 8), np.float32)
    t = Call().input(big[:, ::2], "x")
    with pytest.raises(
        ValueError, match=r"^x: innermost dimension must be contiguous \(stride 1\)"
    ):
        t.rows_cols()
    t = Call().input(np.zeros((4, 6, 8), np.float32)[:, :3, :], "x")
    with pytest.raises(ValueError, match="cannot be flattened into rows"):
        t.rows_cols()


@needs_device
def test_dev_numpy_negative_strides_staged_contiguous():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)[::-1]
    c = Call()
    t = c.input(x, "x")
    assert t.strides == (4, 1)
    np.testing.assert_array_equal(t.as_numba().copy_to_host(), x)


@needs_device
@pytest.mark.parametrize("strided", [False, True])
def test_dev_inout_copy_back(strided):
    big = np.arange(8 * 10, dtype=np.float32).reshape(8, 10)
    before = big.copy()
    target = big[::2, 1:5] if strided else big
    c = Call()
    t = c.inout(target, "x", dtypes=("fp32",))
    _launch(negate2d, c, t.as_numba())
    (back,) = c.finish(t)
    assert back is target
    expected = before.copy()
    if strided:
        expected[::2, 1:5] *= -1
    else:
        expected *= -1
    np.testing.assert_array_equal(big, expected)


@needs_device
def test_dev_inout_bf16_copy_back():
    x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6).astype(ml_dtypes.bfloat16)
    expected = (-x.astype(np.float32)).astype(ml_dtypes.bfloat16)
    c = Call()
    t = c.inout(x, "x")
    assert t.dtype == "bf16"
    _launch(flip_sign2d, c, t.as_numba())  # flips the sign bit of the uint16 storage
    c.finish()
    assert x.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(x.view(np.uint16), expected.view(np.uint16))


@needs_device
def test_dev_inout_read_only_rejected():
    x = np.zeros((2, 4), np.float32)
    x.flags.writeable = False
    with pytest.raises(ValueError, match="^x: array is read-only"):
        Call().inout(x, "x")


@needs_device
def test_dev_bool_mask_as_bytes():
    m = np.array([[True, False, True], [False, False, True]])
    t = Call().input(m, "mask", dtypes=("uint8", "bool"))
    assert t.dtype == "bool" and t.itemsize == 1
    arr = t.as_numba()
    assert arr.dtype == np.uint8
    assert arr.copy_to_host().tolist() == m.astype(np.uint8).tolist()


@needs_device
def test_dev_scratch_and_output_shapes():
    c = Call()
    c.input(np.zeros((3, 4), np.float16), "x")
    s = c.scratch(100)
    assert s.dtype == "uint8" and s.shape == (100,) and s.as_numba().shape == (100,)
    o = c.output((3, 4), "bfloat16", "y")
    assert o.dtype == "bf16" and o.strides == (4, 1) and o.as_numba().dtype == np.uint16


@needs_device
def test_dev_reinterpret_storage_as_bf16():
    bits = np.arange(0x3F80, 0x3F80 + 8, dtype=np.uint16).reshape(2, 4)
    c = Call()
    t = c.input(A.reinterpret(bits, "bf16"), "x", dtypes=("bf16",))
    assert t.dtype == "bf16"
    o = c.output(t.shape, "bf16", "y")
    _launch(copy2d, c, t.as_numba(), o.as_numba())
    (y,) = c.finish(o)
    assert y.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(y.view(np.uint16), bits)
    with pytest.raises(TypeError, match="cannot reinterpret 2-byte elements as fp32"):
        Call().input(A.reinterpret(bits, "fp32"), "x")


@needs_device
def test_dev_numba_device_arrays():
    x = np.linspace(0, 1, 24, dtype=np.float32).reshape(4, 6).astype(ml_dtypes.bfloat16)
    # Numba cannot transfer ml_dtypes arrays itself: move the bits, then view them as bf16
    d = cuda.to_device(x.view(np.uint16)).view(ml_dtypes.bfloat16)
    c = Call()
    t = c.input(d, "x", dtypes=("bf16",))
    assert c.kind == "numba" and t.dtype == "bf16" and t.shape == (4, 6)
    assert t.strides == (6, 1)
    assert t.as_numba().dtype == np.uint16
    o = c.output(t.shape, t.dtype, "y")
    _launch(copy2d, c, t.as_numba(), o.as_numba())
    y, same = c.finish(o, t)
    assert same is d  # inputs come back as the caller's object
    assert y is o.obj and y.dtype == np.uint16  # numba outputs carry the storage dtype
    np.testing.assert_array_equal(y.copy_to_host().view(ml_dtypes.bfloat16), x)
    # storage arrays are plain uint16 unless reinterpreted
    with pytest.raises(
        TypeError,
        match=r"^y: expected dtype one of .*; got uint16 \(bf16 held as uint16: .*bf16'\)\)$",
    ):
        Call().input(y, "y")
    assert Call().input(A.reinterpret(y, "bf16"), "y").dtype == "bf16"
    assert Call().input(y.view(ml_dtypes.bfloat16), "y").dtype == "bf16"
    # a strided view of a device array keeps its strides
    v = Call().input(cuda.to_device(np.zeros((4, 8), np.float32))[:, ::2], "v")
    assert v.strides == (8, 2)


@needs_device
def test_dev_device_then_host_mix_error():
    d = cuda.to_device(np.zeros(4, np.float32))
    c = Call()
    c.input(d, "x")
    with pytest.raises(ValueError) as info:
        c.input(np.zeros(4, np.float32), "gamma")
    assert str(info.value) == (
        "gamma is a host (numpy) array but x is a device array; pass all host or all device arrays"
    )
    c = Call()
    c.input(np.zeros(4, np.float32), "x")
    with pytest.raises(ValueError, match="^x is a host \\(numpy\\) array but gamma is a device"):
        c.input(d, "gamma")
    with pytest.raises(ValueError, match="^x is a host \\(numpy\\) array but beta is a device"):
        c.input(_FakeDeviceArray(), "beta")  # any CUDA-array-interface object is a device array


@needs_device
def test_dev_numba_stream_given():
    s = cuda.stream()
    c = Call(stream=s)
    assert c.numba_stream is s
    assert isinstance(c.stream_handle, int)
    x = np.ones((2, 3), np.float32)
    t = c.input(x, "x")
    o = c.output(t.shape, "fp32", "y")
    _launch(copy2d, c, t.as_numba(), o.as_numba())
    np.testing.assert_array_equal(c.finish(o)[0], x)


# ---------------------------------------------------------------------------------------------
# torch fast path against a stand-in module (torch is not installed on CPU CI; the real thing is
# covered by tests/gpu/test_arrays_gpu.py)
# ---------------------------------------------------------------------------------------------


def _fake_torch(monkeypatch):
    torch, log = make_fake_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(A, "_TORCH_DTYPES", {})  # keep the stand-in dtypes out of the real cache
    return torch, log


def test_torch_fast_path_with_stand_in(monkeypatch):
    torch, log = _fake_torch(monkeypatch)
    dev = FakeTorchDevice("cuda", 0)
    x = torch.Tensor((4, 16), (32, 1), torch.bfloat16, dev, 0x7000)
    c = Call()
    t = c.input(x, "x", dtypes=("fp32", "fp16", "bf16"), ndim=2)
    assert c.kind == "torch" and c.device == 0 and c.stream_handle == 0x1230
    assert (t.dtype, t.ptr, t.shape, t.strides, t.device) == ("bf16", 0x7000, (4, 16), (32, 1), 0)
    assert t.obj is x and t.rows_cols() == (4, 16, 32)
    assert resolve_stream(None, x) == 0x1230

    o = c.output((4, 16), "fp8e4m3", "y")
    assert log == [("empty", (4, 16), torch.float8_e4m3fn, dev)]  # no stream switch needed
    assert o.dtype == "fp8e4m3" and o.ptr == 0x9000 and o.strides == (16, 1)
    assert c.finish(o) == (o.obj,)
    s = c.scratch(64)
    assert log[-1] == ("empty", (64,), torch.uint8, dev) and s.dtype == "uint8"

    with pytest.raises(TypeError, match="^g: expected dtype one of fp32, bf16; got int64$"):
        c.input(torch.Tensor((16,), (1,), torch.int64, dev, 0x100), "g", dtypes=("fp32", "bf16"))
    with pytest.raises(ValueError, match="^g: torch tensor is on cpu; expected a CUDA tensor$"):
        c.input(torch.Tensor((16,), (1,), torch.float32, FakeTorchDevice("cpu", None), 8), "g")
    with pytest.raises(ValueError, match="^g is on cuda:1 but x is on cuda:0$"):
        c.input(torch.Tensor((16,), (1,), torch.float32, FakeTorchDevice("cuda", 1), 8), "g")


def test_torch_outputs_follow_an_explicit_stream(monkeypatch):
    torch, log = _fake_torch(monkeypatch)
    dev = FakeTorchDevice("cuda", 0)
    x = torch.Tensor((4, 16), (16, 1), torch.float32, dev, 0x7000)
    c = Call(stream=0x4440)
    c.input(x, "x")
    assert c.stream_handle == 0x4440
    c.output((4, 16), "fp32", "y")
    assert log == [
        ("enter", ("external", 0x4440)),
        ("empty", (4, 16), torch.float32, dev),
        ("exit", ("external", 0x4440)),
    ]
    log.clear()
    c = Call(stream=0)  # the legacy default stream while torch's current one is another
    c.input(x, "x")
    c.output((2,), "fp16", "y")
    assert log[0] == ("enter", ("default", 0))


def test_torch_zero_fill_follows_an_explicit_stream(monkeypatch):
    """Outputs no kernel writes (gradients of zero rows) are zeroed on the call's stream."""
    torch, log = _fake_torch(monkeypatch)
    monkeypatch.setattr(torch.Tensor, "zero_", lambda self: log.append(("zero_",)), raising=False)
    dev = FakeTorchDevice("cuda", 0)
    x = torch.Tensor((4, 16), (16, 1), torch.float32, dev, 0x7000)
    c = Call(stream=0x4440)
    c.input(x, "x")
    t = c.output((16,), "fp32", "dgamma")
    log.clear()
    c.fill_zero(t)
    assert log == [("enter", ("external", 0x4440)), ("zero_",), ("exit", ("external", 0x4440))]


def test_arrays_read_wrongly_if_taken_are_refused():
    """Checked before anything is staged (no device needed): a reinterpreted array in
    non-native byte order, a numpy masked array (its mask would be ignored); a uint16 array
    (how Numba holds bf16) is refused with the way to mark it."""
    with pytest.raises(TypeError, match="^x: cannot reinterpret elements in non-native byte"):
        Call().input(A.reinterpret(np.ones(4, ">f4"), "fp32"), "x")
    with pytest.raises(TypeError, match="^x: numpy masked arrays are not supported"):
        Call().input(np.ma.masked_array(np.ones(4, np.float32), [0, 1, 0, 0]), "x")
    with pytest.raises(TypeError, match=re.escape("reinterpret(a, 'bf16')")):
        Call().input(np.zeros(4, np.uint16), "x", dtypes=("bf16",))


def test_numpy_dtype_spellings_are_names_too():
    assert [A.dtype_name(s) for s in ("f4", "<f2", "float16")] == ["fp32", "fp16", "fp16"]
    with pytest.raises(TypeError, match="unsupported dtype '>f4'"):
        A.dtype_name(">f4")


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") != "1", reason="simulator arrays")
def test_one_device_kind_a_call(monkeypatch):
    """Outputs and the stream follow the first array's kind: a second kind is refused."""
    monkeypatch.setattr(A, "_view_foreign", _device_view())
    c = Call()
    c.input(cuda.to_device(np.zeros((4, 8), np.float32)), "x")
    with pytest.raises(ValueError, match="^gamma is a DLPack / CUDA Array Interface array but x "):
        c.input(_DeviceDLPack(np.zeros((4, 8), np.float32)), "gamma")


def test_numpy_calls_without_a_gpu_are_runtime_errors():
    from tests.conftest import HAS_GPU

    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" or HAS_GPU:
        pytest.skip("needs a machine without a GPU and without the simulator")
    import numba_norms as nn

    with pytest.raises(RuntimeError, match="^x: no CUDA GPU to copy this numpy array to"):
        nn.rmsnorm_fwd(np.ones((4, 8), np.float32), np.ones(8, np.float32))
