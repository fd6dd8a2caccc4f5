"""CPU tests of the rtc NVRTC runtime: compilation, caching, concurrency (no GPU needed)."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import struct
import subprocess
import sys
import textwrap
import threading
import time
import uuid
import warnings

import numpy as np
import pytest

import rtc
from rtc import cache as rtc_cache
from rtc._options import parse_nvrtc_flags
from tests.conftest import queue_behind_failing_build

SCALE_SRC = r"""
template <typename T, int N>
__global__ void scale(T* x, T a, int n) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * N;
#pragma unroll
    for (int k = 0; k < N; ++k) {
        if (i + k < n) x[i + k] *= a;
    }
}
"""
SCALE_NAMES = ("scale<float, 4>", "scale<double, 2>")


def unique_src(base: str = SCALE_SRC) -> str:
    """A source no other test (or earlier run) has compiled: forces a real compile."""
    return f"// {uuid.uuid4().hex}\n{base}"


@pytest.fixture
def cache_env(tmp_path, monkeypatch):
    """Isolated disk-cache directory, empty in-memory cache, zeroed counters."""
    d = tmp_path / "rtc-cache"
    monkeypatch.setenv("NUMBA_NORMS_CACHE_DIR", str(d))
    monkeypatch.delenv("NUMBA_NORMS_DISABLE_DISK_CACHE", raising=False)
    rtc.clear_cache(memory=True, disk=False)
    rtc.reset_stats()
    yield d
    rtc.clear_cache(memory=True, disk=False)


def delta(before: dict, name: str) -> int:
    return rtc.stats()[name] - before[name]


# ---------------------------------------------------------------------------------------------
# compilation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_templated_kernel_compiles_to_cubin(cache_env, arch):
    mod = rtc.compile(unique_src(), SCALE_NAMES, arch=arch)
    assert mod.arch == arch
    assert mod.cubin[:4] == b"\x7fELF"
    assert set(mod.symbols) == set(SCALE_NAMES)
    assert mod.symbols["scale<float, 4>"] == "_Z5scaleIfLi4EEvPT_S0_i"
    assert mod.symbols["scale<double, 2>"] == "_Z5scaleIdLi2EEvPT_S0_i"
    assert all(v.startswith("_Z") for v in mod.symbols.values())
    assert mod.origin == "compiled"
    assert rtc.last_origin() == "compiled"
    assert mod.name == "rtc_program"
    assert isinstance(mod.log, str)


def test_arch_spelling_is_normalised(cache_env):
    src = unique_src()
    a = rtc.compile(src, SCALE_NAMES, arch="sm_90")
    b = rtc.compile(src, SCALE_NAMES, arch="90")
    assert a is b
    with pytest.raises(ValueError, match="invalid arch"):
        rtc.compile(src, SCALE_NAMES, arch="compute_90")


@pytest.mark.parametrize(
    "arch, cc",
    [("sm_80", (8, 0, "")), ("sm_90a", (9, 0, "a")), ("sm_100", (10, 0, "")),
     ("sm_100f", (10, 0, "f")), ("sm_120", (12, 0, "")), ("121", (12, 1, ""))],
)  # fmt: skip
def test_arch_major_has_one_or_two_digits(arch, cc):
    """The minor version is the last digit (sm_100 is 10.0, not 1.0)."""
    from rtc import compiler

    assert rtc.parse_arch(arch) == cc
    assert compiler._normalize_arch(arch) == f"sm_{cc[0]}{cc[1]}{cc[2]}"
    # the Numba backend reads arches the same way (no 'a'/'f' targets of its own)
    from numba_norms.backends.numba import _norms

    assert _norms._cc_of(arch) == cc[:2]


@pytest.mark.parametrize(
    "arch, runs",
    [("sm_100", True), ("sm_103", True), ("sm_100f", True), ("sm_103a", True)]
    + [("sm_100a", False), ("sm_110", False), ("sm_90", False)],
)
def test_which_cubins_a_device_runs(monkeypatch, arch, runs):
    """Before loading, a module's arch is checked against the device (here a stand-in of
    compute capability 10.3): same major and minor up to the device's, family-specific ("f")
    targets likewise, arch-specific ("a") ones only at their exact minor."""
    from types import SimpleNamespace

    from rtc import compiler

    fake = SimpleNamespace(cc=(10, 3), name="stand-in", arch="sm_103")
    monkeypatch.setattr(compiler, "current_device_ordinal", lambda: 0)
    monkeypatch.setattr(compiler, "device_info", lambda dev=None: fake)
    mod = rtc.CompiledModule(arch=arch, cubin=b"", symbols={}, log="", name="m", origin="disk")
    with pytest.raises(Exception) as info:  # past the check, loading an empty image fails
        mod.kernel("k")
    assert ("cannot run on device 0" in str(info.value)) is not runs, info.value


FRAME_SRC = r"""
template <int N>
__global__ void keep(float* out, const float* in, int k) {
    float a[N];  // indexed at run time: lives in local memory
    for (int i = 0; i < N; ++i) a[i] = in[i];
    out[threadIdx.x] = a[k];
}
__global__ void many(float* out, const float* in, int n) {
    float acc[64];  // all live at once: spills under a low register cap
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = in[threadIdx.x + i * n];
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int i = 0; i < 64; ++i) s += acc[i] * acc[(i * 7 + j) & 63];
    out[threadIdx.x] = s;
}
"""


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_frame_bytes_read_from_the_cubin(cache_env, arch):
    """Local memory a thread, from the cubin's attributes (no GPU): a run-time indexed array
    of N floats takes at least 4N bytes, the register-capped kernel spills, the uncapped one
    does not; the GPU suite checks the value against the driver's."""
    names = ["keep<100>", "keep<300>", "many"]
    mod = rtc.compile(unique_src(FRAME_SRC), names, arch=arch)
    assert 400 <= mod.frame_bytes("keep<100>") < 1200 <= mod.frame_bytes("keep<300>")
    assert mod.frame_bytes("many") == 0  # 255 registers hold it
    capped = rtc.compile(unique_src(FRAME_SRC), names, arch=arch, options=["-maxrregcount=32"])
    assert capped.frame_bytes("many") >= 256
    assert capped.frame_bytes(capped.symbols["many"]) == capped.frame_bytes("many")
    with pytest.raises(KeyError, match="no kernel 'nothing'"):
        mod.frame_bytes("nothing")


def test_frame_bytes_of_a_debug_build(cache_env):
    """A device-debug build (``-G``; Numba's debug builds likewise) has attribute records
    without a value in the module-wide section: read past them, the frame size is found."""
    mod = rtc.compile(unique_src(FRAME_SRC), ["keep<100>"], arch="sm_90", options=["-G"])
    assert mod.frame_bytes("keep<100>") >= 400


def test_frame_bytes_rejects_what_is_not_a_cubin():
    from rtc import _elf

    with pytest.raises(ValueError, match="not a little-endian 64-bit ELF"):
        _elf.frame_bytes(b"RTCCUBIN" + bytes(64))


