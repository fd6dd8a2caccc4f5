"""Low-overhead kernel launches on top of ``cuda.core.launch``.

The hot path of :func:`launch` is a dict lookup for a cached ``LaunchConfig``, a type check of
the stream and one call into ``cuda.core``. Everything that needs a driver query (shared-memory
opt-in, stream wrapping, occupancy) is cached on first use.
"""

from __future__ import annotations

import contextlib
import ctypes
import operator
import struct
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["Kernel", "Launcher", "as_stream", "launch", "memset_d32_async", "on_device"]

# Bound lazily by _core(): importing cuda.core costs ~0.2 s, which `import rtc` should not pay.
_Stream: Any = None
_LaunchConfig: Any = None
_cc_launch: Any = None
_LEGACY: Any = None
_PER_THREAD: Any = None
_driver: Any = None
_core_lock = threading.Lock()

# CUstream sentinels of the CUDA driver API.
_CU_STREAM_LEGACY = 0x1
_CU_STREAM_PER_THREAD = 0x2

# Threads that never touched CUDA (torch's autograd workers, fresh Python threads) have no
# current context for the driver API; remember per thread which device we made current.
_tls = threading.local()

_CACHE_LIMIT = 4096
_configs: dict[tuple, Any] = {}
_streams: dict[int, Any] = {}


def _core() -> None:
    """Import cuda.core once and bind the names the hot path uses."""
    global _Stream, _LaunchConfig, _cc_launch, _LEGACY, _PER_THREAD, _driver
    if _cc_launch is not None:
        return
    with _core_lock:
        if _cc_launch is not None:
            return
        import cuda.core as cc
        from cuda.bindings import driver

        _Stream = cc.Stream
        _LaunchConfig = cc.LaunchConfig
        _LEGACY = cc.LEGACY_DEFAULT_STREAM
        _PER_THREAD = cc.PER_THREAD_DEFAULT_STREAM
        _driver = driver
        _cc_launch = cc.launch


