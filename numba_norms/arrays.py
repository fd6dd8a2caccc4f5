"""Array and stream interop: the only module that knows about foreign array types.

Every public operation ingests its arguments through a :class:`Call`, which turns numpy arrays,
Numba device arrays, torch tensors, CuPy arrays and any other object exporting ``__dlpack__``
or ``__cuda_array_interface__`` into :class:`Tensor` records (device pointer, shape, strides in
elements, dtype name, device ordinal), allocates outputs of the caller's kind, and converts the
results back in :meth:`Call.finish`.

Kinds of calls (decided by the first array argument):

``"numpy"``
    Host arrays. Inputs are staged to the device with ``numba.cuda.to_device`` on the call's
    stream, keeping their strides (a strided view is staged as the memory span it covers);
    arrays with negative strides are staged as a C-contiguous copy. Outputs are Numba device
    arrays copied back to numpy arrays of the *logical* dtype (``ml_dtypes.bfloat16`` etc.) by
    :meth:`Call.finish`, which also copies in-out arrays back and synchronizes the stream. This
    kind works under Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``).
``"numba"``
    Numba device arrays, used zero-copy. A Numba array whose dtype is ``ml_dtypes.bfloat16`` or
    ``ml_dtypes.float8_*`` (e.g. ``d.view(ml_dtypes.bfloat16)``) is read as bf16/fp8. Outputs are
    Numba device arrays of the *storage* dtype (``uint16`` for bf16, ``uint8`` for fp8): Numba
    cannot copy ml_dtypes arrays to or from the host (they do not support the buffer protocol),
    so a logically typed output would break ``copy_to_host()``. Read results with
    ``y.copy_to_host().view(ml_dtypes.bfloat16)``; pass them back as
    ``reinterpret(y, "bf16")`` (or ``y.view(ml_dtypes.bfloat16)``).
``"torch"``
    CUDA tensors, read through torch's own API (``data_ptr()``, ``stride()``, ``dtype``).
    Outputs and scratch come from ``torch.empty`` (caching allocator, stream-ordered on the
    call's stream); nothing synchronizes.
``"cupy"``
    CuPy arrays, read through CuPy's attributes. Outputs come from ``cupy.empty``; for bf16/fp8
    the logical ``ml_dtypes`` dtype is used when the installed CuPy accepts it (CuPy >= 14 for
    bf16), otherwise the storage dtype (``uint16`` for bf16, ``uint8`` for fp8). Storage arrays
    can be fed back with :func:`reinterpret`.
``"foreign"``
    Anything else with ``__dlpack__`` or ``__cuda_array_interface__``, read with
    ``cuda.core.utils.StridedMemoryView``. Outputs are Numba device arrays (as for ``"numba"``).

To hand a raw storage array (CuPy or Numba ``uint16`` holding bf16 bits, ``uint8`` holding fp8)
to the library, wrap it with :func:`reinterpret`.

Importing this module imports only numpy and ml_dtypes; Numba, cuda.core, torch and CuPy are
imported when an argument needs them.
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Collection
from typing import Any

import ml_dtypes
import numpy as np

__all__ = [
    "DTYPE_NAMES",
    "Call",
    "Tensor",
    "byte_alignment",
    "dtype_name",
    "itemsize",
    "numpy_dtype",
    "reinterpret",
    "resolve_stream",
    "storage_dtype",
]

# --------------------------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------------------------

DTYPE_NAMES: tuple[str, ...] = ("fp32", "fp16", "bf16", "fp8e4m3", "fp8e5m2", "uint8", "bool")

_NUMPY: dict[str, np.dtype] = {
    "fp32": np.dtype(np.float32),
    "fp16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "fp8e4m3": np.dtype(ml_dtypes.float8_e4m3fn),
    "fp8e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "uint8": np.dtype(np.uint8),
    "bool": np.dtype(np.bool_),
}
_STORAGE: dict[str, np.dtype] = {
    "fp32": np.dtype(np.float32),
    "fp16": np.dtype(np.float16),
    "bf16": np.dtype(np.uint16),
    "fp8e4m3": np.dtype(np.uint8),
    "fp8e5m2": np.dtype(np.uint8),
    "uint8": np.dtype(np.uint8),
    "bool": np.dtype(np.uint8),
}
_ITEMSIZE: dict[str, int] = {k: v.itemsize for k, v in _NUMPY.items()}

# String spellings (lower case) -> name. torch/numpy dtype names are reached through these too.
_ALIASES: dict[str, str] = {
    "fp32": "fp32",
    "float32": "fp32",
    "f32": "fp32",
    "fp16": "fp16",
    "float16": "fp16",
    "half": "fp16",
    "f16": "fp16",
    "bf16": "bf16",
    "bfloat16": "bf16",
    "fp8e4m3": "fp8e4m3",
    "float8_e4m3fn": "fp8e4m3",
    "e4m3": "fp8e4m3",
    "e4m3fn": "fp8e4m3",
    "fp8e5m2": "fp8e5m2",
    "float8_e5m2": "fp8e5m2",
    "e5m2": "fp8e5m2",
    "uint8": "uint8",
    "u8": "uint8",
    "bool": "bool",
    "bool_": "bool",
}

# Hashable dtype-likes already seen -> name. Seeded with names, numpy dtypes and scalar types;
# torch dtypes are added on first sight.
_DTYPE_CACHE: dict[Any, str] = dict(_ALIASES)
for _name, _dt in _NUMPY.items():
    _DTYPE_CACHE[_dt] = _name
    _DTYPE_CACHE[_dt.type] = _name
del _name, _dt

_SUPPORTED_MSG = ", ".join(DTYPE_NAMES)


def _lookup_dtype(dtype_like: Any) -> tuple[str | None, str]:
    """Return ``(name or None, display string)`` for a dtype-like, without raising."""
    try:
        name = _DTYPE_CACHE.get(dtype_like)
    except TypeError:  # unhashable
        return None, type(dtype_like).__name__
    if name is not None:
        return name, name
    if isinstance(dtype_like, str):
        key = dtype_like.strip().lower()
        for prefix in ("torch.", "numpy.", "np.", "ml_dtypes.", "cupy."):
            if key.startswith(prefix):
                key = key[len(prefix) :]
                break
        name = _ALIASES.get(key)
        if name is None:  # numpy's spellings: "f4", "<f2", "float32", ...
            try:
                name = _DTYPE_CACHE.get(np.dtype(dtype_like.strip()))
            except TypeError:
                pass
        return name, dtype_like
    mod = type(dtype_like).__module__ or ""
    if mod.startswith("torch"):  # torch.dtype: str() is "torch.bfloat16"
        display = str(dtype_like).removeprefix("torch.")
        name = _ALIASES.get(display)
        if name is not None:
            _DTYPE_CACHE[dtype_like] = name
        return name, display
    try:
        dt = np.dtype(dtype_like)
    except Exception:
        return None, repr(dtype_like)
    name = _DTYPE_CACHE.get(dt)
    if name is not None:
        _DTYPE_CACHE[dtype_like] = name
        return name, name
    if not dt.isnative:  # '>f4' is named "float32" too: say what differs
        return None, f"{dt.name} in non-native byte order ({dt.str})"
    return None, dt.name


def dtype_name(dtype_like: Any, name: str | None = None) -> str:
    """Canonical dtype name of a numpy/ml_dtypes/torch/CuPy dtype, scalar type or string.

    Parameters
    ----------
    dtype_like : object
        ``numpy.float32``, ``np.dtype("float16")``, ``ml_dtypes.bfloat16``,
        ``torch.float8_e4m3fn``, ``"half"``, ``"bf16"``, ...
    name : str, optional
        The argument it came as, named first in the error message.

    Returns
    -------
    str
        One of :data:`DTYPE_NAMES`.

    Raises
    ------
    TypeError
        If the dtype is not supported; the message lists the supported names.
    """
    found, display = _lookup_dtype(dtype_like)
    if found is None:
        raise TypeError(
            ("" if name is None else f"{name}: ")
            + f"unsupported dtype {display!r}; supported: {_SUPPORTED_MSG} (aliases: float32, "
            "float16/half, bfloat16, float8_e4m3fn/e4m3, float8_e5m2/e5m2)"
        )
    return found


def numpy_dtype(name: str) -> np.dtype:
    """Logical numpy dtype of a dtype name (``ml_dtypes`` types for bf16 and fp8)."""
    dt = _NUMPY.get(name)
    return dt if dt is not None else _NUMPY[dtype_name(name)]


def storage_dtype(name: str) -> np.dtype:
    """Storage dtype kernels see: bf16 -> uint16, fp8/bool -> uint8, else the logical dtype."""
    dt = _STORAGE.get(name)
    return dt if dt is not None else _STORAGE[dtype_name(name)]


def itemsize(name: str) -> int:
    """Bytes per element of a dtype name."""
    n = _ITEMSIZE.get(name)
    return n if n is not None else _ITEMSIZE[dtype_name(name)]


def byte_alignment(nbytes: int) -> int:
    """Largest power of two, at most 256, dividing ``nbytes`` (an address or a row pitch in
    bytes); 0 counts as 256. The planner's vector widths follow from it."""
    return 256 if nbytes == 0 else min(256, nbytes & -nbytes)


