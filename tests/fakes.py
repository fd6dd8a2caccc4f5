"""A stand-in for the parts of torch that numba_norms.arrays touches (CPU tests, host profiling).

torch is not installed on CPU CI; the real thing is covered by tests/gpu. ``make_fake_torch``
returns a module object and the log of allocations / stream switches it records; the caller puts
it in ``sys.modules["torch"]`` (and clears ``numba_norms.arrays._TORCH_DTYPES``).
"""

from __future__ import annotations

import types

from numba_norms import arrays as A

__all__ = ["FakeTorchDevice", "FakeTorchDtype", "make_fake_torch"]


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

    class _Ctx:
        def __init__(self, s):
            self.s = s

        def __enter__(self):
            log.append(("enter", self.s))

        def __exit__(self, *exc):
            log.append(("exit", self.s))

    def empty(shape, dtype, device):
        log.append(("empty", tuple(shape), dtype, device))
        return Tensor(tuple(shape), A._c_strides(tuple(shape)), dtype, device, 0x9000)

    torch.Tensor = Tensor
    torch.empty = empty
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda index: 0x1230 + index)
    torch.cuda = types.SimpleNamespace(
        ExternalStream=lambda handle, device: ("external", handle),
        default_stream=lambda device: ("default", device.index),
        stream=_Ctx,
    )
    return torch, log