def test_compile_error_carries_log_options_and_numbered_source(cache_env):
    src = "__global__ void k(int* x) {\n    x[0] = undefined_symbol_xyz;\n}\n"
    before = rtc.stats()
    with pytest.raises(rtc.CompileError) as info:
        rtc.compile(src, ["k"], arch="sm_90", name="broken_prog", options=["-ftz=true"])
    err = info.value
    assert isinstance(err, RuntimeError)
    assert "undefined_symbol_xyz" in err.log
    assert "is undefined" in err.log
    assert err.source == src
    assert err.name == "broken_prog"
    assert err.name_expressions == ("k",)
    assert "-arch=sm_90" in err.options
    assert "--ftz=true" in err.options
    text = str(err)
    assert 'identifier "undefined_symbol_xyz" is undefined' in text
    assert "   2 |     x[0] = undefined_symbol_xyz;" in text
    assert "   1 | __global__ void k(int* x) {" in text
    assert "--ftz=true" in text
    assert delta(before, "compile_errors") == 1
    # Failures are not cached: nothing on disk, nothing in memory.
    assert rtc.cache_entries() == []
    with pytest.raises(rtc.CompileError):
        rtc.compile(src, ["k"], arch="sm_90", name="broken_prog", options=["-ftz=true"])
    assert delta(before, "nvrtc_compiles") == 2
    assert not rtc_cache._key_locks  # per-key locks are released on failure too


@pytest.mark.parametrize("sep", ["\f", "\u2028", "\r"])
def test_compile_error_numbers_lines_as_nvrtc_does(cache_env, sep):
    """Only newlines end a line for NVRTC: a form feed, U+2028 or a CR (CRLF sources) inside a
    line must not shift the numbers shown beside the source from those in the log."""
    src = f"// one{sep}still one\r\n__global__ void k(int* x) {{\n    x[0] = nope_xyz;\n}}\n"
    with pytest.raises(rtc.CompileError) as info:
        rtc.compile(src, ["k"], arch="sm_90")
    logged = int(re.search(r"\((\d+)\): error", info.value.log).group(1))
    shown = [ln for ln in str(info.value).split("\n") if "nope_xyz;" in ln and " | " in ln]
    assert logged == 3 and shown == ["   3 |     x[0] = nope_xyz;"]


def test_compile_error_pickles(cache_env):
    with pytest.raises(rtc.CompileError) as info:
        rtc.compile("__global__ void k() { nope; }", ["k"], arch="sm_90")
    err = pickle.loads(pickle.dumps(info.value))
    assert isinstance(err, rtc.CompileError)
    assert err.log == info.value.log
    assert str(err) == str(info.value)


def test_unresolvable_name_expression_is_compile_error(cache_env):
    with pytest.raises(rtc.CompileError, match="not_a_kernel"):
        rtc.compile(unique_src(), ["not_a_kernel<int>"], arch="sm_90")


def test_options_take_effect_and_are_part_of_the_key(cache_env):
    src = unique_src(
        'extern "C" __global__ void k(float* x) {'
        " x[threadIdx.x] = x[threadIdx.x + 1] / x[threadIdx.x + 2] + sqrtf(x[3]); }"
    )
    before = rtc.stats()
    plain = rtc.compile(src, ["k"], arch="sm_90")
    ftz = rtc.compile(src, ["k"], arch="sm_90", options=["-ftz=true"])
    fast_div = rtc.compile(src, ["k"], arch="sm_90", options=["-prec-div=false"])
    assert delta(before, "nvrtc_compiles") == 3
    assert plain.cubin != ftz.cubin
    assert plain.cubin != fast_div.cubin
    # The flag reaches NVRTC: NVRTC defines __USE_FAST_MATH__ to 1 under fast math, else 0.
    guarded = unique_src(
        '#if !__USE_FAST_MATH__\n#error "fast math is off"\n#endif\n'
        'extern "C" __global__ void k(float* x) { x[0] = 1.0f; }\n'
    )
    with pytest.raises(rtc.CompileError, match="fast math is off"):
        rtc.compile(guarded, ["k"], arch="sm_90")
    rtc.compile(guarded, ["k"], arch="sm_90", options=["--use_fast_math"])
    rtc.compile(src, ["k"], arch="sm_90", options=["-ofast-compile=max"])


def test_unknown_or_unsafe_options_are_rejected(cache_env):
    with pytest.raises(ValueError, match="unsupported NVRTC option"):
        rtc.compile(unique_src(), SCALE_NAMES, arch="sm_90", options=["-not-a-flag"])
    with pytest.raises(ValueError, match="include_dirs"):
        rtc.compile(unique_src(), SCALE_NAMES, arch="sm_90", options=["-I/tmp"])
    with pytest.raises(ValueError, match="arch="):
        rtc.compile(unique_src(), SCALE_NAMES, arch="sm_90", options=["-arch=sm_80"])


def test_parse_nvrtc_flags():
    kw = parse_nvrtc_flags(
        [
            "-ftz=true",
            "--prec-div=false",
            "-fmad=false",
            "--use_fast_math",
            "-ofast-compile=max",
            "-maxrregcount=64",
            "-lineinfo",
            "-Xptxas",
            "-v",
            "--ptxas-options=-O2",
            "-DFOO=1",
            "-D",
            "BAR",
            "-UBAZ",
            "-std=c++20",
            "-diag-suppress=177,550",
            "-w",
        ]
    )
    assert kw == {
        "ftz": True,
        "prec_div": False,
        "fma": False,
        "use_fast_math": True,
        "ofast_compile": "max",
        "max_register_count": 64,
        "lineinfo": True,
        "ptxas_options": ["-v", "-O2"],
        "define_macro": [("FOO", "1"), "BAR"],
        "undefine_macro": ["BAZ"],
        "std": "c++20",
        "diag_suppress": [177, 550],
        "disable_warnings": True,
    }
    with pytest.raises(ValueError):
        parse_nvrtc_flags(["-ftz=maybe"])
    with pytest.raises(ValueError):
        parse_nvrtc_flags(["-ofast-compile=ultra"])
    with pytest.raises(ValueError):
        parse_nvrtc_flags(["-maxrregcount"])


def test_defines_and_undefines_act_in_order(cache_env):
    """-D / -U of one macro act as on an nvrtc command line: the last one wins (cuda.core
    emits defines before undefines, so only each macro's last action is passed on)."""
    assert parse_nvrtc_flags(["-UFOO", "-DFOO=2", "-DBAR", "-UBAR", "-DX=1", "-DX=3"]) == {
        "define_macro": [("FOO", "2"), ("X", "3")],
        "undefine_macro": ["BAR"],
    }
    src = unique_src('#if FOO != 2\n#error "FOO is not 2"\n#endif\n__global__ void k() {}\n')
    rtc.compile(src, ["k"], arch="sm_90", options=["-UFOO", "-DFOO=2"])
    with pytest.raises(rtc.CompileError, match="FOO is not 2"):
        rtc.compile(src, ["k"], arch="sm_90", options=["-DFOO=2", "-UFOO"])


