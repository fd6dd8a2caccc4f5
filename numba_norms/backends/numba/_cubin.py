"""Numba kernels kept as cubins in rtc's caches, and loaded and launched through rtc.

numba-cuda compiles one of these kernels in 0.6-1 s (measured on the H200 host) and keeps nothing
between processes. Each kernel is compiled once with Numba; its linked cubin and entry name go to
:func:`rtc.cached_cubin` (in process and on disk), and every process, the first included, loads
the cubin through rtc and launches it with :class:`rtc.Launcher` like an NVRTC kernel. A later
process finds the cubin on disk and does not run Numba at all.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import rtc

__all__ = ["load"]

_DIR = Path(__file__).resolve().parent
# The kernel factories live in these files: any edit to them makes new cubins.
_SOURCES = ("_cubin.py", "_norms.py", "_rowops.py", "softmax.py")


@functools.cache
def _tool_digest() -> str:
    """Digest of the kernel sources and the Numba versions that compile them."""
    import numba
    import numba_cuda

    h = hashlib.sha256()
    for name in _SOURCES:
        h.update((_DIR / name).read_bytes())
    h.update(f"numba {numba.__version__} numba-cuda {numba_cuda.__version__}".encode())
    return h.hexdigest()


def load(key: tuple, compile_kernel: Callable[[], Any], cc: tuple[int, int]) -> rtc.Kernel:
    """The kernel named by ``key`` for compute capability ``cc``, loaded on the current device.

    Parameters
    ----------
    key : tuple
        Everything the kernel's code depends on besides the sources (spec key, variant,
        signature, launch bounds); its ``repr`` is part of the cache key.
    compile_kernel : callable
        Returns the Numba dispatcher compiled eagerly for one signature; called only when
        neither rtc cache has the cubin.
    cc : (int, int)
        The current device's compute capability.
    """

    def build() -> tuple[bytes, dict[str, str]]:
        disp = compile_kernel()
        (kernel,) = disp.overloads.values()
        lib = kernel.library
        # the linked image (cudadevrt included where the kernel uses grid groups; numba-cuda
        # 0.30 hands it over as a cuda.core ObjectCode) and the kernel's mangled entry name
        image = lib.get_cubin(cc)
        code = image if isinstance(image, (bytes, bytearray, memoryview)) else image.code
        return bytes(code), {"kernel": lib._entry_name}

    mod = rtc.cached_cubin(
        ("numba-norms", _tool_digest(), repr(key)),
        build,
        arch=f"sm_{cc[0]}{cc[1]}",
        name=f"numba:{key[0]}",
    )
    return mod.kernel("kernel")
