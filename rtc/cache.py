"""Compilation caches of :mod:`rtc`: an in-process store and an on-disk store.

In-process
    A dict of :class:`rtc.CompiledModule` keyed by every compile input. Lookups of a key that
    is being compiled by another thread wait on a per-key lock, so concurrent callers trigger
    exactly one NVRTC compile and all receive the same object.

On disk
    Built on :class:`cuda.core.utils.FileStreamProgramCache` (writes stage a temporary file and
    ``os.replace`` it, so concurrent processes never see a half-written entry). Each entry is a
    small framed payload, because the cuda.core cache stores raw bytes and would lose the
    name-expression -> mangled-name mapping::

        b"RTCCUBIN" | u32 format version | u32 header length | JSON header | cubin

    The JSON header holds ``key`` (the hex of the entry's key, so an entry copied or renamed to
    another key's path is refused), ``symbols``, ``cubin_size``, the NVRTC ``log`` and ``sha256``
    (of the rest of the header and the cubin: a flipped byte in the symbol map is caught as one
    in the cubin). A payload that fails any check is treated as a miss, recompiled and
    overwritten.

Environment (read on every compile or disk lookup)
    ``NUMBA_NORMS_CACHE_DIR``: cache directory (default ``$XDG_CACHE_HOME/numba-norms/rtc`` or
    ``~/.cache/numba-norms/rtc``). ``NUMBA_NORMS_DISABLE_DISK_CACHE=1``: no disk reads or writes.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import stat
import struct
import threading
import warnings
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

__all__ = [
    "build_once",
    "cache_dir",
    "disk_cache_enabled",
    "cache_entries",
    "cache_size_bytes",
    "clear_cache",
    "disk_cache_problem",
    "share_entries",
    "stats",
    "reset_stats",
]

ENV_CACHE_DIR = "NUMBA_NORMS_CACHE_DIR"
ENV_DISABLE = "NUMBA_NORMS_DISABLE_DISK_CACHE"

# Bump when the payload layout or the meaning of the key inputs changes (2: the header names its
# key; the checksum covers the header).
SCHEMA_VERSION = 2
_MAGIC = b"RTCCUBIN"
_PREFIX = struct.Struct("<8sII")
_ELF_MAGIC = b"\x7fELF"
# FileStreamProgramCache's layout: entries/<first _FANOUT hex digits>/<the rest>, of the
# sha-256 of the key (_entry_path builds a path, _entry_files lists them)
_ENTRIES_SUBDIR = "entries"
_FANOUT = 2
_DIGEST_HEX = 2 * hashlib.sha256().digest_size
_TMP_SUBDIR = "tmp"  # where it stages a write (owner-only)

# ---------------------------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------------------------

_STAT_NAMES = (
    "nvrtc_compiles",
    "compile_errors",
    "memory_hits",
    "disk_hits",
    "disk_misses",
    "disk_writes",
    "disk_corrupt",
    "disk_errors",
)
_stats_lock = threading.Lock()
_stats: dict[str, int] = dict.fromkeys(_STAT_NAMES, 0)


def _bump(name: str) -> None:
    with _stats_lock:
        _stats[name] += 1


def stats() -> dict[str, int]:
    """Return a snapshot of the cache counters of this process.

    Returns
    -------
    dict
        ``nvrtc_compiles`` (NVRTC invocations, failed ones included), ``compile_errors``,
        ``memory_hits``, ``disk_hits``, ``disk_misses``, ``disk_writes``, ``disk_corrupt``
        (entries rejected by validation and recompiled), ``disk_errors`` (I/O failures).
    """
    with _stats_lock:
        return dict(_stats)


def reset_stats() -> None:
    """Zero every counter returned by :func:`stats`."""
    with _stats_lock:
        for k in _stats:
            _stats[k] = 0


# ---------------------------------------------------------------------------------------------
# warnings
# ---------------------------------------------------------------------------------------------

_warned: set[tuple[str, str]] = set()


def _warn_once(kind: str, where: str, msg: str) -> None:
    with _stats_lock:
        if (kind, where) in _warned:
            return
        _warned.add((kind, where))
    warnings.warn(msg, RuntimeWarning, stacklevel=4)


# ---------------------------------------------------------------------------------------------
# locations
# ---------------------------------------------------------------------------------------------


def cache_dir() -> Path:
    """Return the on-disk cache directory (it may not exist yet).

    Returns
    -------
    pathlib.Path
        ``$NUMBA_NORMS_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/numba-norms/rtc``, else
        ``~/.cache/numba-norms/rtc``.
    """
    env = os.environ.get(ENV_CACHE_DIR)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return root / "numba-norms" / "rtc"


def disk_cache_enabled() -> bool:
    """Return False when ``NUMBA_NORMS_DISABLE_DISK_CACHE`` is set to a true value."""
    v = os.environ.get(ENV_DISABLE, "").strip().lower()
    return v in ("", "0", "false", "no", "off")


_disk_lock = threading.Lock()
_disk_caches: dict[str, Any] = {}


def _disk_cache() -> Any | None:
    """Return the ``FileStreamProgramCache`` for the current directory, or None if disabled.

    An unusable directory warns once and disables the disk layer for that directory.
    """
    if not disk_cache_enabled():
        return None
    path = str(cache_dir())
    cache = _disk_caches.get(path)
    if cache is not None:
        return cache if cache is not False else None
    with _disk_lock:
        cache = _disk_caches.get(path)
        if cache is None:
            try:
                cache = _shared_cache_type()(path)
            except OSError as exc:
                _bump("disk_errors")
                _warn_once(
                    "dir",
                    path,
                    f"rtc: disk cache directory {path!r} is unusable ({exc}); "
                    "continuing without the disk cache",
                )
                cache = False
            _disk_caches[path] = cache
    return cache if cache is not False else None


_shared_type: Any = None


def _shared_cache_type() -> Any:
    """``FileStreamProgramCache`` that opens a cache another user built: cuda.core makes ``tmp/``
    owner-only and sweeps it on opening, which raises for anyone else; entries stay readable
    (a write then fails and warns, as for any unwritable cache)."""
    global _shared_type
    if _shared_type is None:
        from cuda.core.utils import FileStreamProgramCache

        class SharedProgramCache(FileStreamProgramCache):
            def _sweep_stale_tmp_files(self) -> None:
                try:
                    super()._sweep_stale_tmp_files()
                except PermissionError:
                    pass  # another user's leftovers are theirs to sweep

            def __init__(self, path: str) -> None:
                self._rtc_root = Path(path)
                super().__init__(path)

            def __getitem__(self, key: object) -> bytes:
                # Reading a FIFO (or a device) at an entry's path would block for ever; refuse
                # what is not a regular file, as a read error (the compile's write then replaces
                # it, unless it is a directory).
                path = _entry_path(self._rtc_root, key)
                try:
                    mode = os.stat(path).st_mode
                except FileNotFoundError:
                    raise KeyError(key) from None
                if not stat.S_ISREG(mode):
                    raise OSError(f"{path} is not a regular file")
                return super().__getitem__(key)

        _shared_type = SharedProgramCache
    return _shared_type


def _entry_path(root: Path, key: object) -> Path:
    """Where ``FileStreamProgramCache`` keeps ``key``'s entry: ``entries/`` and the sha-256 of
    the key split after two hex digits (the layout :func:`_entry_files` lists; a test checks it
    against the entries cuda.core writes)."""
    k = key.encode("utf-8") if isinstance(key, str) else bytes(key)
    digest = hashlib.sha256(k).hexdigest()
    return root / _ENTRIES_SUBDIR / digest[:_FANOUT] / digest[_FANOUT:]


def _forget_disk_cache(path: str) -> None:
    with _disk_lock:
        _disk_caches.pop(path, None)


# ---------------------------------------------------------------------------------------------
# payload framing
# ---------------------------------------------------------------------------------------------


def _canonical(header: dict) -> bytes:
    return json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")


def _digest(header: dict, cubin: bytes) -> str:
    """sha256 of the header (without its ``sha256``) and the cubin."""
    h = hashlib.sha256(_canonical({k: v for k, v in header.items() if k != "sha256"}))
    h.update(b"\0")
    h.update(cubin)
    return h.hexdigest()


def encode_payload(cubin: bytes, symbols: dict[str, str], log: str, key: bytes) -> bytes:
    """Frame a cubin and its metadata for the disk cache entry of ``key`` (see module
    docstring)."""
    header = {"key": key.hex(), "symbols": symbols, "cubin_size": len(cubin), "log": log}
    header["sha256"] = _digest(header, cubin)
    data = _canonical(header)
    return _PREFIX.pack(_MAGIC, SCHEMA_VERSION, len(data)) + data + cubin


def decode_payload(
    data: bytes, name_expressions: tuple[str, ...], key: bytes
) -> tuple[bytes, dict, str]:
    """Validate and unpack a disk-cache payload.

    Parameters
    ----------
    data : bytes
        Raw entry contents.
    name_expressions : tuple of str
        Expressions the caller needs; each must be present in the stored symbol map.
    key : bytes
        The key the entry was looked up by; the payload must name it.

    Returns
    -------
    (cubin, symbols, log)

    Raises
    ------
    ValueError
        If the payload is truncated, corrupt, of another format version, or incomplete.
    """
    if len(data) < _PREFIX.size:
        raise ValueError("truncated prefix")
    magic, version, hlen = _PREFIX.unpack_from(data)
    if magic != _MAGIC:
        raise ValueError("bad magic")
    if version != SCHEMA_VERSION:
        raise ValueError(f"format version {version} != {SCHEMA_VERSION}")
    start = _PREFIX.size
    if hlen <= 0 or start + hlen > len(data):
        raise ValueError("truncated header")
    try:
        header = json.loads(data[start : start + hlen].decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, nested too deep
        raise ValueError(f"bad header: {type(exc).__name__}") from None
    if not isinstance(header, dict):
        raise ValueError("bad header type")
    cubin = data[start + hlen :]
    if header.get("cubin_size") != len(cubin):
        raise ValueError("cubin size mismatch")
    try:
        digest = _digest(header, cubin)
    except (TypeError, ValueError, RecursionError):  # keys json cannot sort, say
        raise ValueError("bad header contents") from None
    if header.get("sha256") != digest:
        raise ValueError("checksum mismatch")
    if header.get("key") != key.hex():
        raise ValueError("entry of another key")
    if not cubin.startswith(_ELF_MAGIC):
        raise ValueError("cubin is not an ELF image")
    symbols = header.get("symbols")
    if not isinstance(symbols, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in symbols.items()
    ):
        raise ValueError("bad symbol map")
    missing = [n for n in name_expressions if n not in symbols]
    if missing:
        raise ValueError(f"symbol map lacks {missing}")
    log = header.get("log", "")
    return bytes(cubin), symbols, log if isinstance(log, str) else ""


def disk_get(cache: Any, key: bytes) -> bytes | None:
    """Read an entry; I/O errors warn once and count as a miss."""
    try:
        return cache.get(key)
    except OSError as exc:
        _bump("disk_errors")
        _warn_once(
            "read", str(cache_dir()), f"rtc: cannot read the disk cache ({exc}); recompiling"
        )
        return None


def disk_put(cache: Any, key: bytes, payload: bytes) -> bool:
    """Write an entry atomically; I/O errors warn once and are otherwise ignored."""
    try:
        cache[key] = payload
    except OSError as exc:
        _bump("disk_errors")
        _warn_once(
            "write",
            str(cache_dir()),
            f"rtc: cannot write the disk cache ({exc}); continuing without storing",
        )
        return False
    _bump("disk_writes")
    return True


# ---------------------------------------------------------------------------------------------
# in-process store
# ---------------------------------------------------------------------------------------------

_memory: dict[tuple, Any] = {}
_key_locks_guard = threading.Lock()
_key_locks: dict[tuple, Flight] = {}


class Flight:
    """One key's compile in progress: the lock its callers queue on, and the error it ended in
    (the callers that queued behind it get that error instead of compiling again; a call that
    comes after it is forgotten compiles afresh)."""

    __slots__ = ("lock", "error")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.error: Exception | None = None


def key_lock(key: tuple) -> Flight:
    """Return the :class:`Flight` serialising the compile of ``key`` (created on first use)."""
    with _key_locks_guard:
        flight = _key_locks.get(key)
        if flight is None:
            flight = _key_locks[key] = Flight()
        return flight


def release_key_lock(key: tuple, flight: Flight) -> None:
    """Forget the key's flight once its module is stored or its compile failed (callers queued
    on it already hold a reference)."""
    with _key_locks_guard:
        if _key_locks.get(key) is flight:
            del _key_locks[key]


def copy_error(exc: Exception) -> Exception:
    """A copy of ``exc`` for another thread to raise ``from`` it (raising one object in several
    threads would pile every thread's frames onto its traceback, and ``raise exc from exc``
    would make it its own cause); one that cannot be copied is told of in a ``RuntimeError``."""
    try:
        err = copy.copy(exc)
    except Exception:
        err = None
    if err is None or err is exc:
        err = RuntimeError(f"the build this call waited for failed: {exc!r}")
    return err


_MISSING = object()


def build_once(store: dict, key: Hashable, build: Callable[[], Any]) -> tuple[Any, bool]:
    """``store[key]``, made by ``build()`` where it is absent: one build per key however many
    threads ask at once, different keys concurrently. Callers queued behind a build that
    raised get a copy of its error (raised from it) instead of building again; a call that
    comes after it builds afresh.

    Parameters
    ----------
    store : dict
        The caller's cache (any value may be stored, ``None`` included).
    key : hashable
        The value's key in ``store``.
    build : callable
        Makes the value; called with no arguments, at most once per key at a time.

    Returns
    -------
    (value, built)
        ``built``: this call ran ``build``.
    """
    obj = store.get(key, _MISSING)
    if obj is not _MISSING:
        return obj, False
    flight_key = (id(store), key)
    flight = key_lock(flight_key)
    try:
        with flight.lock:
            obj = store.get(key, _MISSING)
            if obj is not _MISSING:
                return obj, False
            if flight.error is not None:  # the build this call queued behind failed
                raise copy_error(flight.error) from flight.error
            try:
                obj = build()
            except Exception as exc:
                flight.error = exc
                raise
            store[key] = obj
            return obj, True
    finally:
        release_key_lock(flight_key, flight)


# ---------------------------------------------------------------------------------------------
# inspection / maintenance
# ---------------------------------------------------------------------------------------------


_HEX = frozenset("0123456789abcdef")


def _hex(name: str, n: int) -> bool:
    return len(name) == n and set(name) <= _HEX


def _entry_files(root: Path) -> list[Path]:
    """The entry files below ``root``: ``entries/<2 hex>/<62 hex>`` (the sha-256 of the key,
    as cuda.core names them) and nothing else, so foreign files are neither listed nor
    removed. Directories this process cannot read warn and are skipped."""
    base = root / _ENTRIES_SUBDIR
    out: list[Path] = []

    def unreadable(path: str, exc: OSError) -> None:
        _warn_once("list", path, f"rtc: cannot read the cache directory {path} ({exc}); skipped")

    try:
        with os.scandir(base) as outer:
            subs = [e for e in outer if _hex(e.name, _FANOUT) and e.is_dir(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        unreadable(str(base), exc)
        return []
    for sub in subs:
        try:
            with os.scandir(sub.path) as inner:
                out.extend(
                    Path(e.path)
                    for e in inner
                    if _hex(e.name, _DIGEST_HEX - _FANOUT) and e.is_file(follow_symlinks=False)
                )
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            unreadable(sub.path, exc)
    return sorted(out)


def disk_cache_problem() -> str:
    """Why the disk cache directory cannot store entries ("" if it can).

    A file is made in each directory an entry passes through (``tmp/`` created owner-only, as
    cuda.core makes it); a directory that does not exist yet is created.
    """
    import tempfile

    root = cache_dir()
    try:
        root.mkdir(parents=True, exist_ok=True)
        for sub, mode in ((_ENTRIES_SUBDIR, 0o777), (_TMP_SUBDIR, 0o700)):
            d = root / sub
            d.mkdir(mode=mode, exist_ok=True)
            with tempfile.TemporaryFile(dir=d):
                pass
    except OSError as exc:
        return str(exc)
    return ""


def share_entries() -> None:
    """Make the disk entries and their directories readable by every user (cuda.core writes
    them owner-only): a cache built by one user, e.g. root in an image's build, then serves
    another. ``tmp/`` stays owner-only; entries of other owners are left as they are."""
    root = cache_dir()
    for path in _entry_files(root):
        for p, bits in ((path.parent, 0o555), (path, 0o444)):
            try:
                mode = p.stat().st_mode
                if mode & bits != bits:
                    p.chmod(mode | bits)
            except OSError:
                pass  # not ours: its owner decides
    try:
        entries = root / _ENTRIES_SUBDIR
        entries.chmod(entries.stat().st_mode | 0o555)
    except OSError:
        pass


def cache_entries() -> list[tuple[Path, int]]:
    """List the entries of the on-disk cache.

    Returns
    -------
    list of (pathlib.Path, int)
        Each entry file and its size in bytes, sorted by path. Empty if the directory does not
        exist. Listed even when the disk cache is disabled.
    """
    out = []
    for p in _entry_files(cache_dir()):
        try:
            out.append((p, p.stat().st_size))
        except OSError:  # removed meanwhile, or not ours to stat
            continue
    return out


def cache_size_bytes() -> int:
    """Return the total size in bytes of the on-disk cache entries."""
    return sum(size for _, size in cache_entries())


def clear_cache(memory: bool = True, disk: bool = True) -> int:
    """Drop cached modules.

    Parameters
    ----------
    memory : bool
        Forget the in-process modules (objects already handed out stay usable).
    disk : bool
        Delete the entry files of the current cache directory (also when the disk cache is
        disabled).

    Returns
    -------
    int
        Number of in-memory modules plus disk entries removed.
    """
    removed = 0
    if memory:
        removed += len(_memory)
        _memory.clear()
    if disk:
        root = cache_dir()
        entries = _entry_files(root)
        for p in entries:
            try:
                p.unlink()
                removed += 1
            except FileNotFoundError:
                continue
            except OSError as exc:
                _warn_once("clear", str(root), f"rtc: cannot remove cache entry {p}: {exc}")
        for sub in {p.parent for p in entries}:
            try:
                sub.rmdir()  # only where nothing else is left
            except OSError:
                pass
    return removed
