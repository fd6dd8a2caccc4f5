"""Numba kernels built into rtc's cache as linked cubins without a GPU (``precompile --backend
numba --arch``), under the key the GPU path looks up."""

from __future__ import annotations

import struct
from types import SimpleNamespace

import pytest

from tests.conftest import SIMULATOR

pytestmark = pytest.mark.skipif(SIMULATOR, reason="builds real kernels (no simulator)")

EM_CUDA = 190  # ELF e_machine of a cubin


@pytest.fixture
def cache_env(tmp_path, monkeypatch):
    """Isolated disk-cache directory, empty in-memory cache."""
    import rtc

    monkeypatch.setenv("NUMBA_NORMS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("NUMBA_NORMS_DISABLE_DISK_CACHE", raising=False)
    rtc.clear_cache(memory=True, disk=False)
    yield tmp_path / "cache"
    rtc.clear_cache(memory=True, disk=False)


def _specs():
    """One spec of each kind: (module, backward, multi-CTA) -> spec, from the Numba registry."""
    from numba_norms import precompile

    out = {}
    for module, backward, spec in precompile.all_specs(backend="numba"):
        out.setdefault((module, backward, bool(getattr(spec, "multi_cta", False))), spec)
    return out


def _captured(monkeypatch, target, name):
    """Replace ``target.name`` by a recorder of its (key, signature, bounds, cc) arguments."""
    calls = []

    def record(key, make, signature, launch_bounds, cc, stand_in=True):
        calls.append((key, str(signature), launch_bounds, cc))
        return SimpleNamespace(kernel=lambda _: SimpleNamespace(local_bytes=0), local_bytes=0)

    monkeypatch.setattr(target, name, record)
    return calls


@pytest.mark.parametrize(
    "kind",
    [
        ("layernorm", False, False),
        ("layernorm", False, True),
        ("rmsnorm", True, False),
        ("softmax", False, False),
        ("softmax", True, False),
    ],
    ids=lambda k: f"{k[0]}-{'bwd' if k[1] else 'fwd'}{'-multi' if k[2] else ''}",
)
def test_store_builds_linked_cubins_without_a_gpu(cache_env, kind):
    import rtc
    from numba_norms.backends.numba import _cubin, _norms, softmax

    spec = _specs()[kind]
    impl = softmax if kind[0] == "softmax" else _norms
    assert impl.store_cubins(spec, "sm_90") == ["compiled"] * (
        2 if kind[0] != "softmax" and kind[1] else 1
    )
    entries = rtc.cache_entries()
    assert len(entries) == (2 if kind[1] and kind[0] != "softmax" else 1)
    # the same call again is served from memory, and after forgetting memory from disk
    assert set(impl.store_cubins(spec, "sm_90")) == {"memory"}
    rtc.clear_cache(memory=True, disk=False)
    assert set(impl.store_cubins(spec, "sm_90")) == {"disk"}
    # each stored payload is a CUDA ELF image that defines its entry
    for path, _size in entries:
        assert path.stat().st_size > 1000
    calls = []
    real = _cubin.module

    def spy(*args, **kw):
        mod = real(*args, **kw)
        calls.append(mod)
        return mod

    try:
        _cubin.module = spy
        impl.store_cubins(spec, "sm_90")
    finally:
        _cubin.module = real
    for mod in calls:
        cubin = mod.cubin
        assert cubin[:4] == b"\x7fELF"
        assert struct.unpack_from("<H", cubin, 18)[0] == EM_CUDA
        assert mod.symbols["kernel"].encode() in cubin
        assert mod.arch == "sm_90"


def test_norm_store_key_is_the_gpu_lookup_key(monkeypatch):
    """What precompile stores is what a GPU of that arch looks up: same key, signature, launch
    bounds and compute capability, forward (cooperative too) and backward with its finalize."""
    from numba_norms.backends.numba import _cubin, _norms

    specs = _specs()
    for kind in [("layernorm", False, False), ("rmsnorm", False, True), ("layernorm", True, False)]:
        spec = specs[kind]
        monkeypatch.setattr(_norms, "_CACHE", {})
        stored = _captured(monkeypatch, _cubin, "module")
        _norms.store_cubins(spec, "sm_90")
        monkeypatch.setattr(_norms, "_gpu_present", lambda: True)
        monkeypatch.setattr(_norms, "_device_cc", lambda: (9, 0))
        loaded = _captured(monkeypatch, _cubin, "load")
        if kind[1]:
            _norms._backward(spec)
        else:
            _norms._forward(spec)
        assert stored and stored == loaded, kind
        assert all(c[3] == (9, 0) for c in stored)
        monkeypatch.undo()


def test_softmax_store_key_is_the_gpu_lookup_key(monkeypatch):
    from numba_norms.backends.numba import _cubin, softmax

    specs = _specs()
    for kind in [("softmax", False, False), ("softmax", True, False)]:
        spec = specs[kind]
        stored = _captured(monkeypatch, _cubin, "module")
        softmax.store_cubins(spec, "sm_90")
        loaded = _captured(monkeypatch, _cubin, "load")
        softmax._load_fitting(softmax._numba_build(spec), (9, 0))  # what a GPU runs first
        assert len(stored) == 1 and stored == loaded[:1], kind
        monkeypatch.undo()


def test_precompile_numba_stores_then_finds_every_kernel(cache_env, monkeypatch):
    """Without a GPU, ``precompile("numba", ..., "sm_90")`` stores cubins (one process and a
    pool of two); a second run compiles nothing."""
    import rtc
    from numba_norms import precompile

    specs = _specs()
    todo = [
        ("layernorm", False, specs[("layernorm", False, False)]),
        ("softmax", False, specs[("softmax", False, False)]),
    ]
    monkeypatch.setenv("NUMBA_NORMS_PRECOMPILE_WORKERS", "1")
    first = precompile.precompile("numba", (), "sm_90", specs=todo)
    assert (first.compiled, first.cached) == (2, 0)
    rtc.clear_cache(memory=True, disk=False)
    again = precompile.precompile("numba", (), "sm_90", specs=todo)
    assert (again.compiled, again.cached) == (0, 2)
    assert len(rtc.cache_entries()) == 2

    # worker processes (specs pickled to them), into a fresh directory
    monkeypatch.setenv("NUMBA_NORMS_CACHE_DIR", str(cache_env.parent / "pool"))
    monkeypatch.setenv("NUMBA_NORMS_PRECOMPILE_WORKERS", "2")
    pooled = precompile.precompile("numba", (), "sm_90", specs=todo)
    assert (pooled.compiled, pooled.cached) == (2, 0)
    assert len(rtc.cache_entries()) == 2


def test_precompile_workers_setting_is_checked(monkeypatch):
    from numba_norms import precompile

    monkeypatch.setenv("NUMBA_NORMS_PRECOMPILE_WORKERS", "zero")
    with pytest.raises(ValueError, match="NUMBA_NORMS_PRECOMPILE_WORKERS.*'zero'"):
        precompile._numba_workers()
    monkeypatch.setenv("NUMBA_NORMS_PRECOMPILE_WORKERS", "3")
    assert precompile._numba_workers() == 3