_TORCH_DTYPES: dict[str, Any] = {}


def _torch_dtype(torch: Any, name: str) -> Any:
    dt = _TORCH_DTYPES.get(name)
    if dt is None:
        attr = {
            "fp32": "float32",
            "fp16": "float16",
            "bf16": "bfloat16",
            "fp8e4m3": "float8_e4m3fn",
            "fp8e5m2": "float8_e5m2",
            "uint8": "uint8",
            "bool": "bool",
        }[name]
        dt = _TORCH_DTYPES[name] = getattr(torch, attr)
    return dt


# --------------------------------------------------------------------------------------------
# lazy imports and simulator detection
# --------------------------------------------------------------------------------------------

_SIM: bool | None = None


def _cuda() -> Any:
    """``numba.cuda``, imported on first use."""
    mod = sys.modules.get("numba.cuda")
    if mod is None or not hasattr(mod, "to_device"):
        from numba import cuda as mod
    return mod


def _simulating() -> bool:
    """True when Numba's CUDA simulator is active (``NUMBA_ENABLE_CUDASIM=1``)."""
    global _SIM
    if _SIM is None:
        _cuda()
        from numba import config

        _SIM = bool(config.ENABLE_CUDASIM)
    return _SIM


def _c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    nd = len(shape)
    if nd == 2:
        return (shape[1] or 1, 1)
    if nd == 1:
        return (1,)
    strides = [1] * nd
    acc = 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = acc
        acc *= max(shape[i], 1)
    return tuple(strides)


