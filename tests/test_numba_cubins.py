"""Numba kernels built into rtc's cache as linked cubins without a GPU (``precompile --backend
numba --arch``), under the key the GPU path looks up."""

from __future__ import annotations

import dataclasses
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
    """One spec of each kind from the Numba registry: (module, backward, multi-CTA) -> spec, of
    a 16-bit output; ("layernorm", False, "fp8") -> a forward of FP8 output."""
    from numba_norms import precompile

    out = {}
    for module, backward, spec in precompile.all_specs(backend="numba"):
        fp8 = getattr(spec.config, "output", "").startswith("fp8")
        if fp8 and not backward:
            out.setdefault((module, False, "fp8"), spec)
        else:
            out.setdefault((module, backward, bool(getattr(spec, "multi_cta", False))), spec)
    return out


def _captured(monkeypatch, target, name, frame=0):
    """Replace ``target.name`` by a recorder of its (key, signature, bounds, cc) arguments; the
    modules it returns report ``frame`` bytes of local memory."""
    calls = []

    def record(key, make, signature, launch_bounds, cc):
        calls.append((key, str(signature), launch_bounds, cc))
        kernel = SimpleNamespace(local_bytes=frame)
        return SimpleNamespace(
            kernel=lambda _: kernel, local_bytes=frame, frame_bytes=lambda _: frame
        )

    monkeypatch.setattr(target, name, record)
    return calls


@pytest.mark.parametrize(
    "kind",
    [
        ("layernorm", False, False),
        ("layernorm", False, True),
        ("layernorm", False, "fp8"),
        ("rmsnorm", True, False),
        ("softmax", False, False),
        ("softmax", True, False),
    ],
    ids=lambda k: f"{k[0]}-{'bwd' if k[1] else 'fwd'}{'-' + str(k[2]) if k[2] else ''}",
)
def test_store_builds_linked_cubins_without_a_gpu(cache_env, kind):
    import rtc
    from numba_norms.backends.numba import _cubin, _norms, softmax

    spec = _specs()[kind]
    impl = softmax if kind[0] == "softmax" else _norms
    # norms: forward and its amax variant (16-bit output), or backward and its finalize
    n = 1 if kind[0] == "softmax" or kind[2] == "fp8" else 2
    assert impl.store_cubins(spec, "sm_90") == ["compiled"] * n
    entries = rtc.cache_entries()
    assert len(entries) == n
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


def _gpu_norm_lookups(monkeypatch, spec):
    """What the GPU path of the norms asks :mod:`._cubin` for (a device of cc 9.0 faked): the
    kernels of ``spec`` and, for a forward of non-FP8 output, its amax variant."""
    from numba_norms.backends.numba import _cubin, _norms

    monkeypatch.setattr(_norms, "_CACHE", {})
    monkeypatch.setattr(_norms, "_gpu_present", lambda: True)
    monkeypatch.setattr(_cubin, "current_device", lambda: ((9, 0), 0))
    if spec.config.is_backward:
        _norms._backward(spec)
    else:
        _norms._forward(spec)
        if not _norms._fp8(spec):
            _norms._forward(spec, amax=True)


def test_norm_store_key_is_the_gpu_lookup_key(monkeypatch):
    """What precompile stores is what a GPU of that arch looks up: same key, signature, launch
    bounds and compute capability, forward (cooperative too, amax variant included) and
    backward with its finalize."""
    from numba_norms.backends.numba import _cubin, _norms

    specs = _specs()
    kinds = [
        ("layernorm", False, False),
        ("rmsnorm", False, True),
        ("layernorm", False, "fp8"),
        ("layernorm", True, False),
    ]
    for kind in kinds:
        spec = specs[kind]
        stored = _captured(monkeypatch, _cubin, "module")
        _norms.store_cubins(spec, "sm_90")
        loaded = _captured(monkeypatch, _cubin, "load")
        _gpu_norm_lookups(monkeypatch, spec)
        assert len(stored) == (1 if kind[2] == "fp8" else 2) and stored == loaded, kind
        assert all(c[3] == (9, 0) for c in stored)
        monkeypatch.undo()