class Kernel:
    """A kernel loaded on one device, ready for :func:`launch`.

    Obtain it from :meth:`rtc.CompiledModule.kernel`; it is bound to the device that was
    current at that time.

    Attributes
    ----------
    handle : cuda.core.Kernel
        The underlying cuda.core kernel.
    name : str
        The name expression it was looked up with.
    device : int
        Device ordinal it is bound to.
    """

    __slots__ = ("handle", "name", "device", "_smem_limit", "_occ", "_attrs", "_lock", "_cu")

    def __init__(self, handle: Any, name: str, device: int) -> None:
        _core()
        self.handle = handle
        self.name = name
        self.device = device
        self._lock = threading.Lock()
        self._occ: dict[tuple, int] = {}  # occupancy() and max_active_clusters() answers
        self._attrs: Any = None
        self._cu: Any = None
        # The current dynamic limit starts at 48 KiB minus the static shared memory.
        self._smem_limit = int(self._attributes().max_dynamic_shared_size_bytes)

    def __repr__(self) -> str:
        return f"<rtc.Kernel {self.name!r} on device {self.device}>"

    def _attributes(self) -> Any:
        if self._attrs is None:
            self._attrs = self.handle.attributes[self.device]
        return self._attrs

    @property
    def num_regs(self) -> int:
        """Registers per thread."""
        return int(self._attributes().num_regs)

    @property
    def local_bytes(self) -> int:
        """Local (spill/stack) memory per thread in bytes."""
        return int(self._attributes().local_size_bytes)

    @property
    def shared_bytes(self) -> int:
        """Static shared memory per block in bytes."""
        return int(self._attributes().shared_size_bytes)

    @property
    def max_threads_per_block(self) -> int:
        """Largest block size this kernel can be launched with."""
        return int(self._attributes().max_threads_per_block)

    @property
    def max_dynamic_shared_memory(self) -> int:
        """Current dynamic shared-memory limit per block in bytes."""
        return self._smem_limit

    def set_max_dynamic_shared_memory(self, nbytes: int) -> None:
        """Allow launches with up to ``nbytes`` of dynamic shared memory.

        Needed above 48 KiB (static + dynamic). Only ever raises the limit; calls that ask for
        no more than the current limit return without a driver call.

        Parameters
        ----------
        nbytes : int
            Dynamic shared memory per block in bytes.

        Raises
        ------
        ValueError
            If the device cannot provide that much shared memory to this kernel.
        """
        nbytes = int(nbytes)
        if nbytes <= self._smem_limit:
            return
        with self._lock:
            if nbytes <= self._smem_limit:
                return
            if self._cu is None:
                self._cu = _driver.CUkernel(int(self.handle.handle))
            attr = _driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            err = _driver.cuKernelSetAttribute(attr, nbytes, self._cu, self.device)[0]
            if err != _driver.CUresult.CUDA_SUCCESS:
                raise ValueError(
                    f"kernel {self.name!r}: cannot raise dynamic shared memory to {nbytes} bytes "
                    f"(static {self.shared_bytes} bytes; driver said {getattr(err, 'name', err)})"
                )
            self._smem_limit = nbytes
            # Occupancy depends on the carve-out the limit allows.
            self._occ.clear()

    def occupancy(self, block_size: int, dynamic_smem: int = 0) -> int:
        """Maximum resident blocks per SM for a launch configuration.

        Raises the dynamic shared-memory limit first when ``dynamic_smem`` needs it, exactly as
        :func:`launch` would, so the answer matches what a launch gets. Cached per arguments.

        Parameters
        ----------
        block_size : int
            Threads per block.
        dynamic_smem : int
            Dynamic shared memory per block in bytes.

        Returns
        -------
        int
            Active blocks per multiprocessor (0 if the configuration cannot run).
        """
        key = (int(block_size), int(dynamic_smem))
        v = self._occ.get(key)
        if v is None:
            if key[1] > self._smem_limit:
                self.set_max_dynamic_shared_memory(key[1])
            # under the lock that a limit change clears the answers under: none stored is stale
            with self._lock:
                v = int(self.handle.occupancy.max_active_blocks_per_multiprocessor(*key))
                self._occ[key] = v
        return v

    def max_active_clusters(self, cluster: int, block_size: int, dynamic_smem: int = 0) -> int:
        """How many clusters of ``cluster`` CTAs (along x) can be resident at once.

        Clusters are placed within one GPC, so the answer can be below ``occupancy * sm_count /
        cluster`` (SMs of a GPC left over). Needs a GPU of compute capability 9.0 or later.
        Cached per arguments.

        Parameters
        ----------
        cluster : int
            CTAs per cluster (``cluster x 1 x 1``).
        block_size : int
            Threads per block.
        dynamic_smem : int
            Dynamic shared memory per block in bytes.

        Returns
        -------
        int
            Clusters the device can run concurrently (0 if the configuration cannot run).
        """
        smem = int(dynamic_smem)
        key = ("clusters", int(cluster), int(block_size), smem)  # beside occupancy()'s keys
        v = self._occ.get(key)
        if v is None:
            if smem > self._smem_limit:
                self.set_max_dynamic_shared_memory(smem)
            if getattr(_tls, "device", None) != self.device:
                ensure_context(self.device)
            err, fn = _driver.cuKernelGetFunction(_driver.CUkernel(int(self.handle.handle)))
            if int(err) != 0:
                raise RuntimeError(f"cuKernelGetFunction failed for {self.name}: {err!r}")
            cfg = _driver.CUlaunchConfig()
            cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = int(cluster), 1, 1
            cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = int(block_size), 1, 1
            cfg.sharedMemBytes = smem
            cfg.attrs = [_cluster_attribute(int(cluster))]
            cfg.numAttrs = 1
            with self._lock:  # as occupancy()
                err, n = _driver.cuOccupancyMaxActiveClusters(fn, cfg)
                v = int(n) if int(err) == 0 else 0
                self._occ[key] = v
        return v


def _cluster_attribute(cluster: int) -> Any:
    """The launch attribute of a ``cluster x 1 x 1`` thread-block cluster."""
    a = _driver.CUlaunchAttribute()
    a.id = _driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z = cluster, 1, 1
    return a


def _dim(v: Any) -> int | tuple[int, ...]:
    """A grid or block size: an integer (numpy's too) or a sequence of them, never a float."""
    try:
        return operator.index(v)
    except TypeError:
        return tuple(operator.index(x) for x in v)


def _new_config(grid: Any, block: Any, shared_mem: int, cooperative: bool) -> Any:
    cfg = _LaunchConfig(
        grid=_dim(grid),
        block=_dim(block),
        shmem_size=int(shared_mem),
        is_cooperative=bool(cooperative),
    )
    try:
        key = (grid, block, shared_mem, cooperative)
        if len(_configs) >= _CACHE_LIMIT:
            _configs.clear()
        _configs[key] = cfg
    except TypeError:  # unhashable dims (lists): usable, just not cached
        pass
    return cfg