def test_define_values_are_checked_whatever_was_compiled_before(cache_env):
    """1.0 equals 1 (and hashes alike), but only integers and strings are macro values: the
    check must not depend on what an earlier call left in the normaliser's memo."""
    src = unique_src('extern "C" __global__ void k(int* x) { x[0] = X; }\n')
    a = rtc.compile(src, ["k"], arch="sm_90", defines={"X": 1})
    for bad in (1.0, np.float64(1.0)):
        with pytest.raises(TypeError, match="macro 'X'"):
            rtc.compile(src, ["k"], arch="sm_90", defines={"X": bad})
    assert rtc.compile(src, ["k"], arch="sm_90", defines={"X": np.int64(1)}) is a


def test_cached_cubin_keys_do_not_run_into_each_other(cache_env):
    built = []

    def make(tag: bytes):
        return lambda: (built.append(tag) or b"\x7fELF" + tag, {"kernel": "k"})

    rtc.cached_cubin(("a\0b",), make(b"1"), arch="sm_90")
    rtc.clear_cache(memory=True, disk=False)
    mod = rtc.cached_cubin(("a", "b"), make(b"2"), arch="sm_90")
    assert built == [b"1", b"2"] and mod.cubin.endswith(b"2")


def test_launch_sizes_take_any_integer_but_no_float():
    from rtc.launch import _dim

    assert _dim(np.int64(4)) == 4 and _dim((np.int32(2), 3)) == (2, 3)
    for bad in (2.0, (2, 1.5)):
        with pytest.raises(TypeError):
            _dim(bad)


def test_defines_are_applied_and_change_the_key(cache_env):
    src = unique_src(
        '#if VALUE != 7\n#error "VALUE must be 7"\n#endif\n'
        'extern "C" __global__ void k(int* x) { x[0] = VALUE + EXTRA; }\n'
    )
    before = rtc.stats()
    a = rtc.compile(src, ["k"], arch="sm_90", defines={"VALUE": 7, "EXTRA": None})
    b = rtc.compile(src, ["k"], arch="sm_90", defines={"EXTRA": None, "VALUE": "7"})
    assert a is b  # same defines, different spelling/order
    c = rtc.compile(src, ["k"], arch="sm_90", defines={"VALUE": 7, "EXTRA": 2})
    assert c is not a
    assert delta(before, "nvrtc_compiles") == 2
    with pytest.raises(rtc.CompileError, match="VALUE must be 7"):
        rtc.compile(src, ["k"], arch="sm_90", defines={"VALUE": 8, "EXTRA": None})


def test_header_contents_are_part_of_the_key(cache_env, tmp_path):
    inc = tmp_path / "include"
    (inc / "sub").mkdir(parents=True)
    header = inc / "sub" / "params.cuh"
    header.write_text("#define FACTOR 2\n")
    src = unique_src(
        '#include "sub/params.cuh"\n'
        'extern "C" __global__ void k(int* x) { x[0] = FACTOR * x[1]; }\n'
    )
    before = rtc.stats()
    a = rtc.compile(src, ["k"], arch="sm_90", include_dirs=[inc])
    assert rtc.compile(src, ["k"], arch="sm_90", include_dirs=[str(inc)]) is a
    assert delta(before, "nvrtc_compiles") == 1
    header.write_text("#define FACTOR 3\n")  # same size, new content
    b = rtc.compile(src, ["k"], arch="sm_90", include_dirs=[inc])
    assert b is not a
    assert b.cubin != a.cubin
    assert rtc.last_origin() == "compiled"
    assert delta(before, "nvrtc_compiles") == 2
    # A new, unrelated file in the include tree also changes the key.
    (inc / "other.h").write_text("// unrelated\n")
    rtc.compile(src, ["k"], arch="sm_90", include_dirs=[inc])
    assert delta(before, "nvrtc_compiles") == 3
    # Restoring the original header content is a disk hit of the first build.
    header.write_text("#define FACTOR 2\n")
    (inc / "other.h").unlink()
    rtc.clear_cache(memory=True, disk=False)
    c = rtc.compile(src, ["k"], arch="sm_90", include_dirs=[inc])
    assert rtc.last_origin() == "disk"
    assert c.cubin == a.cubin
    with pytest.raises(FileNotFoundError):
        rtc.compile(src, ["k"], arch="sm_90", include_dirs=[tmp_path / "missing"])


def test_disk_key_does_not_depend_on_where_the_include_dirs_are(cache_env, tmp_path):
    """The same headers in another directory (a package installed elsewhere, a copied
    environment) give the same disk key: they are keyed by position and content."""
    src = unique_src('#include "p.cuh"\nextern "C" __global__ void k(int* x) { x[0] = F; }\n')
    for where in ("a", "b"):
        (tmp_path / where).mkdir()
        (tmp_path / where / "p.cuh").write_text("#define F 7\n")
    a = rtc.compile(src, ["k"], arch="sm_90", include_dirs=[tmp_path / "a"])
    assert rtc.last_origin() == "compiled"
    rtc.clear_cache(memory=True, disk=False)
    b = rtc.compile(src, ["k"], arch="sm_90", include_dirs=[tmp_path / "b"])
    assert rtc.last_origin() == "disk" and b.cubin == a.cubin
    (tmp_path / "b" / "p.cuh").write_text("#define F 8\n")  # other contents: another key
    rtc.clear_cache(memory=True, disk=False)
    rtc.compile(src, ["k"], arch="sm_90", include_dirs=[tmp_path / "b"])
    assert rtc.last_origin() == "compiled"
    assert len(rtc.cache_entries()) == 2


def test_hidden_and_linked_headers_are_part_of_the_key(cache_env, tmp_path):
    """NVRTC reads hidden headers and follows symbolic links, so the fingerprint does too (a
    link back up the tree is walked once)."""
    inc, elsewhere = tmp_path / "include", tmp_path / "elsewhere"
    (inc / ".detail").mkdir(parents=True)
    elsewhere.mkdir()
    (inc / "linked").symlink_to(elsewhere, target_is_directory=True)
    (inc / "loop").symlink_to(inc, target_is_directory=True)
    files = {"A": inc / ".detail" / "a.h", "B": inc / ".b.h", "C": elsewhere / "c.h"}
    for macro, path in files.items():
        path.write_text(f"#define {macro} 1\n")
    src = unique_src(
        '#include ".detail/a.h"\n#include ".b.h"\n#include "linked/c.h"\n'
        'extern "C" __global__ void k(int* x) { x[0] = A + B + C; }\n'
    )
    before = rtc.stats()
    seen = [rtc.compile(src, ["k"], arch="sm_90", include_dirs=[inc])]
    for value, (macro, path) in enumerate(files.items(), start=2):
        path.write_text(f"#define {macro} {value}\n")
        seen.append(rtc.compile(src, ["k"], arch="sm_90", include_dirs=[inc]))
        assert rtc.last_origin() == "compiled", macro
    assert delta(before, "nvrtc_compiles") == 4
    assert len({m.cubin for m in seen}) == 4


def test_headers_beside_the_program_are_not_searched(cache_env, tmp_path, monkeypatch):
    """Only include_dirs, whose contents the key covers, are searched: not the directory of
    the program's name, nor the working directory for a bare name."""
    (tmp_path / "val.h").write_text("#define VAL 1\n")
    monkeypatch.chdir(tmp_path)
    src = unique_src('#include "val.h"\nextern "C" __global__ void k(int* x) { x[0] = VAL; }\n')
    for name in ("prog", str(tmp_path / "prog.cu")):
        with pytest.raises(rtc.CompileError, match="val.h"):
            rtc.compile(src, ["k"], arch="sm_90", name=name)
    rtc.compile(src, ["k"], arch="sm_90", include_dirs=str(tmp_path))  # one directory, a str


