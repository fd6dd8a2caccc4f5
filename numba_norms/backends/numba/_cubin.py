"""Numba kernels kept as cubins in rtc's caches, and loaded and launched through rtc.

numba-cuda compiles one of these kernels in 0.6-1 s (measured on the H200 host) and keeps nothing
between processes. Each kernel is compiled once with Numba; its linked cubin and entry name go to
:func:`rtc.cached_cubin` (in process and on disk), and every process, the first included, loads
the cubin through rtc and launches it with :class:`rtc.Launcher` like an NVRTC kernel. A later
process finds the cubin on disk and does not run Numba at all.

The build needs no GPU: given the target compute capability, Numba's own kernel pipeline
(``_Kernel``: NVVM, then the link, cudadevrt included where a kernel syncs its grid) runs with
the device queries answered by :func:`assume_device`. So ``numba-norms precompile --backend
numba --arch sm_90`` on a CPU machine stores the cubins a GPU of that arch looks up later: one
key function (:func:`module`) serves both.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import rtc

__all__ = ["assume_device", "current_device", "load", "module"]

_DIR = Path(__file__).resolve().parent
# The kernel factories and the constants they compile in: any edit to these makes new cubins.
_SOURCES = (
    tuple(_DIR / n for n in ("_cubin.py", "_norms.py", "_rowops.py", "softmax.py"))
    + (_DIR.parent / "common.py",)
    + tuple(_DIR.parent.parent / n for n in ("planner.py", "registry.py"))
)
# Wheels whose libraries build the code: libNVVM and libdevice, cudadevrt, nvJitLink.
_TOOL_WHEELS = ("nvidia-nvvm", "nvidia-cuda-nvcc", "nvidia-cuda-runtime", "nvidia-nvjitlink")
# Numba settings (NUMBA_* environment variables) that change the code of a kernel: the NRT
# setting alone grows a cubin 3.8x (session 41's cache stress test).
_CODEGEN_SETTINGS = (
    "CUDA_ENABLE_NRT",
    "CUDA_NRT_STATS",
    "OPT",
    "BOUNDSCHECK",
    "CUDA_DEBUGINFO_DEFAULT",
    "EXTEND_VARIABLE_LIFETIMES",
    "FORCE_CUDA_CC",
)

# The compute capability a thread builds for under assume_device (unset: the real device).
_tls = threading.local()
_install_lock = threading.Lock()
_installed = False


def _linker_id() -> str:
    """Which linker makes the cubin, with its version (its ptxas decides the code)."""
    try:
        from cuda.bindings import nvjitlink

        major, minor = nvjitlink.version()
        return f"nvJitLink {major}.{minor}"
    except Exception:  # no nvJitLink: numba-cuda links through the driver
        return "driver linker"


def _tool_versions() -> str:
    """numba, numba-cuda, the compiler wheels present and the linker (fixed for a process)."""
    from importlib import metadata

    import numba
    import numba_cuda

    wheels = []
    for name in _TOOL_WHEELS:
        try:
            wheels.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            pass
    return "\n".join(
        [f"numba {numba.__version__} numba-cuda {numba_cuda.__version__}", *wheels, _linker_id()]
        + _nvvm_files()
    )


def _settings() -> str:
    """``cuda.jit``'s default options (``NUMBA_OPT``, debug info and LTO change them) and Numba's
    code-changing settings, as a build started now would see them: Numba reads the ``NUMBA_*``
    environment again when it compiles, so they are read afresh for every key."""
    from numba import cuda
    from numba.cuda import config

    config.reload_config()
    defaults = cuda.jit(lambda: None).targetoptions
    return "\n".join(
        [f"{k}={defaults[k]!r}" for k in sorted(defaults)]
        + [f"{n}={getattr(config, n, None)!r}" for n in _CODEGEN_SETTINGS]
    )


def _nvvm_files() -> list[str]:
    """Where numba-cuda finds NVVM and libdevice. From a wheel, the versions above tell them;
    from a toolkit (CUDA_HOME, conda, the system), its files' paths and sizes do. No mtimes:
    a cache built on one machine serves another with the same tools."""
    try:
        from numba.cuda.cuda_paths import get_cuda_paths

        paths = get_cuda_paths()
    except Exception:  # no toolkit found: the compile itself will say so
        return ["nvvm: not found"]
    out = []
    for name in ("nvvm", "libdevice"):
        found = paths.get(name)
        by, path = getattr(found, "by", None), getattr(found, "info", None)
        if by in ("site-packages", "NVIDIA NVCC Wheel"):
            out.append(f"{name}: wheel")
            continue
        try:
            out.append(f"{name}: {by} {path} {os.path.getsize(path)}")
        except (OSError, TypeError):
            out.append(f"{name}: {by} {path!r}")
    return out


@functools.cache
def _tool_digest() -> str:
    """Digest of the kernel sources and the tools (Numba, NVVM, linker) that compile them."""
    h = hashlib.sha256()
    for path in _SOURCES:
        h.update(path.read_bytes())
    h.update(_tool_versions().encode())
    return h.hexdigest()


class _Devices:
    """numba-cuda's ``devices`` module as its code library sees it: a stand-in context for a
    thread inside :func:`assume_device`, the real module for everything else."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def get_context(self, *args: Any, **kwargs: Any) -> Any:
        cc = getattr(_tls, "cc", None)
        if cc is None:
            return self._real.get_context(*args, **kwargs)
        return SimpleNamespace(device=SimpleNamespace(compute_capability=cc))