def _stream_handle(obj: Any) -> int:
    proto = getattr(obj, "__cuda_stream__", None)
    if proto is not None:
        info = proto() if callable(proto) else proto
        return int(info[1])
    for attr in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy Stream
        h = getattr(obj, attr, None)
        if h is not None:
            return int(h)
    h = getattr(obj, "handle", None)  # numba-cuda Stream (ctypes c_void_p)
    if h is not None:
        h = getattr(h, "value", h)
        return int(h or 0)
    raise TypeError(
        f"cannot use {type(obj).__name__} as a CUDA stream: expected None, a cuda.core Stream, "
        "an int CUstream handle or an object with __cuda_stream__"
    )


def as_stream(obj: Any) -> Any:
    """Convert a stream-like object to a ``cuda.core.Stream``.

    Parameters
    ----------
    obj : None, cuda.core.Stream, int, or stream-like
        None is the legacy default stream. An int is a raw ``CUstream`` handle (0 and 1: legacy
        default, 2: per-thread default). Other objects are accepted through
        ``__cuda_stream__`` (numba-cuda, cupy, cuda.core) or a ``cuda_stream`` / ``ptr`` attribute
        (torch, cupy).

    Returns
    -------
    cuda.core.Stream
        Wrappers of raw handles are cached by handle value; they do not own the stream, so the
        foreign stream must outlive the work launched on it.
    """
    _core()
    if obj is None:
        return _LEGACY
    if isinstance(obj, _Stream):
        return obj
    handle = obj if isinstance(obj, int) else _stream_handle(obj)
    s = _streams.get(handle)
    if s is None:
        if handle in (0, _CU_STREAM_LEGACY):
            s = _LEGACY
        elif handle == _CU_STREAM_PER_THREAD:
            s = _PER_THREAD
        else:
            s = _Stream.from_handle(handle)
        if len(_streams) >= _CACHE_LIMIT:
            _streams.clear()
        _streams[handle] = s
    return s


def launch(
    kernel: Kernel,
    grid: int | tuple,
    block: int | tuple,
    *args: Any,
    stream: Any = None,
    shared_mem: int = 0,
    cooperative: bool = False,
) -> None:
    """Launch a kernel asynchronously.

    Parameters
    ----------
    kernel : Kernel
        From :meth:`rtc.CompiledModule.kernel`.
    grid, block : int or tuple of int
        Grid and block dimensions.
    *args
        Kernel arguments: Python ``int`` is passed as a 64-bit value (device pointers), numpy
        scalars (``np.int32``, ``np.float32``, ...) with their own size, Python ``float`` as
        double, ``cuda.core.Buffer`` as its device pointer.
    stream : optional
        None (legacy default stream), a ``cuda.core.Stream``, an int ``CUstream`` handle, or a
        stream-like object (see :func:`as_stream`).
    shared_mem : int
        Dynamic shared memory per block in bytes; the kernel's limit is raised automatically
        when needed (above 48 KiB).
    cooperative : bool
        Cooperative launch: all blocks must be co-resident (grid-wide synchronisation).
    """
    try:
        cfg = _configs[(grid, block, shared_mem, cooperative)]
    except (KeyError, TypeError):
        cfg = _new_config(grid, block, shared_mem, cooperative)
    if shared_mem > kernel._smem_limit:
        kernel.set_max_dynamic_shared_memory(shared_mem)
    err, dev = _driver.cuCtxGetDevice()
    with on_device(kernel.device) if int(err) or int(dev) != kernel.device else _NO_GUARD:
        if stream is None:
            s = _LEGACY
        elif type(stream) is _Stream:
            s = stream
        else:
            s = as_stream(stream)
        _cc_launch(s, cfg, kernel.handle, *args)


# Parameter codes of :class:`Launcher`: struct format of the value (each parameter gets its own
# 8-byte slot; the driver reads only the size the kernel declares from the slot's start).
_PARAM_CODES = {"P": "Q", "q": "q", "Q": "Q", "i": "i4x", "I": "I4x", "f": "f4x", "d": "d"}