def test_a_header_edited_while_compiling_is_not_cached_under_the_old_key(
    cache_env, tmp_path, monkeypatch
):
    """The headers are fingerprinted again after the compile; if they changed, the module is
    of the new ones (or either): fingerprint and compile again, never store it under the
    old key."""
    from rtc import compiler

    inc = tmp_path / "include"  # not tmp_path itself: the disk cache lives there
    inc.mkdir()
    header = inc / "v.h"
    header.write_text("#define VAL 1\n")
    src = unique_src('#include "v.h"\nextern "C" __global__ void k(int* x) { x[0] = VAL; }\n')
    real = compiler.include_dirs_digest

    def digest_then_edit(dirs):  # the edit lands after the fingerprint, before NVRTC reads
        digest = real(dirs)
        header.write_text("#define VAL 2\n")
        return digest

    monkeypatch.setattr(compiler, "include_dirs_digest", digest_then_edit)
    two = rtc.compile(src, ["k"], arch="sm_90", include_dirs=[inc])
    monkeypatch.setattr(compiler, "include_dirs_digest", real)
    assert rtc.compile(src, ["k"], arch="sm_90", include_dirs=[inc]) is two  # VAL 2's key
    header.write_text("#define VAL 1\n")
    rtc.clear_cache(memory=True, disk=False)
    one = rtc.compile(src, ["k"], arch="sm_90", include_dirs=[inc])
    assert rtc.last_origin() == "compiled" and one.cubin != two.cubin
    # headers that never hold still: refused after a few tries
    counter = iter(range(3, 100))

    def always_editing(dirs):
        digest = real(dirs)
        header.write_text(f"#define VAL {next(counter)}\n")
        return digest

    monkeypatch.setattr(compiler, "include_dirs_digest", always_editing)
    with pytest.raises(RuntimeError, match="kept changing"):
        rtc.compile(src + "// another program\n", ["k"], arch="sm_90", include_dirs=[inc])


def test_cuda_header_fingerprint_covers_subdirectories(monkeypatch, tmp_path):
    """CCCL (include/cccl/cuda/..., cub, thrust) and crt headers sit in subdirectories and come
    in wheels of their own: an edit anywhere below the toolkit include changes the digest."""
    import cuda.pathfinder

    from rtc import _headers

    deep = tmp_path / "cccl" / "cuda" / "std" / "val.h"
    deep.parent.mkdir(parents=True)
    (tmp_path / "cuda_runtime.h").write_text("// stand-in\n")
    deep.write_text("#define VAL 1\n")
    monkeypatch.setattr(cuda.pathfinder, "find_nvidia_header_directory", lambda lib: str(tmp_path))
    _headers.cuda_header_dirs.cache_clear()
    try:
        dirs, first = _headers.cuda_header_dirs()
        assert dirs == (str(tmp_path), str(tmp_path / "cccl"))
        deep.write_text("#define VAL 1000\n")
        _headers.cuda_header_dirs.cache_clear()
        assert _headers.cuda_header_dirs()[1] != first
    finally:
        _headers.cuda_header_dirs.cache_clear()


def test_cuda_headers_flag(cache_env):
    try:
        from cuda.pathfinder import find_nvidia_header_directory

        found = find_nvidia_header_directory("cudart")
    except Exception:
        found = None
    if not found:
        pytest.skip("CUDA headers not installed")
    src = unique_src(
        "#include <cuda_bf16.h>\n"
        'extern "C" __global__ void k(__nv_bfloat16* x) { x[0] = __float2bfloat16(1.0f); }\n'
    )
    with pytest.raises(rtc.CompileError, match="cuda_bf16.h"):
        rtc.compile(src, ["k"], arch="sm_90")
    mod = rtc.compile(src, ["k"], arch="sm_90", cuda_headers=True)
    assert mod.cubin[:4] == b"\x7fELF"


# ---------------------------------------------------------------------------------------------
# caching
# ---------------------------------------------------------------------------------------------


def test_memory_hit_returns_same_object(cache_env):
    src = unique_src()
    a = rtc.compile(src, SCALE_NAMES, arch="sm_90")
    before = rtc.stats()
    b = rtc.compile(src, list(SCALE_NAMES), arch="sm_90")
    assert b is a
    assert rtc.last_origin() == "memory"
    assert a.origin == "compiled"  # how the object was made, not this lookup
    assert delta(before, "memory_hits") == 1
    assert delta(before, "nvrtc_compiles") == 0
    assert rtc.compile(src, SCALE_NAMES, arch="sm_80") is not a  # arch is part of the key


def test_disk_hit_after_memory_clear(cache_env):
    src = unique_src()
    first = rtc.compile(src, SCALE_NAMES, arch="sm_90")
    assert rtc.last_origin() == "compiled"
    entries = rtc.cache_entries()
    assert len(entries) == 1
    path, size = entries[0]
    assert path.is_relative_to(cache_env)
    assert size == rtc.cache_size_bytes() > len(first.cubin)
    assert path.read_bytes()[:8] == b"RTCCUBIN"

    before = rtc.stats()
    assert rtc.clear_cache(memory=True, disk=False) >= 1
    again = rtc.compile(src, SCALE_NAMES, arch="sm_90")
    assert rtc.last_origin() == "disk"
    assert again.origin == "disk"
    assert again is not first
    assert again.cubin == first.cubin
    assert again.symbols == first.symbols
    assert again.log == first.log
    assert delta(before, "nvrtc_compiles") == 0
    assert delta(before, "disk_hits") == 1
    # ...and a further call is a memory hit of the disk-loaded object.
    assert rtc.compile(src, SCALE_NAMES, arch="sm_90") is again
    assert rtc.last_origin() == "memory"


def test_cached_cubin_builds_once_then_memory_then_disk(cache_env):
    """Cubins made elsewhere (the Numba backend) go through the same two caches."""
    cubin = b"\x7fELF" + uuid.uuid4().bytes * 8
    calls = []

    def build():
        calls.append(1)
        return cubin, {"kernel": "_Z6kernelv"}

    key = ("numba", "v1", uuid.uuid4().hex)
    first = rtc.cached_cubin(key, build, arch="sm_90", name="k")
    assert rtc.last_origin() == "compiled" and first.origin == "compiled" and len(calls) == 1
    assert first.cubin == cubin and first.symbols == {"kernel": "_Z6kernelv"}
    assert rtc.cached_cubin(key, build, arch="sm_90") is first
    assert rtc.last_origin() == "memory" and len(calls) == 1
    rtc.clear_cache(memory=True, disk=False)
    again = rtc.cached_cubin(key, build, arch="sm_90")
    assert rtc.last_origin() == "disk" and len(calls) == 1
    assert again.cubin == cubin and again.symbols == first.symbols
    # another key part or another arch is another entry
    rtc.cached_cubin(key + ("x",), build, arch="sm_90")
    rtc.cached_cubin(key, build, arch="sm_80")
    assert len(calls) == 3


