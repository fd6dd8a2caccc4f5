"""NVRTC compilation to CUBIN with in-process and on-disk caching.

``rtc.compile`` returns a shared :class:`CompiledModule`. Because equal requests return the
*same* object, the module cannot say where a particular lookup came from; that is reported
per thread by :func:`last_origin` (``"compiled"``, ``"disk"`` or ``"memory"``), while
:attr:`CompiledModule.origin` records how the object itself was produced (``"compiled"`` or
``"disk"``).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import operator
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from . import _elf
from . import cache as _cache
from ._headers import cuda_header_dirs, include_dirs_digest
from ._options import parse_nvrtc_flags
from .device import current_device_ordinal, device_info
from .launch import Kernel

__all__ = [
    "CompileError",
    "CompiledModule",
    "cached_cubin",
    "compile",
    "last_origin",
    "nvrtc_version",
    "parse_arch",
]

_tls = threading.local()
_core_lock = threading.Lock()
_core_ready = False


def _import_core() -> None:
    """Import cuda.core and cuda.core.utils once, under a lock.

    cuda.core's package ``__init__`` picks its cu12/cu13 build at import time; a second thread
    importing it meanwhile saw a half-initialised module (``ImportError: cannot import name
    'Program'``, two compile threads in a fresh process).
    """
    global _core_ready
    if not _core_ready:
        with _core_lock:
            if not _core_ready:
                import cuda.core  # noqa: F401
                import cuda.core.utils  # noqa: F401

                _core_ready = True


# The minor version is the last digit: sm_90 is (9, 0), sm_100 (10, 0), sm_120 (12, 0).
_ARCH_RE = re.compile(r"^(?:sm_)?(\d+)(\d)([af]?)$")


# ---------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------


def _numbered(source: str) -> str:
    # NVRTC counts "\n" only (str.splitlines also breaks at form feeds, U+2028, ...)
    lines = [line.removesuffix("\r") for line in source.split("\n")]
    if lines and not lines[-1]:
        lines.pop()
    width = max(4, len(str(len(lines))))
    return "\n".join(f"{i:{width}d} | {line}" for i, line in enumerate(lines, 1))


class CompileError(RuntimeError):
    """NVRTC rejected a program.

    Attributes
    ----------
    log : str
        The NVRTC compilation log.
    options : tuple of str
        The complete NVRTC option list that was used.
    source : str
        The program source.
    name : str
        The program name (NVRTC uses it as the file name in diagnostics).
    name_expressions : tuple of str
        The requested name expressions.
    arch : str or None
        Target architecture.
    """

    def __init__(
        self,
        log: str,
        *,
        options: Sequence[str] = (),
        source: str = "",
        name: str = "rtc_program",
        name_expressions: Sequence[str] = (),
        arch: str | None = None,
    ) -> None:
        self.log = log
        self.options = tuple(options)
        self.source = source
        self.name = name
        self.name_expressions = tuple(name_expressions)
        self.arch = arch
        super().__init__(self._render())

    def _render(self) -> str:
        parts = [
            f"NVRTC failed to compile {self.name!r} for {self.arch}",
            "---- log ----",
            self.log.rstrip() or "(empty)",
            "---- options ----",
            " ".join(self.options) or "(none)",
            "---- name expressions ----",
            ", ".join(self.name_expressions) or "(none)",
            "---- source ----",
            _numbered(self.source),
        ]
        return "\n".join(parts)

    def __reduce__(self) -> tuple:
        kw = {
            "options": self.options,
            "source": self.source,
            "name": self.name,
            "name_expressions": self.name_expressions,
            "arch": self.arch,
        }
        return (_rebuild_compile_error, (self.log, kw))


def _rebuild_compile_error(log: str, kw: dict) -> CompileError:
    return CompileError(log, **kw)


def _is_cuda_error(exc: BaseException) -> bool:
    # cuda.core does not export its exception types publicly; NVRTCError derives from CUDAError.
    return any(t.__name__ == "CUDAError" for t in type(exc).__mro__)


def _log_from_exception(exc: BaseException) -> str:
    text = str(exc)
    marker = "compilation log:"
    idx = text.find(marker)
    if idx >= 0:
        text = text[idx + len(marker) :]
    return text.replace("\x00", "").strip("\n")


class _LogSink:
    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, s: str) -> None:
        self.parts.append(s)

    def text(self) -> str:
        return "".join(self.parts).replace("\x00", "").strip("\n")


# ---------------------------------------------------------------------------------------------
# compiled module
# ---------------------------------------------------------------------------------------------


def parse_arch(arch: str) -> tuple[int, int, str]:
    """Split an arch name into ``(major, minor, suffix)``.

    Parameters
    ----------
    arch : str
        ``"sm_90"``, ``"90"``, ``"sm_90a"``, ``"sm_100f"``, ``"sm_120"``: the minor version is
        the last digit, the suffix ``""``, ``"a"`` or ``"f"``.

    Returns
    -------
    tuple of (int, int, str)

    Raises
    ------
    ValueError
        If ``arch`` is not of that form.
    """
    m = _ARCH_RE.match(str(arch).strip().lower())
    if m is None:
        raise ValueError(f"invalid arch {arch!r}; expected e.g. 'sm_90'")
    return int(m.group(1)), int(m.group(2)), m.group(3)


class CompiledModule:
    """A CUBIN produced by :func:`compile`, plus what is needed to load its kernels.

    Instances are shared between all callers that asked for the same inputs; treat them as
    immutable.

    Attributes
    ----------
    arch : str
        Target architecture, e.g. ``"sm_90"``.
    cubin : bytes
        The ELF image.
    symbols : dict of str to str
        Name expression -> mangled kernel name.
    log : str
        NVRTC log (warnings) of the compile that produced the cubin.
    name : str
        Program name.
    origin : str
        How this object was produced: ``"compiled"`` or ``"disk"``. For where a particular
        :func:`compile` call got it from (including ``"memory"``) use :func:`rtc.last_origin`.
    """

    __slots__ = (
        "_arch",
        "_cubin",
        "_symbols",
        "_log",
        "_name",
        "_origin",
        "_objcode",
        "_kernels",
        "_frames",
        "_lock",
        "__weakref__",
    )

    def __init__(
        self, *, arch: str, cubin: bytes, symbols: dict[str, str], log: str, name: str, origin: str
    ) -> None:
        self._arch = arch
        self._cubin = cubin
        self._symbols = symbols
        self._log = log
        self._name = name
        self._origin = origin
        self._objcode: Any = None
        self._kernels: dict[tuple[int, str], Kernel] = {}
        self._frames: dict[str, int] | None = None
        self._lock = threading.Lock()

    arch = property(lambda self: self._arch, doc="Target architecture, e.g. 'sm_90'.")
    cubin = property(lambda self: self._cubin, doc="The CUBIN (ELF) bytes.")
    symbols = property(lambda self: self._symbols, doc="Name expression -> mangled name.")
    log = property(lambda self: self._log, doc="NVRTC log of the producing compile.")
    name = property(lambda self: self._name, doc="Program name.")
    origin = property(lambda self: self._origin, doc="'compiled' or 'disk'.")

    def __repr__(self) -> str:
        return (
            f"<rtc.CompiledModule {self._name!r} {self._arch} {len(self._cubin)} bytes, "
            f"{len(self._symbols)} symbols, origin={self._origin}>"
        )

    def frame_bytes(self, name_expression: str) -> int:
        """Local memory (bytes a thread: spills and local arrays) of a kernel, read from the
        cubin; no GPU needed. Equals :attr:`Kernel.local_bytes` once loaded.

        Parameters
        ----------
        name_expression : str
            One of the name expressions given to :func:`compile` (or a mangled symbol).

        Raises
        ------
        KeyError
            If the cubin records no frame size for that kernel.
        """
        frames = self._frames
        if frames is None:
            with self._lock:  # parsed once, as the module is loaded once
                if self._frames is None:
                    self._frames = _elf.frame_bytes(self._cubin)
                frames = self._frames
        name = self._symbols.get(name_expression, name_expression)
        try:
            return frames[name]
        except KeyError:
            raise KeyError(
                f"no kernel {name_expression!r} in module {self._name!r} "
                f"(kernels: {sorted(self._symbols)})"
            ) from None

    def kernel(self, name_expression: str) -> Kernel:
        """Return a launchable kernel on the current device.

        The cubin is loaded once (lazily, thread-safe); kernels are cached per device and
        name expression. If no CUDA context is current, the device's primary context is made
        current.

        Parameters
        ----------
        name_expression : str
            One of the name expressions given to :func:`compile` (or a plain/mangled symbol).

        Returns
        -------
        Kernel

        Raises
        ------
        RuntimeError
            Without a GPU, or when the cubin's arch cannot run on the current device.
        """
        dev = current_device_ordinal()
        if dev is None:
            raise RuntimeError("no GPU: CompiledModule.kernel() needs a CUDA device")
        k = self._kernels.get((dev, name_expression))
        if k is not None:
            return k
        with self._lock:
            k = self._kernels.get((dev, name_expression))
            if k is None:
                k = self._load_kernel(dev, name_expression)
                self._kernels[(dev, name_expression)] = k
        return k

    def _load_kernel(self, dev: int, name_expression: str) -> Kernel:
        from cuda.bindings import driver
        from cuda.core import Device, ObjectCode

        info = device_info(dev)
        if info is not None:
            major, minor, suffix = parse_arch(self._arch)
            dmaj, dmin = info.cc
            # plain: this major, minor up to the device's; "f" (family) as well; "a": exactly
            if major != dmaj or minor > dmin or (suffix == "a" and minor != dmin):
                raise RuntimeError(
                    f"module {self._name!r} was compiled for {self._arch}, which cannot run on "
                    f"device {dev} ({info.name}, {info.arch})"
                )
        err, ctx = driver.cuCtxGetCurrent()
        if err != driver.CUresult.CUDA_SUCCESS or int(ctx) == 0:
            Device(dev).set_current()
        if self._objcode is None:
            # The library handle is context independent; one ObjectCode serves every device.
            # Mangled names as bytes, exactly as Program.compile records them: cuda.core passes
            # mapped names straight to cuLibraryGetKernel.
            self._objcode = ObjectCode.from_cubin(
                self._cubin,
                name=self._name,
                symbol_mapping={k: v.encode() for k, v in self._symbols.items()},
            )
        return Kernel(self._objcode.get_kernel(name_expression), name_expression, dev)


# ---------------------------------------------------------------------------------------------
# compile
# ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def nvrtc_version() -> tuple[int, int]:
    """Return the version of the loaded NVRTC library, e.g. ``(13, 0)``; needs no GPU."""
    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"nvrtcVersion failed: {err}")
    return int(major), int(minor)


@functools.cache
def nvrtc_build() -> str:
    """The loaded NVRTC library's file name and size: ``nvrtcVersion`` (in cuda.core's key) says
    only major.minor, and a patch release may compile differently. No path, so a cache built in
    one environment serves another with the same library."""
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        path = load_nvidia_dynamic_lib("nvrtc").abs_path
        return f"{os.path.basename(path)} {os.path.getsize(path)}"
    except Exception as exc:  # not found this way: the version alone, as before
        return f"unknown ({type(exc).__name__})"


def last_origin() -> str | None:
    """Where the latest :func:`compile` call of this thread got its module from.

    Returns
    -------
    str or None
        ``"compiled"`` (NVRTC ran), ``"disk"`` (on-disk cache), ``"memory"`` (in-process
        cache), or None if this thread has not called :func:`compile` yet.
    """
    return getattr(_tls, "origin", None)


_arch_memo: dict[str, str] = {}


def _normalize_arch(arch: str) -> str:
    norm = _arch_memo.get(arch)
    if norm is None:
        major, minor, suffix = parse_arch(str(arch).strip())
        norm = _arch_memo[arch] = f"sm_{major}{minor}{suffix}"
    return norm


_defines_memo: dict[tuple, tuple] = {}


def _normalize_defines(defines: Mapping[str, str | int | None] | None) -> tuple:
    if not defines:
        return ()
    # value types in the key: 1.0 == 1 (and hashes alike) but only the int is a valid value
    raw = tuple((k, v.__class__, v) for k, v in defines.items())
    try:
        return _defines_memo[raw]
    except (KeyError, TypeError):
        pass
    norm = _normalize_defines_uncached(defines)
    try:
        if len(_defines_memo) > 4096:
            _defines_memo.clear()
        _defines_memo[raw] = norm
    except TypeError:  # unhashable values are rejected by the normaliser anyway
        pass
    return norm


def _normalize_defines_uncached(defines: Mapping[str, str | int | None]) -> tuple:
    out = []
    for k, v in defines.items():
        if not isinstance(k, str) or not k or any(c in k for c in " =\t\n"):
            raise ValueError(f"invalid macro name {k!r}")
        if v is None:
            out.append((k, None))
        elif isinstance(v, bool):
            out.append((k, "1" if v else "0"))
        elif isinstance(v, str):
            out.append((k, v))
        else:
            try:  # any integer (numpy's too); a float is refused, not truncated
                out.append((k, str(operator.index(v))))
            except TypeError:
                raise TypeError(
                    f"macro {k!r}: value must be str, int or None, got {type(v).__name__}"
                ) from None
    out.sort()
    return tuple(out)


def _portable(popts: Any, n_inc: int) -> Any:
    """``popts`` for the disk key: the ``include_dirs`` by position, not by path (their contents
    are in the key's extra digest), so a cache built where the package lived elsewhere (another
    environment, a copied install) still hits. The CUDA header directories keep their paths:
    their digest is by path, size and mtime."""
    paths = popts.include_path
    if not n_inc or not paths:
        return popts
    paths = [paths] if isinstance(paths, str) else list(paths)
    return dataclasses.replace(
        popts, include_path=[f"<include_dirs[{i}]>" for i in range(n_inc)] + paths[n_inc:]
    )


def _extra_digest(
    hdr: bytes, cuda_hdr: bytes, defs: tuple, names: tuple[str, ...], name: str, std: str | None
) -> bytes:
    h = hashlib.sha256()
    h.update(f"rtc-disk-schema-{_cache.SCHEMA_VERSION}\0{nvrtc_build()}\0".encode())
    h.update(hdr + b"\0" + cuda_hdr + b"\0")
    h.update(repr((defs, sorted(names), name, std)).encode("utf-8", "surrogateescape"))
    return h.digest()


def compile(
    source: str,
    name_expressions: Sequence[str],
    *,
    arch: str | None = None,
    name: str = "rtc_program",
    options: Sequence[str] = (),
    defines: Mapping[str, str | int | None] | None = None,
    include_dirs: Sequence[str | os.PathLike] = (),
    std: str = "c++17",
    cuda_headers: bool = False,
) -> CompiledModule:
    """Compile CUDA C++ to CUBIN with NVRTC, through the in-process and on-disk caches.

    Parameters
    ----------
    source : str
        CUDA C++ source.
    name_expressions : sequence of str
        Kernels to make addressable, e.g. ``"norm_fwd<float, 4>"``; templates are
        instantiated by naming them. Every one must resolve, or the compile fails.
    arch : str, optional
        ``"sm_90"``, ``"sm_80"``, ... Default: the current device's architecture.
    name : str
        Program name (file name in NVRTC diagnostics).
    options : sequence of str
        Extra NVRTC flags, e.g. ``"-ftz=true"``, ``"-ofast-compile=max"``, ``"-Xptxas=-v"``;
        mapped onto ``cuda.core.ProgramOptions`` (unknown flags raise ``ValueError``).
    defines : mapping, optional
        Macros: ``{"N": 4, "USE_X": None}`` (None defines the macro as 1).
    include_dirs : path-like or sequence of path-like
        Header search path, the only one (not the program name's directory). The contents of
        every file below them are part of the cache key (a header included by an absolute path
        or from above them is not: keep headers below an include directory).
    std : str
        C++ dialect.
    cuda_headers : bool
        Add the CUDA toolkit include directory (for ``<cuda_bf16.h>`` etc.); costs compile
        time, so off by default.

    Returns
    -------
    CompiledModule
        Shared between equal requests. :func:`last_origin` tells where this call got it.

    Raises
    ------
    CompileError
        If NVRTC rejects the program.
    RuntimeError
        If ``arch`` is None and there is no GPU, or if headers below ``include_dirs`` changed
        during each of three compiles.
    ValueError, FileNotFoundError
        For invalid arguments (bad arch, unknown flag, missing include directory).

    Notes
    -----
    In-process key: (arch, source text, name expressions, options, defines, std, name,
    include dirs and a digest of their file contents, cuda_headers). Concurrent requests for
    one key compile once; different keys compile concurrently. On-disk key:
    ``cuda.core.utils.make_program_cache_key`` (covers source, NVRTC version, arch and all
    options) with an ``extra_digest`` over the NVRTC library's name and size
    (:func:`nvrtc_build`), header contents, defines, name expressions and the payload schema
    version.
    """
    _import_core()
    names = (name_expressions,) if isinstance(name_expressions, str) else tuple(name_expressions)
    opts = (options,) if isinstance(options, str) else tuple(options)
    if arch is None:
        info = device_info()
        if info is None:
            raise RuntimeError("no GPU: give arch= to compile only")
        arch = info.arch
    else:
        arch = _normalize_arch(arch)
    defs = _normalize_defines(defines)
    if isinstance(include_dirs, (str, os.PathLike)):  # one directory, not its characters
        include_dirs = (include_dirs,)
    if include_dirs:
        inc = tuple(os.path.abspath(os.fspath(d)) for d in include_dirs)
        for d in inc:
            if not os.path.isdir(d):
                raise FileNotFoundError(f"include directory not found: {d}")
    else:
        inc = ()
    cuda_headers = bool(cuda_headers)
    for _ in range(3):
        hdr = include_dirs_digest(inc) if inc else b""
        key = (arch, source, names, opts, defs, std, name, inc, hdr, cuda_headers)
        try:
            return _through_memory(
                key,
                functools.partial(
                    _build, source, names, arch, name, opts, defs, std, inc, hdr, cuda_headers
                ),
            )
        except _HeadersChanged:
            continue  # NVRTC may have read either version: fingerprint again, compile again
    raise RuntimeError(f"headers below {list(inc)} kept changing while {name!r} compiled")


class _HeadersChanged(Exception):
    """A header below the include directories changed between fingerprint and compile."""


def _through_memory(key: tuple, make: Callable[[], CompiledModule]) -> CompiledModule:
    """The in-process cache in front of ``make`` (disk cache or compile): one ``make`` per key
    even under concurrent calls, different keys concurrently; records :func:`last_origin`."""
    mod, built = _cache.build_once(_cache._memory, key, make)
    if built:
        _tls.origin = mod.origin
    else:
        _cache._bump("memory_hits")
        _tls.origin = "memory"
    return mod


def _build(
    source: str,
    names: tuple[str, ...],
    arch: str,
    name: str,
    opts: tuple[str, ...],
    defs: tuple,
    std: str | None,
    inc: tuple[str, ...],
    hdr: bytes,
    cuda_headers: bool,
) -> CompiledModule:
    from cuda.core import Program, ProgramOptions

    if not isinstance(source, str):
        raise TypeError(f"source must be str, got {type(source).__name__}")
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise TypeError(f"name expressions must be str, got {bad!r}")
    kw = parse_nvrtc_flags(opts)
    macros: list[Any] = [k if v is None else (k, v) for k, v in defs]
    macros += kw.pop("define_macro", [])
    include_path = list(inc)
    cuda_hdr = b""
    if cuda_headers:
        cdirs, cuda_hdr = cuda_header_dirs()
        include_path += list(cdirs)
    if std is not None:
        kw.setdefault("std", std)  # an explicit "-std=" in options wins
    # Headers come from include_dirs alone, whose contents the key covers: NVRTC would also
    # search the program name's directory (the working directory for a bare name).
    kw["no_source_include"] = True
    popts = ProgramOptions(
        arch=arch,
        name=name,
        define_macro=macros or None,
        include_path=include_path or None,
        **kw,
    )

    disk = _cache._disk_cache()
    dkey = None
    if disk is not None:
        try:
            from cuda.core.utils import make_program_cache_key

            dkey = make_program_cache_key(
                code=source,
                code_type="c++",
                options=_portable(popts, len(inc)),
                target_type="cubin",
                name_expressions=names,
                extra_digest=_extra_digest(hdr, cuda_hdr, defs, names, name, std),
            )
        except Exception as exc:  # a key we cannot build must not break compilation
            _cache._bump("disk_errors")
            _cache._warn_once("key", repr(opts), f"rtc: disk cache skipped: {exc}")
        if dkey is not None:
            data = _cache.disk_get(disk, dkey)
            if data is None:
                _cache._bump("disk_misses")
            else:
                try:
                    cubin, symbols, log = _cache.decode_payload(data, names, dkey)
                except ValueError:
                    # Corrupt/truncated/foreign entry: recompile below and overwrite it.
                    _cache._bump("disk_corrupt")
                else:
                    _cache._bump("disk_hits")
                    return CompiledModule(
                        arch=arch, cubin=cubin, symbols=symbols, log=log, name=name, origin="disk"
                    )

    _cache._bump("nvrtc_compiles")
    sink = _LogSink()
    failure: BaseException | None = None
    oc: Any = None
    prog = Program(source, "c++", options=popts)
    try:
        oc = prog.compile("cubin", name_expressions=names, logs=sink)
    except Exception as exc:
        failure = exc
    finally:
        prog.close()
        # Drop the Program before any traceback can capture this frame: a Program freed by the
        # cyclic GC raises inside cuda.core's __dealloc__ (seen with cuda.core 1.2.0).
        del prog
    if failure is not None:
        if not _is_cuda_error(failure):
            raise failure
        _cache._bump("compile_errors")
        raise CompileError(
            sink.text() or _log_from_exception(failure),
            options=_option_strings(popts),
            source=source,
            name=name,
            name_expressions=names,
            arch=arch,
        ) from failure
    # Never repr()/load `oc` here: that needs a driver, and this path must work without a GPU.
    cubin = bytes(oc.code)
    symbols = {
        (k.decode() if isinstance(k, bytes) else str(k)): (
            v.decode() if isinstance(v, bytes) else str(v)
        )
        for k, v in oc.symbol_mapping.items()
    }
    missing = [n for n in names if n not in symbols]
    if missing:
        _cache._bump("compile_errors")
        raise CompileError(
            f"NVRTC did not resolve name expressions {missing}",
            options=_option_strings(popts),
            source=source,
            name=name,
            name_expressions=names,
            arch=arch,
        )
    log = sink.text()
    if inc and include_dirs_digest(inc) != hdr:  # not the headers the key says: keep nothing
        raise _HeadersChanged()
    if dkey is not None:
        _cache.disk_put(disk, dkey, _cache.encode_payload(cubin, symbols, log, dkey))
    return CompiledModule(
        arch=arch, cubin=cubin, symbols=symbols, log=log, name=name, origin="compiled"
    )


def cached_cubin(
    key: Sequence[str],
    build: Callable[[], tuple[bytes, dict[str, str]]],
    *,
    arch: str,
    name: str = "external",
) -> CompiledModule:
    """A cubin made outside NVRTC (e.g. by Numba), kept in rtc's in-process and disk caches.

    Parameters
    ----------
    key : sequence of str
        Identifies what ``build`` makes: its inputs and the versions of the tools behind it.
        With ``arch`` it forms the cache key; change it whenever the cubin could change.
    build : callable
        Called on a miss (once per key even under concurrent calls); returns the cubin (ELF
        bytes) and its symbol map (name -> mangled entry name).
    arch : str
        Target architecture of the cubin, e.g. ``"sm_90"``.
    name : str
        Module name (in messages).

    Returns
    -------
    CompiledModule
        ``origin`` ``"compiled"`` (built now) or ``"disk"``; :func:`last_origin` also reports
        ``"memory"``.
    """
    _import_core()
    arch = _normalize_arch(arch)
    parts = tuple(str(k) for k in key)
    return _through_memory(("cubin", arch, parts), lambda: _load_or_build(parts, build, arch, name))


def _load_or_build(parts: tuple[str, ...], build: Callable, arch: str, name: str) -> CompiledModule:
    disk = _cache._disk_cache()
    # repr of the tuple: parts holding NUL or commas cannot run into each other
    blob = repr(("rtc-external-cubin", _cache.SCHEMA_VERSION, arch) + parts)
    dkey = hashlib.sha256(blob.encode("utf-8", "surrogateescape")).digest()
    if disk is not None:
        data = _cache.disk_get(disk, dkey)
        if data is None:
            _cache._bump("disk_misses")
        else:
            try:
                cubin, symbols, log = _cache.decode_payload(data, (), dkey)
            except ValueError:
                _cache._bump("disk_corrupt")  # rebuilt and overwritten below
            else:
                _cache._bump("disk_hits")
                return CompiledModule(
                    arch=arch, cubin=cubin, symbols=symbols, log=log, name=name, origin="disk"
                )
    cubin, symbols = build()
    cubin = bytes(cubin)
    if not cubin.startswith(b"\x7fELF"):
        raise ValueError(f"{name}: build() did not return a cubin (ELF image)")
    symbols = {str(k): str(v) for k, v in symbols.items()}
    if disk is not None:
        _cache.disk_put(disk, dkey, _cache.encode_payload(cubin, symbols, "", dkey))
    return CompiledModule(
        arch=arch, cubin=cubin, symbols=symbols, log="", name=name, origin="compiled"
    )


def _option_strings(popts: Any) -> tuple[str, ...]:
    try:
        return tuple(b.decode() for b in popts.as_bytes("nvrtc", "cubin"))
    except Exception:
        return ()