def test_softmax_store_key_is_the_gpu_lookup_key(monkeypatch):
    """As for the norms, through the softmax GPU path's entry point, including a backward
    entry with the pipeline and a register cap (the Numba build drops the pipeline)."""

    from numba_norms import precompile
    from numba_norms.backends.numba import _cubin, softmax

    capped = next(
        s
        for _, backward, s in precompile.all_specs(("softmax",), "numba")
        if backward and s.config.prefetch and s.config.min_ctas_per_sm > 1
    )
    specs = _specs()
    for spec in [specs[("softmax", False, False)], specs[("softmax", True, False)], capped]:
        stored = _captured(monkeypatch, _cubin, "module")
        softmax.store_cubins(spec, "sm_90")
        loaded = _captured(monkeypatch, _cubin, "module")
        monkeypatch.setattr(softmax, "_cache", {})
        monkeypatch.setattr(_cubin, "current_device", lambda: ((9, 0), 0))
        compile_ = softmax.compile_backward if spec.config.is_backward else softmax.compile_forward
        compile_(spec)
        assert len(stored) == 1 and stored == loaded, spec.kernel_key
        if spec is capped:
            assert stored[0][2] == (spec.threads, spec.config.min_ctas_per_sm)
            unpiped = dataclasses.replace(spec.config, prefetch=False)
            assert stored[0][0] == ("softmax", dataclasses.replace(spec, config=unpiped).kernel_key)
        monkeypatch.undo()


@pytest.mark.parametrize("frame", [0, 512])
def test_softmax_store_follows_the_spill_fallbacks(monkeypatch, frame):
    """A build whose cubin records more local memory than SPILL_LIMIT is followed by the next
    of _fallbacks, in the store as on the GPU path: the store holds every build the GPU path
    looks up, and the GPU path keeps the last."""

    from numba_norms import precompile
    from numba_norms.backends.numba import _cubin, softmax

    capped = next(
        s
        for _, backward, s in precompile.all_specs(("softmax",), "numba")
        if not backward and s.config.prefetch and s.config.min_ctas_per_sm > 1
    )
    chain = softmax._fallbacks(softmax._numba_build(capped).config)
    assert len(chain) == capped.config.min_ctas_per_sm + 1
    stored = _captured(monkeypatch, _cubin, "module", frame)
    origins = softmax.store_cubins(capped, "sm_90")
    assert len(origins) == len(stored) == (len(chain) if frame > softmax.SPILL_LIMIT else 1)
    assert [b[2] for b in stored] == [(capped.threads, mc) for mc, _ in chain[: len(stored)]]
    loaded = _captured(monkeypatch, _cubin, "module", frame)
    monkeypatch.setattr(softmax, "_cache", {})
    monkeypatch.setattr(_cubin, "current_device", lambda: ((9, 0), 0))
    softmax.compile_forward(capped)
    assert loaded == stored


def test_stored_cubins_are_what_the_gpu_path_loads(cache_env, monkeypatch):
    """End to end through rtc: after a store, the GPU path's lookups (same process, memory
    forgotten) are disk hits; a build there would raise."""
    import rtc
    from numba_norms.backends.numba import _cubin, _norms

    spec = _specs()[("layernorm", False, False)]
    assert _norms.store_cubins(spec, "sm_90") == ["compiled", "compiled"]
    rtc.clear_cache(memory=True, disk=False)

    def no_build(*args, **kw):
        raise AssertionError("the GPU path built a kernel the store had made")

    origins = []

    def load(key, make, signature, launch_bounds, cc):
        _cubin.module(key, make, signature, launch_bounds, cc)
        origins.append(rtc.last_origin())
        return SimpleNamespace(local_bytes=0)

    monkeypatch.setattr(_cubin, "_build", no_build)
    monkeypatch.setattr(_cubin, "load", load)
    _gpu_norm_lookups(monkeypatch, spec)
    assert origins == ["disk", "disk"]


def test_the_device_stand_in_answers_only_its_own_thread():
    """Another thread (a Numba launch on a GPU host, say) keeps the real device queries while
    a build for another arch runs."""
    import threading

    from numba.cuda import codegen, dispatcher

    from numba_norms.backends.numba import _cubin

    seen = {}

    def other():
        for name, query in (
            ("dispatcher", lambda: dispatcher.get_current_device().compute_capability),
            ("codegen", lambda: codegen.devices.get_context().device.compute_capability),
        ):
            try:
                seen[name] = query()
            except Exception as exc:  # no GPU here: the real query fails
                seen[name] = type(exc).__name__

    with _cubin.assume_device((10, 0)):
        assert dispatcher.get_current_device().compute_capability == (10, 0)
        assert codegen.devices.get_context().device.compute_capability == (10, 0)
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert (10, 0) not in seen.values() and len(seen) == 2, seen