def _elem_strides(byte_strides: Any, nbytes: int, name: str) -> tuple[int, ...]:
    if len(byte_strides) == 2:  # fast path
        a, b = byte_strides
        if not (a % nbytes or b % nbytes):
            return (a // nbytes, b // nbytes)
    out = []
    for s in byte_strides:
        q, r = divmod(int(s), nbytes)
        if r:
            raise ValueError(
                f"{name}: byte strides {tuple(byte_strides)} are not multiples of the item size "
                f"{nbytes}"
            )
        out.append(q)
    return tuple(out)


# --------------------------------------------------------------------------------------------
# Tensor
# --------------------------------------------------------------------------------------------


class Tensor:
    """One array argument of a call, living on the device (natively or as a staged copy).

    Attributes
    ----------
    name : str
        Argument name, used in error messages.
    ptr : int
        Device address of element ``[0, 0, ...]`` (0 allowed when ``size == 0``; under the
        CUDA simulator the host address of the simulated buffer).
    shape : tuple of int
    strides : tuple of int
        Strides in elements.
    dtype : str
        Dtype name (see :data:`DTYPE_NAMES`).
    itemsize : int
    device : int
        CUDA device ordinal.
    obj : object
        Device object keeping the memory alive (the caller's array, a staged copy or an
        allocated output).
    kind : str
        Kind of ``obj``: ``"numba"``, ``"torch"``, ``"cupy"`` or ``"foreign"`` (staged numpy
        arrays and numpy-kind outputs are ``"numba"``).
    """

    __slots__ = (
        "name",
        "ptr",
        "shape",
        "strides",
        "dtype",
        "itemsize",
        "device",
        "obj",
        "kind",
        "_native",
        "_numba",
    )

    def __init__(
        self,
        name: str,
        ptr: int,
        shape: tuple[int, ...],
        strides: tuple[int, ...],
        dtype: str,
        device: int,
        obj: Any,
        kind: str = "numba",
        native: Any = None,
    ) -> None:
        self.name = name
        self.ptr = ptr
        self.shape = shape
        self.strides = strides
        self.dtype = dtype
        self.itemsize = _ITEMSIZE[dtype]
        self.device = device
        self.obj = obj
        self.kind = kind
        self._native = obj if native is None else native
        self._numba = None

    def __repr__(self) -> str:
        return (
            f"Tensor({self.name!r}, dtype={self.dtype}, shape={self.shape}, "
            f"strides={self.strides}, ptr=0x{self.ptr:x}, device={self.device}, kind={self.kind})"
        )

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    def check_contiguous(self) -> None:
        """Raise ValueError unless the elements lie contiguously in C order: the layout a kernel
        handed only the base pointer (weights, per-row statistics) reads."""
        expected = 1
        for n, s in zip(reversed(self.shape), reversed(self.strides), strict=True):
            if n > 1 and s != expected:
                raise ValueError(
                    f"{self.name}: expected contiguous elements, got shape {self.shape} with "
                    f"strides {self.strides} (elements)"
                )
            expected *= n

    def rows_cols(self) -> tuple[int, int, int]:
        """View the tensor as a matrix of rows: ``(rows, cols, row_stride_elements)``.

        ``cols`` is ``shape[-1]``; all leading dimensions are flattened into ``rows``. When there
        is at most one row the row stride is reported as ``cols``.

        Raises
        ------
        ValueError
            If the innermost dimension is not contiguous (stride 1), if the leading dimensions
            cannot be described by one uniform row stride, or if a stride is negative.
        """
        shape, strides = self.shape, self.strides
        if 0 in shape:  # empty: no element is ever addressed, so any strides will do
            rows = 1
            for n in shape[:-1]:
                rows *= n
            return rows, shape[-1], shape[-1]
        if len(shape) == 2:  # fast path
            rows, cols = shape
            row_stride, col_stride = strides
            if (cols <= 1 or col_stride == 1) and (rows <= 1 or row_stride >= 0):
                return rows, cols, (row_stride if rows > 1 else cols)
        if not shape:
            raise ValueError(f"{self.name}: expected at least 1 dimension, got a 0-d array")
        cols = shape[-1]
        if cols > 1 and strides[-1] != 1:
            raise ValueError(
                f"{self.name}: innermost dimension must be contiguous (stride 1), "
                f"got stride {strides[-1]}"
            )
        rows = 1
        lead = []
        for n, s in zip(shape[:-1], strides[:-1], strict=True):
            rows *= n
            if n != 1:
                lead.append((n, s))
        if rows <= 1 or not lead:
            return rows, cols, cols
        n_in, row_stride = lead[-1]
        if row_stride < 0:
            raise ValueError(f"{self.name}: negative strides are not supported (strides {strides})")
        expected = row_stride * n_in
        for n, s in reversed(lead[:-1]):
            if s != expected:
                raise ValueError(
                    f"{self.name}: leading dimensions of shape {shape} with strides {strides} "
                    "cannot be flattened into rows with one uniform row stride"
                )
            expected = s * n
        return rows, cols, row_stride

    def alignment(self) -> int:
        """Largest power of two (<= 256) dividing ``ptr`` and the row pitch in bytes.

        The row pitch (``row_stride * itemsize`` from :meth:`rows_cols`) only counts when the
        tensor has more than one row; ``ptr == 0`` counts as 256-byte aligned. If the layout is
        not a valid row layout the item size bounds the result.
        """
        a = byte_alignment(self.ptr)
        if len(self.shape) > 1:
            try:
                rows, _, row_stride = self.rows_cols()
            except ValueError:
                return min(a, self.itemsize)
            if rows > 1:
                a = min(a, byte_alignment(row_stride * self.itemsize))
        return a

    def as_numba(self) -> Any:
        """Zero-copy Numba device array with the *storage* dtype and this shape and strides.

        The array is created once and cached. For a tensor on another device than Numba's
        current one it is created under that device's context; launch Numba kernels on it
        under ``numba.cuda.gpus[tensor.device]``.
        """
        arr = self._numba
        if arr is None:
            arr = self._numba = _make_numba(self)
        return arr


def _make_numba(t: Tensor) -> Any:
    storage = _STORAGE[t.dtype]
    obj = t.obj
    if getattr(type(obj), "__cuda_ndarray__", False):  # Numba (or simulated) device array
        return obj if obj.dtype == storage else obj.view(storage)
    cuda = _cuda()
    if _simulating():
        raise RuntimeError(f"{t.name}: {t.kind} arrays cannot be used under the CUDA simulator")
    nbytes = storage.itemsize
    desc = {
        "shape": t.shape,
        "strides": tuple(s * nbytes for s in t.strides),
        "data": (t.ptr, False),
        "typestr": storage.str,
        "version": 3,
    }  # no "stream": the call orders work itself, Numba must not synchronize
    if t.device != cuda.get_current_device().id:
        with cuda.gpus[t.device]:
            return cuda.from_cuda_array_interface(desc, owner=obj, sync=False)
    return cuda.from_cuda_array_interface(desc, owner=obj, sync=False)


# --------------------------------------------------------------------------------------------
# reinterpretation of storage arrays
# --------------------------------------------------------------------------------------------


class _Reinterpreted:
    __slots__ = ("obj", "dtype")

    def __init__(self, obj: Any, dtype: str) -> None:
        self.obj = obj
        self.dtype = dtype


def reinterpret(obj: Any, dtype: Any) -> Any:
    """Mark a storage array (e.g. a CuPy ``uint16`` array holding bf16 bits) as ``dtype``.

    The result is only meant to be passed as an argument of this library; the array is used
    as-is, with its bits read as ``dtype``. Its item size must match.

    Parameters
    ----------
    obj : array
        Any array this library accepts.
    dtype : dtype-like
        Logical dtype, e.g. ``"bf16"`` or ``"fp8e4m3"``.
    """
    return _Reinterpreted(obj, dtype_name(dtype))


# --------------------------------------------------------------------------------------------
# classification
# --------------------------------------------------------------------------------------------

_KINDS: dict[type, str] = {}

_KIND_WORDS = {
    "numba": "Numba device array",
    "torch": "torch tensor",
    "cupy": "CuPy array",
    "foreign": "DLPack / CUDA Array Interface array",
}
_EXPECTED_ARRAY = (
    "expected an array (numpy array, Numba device array, torch tensor, CuPy array, or an "
    "object with __dlpack__ or __cuda_array_interface__)"
)


def _classify(obj: Any) -> str | None:
    t = type(obj)
    kind = _KINDS.get(t)
    if kind is not None:
        return kind
    mod = t.__module__ or ""
    torch = sys.modules.get("torch")
    cupy = sys.modules.get("cupy")
    if mod.startswith("numba") and getattr(t, "__cuda_ndarray__", False):
        kind = "numba"
    elif torch is not None and isinstance(obj, torch.Tensor):
        kind = "torch"
    elif cupy is not None and isinstance(obj, cupy.ndarray):
        kind = "cupy"
    elif isinstance(obj, np.ndarray):
        kind = "numpy"
    elif t is _Reinterpreted:
        kind = "reinterpreted"
    elif hasattr(t, "__dlpack__") or hasattr(obj, "__cuda_array_interface__"):
        kind = "foreign"
    else:
        return None
    _KINDS[t] = kind
    return kind


# --------------------------------------------------------------------------------------------
# streams
# --------------------------------------------------------------------------------------------


def _torch_current_stream(torch: Any, device_index: int) -> int:
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return int(raw(device_index))
    return int(torch.cuda.current_stream(device_index).cuda_stream)


def _cupy_current_stream(cupy: Any, device_id: int | None = None) -> int:
    if device_id is not None:
        try:
            return int(cupy.cuda.get_current_stream(device_id).ptr)
        except TypeError:
            pass
    return int(cupy.cuda.get_current_stream().ptr)


def _is_sim_stream(stream: Any) -> bool:
    return (type(stream).__module__ or "").startswith("numba.cuda.simulator")


def resolve_stream(stream: Any, first_input_obj: Any = None) -> int:
    """Raw ``CUstream`` handle (int) for a stream argument; 0 is the legacy default stream.

    Parameters
    ----------
    stream : None, int or stream object
        ``None`` means the current stream of the first input's library (torch:
        ``torch.cuda.current_stream(device)``, CuPy: ``cupy.cuda.get_current_stream()``), else 0.
        Accepted objects: Numba streams, cuda.core streams and anything with
        ``__cuda_stream__`` (returning ``(version, handle)``), ``torch.cuda.Stream``
        (``.cuda_stream``), CuPy streams (``.ptr``), raw ints.
    first_input_obj : array, optional
        The call's first array argument, consulted when ``stream`` is ``None``.

    Raises
    ------
    TypeError
        For anything else.
    """
    if stream is None:
        obj = first_input_obj
        if type(obj) is _Reinterpreted:
            obj = obj.obj
        if obj is None:
            return 0
        kind = _classify(obj)
        if kind == "torch":
            if not obj.is_cuda:
                return 0
            return _torch_current_stream(sys.modules["torch"], obj.get_device())
        if kind == "cupy":
            return _cupy_current_stream(sys.modules["cupy"], obj.device.id)
        return 0
    if isinstance(stream, int) and not isinstance(stream, bool):
        if stream < 0:
            raise TypeError(f"stream: expected a non-negative CUstream handle; got {stream}")
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        info = proto() if callable(proto) else proto
        try:
            return int(info[1])
        except (TypeError, IndexError, ValueError):
            raise TypeError(
                f"stream: __cuda_stream__ must give (version, handle); got {info!r}"
            ) from None
    for attr in ("cuda_stream", "ptr"):  # torch.cuda.Stream, CuPy streams
        value = getattr(stream, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    handle = getattr(stream, "handle", None)  # older Numba / cuda.core streams
    if handle is not None:
        value = getattr(handle, "value", handle)
        try:
            return int(value or 0)
        except (TypeError, ValueError):
            pass
    if _is_sim_stream(stream):
        return 0
    raise TypeError(
        "stream: expected None, an int CUstream handle, or a stream object (Numba, cuda.core, "
        f"torch, CuPy, or any object with __cuda_stream__); got {type(stream).__name__}"
    )


_EXTERNAL_STREAMS: dict[int, Any] = {}


def _numba_stream_for(handle: int) -> Any:
    cuda = _cuda()
    if handle == 0 or _simulating():
        return cuda.default_stream()
    s = _EXTERNAL_STREAMS.get(handle)
    if s is None:
        if len(_EXTERNAL_STREAMS) > 64:
            _EXTERNAL_STREAMS.clear()
        s = _EXTERNAL_STREAMS[handle] = cuda.external_stream(handle)
    return s


# --------------------------------------------------------------------------------------------
# ingestion per kind
# --------------------------------------------------------------------------------------------


def _check_meta(
    name: str,
    dt: str | None,
    display: str,
    nd: int,
    shape: Any,
    dtypes: Collection[str] | None,
    ndim: int | None,
    min_ndim: int | None,
) -> None:
    if dt is None or (dtypes is not None and dt not in dtypes):
        allowed = ", ".join(dtypes) if dtypes is not None else _SUPPORTED_MSG
        allowed = allowed if dtypes is not None and len(dtypes) == 1 else f"one of {allowed}"
        hint = ""
        if display == "uint16":  # how Numba holds bf16 (our own bf16 outputs included)
            hint = " (bf16 held as uint16: numba_norms.arrays.reinterpret(a, 'bf16'))"
        raise TypeError(f"{name}: expected dtype {allowed}; got {display}{hint}")
    if ndim is not None and nd != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions; got {nd} (shape {tuple(shape)})")
    if min_ndim is not None and nd < min_ndim:
        raise ValueError(
            f"{name}: expected at least {min_ndim} dimensions; got {nd} (shape {tuple(shape)})"
        )


def _numba_view(base: Any, shape: tuple[int, ...], byte_strides: tuple[int, ...]) -> Any:
    """Strided view over the start of a contiguous (simulated) Numba device array."""
    if _simulating():
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        ary = np.lib.stride_tricks.as_strided(base._ary, shape=shape, strides=byte_strides)
        return FakeCUDAArray(ary, stream=base.stream)
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    return DeviceNDArray(
        shape, byte_strides, base.dtype, stream=base.stream, gpu_data=base.gpu_data
    )


def _numba_ptr_device(arr: Any) -> tuple[int, int]:
    if _simulating():
        return int(arr._ary.ctypes.data), 0
    ptr = arr.device_ctypes_pointer.value or 0
    gpu_data = getattr(arr, "gpu_data", None)
    try:
        device = gpu_data.context.device.id
    except AttributeError:
        device = _cuda().get_current_device().id
    return ptr, device


class _Staged:
    """Host array staged to the device: the device buffer and how the array lies in it."""

    __slots__ = ("host", "buf", "shape", "byte_strides")

    def __init__(self, host: np.ndarray, buf: Any, shape: Any, byte_strides: Any) -> None:
        self.host = host  # caller's array viewed with the storage dtype
        self.buf = buf  # 1-D or full-shape device array holding the data
        self.shape = shape
        self.byte_strides = byte_strides


def _stage_numpy(arr: np.ndarray, storage: np.dtype, stream: Any) -> tuple[Any, _Staged]:
    cuda = _cuda()
    host = arr if arr.dtype == storage else arr.view(storage)
    if host.flags.c_contiguous or host.size == 0 or any(s < 0 for s in host.strides):
        src = host if host.flags.c_contiguous else np.ascontiguousarray(host)
        dev = cuda.to_device(src, stream=stream)
        return dev, _Staged(host, dev, src.shape, src.strides)
    # Keep the caller's strides: copy the memory span the view covers.
    nb = host.itemsize
    span = 1 + sum((n - 1) * s for n, s in zip(host.shape, host.strides, strict=True)) // nb
    flat = np.lib.stride_tricks.as_strided(host, shape=(span,), strides=(nb,))
    buf = cuda.to_device(flat, stream=stream)
    dev = _numba_view(buf, host.shape, host.strides)
    return dev, _Staged(host, buf, host.shape, host.strides)


# --------------------------------------------------------------------------------------------
# Call
# --------------------------------------------------------------------------------------------


_IN_HOST_MEMORY = "array is in host memory; pass a numpy array or a device array"
_DLPACK_CPU = 1  # kDLCPU


def _dlpack_on_host(obj: Any) -> bool:
    """A DLPack exporter that says its array is in CPU memory."""
    try:
        return obj.__dlpack_device__()[0] == _DLPACK_CPU
    except Exception:  # no DLPack, or an exporter that cannot say: _view_foreign decides
        return False


class Call:
    """The arrays of one public call: ingestion, output allocation and result conversion.

    Parameters
    ----------
    stream : optional
        Anything :func:`resolve_stream` accepts. ``None`` uses the current stream of the first
        input's library (0, the legacy default stream, for numpy and Numba inputs).

    Attributes
    ----------
    kind : str or None
        ``"numpy"``, ``"numba"``, ``"torch"``, ``"cupy"`` or ``"foreign"``: the kind of the first
        array argument (``None`` before any).
    device : int or None
        CUDA device ordinal of the call's arrays.
    """

    __slots__ = (
        "kind",
        "device",
        "_stream",
        "_handle",
        "_numba_stream",
        "_first_name",
        "_host_name",
        "_device_name",
        "_device_kind",
        "_staged",
        "_alloc_ctx",
        "_torch_device",
        "_cupy_device",
    )

    def __init__(self, stream: Any = None) -> None:
        self.kind: str | None = None
        self.device: int | None = None
        self._stream = stream
        self._handle: int | None = None if stream is None else resolve_stream(stream)
        self._numba_stream: Any = None
        self._first_name: str | None = None
        self._host_name: str | None = None
        self._device_name: str | None = None
        self._device_kind: str | None = None
        self._staged: list[tuple[Tensor, _Staged]] = []
        self._alloc_ctx: Any = None
        self._torch_device: Any = None
        self._cupy_device: Any = None

    # -- streams ------------------------------------------------------------------------------

    @property
    def stream_handle(self) -> int:
        """Raw ``CUstream`` handle of the call (0 = legacy default stream)."""
        h = self._handle
        return 0 if h is None else h  # not pinned: the first input may still choose a stream

    @property
    def stream_arg(self) -> int:
        """Stream argument for ``rtc.launch`` (the raw handle)."""
        return self.stream_handle

    @property
    def numba_stream(self) -> Any:
        """Numba stream object for this call (the one given, or an external/default stream)."""
        s = self._numba_stream
        if s is None:
            given = self._stream
            mod = type(given).__module__ or ""
            if given is not None and mod.startswith("numba") and hasattr(given, "synchronize"):
                s = given
            else:
                s = _numba_stream_for(self.stream_handle)
            if self._handle is not None:
                self._numba_stream = s
        return s

    # -- ingestion ----------------------------------------------------------------------------

    def input(
        self,
        obj: Any,
        name: str,
        *,
        dtypes: Collection[str] | None = None,
        ndim: int | None = None,
        min_ndim: int | None = None,
        optional: bool = False,
    ) -> Tensor | None:
        """Ingest one array argument the kernel reads.

        Parameters
        ----------
        obj : array or None
            The argument.
        name : str
            Its name, for error messages.
        dtypes : collection of str, optional
            Accepted dtype names.
        ndim, min_ndim : int, optional
            Required / minimum number of dimensions.
        optional : bool
            Return ``None`` for ``obj is None`` instead of raising.

        Raises
        ------
        TypeError
            ``obj`` is not an array, or has a dtype outside ``dtypes`` (or unsupported).
        ValueError
            Wrong number of dimensions, a torch CPU tensor or other host-only foreign array,
            host and device arrays mixed, or arrays on different devices.
        """
        if obj is None:
            if optional:
                return None
            raise TypeError(f"{name}: expected an array; got None")
        return self._ingest(obj, name, dtypes, ndim, min_ndim, False)

    def inout(
        self,
        obj: Any,
        name: str,
        *,
        dtypes: Collection[str] | None = None,
        ndim: int | None = None,
        min_ndim: int | None = None,
    ) -> Tensor:
        """Like :meth:`input` (same keyword arguments), for an array the kernel writes.

        For numpy arrays the device copy is written back into the caller's array by
        :meth:`finish`; read-only numpy arrays are rejected.
        """
        if obj is None:
            raise TypeError(f"{name}: expected an array; got None")
        return self._ingest(obj, name, dtypes, ndim, min_ndim, True)

    def _ingest(
        self,
        obj: Any,
        name: str,
        dtypes: Collection[str] | None,
        ndim: int | None,
        min_ndim: int | None,
        writes: bool,
    ) -> Tensor:
        kind = _KINDS.get(type(obj)) or _classify(obj)
        forced = None
        if kind == "reinterpreted":
            forced, obj = obj.dtype, obj.obj
            kind = _classify(obj)
        if kind is None or kind == "reinterpreted":
            raise TypeError(f"{name}: {_EXPECTED_ARRAY}; got {type(obj).__name__}")
        if kind == "torch" and not obj.is_cuda:
            raise ValueError(f"{name}: torch tensor is on {obj.device}; expected a CUDA tensor")
        if kind == "foreign" and _dlpack_on_host(obj):  # before _admit calls it a device array
            raise ValueError(f"{name}: {type(obj).__name__} {_IN_HOST_MEMORY}")
        self._admit(obj, kind, name)

        if kind == "torch":
            t = self._from_torch(obj, name, forced, dtypes, ndim, min_ndim)
        elif kind == "numba":
            t = self._from_numba(obj, name, forced, dtypes, ndim, min_ndim)
        elif kind == "numpy":
            t = self._from_numpy(obj, name, forced, dtypes, ndim, min_ndim, writes)
        elif kind == "cupy":
            t = self._from_cupy(obj, name, forced, dtypes, ndim, min_ndim)
        else:
            t = self._from_foreign(obj, name, forced, dtypes, ndim, min_ndim, writes)

        if kind != "numpy":
            device = t.device
            if self.device is None:
                self.device = device
            elif device != self.device:
                raise ValueError(
                    f"{name} is on cuda:{device} but {self._first_name} is on cuda:{self.device}"
                )
        return t

    def _admit(self, obj: Any, kind: str, name: str) -> None:
        """Record the first input (kind, stream); reject host/device mixes."""
        if self.kind is None:
            self.kind = kind
            self._first_name = name
            if self._handle is None:
                self._handle = resolve_stream(None, obj)
        if kind == "numpy":
            if self._host_name is None:
                self._host_name = name
            if self._device_name is not None:
                host, dev = name, self._device_name
            else:
                return
        else:
            if self._device_name is None:
                self._device_name = name
                self._device_kind = kind
            if self._host_name is not None:
                host, dev = self._host_name, name
            elif kind != self._device_kind:  # outputs and the stream follow the first one
                raise ValueError(
                    f"{name} is a {_KIND_WORDS[kind]} but {self._device_name} is a "
                    f"{_KIND_WORDS[self._device_kind]}; pass arrays of one kind"
                )
            else:
                return
        raise ValueError(
            f"{host} is a host (numpy) array but {dev} is a device array; "
            "pass all host or all device arrays"
        )

    @staticmethod
    def _dtype_of(dtype: Any, nbytes: int, forced: str | None, name: str) -> tuple[str | None, str]:
        if forced is not None:
            if isinstance(dtype, np.dtype) and not dtype.isnative:
                raise TypeError(
                    f"{name}: cannot reinterpret elements in non-native byte order ({dtype.str})"
                )
            if _ITEMSIZE[forced] != nbytes:
                raise TypeError(
                    f"{name}: cannot reinterpret {nbytes}-byte elements as {forced} "
                    f"({_ITEMSIZE[forced]} bytes)"
                )
            return forced, forced
        dt = _DTYPE_CACHE.get(dtype)
        if dt is not None:
            return dt, dt
        return _lookup_dtype(dtype)

    def _from_torch(self, obj, name, forced, dtypes, ndim, min_ndim) -> Tensor:
        torch = sys.modules["torch"]
        if obj.layout is not torch.strided:
            raise ValueError(f"{name}: expected a strided (dense) torch tensor; got {obj.layout}")
        dtype = obj.dtype
        dt = _DTYPE_CACHE.get(dtype) if forced is None else None
        if dt is None:
            dt, display = self._dtype_of(dtype, obj.element_size(), forced, name)
        else:
            display = dt
        shape = tuple(obj.shape)
        _check_meta(name, dt, display, len(shape), shape, dtypes, ndim, min_ndim)
        if self._torch_device is None:
            self._torch_device = obj.device
        return Tensor(
            name, obj.data_ptr(), shape, tuple(obj.stride()), dt, obj.get_device(), obj, "torch"
        )

    def _from_numba(self, obj, name, forced, dtypes, ndim, min_ndim) -> Tensor:
        dtype = obj.dtype
        dt, display = self._dtype_of(dtype, dtype.itemsize, forced, name)
        shape = tuple(obj.shape)
        _check_meta(name, dt, display, len(shape), shape, dtypes, ndim, min_ndim)
        ptr, device = _numba_ptr_device(obj)
        strides = _elem_strides(obj.strides, dtype.itemsize, name)
        t = Tensor(name, ptr, shape, strides, dt, device, obj, "numba")
        if dtype == _STORAGE[dt]:
            t._numba = obj
        return t

    def _from_numpy(self, obj, name, forced, dtypes, ndim, min_ndim, writes) -> Tensor:
        if isinstance(obj, np.ma.MaskedArray):
            raise TypeError(
                f"{name}: numpy masked arrays are not supported (the mask would be ignored); "
                "pass a.filled(value) or a.data"
            )
        dtype = obj.dtype
        dt, display = self._dtype_of(dtype, dtype.itemsize, forced, name)
        _check_meta(name, dt, display, obj.ndim, obj.shape, dtypes, ndim, min_ndim)
        if writes and not obj.flags.writeable:
            raise ValueError(f"{name}: array is read-only but the operation writes it")
        try:
            dev, staged = _stage_numpy(obj, _STORAGE[dt], self.numba_stream)
        except ImportError as exc:  # numba-cuda's CudaSupportError: no driver, no GPU
            raise RuntimeError(
                f"{name}: no CUDA GPU to copy this numpy array to (NUMBA_ENABLE_CUDASIM=1 runs "
                f"the Numba kernels on the CPU): {exc}"
            ) from exc
        ptr, device = _numba_ptr_device(dev)
        if self.device is None:
            self.device = device
        nb = dtype.itemsize
        t = Tensor(
            name,
            ptr,
            tuple(dev.shape),
            _elem_strides(dev.strides, nb, name),
            dt,
            device,
            dev,
            "numba",
            native=obj,
        )
        t._numba = dev
        if writes:
            self._staged.append((t, staged))
        return t

    def _from_cupy(self, obj, name, forced, dtypes, ndim, min_ndim) -> Tensor:
        dtype = obj.dtype
        dt, display = self._dtype_of(dtype, dtype.itemsize, forced, name)
        shape = tuple(obj.shape)
        _check_meta(name, dt, display, len(shape), shape, dtypes, ndim, min_ndim)
        if self._cupy_device is None:
            self._cupy_device = obj.device
        return Tensor(
            name,
            int(obj.data.ptr),
            shape,
            _elem_strides(obj.strides, dtype.itemsize, name),
            dt,
            int(obj.device.id),
            obj,
            "cupy",
        )

    def _from_foreign(self, obj, name, forced, dtypes, ndim, min_ndim, writes) -> Tensor:
        view = _view_foreign(obj, self.stream_handle, name)
        ptr, shape, strides, dtype, device, accessible, readonly = view
        if not accessible:
            raise ValueError(f"{name}: {type(obj).__name__} {_IN_HOST_MEMORY}")
        if writes and readonly:
            raise ValueError(f"{name}: array is read-only but the operation writes it")
        if dtype is None:  # reinterpreting needs the element size, which is unknown here
            dt, display = None, "a dtype numpy cannot describe"
        else:
            dt, display = self._dtype_of(dtype, dtype.itemsize, forced, name)
        _check_meta(name, dt, display, len(shape), shape, dtypes, ndim, min_ndim)
        if device < 0:
            device = self.device if self.device is not None else 0
        return Tensor(name, ptr, shape, strides, dt, device, obj, "foreign")

    # -- allocation ---------------------------------------------------------------------------

    def output(self, shape: tuple[int, ...], dtype: str, name: str) -> Tensor:
        """Allocate a C-contiguous output of the caller's kind on the call's device.

        torch -> ``torch.empty`` (stream-ordered on the call's stream), CuPy -> ``cupy.empty``
        (storage dtype when CuPy lacks the logical one), numba/foreign -> Numba device array of
        the *storage* dtype (uint16 for bf16, uint8 for fp8), numpy -> Numba device array copied
        to a numpy array of the logical dtype by :meth:`finish`. The memory is not initialized.
        """
        dt = dtype if dtype in _ITEMSIZE else dtype_name(dtype)
        shape = shape if type(shape) is tuple else tuple(int(n) for n in shape)
        kind = self.kind
        if kind == "torch":
            return self._torch_empty(shape, dt, name)
        if kind == "cupy":
            return self._cupy_empty(shape, dt, name)
        cuda = _cuda()
        storage = _STORAGE[dt]
        if (
            kind != "numpy"
            and self.device is not None
            and not _simulating()
            and self.device != cuda.get_current_device().id
        ):
            with cuda.gpus[self.device]:
                arr = cuda.device_array(shape, dtype=storage, stream=self.numba_stream)
        else:
            arr = cuda.device_array(shape, dtype=storage, stream=self.numba_stream)
        native = _HOST_RESULT if kind == "numpy" else arr
        ptr, device = _numba_ptr_device(arr)
        if self.device is None:
            self.device = device
        t = Tensor(name, ptr, shape, _c_strides(shape), dt, device, arr, "numba", native)
        t._numba = arr
        return t

    def scratch(self, nbytes: int) -> Tensor:
        """Uninitialized ``uint8`` device workspace of ``nbytes`` bytes, of the caller's kind."""
        return self.output((int(nbytes),), "uint8", "scratch")

    def _torch_alloc_context(self, torch: Any) -> Any:
        """Stream context for torch allocations when the call's stream is not torch's current."""
        ctx = self._alloc_ctx
        if ctx is None:
            dev = self._torch_device
            handle = self.stream_handle
            if handle == _torch_current_stream(torch, dev.index):
                ctx = False
            elif handle == 0:
                ctx = torch.cuda.default_stream(dev)
            else:
                ctx = torch.cuda.ExternalStream(handle, device=dev)
            self._alloc_ctx = ctx
        return ctx

    def _on_torch_stream(self, torch: Any) -> Any:
        """A context that puts torch's work (allocations, fills) on the call's stream."""
        ctx = self._torch_alloc_context(torch)
        return contextlib.nullcontext() if ctx is False else torch.cuda.stream(ctx)

    def _on_cupy_stream(self, cupy: Any) -> Any:
        """A context that puts CuPy's work on the call's stream (inside the call's device)."""
        handle = self.stream_handle
        if handle == _cupy_current_stream(cupy):
            return contextlib.nullcontext()
        return cupy.cuda.Stream.null if handle == 0 else cupy.cuda.ExternalStream(handle)

    def _torch_empty(self, shape: tuple[int, ...], dt: str, name: str) -> Tensor:
        torch = sys.modules["torch"]
        tdtype = _torch_dtype(torch, dt)
        with self._on_torch_stream(torch):
            out = torch.empty(shape, dtype=tdtype, device=self._torch_device)
        return Tensor(name, out.data_ptr(), shape, _c_strides(shape), dt, self.device, out, "torch")

    def _cupy_empty(self, shape: tuple[int, ...], dt: str, name: str) -> Tensor:
        cupy = sys.modules["cupy"]
        with self._cupy_device, self._on_cupy_stream(cupy):
            out = _cupy_alloc(cupy, shape, dt)
        return Tensor(
            name, int(out.data.ptr), shape, _c_strides(shape), dt, self.device, out, "cupy"
        )

    def fill_zero(self, t: Tensor) -> None:
        """Zero an output on the call's stream (where no kernel runs, e.g. gradients of 0 rows)."""
        if t.kind == "torch":
            with self._on_torch_stream(sys.modules["torch"]):
                t.obj.zero_()
        elif t.kind == "cupy":
            with self._cupy_device, self._on_cupy_stream(sys.modules["cupy"]):
                t.obj.fill(0)
        else:
            arr = t.as_numba()
            arr.copy_to_device(np.zeros(arr.shape, arr.dtype), stream=self.numba_stream)

    # -- results ------------------------------------------------------------------------------

    def finish(self, *outputs: Tensor) -> tuple:
        """Native objects to return for ``outputs`` (in order).

        numpy calls: copies each output to a host array of the logical dtype, copies in-out
        arrays back into the caller's arrays and synchronizes the call's stream. Other kinds
        return the native objects (torch tensors, CuPy/Numba arrays) without synchronizing.
        """
        if self.kind != "numpy":
            return tuple(t._native for t in outputs)
        stream = self.numba_stream
        pending = []
        for t in outputs:
            if t._native is _HOST_RESULT:  # an output allocated by this call
                pending.append(t.obj.copy_to_host(stream=stream))
            else:
                pending.append(None)
        backs = [(st, st.buf.copy_to_host(stream=stream)) for _, st in self._staged]
        stream.synchronize()
        for st, buf in backs:
            view = np.lib.stride_tricks.as_strided(buf, shape=st.shape, strides=st.byte_strides)
            st.host[...] = view
        self._staged = []
        result = []
        for t, host in zip(outputs, pending, strict=True):
            if host is None:
                result.append(t._native)
            else:
                logical = _NUMPY[t.dtype]
                result.append(host if host.dtype == logical else host.view(logical))
        return tuple(result)


_HOST_RESULT = object()  # Tensor._native of numpy-kind outputs: converted by Call.finish

_CUPY_LOGICAL_OK: dict[str, bool] = {}


def _cupy_alloc(cupy: Any, shape: tuple[int, ...], dt: str) -> Any:
    logical, storage = _NUMPY[dt], _STORAGE[dt]
    if logical == storage or _CUPY_LOGICAL_OK.get(dt) is False:
        return cupy.empty(shape, dtype=storage)
    try:
        out = cupy.empty(shape, dtype=logical)
    except Exception:  # this CuPy has no such dtype: hand out the storage dtype
        _CUPY_LOGICAL_OK[dt] = False
        return cupy.empty(shape, dtype=storage)
    _CUPY_LOGICAL_OK[dt] = True
    return out


def _view_foreign(obj: Any, stream_handle: int, name: str = "array") -> tuple:
    """Describe an object exporting ``__dlpack__`` / ``__cuda_array_interface__``.

    Returns ``(ptr, shape, strides_elements, numpy dtype or None, device_id, device_accessible,
    readonly)`` read through ``cuda.core.utils.StridedMemoryView``. The consumer stream is the
    call's (0 is passed as 1, the legacy default stream, as DLPack requires); host (kDLCPU)
    exporters get no stream. What cuda.core cannot read (CUDA Array Interface before v3, a
    mask, an unsupported device) is a TypeError naming ``name``.
    """
    from cuda.core.utils import StridedMemoryView

    consumer = stream_handle or 1
    dl_device = getattr(obj, "__dlpack_device__", None)
    if dl_device is not None and int(dl_device()[0]) == 1:  # kDLCPU: no stream to order
        consumer = -1
    try:
        view = StridedMemoryView.from_any_interface(obj, stream_ptr=consumer)
    except (BufferError, NotImplementedError) as exc:
        raise TypeError(f"{name}: {type(obj).__name__} array cannot be read: {exc}") from exc
    except Exception as exc:  # the simulator's machine may have no driver to ask
        if not _simulating():
            raise
        raise TypeError(
            f"{name}: {type(obj).__name__} device arrays cannot be used under the CUDA "
            "simulator (NUMBA_ENABLE_CUDASIM=1); pass numpy or Numba simulator arrays"
        ) from exc
    shape = tuple(view.shape)
    strides = view.strides
    strides = _c_strides(shape) if strides is None else tuple(strides)
    try:
        dtype = view.dtype
    except Exception:  # a dtype numpy cannot describe
        dtype = None
    return (
        int(view.ptr),
        shape,
        strides,
        dtype,
        int(view.device_id),
        bool(view.is_device_accessible),
        bool(getattr(view, "readonly", False)),
    )
