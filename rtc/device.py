"""GPU and driver discovery that degrades to ``None`` instead of raising on GPU-less hosts."""

from __future__ import annotations

import threading
from dataclasses import dataclass

__all__ = ["DeviceInfo", "device_info", "has_gpu", "driver_version", "current_device_ordinal"]

# Default per-block dynamic+static shared-memory limit without the opt-in attribute.
DEFAULT_SMEM_PER_BLOCK = 48 * 1024


@dataclass(frozen=True)
class DeviceInfo:
    """Static properties of one CUDA device.

    Attributes
    ----------
    ordinal : int
        Device index.
    name : str
        Marketing name, e.g. ``"NVIDIA H200"``.
    arch : str
        NVRTC target, e.g. ``"sm_90"``.
    cc : tuple of int
        Compute capability ``(major, minor)``.
    sm_count : int
        Number of streaming multiprocessors.
    max_threads_per_sm, max_threads_per_block : int
        Thread limits.
    max_shared_per_block : int
        Shared memory per block without opt-in (48 KiB).
    max_shared_per_block_optin : int
        Shared memory per block after raising the kernel attribute.
    max_shared_per_sm : int
        Shared memory per SM.
    regs_per_sm : int
        32-bit registers per SM.
    l2_bytes : int
        L2 cache size.
    cooperative_launch : bool
        Whether cooperative launches are supported.
    driver_version : tuple of int
        CUDA driver API version ``(major, minor)``.
    warp_size : int
        Threads per warp.
    max_blocks_per_sm : int
        Resident block limit per SM.
    """

    ordinal: int
    name: str
    arch: str
    cc: tuple[int, int]
    sm_count: int
    max_threads_per_sm: int
    max_threads_per_block: int
    max_shared_per_block: int
    max_shared_per_block_optin: int
    max_shared_per_sm: int
    regs_per_sm: int
    l2_bytes: int
    cooperative_launch: bool
    driver_version: tuple[int, int]
    warp_size: int = 32
    max_blocks_per_sm: int = 0


_lock = threading.Lock()
_infos: dict[int, DeviceInfo | None] = {}
_no_driver = False  # sticky: a missing driver does not appear while the process runs
_driver_version: tuple[int, int] | None | bool = False  # False = not queried yet


def driver_version() -> tuple[int, int] | None:
    """Return the CUDA driver API version, e.g. ``(13, 0)``; None without a usable driver."""
    global _driver_version
    if _driver_version is False:
        try:
            from cuda.bindings import driver

            err, v = driver.cuDriverGetVersion()
            ok = err == driver.CUresult.CUDA_SUCCESS
            _driver_version = (int(v) // 1000, (int(v) % 1000) // 10) if ok else None
        except Exception:
            _driver_version = None
    return _driver_version  # type: ignore[return-value]


def current_device_ordinal() -> int | None:
    """Ordinal of the device of the current context (0 when none is current); None if no GPU."""
    global _no_driver
    if _no_driver:
        return None
    try:
        from cuda.core import Device

        return Device().device_id
    except Exception:
        # "no driver" / "no device" / init failures all mean: no usable GPU here.
        _no_driver = True
        return None


def _query(ordinal: int) -> DeviceInfo:
    from cuda.core import Device

    dev = Device(ordinal)
    p = dev.properties
    cc = dev.compute_capability
    return DeviceInfo(
        ordinal=ordinal,
        name=dev.name,
        arch=f"sm_{cc.major}{cc.minor}",
        cc=(int(cc.major), int(cc.minor)),
        sm_count=int(p.multiprocessor_count),
        max_threads_per_sm=int(p.max_threads_per_multiprocessor),
        max_threads_per_block=int(p.max_threads_per_block),
        max_shared_per_block=int(p.max_shared_memory_per_block),
        max_shared_per_block_optin=int(p.max_shared_memory_per_block_optin),
        max_shared_per_sm=int(p.max_shared_memory_per_multiprocessor),
        regs_per_sm=int(p.max_registers_per_multiprocessor),
        l2_bytes=int(p.l2_cache_size),
        cooperative_launch=bool(p.cooperative_launch),
        driver_version=driver_version() or (0, 0),
        warp_size=int(p.warp_size),
        max_blocks_per_sm=int(p.max_blocks_per_multiprocessor),
    )


def device_info(ordinal: int | None = None) -> DeviceInfo | None:
    """Describe a CUDA device.

    Parameters
    ----------
    ordinal : int, optional
        Device index; None means the device of the current context (device 0 if none).

    Returns
    -------
    DeviceInfo or None
        None when there is no driver, no device, or the ordinal does not exist. Never raises for
        those cases. Results are cached per ordinal.
    """
    if ordinal is None:
        ordinal = current_device_ordinal()
        if ordinal is None:
            return None
    try:
        return _infos[ordinal]
    except KeyError:
        pass
    with _lock:
        if ordinal not in _infos:
            try:
                _infos[ordinal] = _query(ordinal)
            except Exception:
                _infos[ordinal] = None
        return _infos[ordinal]


def has_gpu() -> bool:
    """Return True when a CUDA device is usable from this process."""
    return device_info() is not None
