"""A stand-in for the parts of torch that numba_norms.arrays touches (CPU tests, host profiling).

torch is not installed on CPU CI; the real thing is covered by tests/gpu. ``make_fake_torch``
returns a module object and the log of allocations / stream switches it records; the caller puts
it in ``sys.modules["torch"]`` (and clears ``numba_norms.arrays._TORCH_DTYPES``).
"""

from __future__ import annotations

import ctypes
import importlib
import struct
import threading
import types

import numpy as np

from numba_norms import arrays as A

__all__ = ["FakeDriver", "FakeTorchDevice", "FakeTorchDtype", "make_fake_torch"]

# What a parameter block's slot decodes to: np.int32 / np.float32 for 4-byte parameters, int for
# pointers and 64-bit integers (tests tell the kinds apart by type).
_DECODE = {"P": ("Q", int), "q": ("q", int), "Q": ("Q", int), "i": ("i", np.int32),
           "I": ("I", np.uint32), "f": ("f", np.float32), "d": ("d", float)}  # fmt: skip


class FakeDriver:
    """Stands in for the CUDA driver under :class:`rtc.Launcher` (no GPU needed).

    ``install`` swaps it in for ``rtc.launch``'s driver module; each launch is recorded as
    ``(label, grid, block, args, stream, cooperative)`` with ``args`` decoded from the parameter
    block the launcher packed, so a test sees exactly the bytes a kernel would receive.
    Launches arrive through ``cuLaunchKernelEx`` (cooperative and programmatic launches as its
    attributes); the indices of programmatic ones in ``launches`` are listed in
    ``programmatic``, the cluster dimensions of each cluster launch in ``clusters`` (index ->
    (x, y, z)). The driver's types (``CUlaunchConfig``, ...) are the real ones.
    """

    def __init__(self, labels: dict[int, str] | None = None, *, record: bool = True) -> None:
        self.labels = labels or {}
        self.record = record  # False: every entry point returns at once (host-cost timing)
        self.launches: list[tuple] = []
        self.memsets: list[tuple] = []
        self.programmatic: list[int] = []
        self.clusters: dict[int, tuple[int, int, int]] = {}
        self.devices: list[int] = []  # the current device at each recorded launch
        self._codes: dict[int, str] = {}

    def install(self, monkeypatch) -> FakeDriver:
        L = importlib.import_module("rtc.launch")  # `rtc.launch` is also the function
        L._core()
        monkeypatch.setattr(L, "_driver", self)
        init = L.Launcher.__init__
        codes = self._codes

        def recording_init(launcher, *args, **kw):
            init(launcher, *args, **kw)
            codes[launcher._addr] = launcher.params

        monkeypatch.setattr(L.Launcher, "__init__", recording_init)
        return self

    def cuCtxGetCurrent(self):
        return 0, 1

    # A current device per stand-in (device 0 unless a test sets ``current``): rtc's device
    # guard pushes a device's primary context (``("primary", device)``) and pops it.
    current = 0

    def cuCtxGetDevice(self):  # current None: a thread with no context
        return (0, self.current) if self.current is not None else (201, 0)

    def cuInit(self, flags):
        return (0,)

    def cuDevicePrimaryCtxRetain(self, device):
        return 0, ("primary", int(device))

    def cuCtxPushCurrent(self, ctx):
        self._pushed = [*getattr(self, "_pushed", []), self.current]
        self.current = ctx[1]
        return (0,)

    def cuCtxPopCurrent(self):
        self.current = self._pushed.pop()
        return 0, None

    def _record(self, fn, grid, block, stream, addr, cooperative) -> tuple:
        if not self.record:
            return (0,)
        codes = self._codes[addr]
        slots = (ctypes.c_void_p * len(codes)).from_address(addr) if codes else ()
        args = []
        for code, slot in zip(codes, slots):
            fmt, kind = _DECODE[code]
            args.append(
                kind(struct.unpack("=" + fmt, ctypes.string_at(slot, struct.calcsize(fmt)))[0])
            )
        self.launches.append(
            (self.labels.get(fn, fn), grid, block, tuple(args), stream, cooperative)
        )
        self.devices.append(self.current)
        return (0,)

    def cuMemsetD32Async(self, ptr, value, count, stream):
        if self.record:
            self.memsets.append((ptr, value, count, stream))
        return (0,)

    def cuLaunchKernelEx(self, config, fn, params, extra):
        if not self.record:
            return (0,)
        ids = self.CUlaunchAttributeID
        kinds = {a.id for a in config.attrs[: config.numAttrs]}
        if ids.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION in kinds:
            self.programmatic.append(len(self.launches))
        for a in config.attrs[: config.numAttrs]:
            if a.id == ids.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
                d = a.value.clusterDim
                self.clusters[len(self.launches)] = (d.x, d.y, d.z)
        grid = (config.gridDimX, config.gridDimY, config.gridDimZ)
        block = (config.blockDimX, config.blockDimY, config.blockDimZ)
        coop = ids.CU_LAUNCH_ATTRIBUTE_COOPERATIVE in kinds
        return self._record(fn, grid, block, int(config.hStream), params, coop)

    def __getattr__(self, name: str):
        if name.startswith("CU"):  # the driver's types and enums
            from cuda.bindings import driver

            return getattr(driver, name)
        raise AttributeError(name)