class Launcher:
    """One kernel with a fixed launch shape and parameter layout: the hot-path launch.

    Where :func:`launch` converts its arguments on every call (through ``cuda.core``), a
    launcher packs them with one ``struct.pack_into`` into a parameter block it owns and calls
    ``cuLaunchKernelEx`` with that block's address and a launch configuration built once per
    stream (cooperative, cluster and programmatic launches are attributes of it: one code
    path). On the H200 host a plain launch this way cost what ``cuLaunchKernel`` did (run 70:
    7.6 us; run 69's processes 5.6-8.2 us), a programmatic one 0.7-0.8 us less in the same
    process (runs 69-70).

    Parameters
    ----------
    function : Kernel or int
        An :class:`rtc.Kernel`, or the address of a ``CUfunction`` / ``CUkernel`` loaded in the
        primary context of ``device`` (e.g. a Numba-compiled kernel).
    grid, block : int or tuple of int
        Launch dimensions.
    params : str
        One code per kernel parameter, in order: ``P`` pointer, ``q`` / ``Q`` 64-bit integer,
        ``i`` / ``I`` 32-bit integer, ``f`` float, ``d`` double.
    shared_mem : int
        Dynamic shared memory per block in bytes.
    cooperative : bool
        Launch cooperatively (all blocks co-resident).
    cluster : int
        CTAs per thread-block cluster along x (sm_90+; 1: no cluster). ``grid[0]`` must be a
        multiple of it. CTAs of a cluster are co-scheduled on one GPC and can synchronise with
        ``barrier.cluster`` without a cooperative launch.
    programmatic : bool
        Programmatic dependent launch (sm_90+, ``cuLaunchKernelEx``): the kernel may start
        before the previous kernel in its stream has finished, once that kernel's blocks have
        all exited or executed ``griddepcontrol.launch_dependents``. The kernel must execute
        ``griddepcontrol.wait`` before it reads what the previous kernel wrote. Only for
        devices that support it (compute capability 9.0 and later).
    device : int, optional
        Device of ``function`` when it is an address (an :class:`rtc.Kernel` knows its own).

    Notes
    -----
    Thread-safe: the block is filled and handed to the driver under a lock (the driver copies
    the values before the launch call returns).
    """

    __slots__ = (
        "_fn", "_grid", "_block", "_smem", "_coop", "_device", "_struct", "_buf", "_ptrs",
        "_addr", "_lock", "params", "name", "_dep", "_configs", "_cluster",
    )  # fmt: skip

    def __init__(
        self,
        function: Kernel | int,
        grid: int | tuple,
        block: int | tuple,
        params: str,
        *,
        shared_mem: int = 0,
        cooperative: bool = False,
        cluster: int = 1,
        programmatic: bool = False,
        device: int | None = None,
    ) -> None:
        _core()
        bad = sorted(set(params) - set(_PARAM_CODES))
        if bad:
            raise ValueError(
                f"params: unknown codes {bad}; expected some of {''.join(_PARAM_CODES)}"
            )
        if isinstance(function, Kernel):
            if shared_mem > function._smem_limit:
                function.set_max_dynamic_shared_memory(shared_mem)
            self._fn = int(function.handle.handle)
            self._device = function.device
            self.name = function.name
        else:
            self._fn = int(function)
            self._device = device
            self.name = hex(self._fn)
        g, b = ((d, 1, 1) if isinstance(d, int) else d + (1, 1) for d in (_dim(grid), _dim(block)))
        self._grid, self._block = g[:3], b[:3]
        self._smem = int(shared_mem)
        self._coop = bool(cooperative)
        self._cluster = int(cluster)
        if self._cluster < 1 or self._grid[0] % self._cluster:
            raise ValueError(
                f"cluster must be >= 1 and divide grid[0] = {self._grid[0]}, got {cluster}"
            )
        self.params = params
        self._struct = struct.Struct("=" + "".join(_PARAM_CODES[c] for c in params))
        n = len(params)
        self._buf = ctypes.create_string_buffer(max(8 * n, 8))
        base = ctypes.addressof(self._buf)
        self._ptrs = (ctypes.c_void_p * max(n, 1))(*(base + 8 * i for i in range(n)))
        self._addr = ctypes.addressof(self._ptrs) if n else 0
        self._lock = threading.Lock()
        self._dep = bool(programmatic)
        self._configs: dict[int, Any] = {}  # stream handle -> CUlaunchConfig

    def __repr__(self) -> str:
        return (
            f"<rtc.Launcher {self.name} grid={self._grid} block={self._block} "
            f"params={self.params!r}{' cooperative' if self._coop else ''}"
            f"{f' cluster={self._cluster}' if self._cluster > 1 else ''}"
            f"{' programmatic' if self._dep else ''}>"
        )

    @property
    def programmatic(self) -> bool:
        """Whether launches are programmatic dependents of the stream's previous kernel."""
        return self._dep

    def _config(self, stream: int) -> Any:
        """The ``CUlaunchConfig`` of a launch on ``stream`` (built once per stream)."""
        ids = _driver.CUlaunchAttributeID
        attrs = []
        if self._dep:
            dep = _driver.CUlaunchAttribute()
            dep.id = ids.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
            dep.value.programmaticStreamSerializationAllowed = 1
            attrs.append(dep)
        if self._coop:
            coop = _driver.CUlaunchAttribute()
            coop.id = ids.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
            coop.value.cooperative = 1
            attrs.append(coop)
        if self._cluster > 1:
            attrs.append(_cluster_attribute(self._cluster))
        cfg = _driver.CUlaunchConfig()
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = self._grid
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = self._block
        cfg.sharedMemBytes = self._smem
        cfg.hStream = stream
        cfg.attrs = attrs
        cfg.numAttrs = len(attrs)
        if len(self._configs) >= _CACHE_LIMIT:
            self._configs.clear()
        self._configs[stream] = cfg
        return cfg

    def __call__(self, stream: int, *args: Any) -> None:
        """Launch on ``stream`` (a raw ``CUstream`` handle, 0 the legacy default stream) with
        ``args``, one per parameter code (pointers as ints), on the launcher's device whatever
        device is current (as torch's device guard)."""
        if self._device is None:  # the current device's
            if not getattr(_tls, "has_context", False):
                ensure_context(None)
        else:
            err, dev = _driver.cuCtxGetDevice()
            if int(err) or int(dev) != self._device:
                with on_device(self._device):
                    self._launch(stream, args)
                return
        self._launch(stream, args)

    def _launch(self, stream: int, args: tuple) -> None:
        with self._lock:
            self._struct.pack_into(self._buf, 0, *args)
            cfg = self._configs.get(stream)
            if cfg is None:
                cfg = self._config(stream)
            err = _driver.cuLaunchKernelEx(cfg, self._fn, self._addr, 0)[0]
        if int(err) != 0:
            raise RuntimeError(f"launch of {self.name} failed: {getattr(err, 'name', err)}")