def test_cached_cubin_rejects_what_is_not_a_cubin(cache_env):
    with pytest.raises(ValueError, match="did not return a cubin"):
        rtc.cached_cubin(("bad", uuid.uuid4().hex), lambda: (b"PTX text", {}), arch="sm_90")


def _header(data: bytes) -> dict:
    _, _, hlen = struct.unpack_from("<8sII", data)
    return json.loads(data[16 : 16 + hlen])


def _with_header(data: bytes, header: dict) -> bytes:
    """``data`` with its header replaced by ``header`` (same framing, cubin kept)."""
    _, version, hlen = struct.unpack_from("<8sII", data)
    new = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    return struct.pack("<8sII", b"RTCCUBIN", version, len(new)) + new + data[16 + hlen :]


def test_disk_entry_stores_symbol_mapping(cache_env):
    src = unique_src()
    mod = rtc.compile(src, SCALE_NAMES, arch="sm_90")
    ((path, _),) = rtc.cache_entries()
    data = path.read_bytes()
    key = bytes.fromhex(_header(data)["key"])
    assert path == rtc_cache._entry_path(rtc.cache_dir(), key)  # where the FIFO guard looks
    cubin, symbols, log = rtc_cache.decode_payload(data, SCALE_NAMES, key)
    assert cubin == mod.cubin
    assert symbols == mod.symbols
    with pytest.raises(ValueError, match="lacks"):
        rtc_cache.decode_payload(data, ("scale<int, 1>",), key)
    with pytest.raises(ValueError, match="another key"):
        rtc_cache.decode_payload(data, SCALE_NAMES, bytes(32))


def test_entry_of_another_key_is_not_a_hit(cache_env):
    """A valid entry at another key's path (copied, renamed, another arch's) is recompiled over:
    before, its cubin was returned as the other key's (session 41's cache stress test)."""
    a, b = unique_src(), unique_src()
    rtc.compile(a, SCALE_NAMES, arch="sm_90")
    ((path_a, _),) = rtc.cache_entries()
    good_b = rtc.compile(b, SCALE_NAMES, arch="sm_90")
    (path_b,) = [p for p, _ in rtc.cache_entries() if p != path_a]
    path_b.write_bytes(path_a.read_bytes())
    rtc.clear_cache(memory=True, disk=False)
    before = rtc.stats()
    mod = rtc.compile(b, SCALE_NAMES, arch="sm_90")
    assert rtc.last_origin() == "compiled" and delta(before, "disk_corrupt") == 1
    assert mod.cubin == good_b.cubin


def test_another_nvrtc_build_is_another_key(cache_env, monkeypatch):
    """cuda.core's key has NVRTC's major.minor only; the library's file name and size tell
    patch releases apart (session 41's cache stress test: 13.5.37's entries served any 13.5)."""
    from rtc import compiler

    assert compiler.nvrtc_build().startswith("libnvrtc")
    src = unique_src()
    rtc.compile(src, SCALE_NAMES, arch="sm_90")
    rtc.clear_cache(memory=True, disk=False)
    monkeypatch.setattr(compiler, "nvrtc_build", lambda: "libnvrtc.so.13 1")
    rtc.compile(src, SCALE_NAMES, arch="sm_90")
    assert rtc.last_origin() == "compiled" and len(rtc.cache_entries()) == 2


def _garbage(data: bytes) -> bytes:
    return os.urandom(len(data))


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _flipped_cubin_byte(data: bytes) -> bytes:
    b = bytearray(data)
    b[-10] ^= 0xFF
    return bytes(b)


def _empty(data: bytes) -> bytes:
    return b""


def _swapped_symbols(data: bytes) -> bytes:
    """The symbol map's two entries exchanged, the rest (checksum included) as written: the
    checksum covers the header, so this is caught (it once covered the cubin alone)."""
    h = _header(data)
    (k1, v1), (k2, v2) = h["symbols"].items()
    h["symbols"] = {k1: v2, k2: v1}
    return _with_header(data, h)


def _deep_header(data: bytes) -> bytes:
    """A header nested beyond json's recursion limit (it raised RecursionError out of
    rtc.compile)."""
    _, version, hlen = struct.unpack_from("<8sII", data)
    deep = b"[" * 100_000 + b"]" * 100_000
    return struct.pack("<8sII", b"RTCCUBIN", version, len(deep)) + deep + data[16 + hlen :]


@pytest.mark.parametrize(
    "damage",
    [_garbage, _truncated, _flipped_cubin_byte, _empty, _swapped_symbols, _deep_header],
)
def test_damaged_entry_is_recompiled_and_replaced(cache_env, damage):
    src = unique_src()
    good = rtc.compile(src, SCALE_NAMES, arch="sm_90")
    ((path, _),) = rtc.cache_entries()
    original = path.read_bytes()
    path.write_bytes(damage(original))

    rtc.clear_cache(memory=True, disk=False)
    before = rtc.stats()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a damaged entry is routine: no warning, no exception
        mod = rtc.compile(src, SCALE_NAMES, arch="sm_90")
    assert rtc.last_origin() == "compiled"
    assert delta(before, "nvrtc_compiles") == 1
    assert delta(before, "disk_corrupt") == 1
    assert mod.cubin == good.cubin
    assert mod.symbols == good.symbols
    # The entry was rewritten with a valid payload, so the next process gets a disk hit.
    assert [p for p, _ in rtc.cache_entries()] == [path]
    assert path.read_bytes() == original
    rtc.clear_cache(memory=True, disk=False)
    rtc.compile(src, SCALE_NAMES, arch="sm_90")
    assert rtc.last_origin() == "disk"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_a_fifo_at_an_entry_path_is_a_read_error_not_a_hang(cache_env, monkeypatch):
    """Reading a FIFO blocks until a writer opens it: it made a compile hang (session 41's
    cache stress test). It warns as an unreadable entry, and the compile's write replaces it."""
    src = unique_src()
    good = rtc.compile(src, SCALE_NAMES, arch="sm_90")
    ((path, _),) = rtc.cache_entries()
    original = path.read_bytes()
    path.unlink()
    os.mkfifo(path)
    rtc.clear_cache(memory=True, disk=False)
    monkeypatch.setattr(rtc_cache, "_warned", set())
    result: list = []

    def compile_again() -> None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            mod = rtc.compile(src, SCALE_NAMES, arch="sm_90")
            result.append((mod, rtc.last_origin(), caught))

    worker = threading.Thread(target=compile_again, daemon=True)
    worker.start()
    worker.join(120)
    if worker.is_alive():
        try:  # a writer end lets a read blocked on the FIFO finish; never block here
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
        worker.join(10)
        pytest.fail("rtc.compile blocked (reading a FIFO at the entry's path?)")
    ((mod, origin, caught),) = result
    assert mod.cubin == good.cubin and origin == "compiled"
    assert any("not a regular file" in str(w.message) for w in caught)
    assert path.is_file() and path.read_bytes() == original


