"""Content fingerprints of include directories, cheap enough for every ``rtc.compile`` call.

Every call stats each include directory and each file below it, so that editing a header
in-process changes the cache key. Directory listings are re-read only when a directory's
mtime changed, and file contents are re-hashed only when a file's ``(size, mtime_ns, inode)``
changed. Anything modified within the last ``_RACY_NS`` is never trusted by stat alone:
file-system timestamp granularity can hide a same-size rewrite made within one clock tick.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from functools import lru_cache

__all__ = ["include_dirs_digest", "cuda_header_dirs"]

_RACY_NS = 2_000_000_000
# never #included from: caches and version-control metadata (hidden headers do count)
_SKIP_DIRS = {"__pycache__", ".git", ".hg", ".svn"}

_lock = threading.Lock()
# path -> ((size, mtime_ns, ino), sha256 digest of contents)
_file_digests: dict[str, tuple[tuple[int, int, int], bytes]] = {}
# directory -> ((mtime_ns, ino), [(name, path)] of files, [(name, path)] of subdirectories)
_listings: dict[str, tuple[tuple[int, int], list[tuple[str, str]], list[tuple[str, str]]]] = {}
# dirs tuple -> (stat signature of every file, digest)
_digests: dict[tuple[str, ...], tuple[list, bytes]] = {}


def _listing(path: str, now_ns: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Files and subdirectories of ``path``, re-read only when the directory changed."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return [], []
    sig = (st.st_mtime_ns, st.st_ino)
    cached = _listings.get(path)
    if cached is not None and cached[0] == sig and now_ns - st.st_mtime_ns > _RACY_NS:
        return cached[1], cached[2]
    files: list[tuple[str, str]] = []
    subdirs: list[tuple[str, str]] = []
    try:
        with os.scandir(path) as it:
            for entry in it:
                name = entry.name
                # symlinks followed, as NVRTC follows them (_collect guards against cycles)
                if entry.is_dir():
                    if name not in _SKIP_DIRS:
                        subdirs.append((name, entry.path))
                elif entry.is_file():
                    files.append((name, entry.path))
    except (FileNotFoundError, NotADirectoryError):
        return [], []
    files.sort()
    subdirs.sort()
    with _lock:
        _listings[path] = (sig, files, subdirs)
    return files, subdirs


def _collect(
    path: str, rel: str, now_ns: int, out: list[tuple[str, str]], above: frozenset = frozenset()
) -> None:
    """Files below ``path`` (relative name, path); ``above``: the real paths of the directories
    this one is inside, so a symlink back up is not walked again."""
    real = os.path.realpath(path)
    if real in above:
        return
    above = above | {real}
    files, subdirs = _listing(path, now_ns)
    for name, p in files:
        out.append((rel + name, p))
    for name, p in subdirs:
        _collect(p, f"{rel}{name}/", now_ns, out, above)


def _file_digest(path: str, sig: tuple[int, int, int], now_ns: int) -> bytes:
    cached = _file_digests.get(path)
    if cached is not None and cached[0] == sig and now_ns - sig[1] > _RACY_NS:
        return cached[1]
    with open(path, "rb") as fh:
        digest = hashlib.sha256(fh.read()).digest()
    with _lock:
        _file_digests[path] = (sig, digest)
    return digest


def include_dirs_digest(dirs: tuple[str, ...]) -> bytes:
    """Fingerprint the contents of every file below each include directory.

    Parameters
    ----------
    dirs : tuple of str
        Absolute directory paths, in search order.

    Returns
    -------
    bytes
        SHA-256 digest over (directory index, relative path, content digest) of every file,
        hidden ones and those reached through symbolic links included; ``__pycache__`` and
        version-control directories are left out.
    """
    now = time.time_ns()
    sig: list[tuple[int, str, int, int, int]] = []
    paths: list[str] = []
    recent = False
    for idx, d in enumerate(dirs):
        found: list[tuple[str, str]] = []
        _collect(d, "", now, found)
        for rel, p in found:
            try:
                st = os.stat(p)
            except FileNotFoundError:
                continue
            sig.append((idx, rel, st.st_size, st.st_mtime_ns, st.st_ino))
            paths.append(p)
            if now - st.st_mtime_ns <= _RACY_NS:
                recent = True
    cached = _digests.get(dirs)
    if cached is not None and not recent and cached[0] == sig:
        return cached[1]
    h = hashlib.sha256()
    for (idx, rel, size, mtime, ino), p in zip(sig, paths, strict=True):
        h.update(f"{idx}:{rel}\0".encode("utf-8", "surrogateescape"))
        h.update(_file_digest(p, (size, mtime, ino), now))
    digest = h.digest()
    with _lock:
        _digests[dirs] = (sig, digest)
    return digest


@lru_cache(maxsize=1)
def cuda_header_dirs() -> tuple[tuple[str, ...], bytes]:
    """Locate the CUDA toolkit headers (``cuda_bf16.h`` & co.) and fingerprint them.

    Returns
    -------
    (dirs, digest)
        ``dirs``: the toolkit include directory and, when present, its ``cccl`` subdirectory.
        ``digest``: identifies the header set by the path, size and mtime of every file below
        them; the toolkit is not expected to change while a process runs, so this is computed
        once.

    Raises
    ------
    RuntimeError
        If ``cuda.pathfinder`` cannot find the CUDA runtime headers.
    """
    try:
        from cuda.pathfinder import find_nvidia_header_directory

        inc = find_nvidia_header_directory("cudart")
    except Exception as exc:  # pathfinder missing or broken
        raise RuntimeError(
            f"cuda_headers=True but CUDA headers could not be located: {exc}"
        ) from exc
    if not inc or not os.path.isfile(os.path.join(inc, "cuda_runtime.h")):
        raise RuntimeError(
            "cuda_headers=True but the CUDA runtime headers were not found "
            "(install nvidia-cuda-runtime or set CUDA_HOME)"
        )
    dirs = [os.path.abspath(inc)]
    cccl = os.path.join(inc, "cccl")
    if os.path.isdir(cccl):
        dirs.append(os.path.abspath(cccl))
    # Every file below the include directory, cccl/ with it (CCCL and crt live in
    # subdirectories, shipped by wheels of their own), by path, size and mtime: a few thousand
    # stats, once a process.
    h = hashlib.sha256(repr(dirs).encode("utf-8", "surrogateescape"))
    for root, subdirs, names in os.walk(dirs[0]):
        subdirs.sort()
        for n in sorted(names):
            path = os.path.join(root, n)
            try:
                st = os.stat(path)
            except OSError:
                continue
            entry = (os.path.relpath(path, dirs[0]), st.st_size, st.st_mtime_ns)
            h.update(repr(entry).encode("utf-8", "surrogateescape"))
    return tuple(dirs), h.digest()