_NO_GUARD = contextlib.nullcontext()
# device -> its primary context, retained once for the process (as torch and cuda.core do)
_primary: dict[int, Any] = {}


def _primary_context(device: int) -> Any:
    ctx = _primary.get(device)
    if ctx is None:
        _driver.cuInit(0)  # (a no-op once the driver is initialised)
        err, ctx = _driver.cuDevicePrimaryCtxRetain(_driver.CUdevice(device))
        if int(err):
            raise RuntimeError(f"cuDevicePrimaryCtxRetain({device}) failed: {err!r}")
        ctx = _primary.setdefault(device, ctx)
    return ctx


@contextlib.contextmanager
def on_device(device: int | None) -> Iterator[None]:
    """Make ``device``'s primary context current for the block where another device's is, or
    none is (a call on arrays of a GPU other than the thread's current one, as torch's device
    guard), and leave the thread's context as it was after it. ``None``: the current device,
    as it is."""
    _core()
    if device is None:
        yield
        return
    err, dev = _driver.cuCtxGetDevice()
    if not int(err) and int(dev) == device:
        yield
        return
    (err,) = _driver.cuCtxPushCurrent(_primary_context(device))
    if int(err):
        raise RuntimeError(f"cuCtxPushCurrent for device {device} failed: {err!r}")
    try:
        yield
    finally:
        _driver.cuCtxPopCurrent()


def ensure_context(device: int | None = None) -> None:
    """Make sure this thread has a current context, the primary one of ``device`` if none is."""
    _core()
    err, ctx = _driver.cuCtxGetCurrent()
    if int(err) != 0 or int(ctx) == 0:
        from cuda.core import Device

        Device(device or 0).set_current()
    _tls.device = device
    _tls.has_context = True


def memset_d32_async(ptr: int, value: int, count: int, stream: Any = None) -> None:
    """Set ``count`` 32-bit words at device address ``ptr`` to ``value``, ordered on ``stream``.

    Used to zero inter-CTA barrier counters before a launch; capturable in CUDA graphs.
    """
    _core()
    if not getattr(_tls, "has_context", False):
        ensure_context(None)
    if stream is None:
        handle = 0
    elif isinstance(stream, int):
        handle = stream
    else:
        handle = _stream_handle(stream)
    (err,) = _driver.cuMemsetD32Async(ptr, value, count, handle)
    if int(err) != 0:
        raise RuntimeError(f"cuMemsetD32Async failed: {err!r}")