def test_disabled_disk_cache_writes_nothing(cache_env, monkeypatch):
    monkeypatch.setenv("NUMBA_NORMS_DISABLE_DISK_CACHE", "1")
    assert not rtc.disk_cache_enabled()
    src = unique_src()
    rtc.compile(src, SCALE_NAMES, arch="sm_90")
    rtc.clear_cache(memory=True, disk=False)
    rtc.compile(src, SCALE_NAMES, arch="sm_90")
    assert rtc.last_origin() == "compiled"
    assert rtc.stats()["nvrtc_compiles"] == 2
    assert rtc.cache_entries() == []
    assert not cache_env.exists() or not any(p.is_file() for p in cache_env.rglob("*"))
    # Read at call time: re-enabling takes effect immediately.
    monkeypatch.setenv("NUMBA_NORMS_DISABLE_DISK_CACHE", "0")
    assert rtc.disk_cache_enabled()
    rtc.clear_cache(memory=True, disk=False)
    rtc.compile(src, SCALE_NAMES, arch="sm_90")
    assert len(rtc.cache_entries()) == 1


def test_cache_dir_follows_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("NUMBA_NORMS_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert rtc.cache_dir() == tmp_path / "xdg" / "numba-norms" / "rtc"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert rtc.cache_dir() == tmp_path / "home" / ".cache" / "numba-norms" / "rtc"
    monkeypatch.setenv("NUMBA_NORMS_CACHE_DIR", str(tmp_path / "explicit"))
    assert rtc.cache_dir() == tmp_path / "explicit"


def test_unusable_cache_dir_warns_once_and_continues(cache_env, monkeypatch, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv("NUMBA_NORMS_CACHE_DIR", str(blocker / "cache"))
    with pytest.warns(RuntimeWarning, match="unusable"):
        a = rtc.compile(unique_src(), SCALE_NAMES, arch="sm_90")
    assert a.cubin[:4] == b"\x7fELF"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = rtc.compile(unique_src(), SCALE_NAMES, arch="sm_90")
    assert b.cubin[:4] == b"\x7fELF"
    assert rtc.cache_entries() == []


def test_clear_cache_counts_removed_entries(cache_env):
    srcs = [unique_src() for _ in range(3)]
    for s in srcs:
        rtc.compile(s, SCALE_NAMES, arch="sm_90")
    assert len(rtc.cache_entries()) == 3
    assert rtc.clear_cache(memory=False, disk=True) == 3
    assert rtc.cache_entries() == []
    assert rtc.cache_size_bytes() == 0
    assert rtc.clear_cache(memory=True, disk=False) == 3
    assert rtc.clear_cache() == 0
    rtc.compile(srcs[0], SCALE_NAMES, arch="sm_90")
    assert rtc.last_origin() == "compiled"


def test_cache_listing_and_clearing_touch_only_entry_files(cache_env):
    """Only ``entries/<2 hex>/<62 hex>`` is the cache's: other files under ``entries/`` are
    neither listed nor removed, nor are the directories that hold them."""
    rtc.compile(unique_src(), SCALE_NAMES, arch="sm_90")
    (entry,) = [p for p, _ in rtc.cache_entries()]
    foreign = [
        cache_env / "entries" / "notes" / "a.txt",
        cache_env / "entries" / "2024" / "b.txt",
        entry.parent / "README",
        entry.parent / ("0" * 61 + "g"),
    ]
    for f in foreign:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("keep")
    assert [p for p, _ in rtc.cache_entries()] == [entry]
    assert rtc.clear_cache(memory=False, disk=True) == 1
    assert not entry.exists() and all(f.read_text() == "keep" for f in foreign)


def test_unreadable_cache_directories_are_skipped(cache_env, monkeypatch):
    """A directory of entries this process may not read (another user's) warns and is
    skipped by listing and clearing instead of raising."""
    for _ in range(2):
        rtc.compile(unique_src(), SCALE_NAMES, arch="sm_90")
    entries = [p for p, _ in rtc.cache_entries()]
    blocked = entries[0].parent
    real = os.scandir

    def scandir(path):
        if os.fspath(path) == os.fspath(blocked):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(rtc.cache.os, "scandir", scandir)
    with pytest.warns(RuntimeWarning, match="cannot read the cache directory"):
        listed = [p for p, _ in rtc.cache_entries()]
    assert listed == [p for p in entries if p.parent != blocked]
    assert rtc.clear_cache(memory=False, disk=True) == len(listed)
    assert all(p.exists() == (p.parent == blocked) for p in entries)


def test_a_cache_another_user_built_is_read(cache_env, monkeypatch):
    """cuda.core makes tmp/ owner-only and sweeps it on opening: for another user that raises
    PermissionError. The cache is still opened and its entries are hits."""
    from cuda.core.utils import FileStreamProgramCache

    src = unique_src()
    a = rtc.compile(src, SCALE_NAMES, arch="sm_90")
    rtc.clear_cache(memory=True, disk=False)
    rtc.cache._forget_disk_cache(str(cache_env))

    def sweep(self):
        raise PermissionError(13, "Permission denied", str(cache_env / "tmp"))

    monkeypatch.setattr(FileStreamProgramCache, "_sweep_stale_tmp_files", sweep)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = rtc.compile(src, SCALE_NAMES, arch="sm_90")
    assert rtc.last_origin() == "disk" and b.cubin == a.cubin
    rtc.cache._forget_disk_cache(str(cache_env))


def test_eight_threads_compile_once(cache_env):
    src = unique_src()
    n = 8
    barrier = threading.Barrier(n)
    results: list = [None] * n
    origins: list = [None] * n
    errors: list = []

    def work(i: int) -> None:
        try:
            barrier.wait()
            results[i] = rtc.compile(src, SCALE_NAMES, arch="sm_90")
            origins[i] = rtc.last_origin()
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    assert rtc.stats()["nvrtc_compiles"] == 1
    assert all(r is results[0] for r in results)
    assert sorted(origins) == ["compiled"] + ["memory"] * (n - 1)
    assert len(rtc.cache_entries()) == 1


def test_callers_queued_on_a_failing_compile_share_its_error(monkeypatch):
    """Callers that queued behind a compile that fails get its error without compiling again
    (before, each compiled in turn: 12 threads on a broken source made 12 NVRTC runs), each as
    its own copy; a call after that compile is over compiles afresh."""
    from rtc import compiler

    key = ("test-flight", uuid.uuid4().hex)
    builds, errors, flights = queue_behind_failing_build(
        monkeypatch,
        lambda make: compiler._through_memory(key, make),
        rtc.CompileError("broken", source="x", name="t"),
    )
    assert len(flights) == 5 and all(f is flights[0] for f in flights)
    assert builds == 1 and len(errors) == 5
    (original,) = [e for e in errors if e.__cause__ is None]
    assert all(
        e.__cause__ is original and str(e) == str(original) for e in errors if e is not original
    )
    assert not [k for k in rtc_cache._key_locks if k[1] == key]
    again: list = []

    def make():
        again.append(1)
        raise rtc.CompileError("broken", source="x", name="t")

    with pytest.raises(rtc.CompileError):
        compiler._through_memory(key, make)
    assert again == [1]


def test_build_once_keeps_a_none_value():
    """A stored None is a value (a sentinel tells it from a missing key), not a miss."""
    store: dict = {}
    builds: list = []
    for _ in range(3):
        value, built = rtc.build_once(store, "k", lambda: builds.append(1))
        assert value is None
    assert builds == [1] and "k" in store


class _Uncopyable(Exception):
    def __init__(self, a, b):  # copy.copy calls __init__ with args: one, not two
        super().__init__(f"{a}:{b}")


def test_an_error_that_cannot_be_copied_is_not_its_own_cause(monkeypatch):
    """Queued callers behind a build whose error copy.copy cannot copy get a RuntimeError from
    it: before, the one object was raised from itself in every thread (its cause lost)."""
    root = ValueError("root")
    error = _Uncopyable(1, 2)
    error.__cause__ = root
    store: dict = {}
    builds, errors, _ = queue_behind_failing_build(
        monkeypatch, lambda build: rtc.build_once(store, "k", build), error, queued=2
    )
    assert builds == 1 and len(errors) == 3
    assert sum(e is error for e in errors) == 1 and error.__cause__ is root
    queued = [e for e in errors if e is not error]
    assert all(isinstance(e, RuntimeError) and e.__cause__ is error for e in queued)
    assert "1:2" in str(queued[0])


def test_threads_compile_different_keys_concurrently(cache_env):
    srcs = [unique_src() for _ in range(4)]
    barrier = threading.Barrier(len(srcs))
    out: dict = {}

    def work(s: str) -> None:
        barrier.wait()
        out[s] = rtc.compile(s, SCALE_NAMES, arch="sm_90")

    threads = [threading.Thread(target=work, args=(s,)) for s in srcs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(out) == 4
    assert rtc.stats()["nvrtc_compiles"] == 4
    assert len(rtc.cache_entries()) == 4


_CHILD = textwrap.dedent(
    """
    import hashlib, json, os, sys, time
    import rtc
    src_file, go_file = sys.argv[1], sys.argv[2]
    src = open(src_file).read()
    deadline = time.time() + 60
    while not os.path.exists(go_file) and time.time() < deadline:
        time.sleep(0.001)
    mod = rtc.compile(src, ["scale<float, 4>", "scale<double, 2>"], arch="sm_90")
    print(json.dumps({
        "origin": rtc.last_origin(),
        "compiles": rtc.stats()["nvrtc_compiles"],
        "sha": hashlib.sha256(mod.cubin).hexdigest(),
        "symbols": mod.symbols,
    }))
    """
)


def test_two_processes_fill_one_entry(cache_env, tmp_path):
    src = unique_src()
    src_file = tmp_path / "src.cu"
    src_file.write_text(src)
    go = tmp_path / "go"
    env = dict(os.environ)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(src_file), str(go)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    time.sleep(0.5)  # let both import rtc, so they race on the compile itself
    go.write_text("go")
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
        outs.append(json.loads(out.strip().splitlines()[-1]))

    assert {o["origin"] for o in outs} <= {"compiled", "disk"}
    assert "compiled" in {o["origin"] for o in outs}
    assert outs[0]["sha"] == outs[1]["sha"]
    assert outs[0]["symbols"] == outs[1]["symbols"]
    entries = rtc.cache_entries()
    assert len(entries) == 1
    # Nothing half-written is left behind (tmp/ holds only in-flight files).
    assert not any((cache_env / "tmp").iterdir())

    before = rtc.stats()
    mod = rtc.compile(src, SCALE_NAMES, arch="sm_90")
    assert rtc.last_origin() == "disk"
    assert delta(before, "nvrtc_compiles") == 0
    assert hashlib.sha256(mod.cubin).hexdigest() == outs[0]["sha"]
    assert mod.symbols == outs[0]["symbols"]


_COLD_THREADS = r"""
import sys, threading
import rtc  # cuda.core not imported yet: the compile threads race on its first import
src = "extern \"C\" __global__ void k%d(float* p) { p[threadIdx.x] = %d.f; }"
errors = []
def work(i):
    try:
        rtc.compile(src % (i, i), f"k{i}", arch="sm_80")
    except Exception as exc:
        errors.append(repr(exc))
ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
print(errors)
sys.exit(1 if errors else 0)
"""


@pytest.mark.parametrize("attempt", range(3))
def test_threads_compile_in_a_fresh_process(cache_env, attempt):
    """The first compiles of a process may run on several threads (precompile's pool)."""
    assert (
        "cuda.core"
        not in subprocess.run(
            [sys.executable, "-c", "import rtc, sys; print(list(sys.modules))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    ), "rtc imports cuda.core eagerly: this test would not race"
    p = subprocess.run(
        [sys.executable, "-c", _COLD_THREADS], capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stdout + p.stderr


# ---------------------------------------------------------------------------------------------
# environment queries
# ---------------------------------------------------------------------------------------------


def test_nvrtc_version():
    v = rtc.nvrtc_version()
    assert isinstance(v, tuple) and len(v) == 2
    assert all(isinstance(x, int) for x in v)
    assert v[0] >= 12


def test_no_gpu_behaviour(cache_env):
    if rtc.has_gpu():
        pytest.skip("a GPU is present")
    assert rtc.device_info() is None
    assert rtc.device_info(0) is None
    assert rtc.has_gpu() is False
    with pytest.raises(RuntimeError, match="no GPU: give arch= to compile only"):
        rtc.compile(unique_src(), SCALE_NAMES)
    mod = rtc.compile(unique_src(), SCALE_NAMES, arch="sm_90")
    with pytest.raises(RuntimeError, match="no GPU"):
        mod.kernel("scale<float, 4>")


def test_driver_version_shape():
    v = rtc.driver_version()
    if v is None:
        assert not rtc.has_gpu()
    else:
        assert isinstance(v, tuple) and len(v) == 2 and v[0] >= 12


def test_public_api_surface():
    for name in (
        "CompileError",
        "CompiledModule",
        "Kernel",
        "DeviceInfo",
        "compile",
        "launch",
        "as_stream",
        "build_once",
        "device_info",
        "has_gpu",
        "nvrtc_version",
        "driver_version",
        "cache_dir",
        "disk_cache_enabled",
        "cache_entries",
        "cache_size_bytes",
        "clear_cache",
        "stats",
        "last_origin",
        "parse_arch",
    ):
        assert name in rtc.__all__ and hasattr(rtc, name)
    assert issubclass(rtc.CompileError, RuntimeError)
    assert set(rtc.stats()) >= {"nvrtc_compiles", "disk_hits", "memory_hits"}


def test_rtc_does_not_import_numba_norms():
    code = "import sys, rtc; assert not any(m.startswith('numba_norms') for m in sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------------------------
# Launcher (fake driver: what would reach cuLaunchKernelEx)
# ---------------------------------------------------------------------------------------------


def test_launcher_packs_each_parameter_in_its_slot(monkeypatch):
    from tests.fakes import FakeDriver

    drv = FakeDriver({0xC0FFEE: "k"}).install(monkeypatch)
    fire = rtc.Launcher(0xC0FFEE, (3, 2), 128, "PiqfdI", shared_mem=64, cooperative=True)
    fire(0x55, 2**63 + 5, -7, -(2**40), 0.1, 0.1, 2**32 - 1)
    (label, grid, block, args, stream, coop) = drv.launches[0]
    assert (label, grid, block, stream, coop) == ("k", (3, 2, 1), (128, 1, 1), 0x55, True)
    assert args[:3] == (2**63 + 5, -7, -(2**40))
    assert args[3] == np.float32(0.1) and args[4] == 0.1 and args[5] == 2**32 - 1
    with pytest.raises(ValueError, match="unknown codes"):
        rtc.Launcher(1, 1, 1, "Px")
    with pytest.raises(struct.error):  # a value that does not fit its slot
        fire(0, 0, 2**31, 0, 0.0, 0.0, 0)


def test_launcher_is_thread_safe(monkeypatch):
    """Threads sharing one launcher never see each other's half-packed parameter blocks."""
    from tests.fakes import FakeDriver

    drv = FakeDriver({0xAB: "k"}).install(monkeypatch)
    fire = rtc.Launcher(0xAB, 1, 32, "PqiP")
    errors = []

    def worker(t: int) -> None:
        try:
            for i in range(300):
                v = t * 1_000_000 + i
                fire(t, v, v, v % 1000, v)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often: interleavings a lock must prevent
    try:
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors and len(drv.launches) == 8 * 300
    for _, _, _, (a, b, c, d), stream, _ in drv.launches:
        assert a == b == d and c == a % 1000 and a // 1_000_000 == stream


def test_programmatic_launcher_goes_through_launch_kernel_ex(monkeypatch):
    """A programmatic launcher hands cuLaunchKernelEx the same shape and parameters, with the
    programmatic-serialization attribute (and the cooperative one when asked), per stream."""
    from tests.fakes import FakeDriver

    drv = FakeDriver({0xD0: "dep", 0xD1: "plain"}).install(monkeypatch)
    dep = rtc.Launcher(0xD0, (4, 1), (32, 8), "PPiI", programmatic=True)
    plain = rtc.Launcher(0xD1, (4, 1), (32, 8), "PPiI")
    assert dep.programmatic and not plain.programmatic and "programmatic" in repr(dep)
    dep(0x10, 1, 2, -3, 4)
    plain(0x10, 5, 6, 7, 8)
    dep(0x20, 9, 10, 11, 12)  # another stream: its own config
    assert drv.programmatic == [0, 2]
    first, second, third = drv.launches
    assert first == ("dep", (4, 1, 1), (32, 8, 1), (1, 2, -3, 4), 0x10, False)
    assert second[0] == "plain" and second[4] == 0x10
    assert third[3:5] == ((9, 10, 11, 12), 0x20)
    coop = rtc.Launcher(0xD0, 2, 64, "P", programmatic=True, cooperative=True)
    coop(0x30, 7)
    assert drv.launches[-1][5] is True and drv.programmatic[-1] == 3
    assert drv.clusters == {}


def test_cluster_launcher_sets_the_cluster_dimension(monkeypatch):
    """``cluster=n`` adds the cluster-dimension attribute (n x 1 x 1), nothing else; the grid's
    x extent must be a multiple of it."""
    from tests.fakes import FakeDriver

    drv = FakeDriver({0xC0: "cl"}).install(monkeypatch)
    cl = rtc.Launcher(0xC0, (4, 33), 512, "Pi", cluster=4)
    assert "cluster=4" in repr(cl)
    cl(0x10, 0x1000, 3)
    cl(0x20, 0x2000, 4)  # another stream: its own config, the same attribute
    assert drv.clusters == {0: (4, 1, 1), 1: (4, 1, 1)} and drv.programmatic == []
    assert drv.launches[0] == ("cl", (4, 33, 1), (512, 1, 1), (0x1000, 3), 0x10, False)
    rtc.Launcher(0xC0, (4, 33), 512, "Pi", cluster=1)(0x10, 0, 0)
    assert 2 not in drv.clusters
    with pytest.raises(ValueError, match="cluster"):
        rtc.Launcher(0xC0, (6, 33), 512, "Pi", cluster=4)
    with pytest.raises(ValueError, match="cluster"):
        rtc.Launcher(0xC0, 4, 512, "Pi", cluster=0)


def test_max_active_clusters_asks_the_driver_once(monkeypatch):
    """``Kernel.max_active_clusters`` hands the driver a cluster x 1 x 1 launch configuration
    with the cluster attribute, caches the answer per arguments beside the occupancy answers,
    and reads a driver error as "no such cluster fits" (0)."""
    import importlib

    from tests.fakes import FakeDriver

    class Driver(FakeDriver):
        def __init__(self):
            super().__init__()
            self.asked = []

        def cuKernelGetFunction(self, kernel):
            return 0, ("fn", int(kernel))

        def cuOccupancyMaxActiveClusters(self, fn, cfg):
            d = cfg.attrs[0].value.clusterDim
            self.asked.append((fn, cfg.gridDimX, cfg.blockDimX, cfg.sharedMemBytes,
                               (d.x, d.y, d.z), cfg.numAttrs))  # fmt: skip
            return (0, 30) if cfg.blockDimX <= 512 else (1, 0)

    drv = Driver().install(monkeypatch)
    L = importlib.import_module("rtc.launch")
    monkeypatch.setattr(L, "_tls", threading.local())
    monkeypatch.setattr(L, "ensure_context", lambda device=None: None)
    k = object.__new__(rtc.Kernel)
    k.handle = type("H", (), {"handle": 0x5000})()
    k.name, k.device, k._occ, k._smem_limit = "stand-in", 0, {}, 48 * 1024
    k._lock = threading.Lock()
    k._occ[(512, 0)] = 2  # an occupancy answer: not confused with the cluster one
    assert k.max_active_clusters(4, 512) == 30
    assert k.max_active_clusters(4, 512) == 30  # cached
    assert drv.asked == [(("fn", 0x5000), 4, 512, 0, (4, 1, 1), 1)]
    assert k.max_active_clusters(4, 1024) == 0  # the driver refused
    assert k._occ[(512, 0)] == 2 and len(drv.asked) == 2


def test_launcher_runs_on_its_device_whatever_device_is_current(monkeypatch):
    """A launcher of device 1 called while device 0 is current (arrays of the second GPU, as
    torch's device guard serves them) launches with device 1's primary context pushed, and
    leaves device 0 current; where its device is current already, nothing is pushed."""
    from tests.fakes import FakeDriver

    drv = FakeDriver({0xE1: "k"}).install(monkeypatch)
    fire = rtc.Launcher(0xE1, 1, 32, "P", device=1)
    fire(0, 7)
    assert drv.devices == [1] and drv.current == 0 and not drv._pushed
    drv.current = 1
    monkeypatch.setattr(drv, "cuCtxPushCurrent", None)  # a push would fail
    fire(0, 8)
    assert drv.devices == [1, 1] and drv.current == 1
    with rtc.on_device(1):  # the guard dispatch puts around planning and launching
        assert drv.current == 1
    drv.current = 0
    monkeypatch.undo()
    drv = FakeDriver().install(monkeypatch)
    with rtc.on_device(2):
        assert drv.current == 2
    assert drv.current == 0
    with pytest.raises(KeyError), rtc.on_device(3):  # popped on the way out of an error too
        raise KeyError
    assert drv.current == 0
    drv.current = None  # a thread with no context (a fresh one): left with none after
    fire = rtc.Launcher(0xE1, 1, 32, "P", device=1)
    fire(0, 9)
    assert drv.devices == [1] and drv.current is None
