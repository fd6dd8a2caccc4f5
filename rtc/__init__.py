"""rtc: a small, generic NVRTC runtime.

Compile CUDA C++ to CUBIN with NVRTC (through ``cuda.core``), cache the result in process and
on disk, load kernels and launch them with low host overhead.

Examples
--------
>>> import rtc
>>> mod = rtc.compile(src, ["scale<float, 4>"], arch="sm_90")  # doctest: +SKIP
>>> k = mod.kernel("scale<float, 4>")  # doctest: +SKIP
>>> rtc.launch(k, grid, 256, ptr, np.float32(2.0), np.int32(n), stream=s)  # doctest: +SKIP
"""

from __future__ import annotations

from .cache import (
    build_once,
    cache_dir,
    cache_entries,
    cache_size_bytes,
    clear_cache,
    disk_cache_enabled,
    disk_cache_problem,
    reset_stats,
    share_entries,
    stats,
)
from .compiler import (
    CompiledModule,
    CompileError,
    cached_cubin,
    compile,
    last_origin,
    nvrtc_version,
    parse_arch,
)
from .device import DeviceInfo, device_info, driver_version, has_gpu
from .launch import Kernel, Launcher, as_stream, launch, memset_d32_async, on_device

__all__ = [
    "CompileError",
    "CompiledModule",
    "DeviceInfo",
    "Kernel",
    "Launcher",
    "as_stream",
    "build_once",
    "cache_dir",
    "cached_cubin",
    "cache_entries",
    "cache_size_bytes",
    "clear_cache",
    "disk_cache_problem",
    "share_entries",
    "compile",
    "device_info",
    "disk_cache_enabled",
    "driver_version",
    "has_gpu",
    "last_origin",
    "launch",
    "on_device",
    "memset_d32_async",
    "nvrtc_version",
    "parse_arch",
    "reset_stats",
    "stats",
]