def _install() -> None:
    """Route numba-cuda's two device queries through :data:`_tls` (once a process)."""
    global _installed
    with _install_lock:
        if _installed:
            return
        from numba.cuda import codegen as _codegen
        from numba.cuda import dispatcher as _dispatcher

        real = _dispatcher.get_current_device

        def get_current_device() -> Any:
            cc = getattr(_tls, "cc", None)
            return real() if cc is None else SimpleNamespace(compute_capability=cc)

        _dispatcher.get_current_device = get_current_device
        _codegen.devices = _Devices(_codegen.devices)
        _installed = True


@contextlib.contextmanager
def assume_device(cc: tuple[int, int]) -> Iterator[None]:
    """Let numba-cuda compile and link for ``cc`` in this thread without a GPU (or without
    touching it).

    Three places ask the current device for its compute capability: the kernel pipeline
    (``dispatcher.get_current_device``), ``CUDADispatcher.compile_device`` for each device
    function met (our helpers, and the ``@overload`` implementations behind builtins), and
    the code library's default target (``codegen.devices.get_context``). Inside this context
    they answer ``cc`` to this thread only; other threads (a Numba launch, say) still see the
    real device.
    """
    _install()
    previous = getattr(_tls, "cc", None)
    _tls.cc = cc
    try:
        yield
    finally:
        _tls.cc = previous


def _build(pyfunc: Any, signature: Any, launch_bounds: Any, cc: tuple[int, int]):
    """Compile ``pyfunc`` as a kernel of ``signature`` and link it for ``cc``: (cubin, symbols).

    The same steps as ``cuda.jit(signature)`` (Numba's ``_Kernel`` with the dispatcher's
    options) but without loading the module on a device, which the build does not need.
    """
    from numba import cuda
    from numba.cuda.dispatcher import _Kernel

    disp = cuda.jit(launch_bounds=launch_bounds)(pyfunc)  # no signature: nothing compiled yet
    argtypes = tuple(getattr(signature, "args", signature))  # void(...) or a tuple of types
    with assume_device(cc):
        kernel = _Kernel(disp.py_func, argtypes, **disp.targetoptions)
        lib = kernel._codelibrary
        # the linked image (numba-cuda 0.30 hands it over as a cuda.core ObjectCode)
        image = lib.get_cubin(cc)
    code = image if isinstance(image, (bytes, bytearray, memoryview)) else image.code
    return bytes(code), {"kernel": lib._entry_name}


def module(
    key: tuple,
    make: Callable[[], Any],
    signature: Any,
    launch_bounds: tuple[int, int] | None,
    cc: tuple[int, int],
) -> rtc.CompiledModule:
    """The cubin of one kernel for compute capability ``cc``, from rtc's caches or built now.

    Parameters
    ----------
    key : tuple
        Everything the kernel's code depends on besides the sources and tool versions (spec key,
        variant); its ``repr`` with the signature and launch bounds is part of the cache key.
    make : callable
        Returns the kernel's Python function; called only when neither rtc cache has the cubin.
    signature : numba signature or tuple
        The kernel's argument types (``void(...)`` or a tuple of types).
    launch_bounds : (int, int) or None
        ``(threads, min CTAs an SM)``, as ``cuda.jit`` takes them.
    cc : (int, int)
        The target compute capability: numba-cuda's device queries get it
        (:func:`assume_device`), so no GPU is needed, and none is touched.

    Returns
    -------
    rtc.CompiledModule
        Not loaded on any device yet; ``origin`` says whether it was built now or read from disk.
    """
    return rtc.cached_cubin(
        ("numba-norms", _tool_digest(), _settings(), repr(key + (str(signature), launch_bounds))),
        lambda: _build(make(), signature, launch_bounds, cc),
        arch=f"sm_{cc[0]}{cc[1]}",
        name=f"numba:{key[0]}",
    )


def load(
    key: tuple,
    make: Callable[[], Any],
    signature: Any,
    launch_bounds: tuple[int, int] | None,
    cc: tuple[int, int],
) -> rtc.Kernel:
    """:func:`module`'s kernel, loaded on the current device (whose compute capability is
    ``cc``)."""
    return module(key, make, signature, launch_bounds, cc).kernel("kernel")


def current_device() -> tuple[tuple[int, int], int]:
    """(compute capability, ordinal) of the device :func:`load` loads on: rtc's current one
    (the context current on this thread; Numba's own notion is the context it last attached
    here, which a device guard's push does not change). A loaded kernel belongs to one device
    (its launcher runs there), so two GPUs of one arch keep a kernel each."""
    from rtc.device import current_device_ordinal

    ordinal = current_device_ordinal()
    if ordinal is None:
        raise RuntimeError("no CUDA GPU is available (set NUMBA_ENABLE_CUDASIM=1 to simulate)")
    return tuple(rtc.device_info(ordinal).cc), ordinal