class FakeTorchDtype:
    __module__ = "torch"

    def __init__(self, name, size):
        self.name, self.size = name, size

    def __str__(self):
        return f"torch.{self.name}"


class FakeTorchDevice:
    def __init__(self, type_, index):
        self.type, self.index = type_, index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"


def make_fake_torch() -> tuple[types.ModuleType, list]:
    """The stand-in module and its log."""
    torch = types.ModuleType("torch")
    for name, size in [
        ("float32", 4),
        ("float16", 2),
        ("bfloat16", 2),
        ("float8_e4m3fn", 1),
        ("float8_e5m2", 1),
        ("uint8", 1),
        ("bool", 1),
        ("int64", 8),
    ]:
        setattr(torch, name, FakeTorchDtype(name, size))
    torch.strided = object()
    log = []

    class Tensor:
        __module__ = "torch"

        def __init__(self, shape, strides, dtype, device, ptr):
            self.shape, self._strides, self.dtype, self.device = shape, strides, dtype, device
            self._ptr, self.layout = ptr, torch.strided
            self.is_cuda = device.type == "cuda"

        def data_ptr(self):
            return self._ptr

        def stride(self):
            return self._strides

        def get_device(self):
            return self.device.index if self.is_cuda else -1

        def element_size(self):
            return self.dtype.size

        def is_contiguous(self):
            return tuple(self._strides) == A._c_strides(tuple(self.shape))

    class _Ctx:
        def __init__(self, s):
            self.s = s

        def __enter__(self):
            log.append(("enter", self.s))

        def __exit__(self, *exc):
            log.append(("exit", self.s))

    next_ptr = [0x9000]
    alloc_lock = threading.Lock()

    def empty(*size, dtype, device):
        shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], tuple) else size
        log.append(("empty", tuple(shape), dtype, device))
        with alloc_lock:  # distinct, 16 MiB apart (like a caching allocator's blocks)
            ptr = next_ptr[0]
            next_ptr[0] += 0x100_0000
        return Tensor(tuple(shape), A._c_strides(tuple(shape)), dtype, device, ptr)

    def empty_like(t):
        return empty(tuple(t.shape), dtype=t.dtype, device=t.device)

    torch.Tensor = Tensor
    torch.empty = empty
    torch.empty_like = empty_like
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda index: 0x1230 + index)
    torch.cuda = types.SimpleNamespace(
        ExternalStream=lambda handle, device: ("external", handle),
        default_stream=lambda device: ("default", device.index),
        stream=_Ctx,
    )
    return torch, log