def test_precompile_numba_stores_then_finds_every_kernel(cache_env, monkeypatch):
    """Without a GPU, ``precompile("numba", ..., "sm_90")`` stores cubins (one process and a
    pool of two, each worker given one spec); a second run compiles nothing."""
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
    assert len(rtc.cache_entries()) == 3  # the layernorm forward, its amax variant, softmax

    # worker processes (specs pickled to them), into a fresh directory
    monkeypatch.setenv("NUMBA_NORMS_CACHE_DIR", str(cache_env.parent / "pool"))
    monkeypatch.setenv("NUMBA_NORMS_PRECOMPILE_WORKERS", "2")
    pooled = precompile.precompile("numba", (), "sm_90", specs=todo)
    assert (pooled.compiled, pooled.cached) == (2, 0)
    assert len(rtc.cache_entries()) == 3


def test_a_failed_numba_build_names_its_kernel(monkeypatch):
    from numba_norms import precompile
    from numba_norms.backends.numba import _norms

    spec = _specs()[("rmsnorm", True, False)]

    def broken(spec, arch):
        raise ValueError("no such thing")

    monkeypatch.setattr(_norms, "store_cubins", broken)
    with pytest.raises(RuntimeError, match=r"Numba build of rmsnorm_bwd .* for sm_90 failed"):
        precompile._store_numba(("rmsnorm", True, spec), "sm_90")


def test_precompile_workers_setting_is_checked(monkeypatch):
    from numba_norms import precompile

    monkeypatch.setenv("NUMBA_NORMS_PRECOMPILE_WORKERS", "zero")
    with pytest.raises(ValueError, match="NUMBA_NORMS_PRECOMPILE_WORKERS.*'zero'"):
        precompile._workers()
    monkeypatch.setenv("NUMBA_NORMS_PRECOMPILE_WORKERS", "3")
    assert precompile._workers() == 3


def test_the_key_tells_toolkit_nvvm_apart(monkeypatch, tmp_path):
    """Wheels are known by their versions; an NVVM or libdevice from a toolkit (CUDA_HOME,
    conda, the system) by path and size, so two toolkits never share cached cubins."""
    from numba.cuda import cuda_paths

    from numba_norms.backends.numba import _cubin

    lib, bc = tmp_path / "libnvvm.so", tmp_path / "libdevice.10.bc"
    lib.write_bytes(b"x" * 10)
    bc.write_bytes(b"y" * 20)

    def paths(by_nvvm, by_libdevice):
        found = {"nvvm": (by_nvvm, str(lib)), "libdevice": (by_libdevice, str(bc))}
        return {k: SimpleNamespace(by=b, info=p) for k, (b, p) in found.items()}

    monkeypatch.setattr(cuda_paths, "get_cuda_paths", lambda: paths("site-packages", "System"))
    assert _cubin._nvvm_files() == ["nvvm: wheel", f"libdevice: System {bc} 20"]
    monkeypatch.setattr(cuda_paths, "get_cuda_paths", lambda: paths("CUDA_HOME", "CUDA_HOME"))
    home = _cubin._nvvm_files()
    assert home == [f"nvvm: CUDA_HOME {lib} 10", f"libdevice: CUDA_HOME {bc} 20"]
    lib.write_bytes(b"x" * 11)  # another toolkit's library
    assert _cubin._nvvm_files() != home


@pytest.mark.parametrize("setting, value", [("CUDA_ENABLE_NRT", True), ("BOUNDSCHECK", 1)])
def test_the_key_holds_numba_settings_that_change_code(monkeypatch, setting, value):
    """NUMBA_CUDA_ENABLE_NRT=1 made a 3.8x larger cubin under the same key (session 41's cache
    stress test): one setting's cache served the other's kernels."""
    from numba.cuda import config

    from numba_norms.backends.numba import _cubin

    before = _cubin._settings()
    monkeypatch.setattr(config, "reload_config", lambda: None)  # keep the value set here
    monkeypatch.setattr(config, setting, value)
    after = _cubin._settings()
    assert before != after and f"{setting}={value!r}" in after.splitlines()


def test_the_key_reads_numba_settings_when_it_is_made(monkeypatch):
    """Numba reads NUMBA_* again when it compiles; so does the key (a NUMBA_OPT set after the
    first key was made once left the key at -O3 while the build ran at -O0)."""
    from numba_norms.backends.numba import _cubin

    monkeypatch.delenv("NUMBA_OPT", raising=False)
    _cubin._tool_digest()  # the process's first key already made
    base = _cubin._settings()
    monkeypatch.setenv("NUMBA_OPT", "0")
    assert "OPT=_OptLevel(0)" in _cubin._settings().splitlines()
    monkeypatch.delenv("NUMBA_OPT")
    assert _cubin._settings() == base
