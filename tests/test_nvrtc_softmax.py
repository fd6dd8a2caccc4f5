"""NVRTC fused-softmax kernels compile to CUBIN for every registry entry (no GPU needed).

Each softmax registry entry is specialised for its own ``max_cols`` with full-width vectors and
with ``vec_elts=1`` (a misaligned call), deduplicated on ``spec.kernel_key``. The cubins must
use no local memory (stack frame 0: the row lives in registers) and resolve their name
expression. The full sweep is ``slow``; an unmarked subset covers each kind, dtype, variant and
vector width.

The ``slow`` tests at the end also run the kernels' CUDA C on the CPU through a host emulation
(g++, one pthread per CUDA thread) and compare with float64 references.
"""

from __future__ import annotations

import ctypes
import dataclasses
import re
import shutil
import struct
import subprocess
import time
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from numba_norms import reference as ref
from numba_norms.backends.common import SOFTMAX_BWD_PARAMS, SOFTMAX_FWD_PARAMS
from numba_norms.backends.nvrtc import softmax as nv_softmax
from numba_norms.planner import DeviceLimits, SoftmaxSpec, softmax_spec
from numba_norms.registry import SoftmaxConfig, select_softmax, softmax_configs

H200 = DeviceLimits(sm_count=132, name="H200 (planning only)")


def _all_specs() -> list[SoftmaxSpec]:
    seen: dict[tuple, SoftmaxSpec] = {}
    for cfg in softmax_configs():
        # narrower vectors: the default table's entries (the measured ones share its code)
        for vec in (cfg.num_elts, 1) if cfg.origin == "default" else (cfg.num_elts,):
            spec = softmax_spec(cfg, cfg.max_cols, vec, H200)
            seen.setdefault(spec.kernel_key, spec)
    return list(seen.values())


ALL_SPECS = _all_specs()


def _is_quick(spec: SoftmaxSpec) -> bool:
    """A subset that still covers every dtype, variant, kind and both vector widths."""
    c = spec.config
    full = spec.num_elts == c.num_elts
    if c.max_cols == 1024:  # warp kernels: all dtypes x variants, full width
        return full
    if c.max_cols == 4096:  # block kernels: full width everywhere, vec=1 for bf16
        return full or c.dtype == "bf16"
    if c.max_cols == 32:  # narrowest warp entry
        return c.dtype == "fp32"
    return False


QUICK_SPECS = [s for s in ALL_SPECS if _is_quick(s)]


def _spec_id(spec: SoftmaxSpec) -> str:
    c = spec.config
    staged = "-staged" if c.stage else ""
    ctas = f"-c{spec.ctas_per_row}" if spec.ctas_per_row > 1 else ""
    shape = f"{c.kind}{c.max_cols}-e{spec.num_elts}-l{spec.ldgs}{ctas}{staged}"
    return f"{c.op}-{c.variant}-{c.dtype}-{shape}"


@pytest.fixture(autouse=True)
def _tmp_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBA_NORMS_CACHE_DIR", str(tmp_path / "rtc-cache"))


# ------------------------------------------------------------------------------------------------
# cubin inspection: the per-kernel frame size and register count from the ELF .nv.info section
# ------------------------------------------------------------------------------------------------

_EIATTR_FRAME_SIZE = 0x11
_EIATTR_MIN_STACK_SIZE = 0x12
_EIATTR_REGCOUNT = 0x2F


def _sections(elf: bytes) -> dict[str, bytes]:
    assert elf[:4] == b"\x7fELF" and elf[4] == 2, "expected a 64-bit ELF cubin"
    (shoff,) = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    heads = [struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    strtab = heads[shstrndx][4]
    out = {}
    for name, _typ, _flags, _addr, off, size in heads:
        end = elf.index(b"\0", strtab + name)
        out[elf[strtab + name : end].decode()] = elf[off : off + size]
    return out


def _nv_info(elf: bytes) -> dict[int, list[int]]:
    """EIATTR code -> values of the module-wide .nv.info (one per kernel: (symbol, value))."""
    data = _sections(elf).get(".nv.info", b"")
    out: dict[int, list[int]] = {}
    i = 0
    while i + 2 <= len(data):
        fmt, attr = data[i], data[i + 1]
        i += 2
        if fmt == 0x04:  # EIFMT_SVAL: u16 size, payload
            (size,) = struct.unpack_from("<H", data, i)
            payload = data[i + 2 : i + 2 + size]
            i += 2 + size
            if size == 8:
                out.setdefault(attr, []).append(struct.unpack("<II", payload)[1])
        elif fmt in (0x02, 0x03):  # EIFMT_BVAL / EIFMT_HVAL: 2 bytes
            i += 2
        elif fmt != 0x01:  # EIFMT_NVAL has no payload; anything else: stop
            break
    return out


def _frame_limit(spec: SoftmaxSpec) -> int:
    """Stack bytes tolerated: none, but for ptxas' own trade-offs.

    ptxas sometimes spills one register (an 8-byte frame) to reach 64 registers, i.e. two
    512-thread CTAs an SM (seen: masked fp32 8192). Misaligned rows (one element a vector) of the
    longest entries hold 32-64 elements a thread in as many registers plus an address each and
    spill up to ~100 bytes (backward of 2048/16384); they are the slow fallback anyway.
    Measured entries may spill a little (up to 128 bytes: 64 elements a thread at 32768 keys,
    or a register cap or the pipeline): the sweeps (runs 28, 31) timed them faster than every
    shape that does not.
    """
    c = spec.config
    full = spec.num_elts == c.num_elts
    if full and c.origin == "measured":
        return 160
    if full or spec.num_elts * spec.ldgs < 32:
        return 8
    return 160


def _check(spec: SoftmaxSpec, arch: str) -> None:
    compile_fn = (
        nv_softmax.compile_backward if spec.config.is_backward else nv_softmax.compile_forward
    )
    mod = compile_fn(spec, arch=arch)
    assert mod.arch == arch
    assert nv_softmax.kernel_name(spec) in mod.symbols
    info = _nv_info(mod.cubin)
    frame = info.get(_EIATTR_FRAME_SIZE, [0])[0]
    assert frame <= _frame_limit(spec), f"{frame} bytes of local memory in {_spec_id(spec)}"
    regs = info.get(_EIATTR_REGCOUNT, [0])[0]
    assert 0 < regs <= 255


def test_registry_specs_are_deduplicated():
    keys = [s.kernel_key for s in ALL_SPECS]
    assert len(keys) == len(set(keys))
    assert {s.config.op for s in ALL_SPECS} == {"softmax_fwd", "softmax_bwd"}
    # Every registry entry's row fits one CTA pass at its own max_cols.
    assert all(s.ctas_per_row == 1 for s in ALL_SPECS)
    assert {s.config.variant for s in QUICK_SPECS} == {
        "scaled",
        "masked",
        "upper_triang",
        "aligned_causal",
    }
    assert {s.config.dtype for s in QUICK_SPECS} == {"fp32", "fp16", "bf16"}
    assert {s.num_elts == 1 for s in QUICK_SPECS} == {True, False}


def test_kernel_names():
    cfgs = {(c.op, c.variant, c.dtype, c.max_cols): c for c in softmax_configs(measured=False)}
    fwd = softmax_spec(cfgs["softmax_fwd", "masked", "bf16", 4096], 4096, 8, H200)
    assert nv_softmax.kernel_name(fwd) == "softmax_fwd<nn::bf16, 1, 8, 8, 2, 1, 1, false>"
    bwd = softmax_spec(cfgs["softmax_bwd", "scaled", "fp32", 128], 100, 1, H200)
    assert nv_softmax.kernel_name(bwd) == "softmax_bwd<float, 4, 1, 1, 4, 1, false>"
    piped = dataclasses.replace(bwd, config=dataclasses.replace(bwd.config, prefetch=True))
    assert nv_softmax.kernel_name(piped) == "softmax_bwd<float, 4, 1, 1, 4, 1, true>"
    causal = softmax_spec(cfgs["softmax_fwd", "aligned_causal", "fp16", 16384], 40000, 8, H200)
    assert causal.ctas_per_row == 3
    assert nv_softmax.kernel_name(causal) == "softmax_fwd<nn::fp16, 1, 16, 8, 4, 3, 1, false>"


_STREAM_OPS = [("softmax_fwd", v) for v in ("scaled", "masked", "upper_triang", "aligned_causal")]
_STREAM_OPS.append(("softmax_bwd", "scaled"))
# (dtype, warps_n, chunk, min CTAs an SM, reverse)
_STREAM_SHAPES = [("bf16", 16, 2, 3, False), ("fp16", 32, 4, 1, True), ("fp32", 8, 4, 6, False)]
STREAM_SPECS = [
    softmax_spec(
        SoftmaxConfig(op, "block", 32768, dtype, 1, wn, 16, variant, m, chunk=chunk, reverse=rev),
        cols,
        vec,
        H200,
    )
    for dtype, wn, chunk, m, rev in _STREAM_SHAPES
    for op, variant in _STREAM_OPS
    for cols, vec in ((131072, 16 // (4 if dtype == "fp32" else 2)), (32771, 1), (20000, 2))
]
# staged forwards (SoftmaxConfig.stage: grid of rows, one CTA a row or, timed at 131072 keys,
# a cluster of four), full-width and scalar
STREAM_SPECS += [
    softmax_spec(
        SoftmaxConfig(
            "softmax_fwd",
            "block",
            32768,
            dtype,
            1,
            wn,
            16,
            variant,
            m,
            keys=keys,
            chunk=chunk,
            reverse=rev,
            grid="rows",
            stage=True,
        ),
        keys,
        vec,
        H200,
    )
    for dtype, wn, chunk, m, rev in _STREAM_SHAPES
    for variant in ("scaled", "masked", "aligned_causal")
    for vec in (16 // (4 if dtype == "fp32" else 2), 1)
    for keys in (32768, 131072)
]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("spec", STREAM_SPECS, ids=_spec_id)
def test_compile_stream_specs(spec, arch):
    """The streaming forward in every dtype and variant and the streaming backward, full-width
    and narrower vectors, one CTA a row and several (the exchange compiled in), walking the
    second pass either way: they hold a chunk, not the row, so no local memory at all."""
    assert spec.stream and {s.multi_cta for s in STREAM_SPECS} == {False, True}
    c = spec.config
    name = nv_softmax.kernel_name(spec)
    rev = "true" if c.reverse else "false"
    if c.is_backward:
        assert name == (
            f"softmax_bwd_stream<{nv_softmax.C_TYPES[c.dtype]}, {c.warps_n}, {spec.num_elts}, "
            f"{spec.ldgs}, {c.min_ctas_per_sm}, {rev}>"
        )
    else:
        st = "true" if c.stage else "false"
        assert name.startswith("softmax_fwd_stream<") and name.endswith(
            f", {spec.ldgs}, {nv_softmax.VARIANT_IDS[c.variant]}, {c.min_ctas_per_sm}, {rev}, {st}>"
        )
    mod = (nv_softmax.compile_backward if c.is_backward else nv_softmax.compile_forward)(
        spec, arch=arch
    )
    assert name in mod.symbols
    info = _nv_info(mod.cubin)
    frame = info.get(_EIATTR_FRAME_SIZE, [0])[0]
    limit = 0 if spec.config.min_ctas_per_sm < 6 else 64  # 6 CTAs of 256: 40 registers
    if spec.multi_cta:  # the exchange across CTAs under these register caps: up to 112 B
        limit += 128
    assert frame <= limit, f"{frame} bytes of local memory in {_spec_id(spec)}"


def test_wrong_op_is_rejected():
    spec = next(s for s in QUICK_SPECS if s.config.op == "softmax_bwd")
    with pytest.raises(ValueError, match="softmax_fwd"):
        nv_softmax.compile_forward(spec, arch="sm_90")


@pytest.mark.parametrize("spec", QUICK_SPECS, ids=_spec_id)
def test_compile_quick_sm90(spec):
    _check(spec, "sm_90")


@pytest.mark.slow
def test_compile_all_sm90():
    t0 = time.perf_counter()
    for spec in ALL_SPECS:
        _check(spec, "sm_90")
    elapsed = time.perf_counter() - t0
    print(f"\n{len(ALL_SPECS)} softmax kernels for sm_90 in {elapsed:.1f} s")


MULTI_CTA_SPECS = [
    softmax_spec(c, 3 * c.max_cols - 5, c.num_elts, H200)
    for c in softmax_configs(measured=False)
    if c.max_cols == 16384
]


@pytest.mark.parametrize("spec", MULTI_CTA_SPECS, ids=_spec_id)
def test_compile_multi_cta_sm90(spec):
    """Rows over several CTAs use the default build (with the inter-CTA exchange)."""
    assert spec.ctas_per_row == 3
    _check(spec, "sm_90")
    single = softmax_spec(spec.config, spec.config.max_cols, spec.num_elts, H200)
    # The key says whether CTAs share a row: the two builds are different kernels.
    assert single.kernel_key != spec.kernel_key
    assert single.kernel_key[:-1] == spec.kernel_key[:-1]
    compile_fn = (
        nv_softmax.compile_backward if spec.config.is_backward else nv_softmax.compile_forward
    )
    assert compile_fn(single, arch="sm_90") is not compile_fn(spec, arch="sm_90")


SM80_SPECS = [
    s
    for s in QUICK_SPECS
    if (s.config.variant, s.config.dtype, s.config.max_cols)
    in {("masked", "bf16", 4096), ("aligned_causal", "fp16", 1024), ("scaled", "fp32", 1024)}
    and s.num_elts == s.config.num_elts
]


@pytest.mark.parametrize("spec", SM80_SPECS, ids=_spec_id)
def test_compile_sm80(spec):
    _check(spec, "sm_80")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("spec", SM80_SPECS, ids=_spec_id)
def test_kernels_start_with_the_dependent_launch_prologue(spec, arch):
    """As the norms': wait for the stream's previous kernel, then let the next be scheduled,
    before any memory access (sm_90+; nothing on sm_80)."""
    from tests.conftest import assert_dependent_prologue, nvrtc_ptx

    src = Path(nv_softmax.__file__).resolve().parent
    defines = tuple(nv_softmax._defines(spec).items())
    ptx = nvrtc_ptx(
        nv_softmax.kernel_source("softmax.cu"), [nv_softmax.kernel_name(spec)], arch, src, defines
    )
    assert_dependent_prologue(ptx, 1, arch)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("op", ["softmax_fwd", "softmax_bwd"])
def test_multi_cta_barrier_has_the_cluster_branch_from_sm90(op, arch):
    """Rows of several CTAs: the row barrier takes the cluster barrier when launched in a
    cluster (sm_90; %cluster_nctarank decides), the counter otherwise; sm_80 only the counter."""
    from tests.conftest import nvrtc_ptx

    variant = "masked" if op == "softmax_fwd" else "scaled"  # (the scaled forward streams)
    cfg = select_softmax(op, variant, "bf16", 131072)
    spec = softmax_spec(cfg, 131072, 8, H200)
    assert spec.ctas_per_row > 1
    src = Path(nv_softmax.__file__).resolve().parent
    defines = tuple(nv_softmax._defines(spec).items())  # the count fixed, as launched
    ptx = nvrtc_ptx(
        nv_softmax.kernel_source("softmax.cu"), [nv_softmax.kernel_name(spec)], arch, src, defines
    )
    want = arch == "sm_90"
    assert ("%cluster_nctarank" in ptx) is want
    assert ("barrier.cluster.arrive.release.aligned" in ptx) is want
    assert ("barrier.cluster.wait.acquire.aligned" in ptx) is want
    # the pairs go into the other CTAs' shared memory (distributed shared memory)
    assert ("mapa.shared::cluster" in ptx and "st.shared::cluster.v2.f32" in ptx) is want
    assert re.search(r"atom\.global(\.\w+)*\.add", ptx)


# A 16-byte vector access at a register plus an immediate offset.
_IMM_VECTOR = re.compile(
    r"(?:ld\.global[.\w]*\.v4\.u32\s+\{[^}]*\},\s*|st\.global[.\w]*\.v4\.u32\s+)\[%rd\d+\+\d+\]"
)


@pytest.mark.parametrize(("variant", "keys"), [("scaled", 4096), ("masked", 8192)])
def test_one_cta_builds_address_a_row_with_immediate_offsets(variant, keys):
    """SOFTMAX_MULTI_CTA=0 makes the CTA count, and so the column step, constants: a held
    forward row's vectors are one address plus immediates. The default build computes each
    vector's address from the grid size. (The pipelined backward's PTX keeps an address a
    vector in both builds, so it is not asserted here; the scaled forward streams at 8192 keys
    since run 197.)"""
    from tests.conftest import nvrtc_ptx

    cfg = select_softmax("softmax_fwd", variant, "bf16", keys)
    spec = softmax_spec(cfg, keys, 8, H200)
    assert not spec.multi_cta and not spec.stream and spec.ldgs > 1
    src = Path(nv_softmax.__file__).resolve().parent
    args = (nv_softmax.kernel_source("softmax.cu"), [nv_softmax.kernel_name(spec)], "sm_90", src)
    single = nvrtc_ptx(*args, tuple(nv_softmax._SINGLE_CTA.items()))
    default = nvrtc_ptx(*args)
    assert len(_IMM_VECTOR.findall(single)) >= spec.ldgs - 1
    assert not _IMM_VECTOR.findall(default)


def test_rows_of_several_ctas_are_built_with_their_count_fixed():
    """Plans of several CTAs a row are built with the count fixed (SOFTMAX_ROW_CTAS), one module
    a count: the held masked fp32 forward at 131072 keys (4 CTAs, 64 columns a thread) then
    holds its row in registers, where the build that reads the count from the grid spills
    56 B at 128 registers (NVRTC 13.0 and 13.5, sm_90)."""
    import rtc

    cfg = select_softmax("softmax_fwd", "masked", "fp32", 131072)
    spec = softmax_spec(cfg, 131072, 4, H200)
    assert spec.ctas_per_row == 4 and not spec.stream and spec.ldgs == 16
    fixed = nv_softmax.compile_forward(spec, arch="sm_90")
    name = nv_softmax.kernel_name(spec)
    grid_count = rtc.compile(
        nv_softmax.kernel_source("softmax.cu"), (name,), arch="sm_90", name="softmax_fwd.cu",
        options=nv_softmax.NVRTC_OPTIONS, include_dirs=(Path(nv_softmax.__file__).parent,),
    )  # fmt: skip
    assert _nv_info(fixed.cubin).get(_EIATTR_FRAME_SIZE, [0])[0] == 0
    assert _nv_info(grid_count.cubin).get(_EIATTR_FRAME_SIZE, [0])[0] > 0
    two = softmax_spec(cfg, 65536, 4, H200)  # the same kernel on rows of 2 CTAs: another build
    assert two.kernel_key == spec.kernel_key and two.ctas_per_row == 2
    assert nv_softmax.compile_forward(two, arch="sm_90") is not fixed


# ------------------------------------------------------------------------------------------------
# Host emulation: the CUDA C of softmax.cu (and the norms.cuh helpers it uses) compiled with g++
# against a tiny CUDA stand-in (one pthread per CUDA thread, real barriers for __syncthreads and
# the warp collectives, the PTX in asm statements rewritten to C++), run on the CPU and compared
# with float64 references. It checks the kernels' indexing, tails, masks, causal limits, row
# loop and the multi-CTA exchange without a GPU; numerics follow the GPU up to rounding.
# ------------------------------------------------------------------------------------------------

_EMU_MOCK = r"""
#pragma once
#include <pthread.h>
#include <atomic>
#include <condition_variable>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
struct dim3 { unsigned x = 1, y = 1, z = 1; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(8) float2 { float x, y; };
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
inline uint2 make_uint2(unsigned a, unsigned b) { return {a, b}; }
inline float2 make_float2(float a, float b) { return {a, b}; }
inline float __int_as_float(int v) { float f; std::memcpy(&f, &v, 4); return f; }
inline float __uint_as_float(unsigned v) { float f; std::memcpy(&f, &v, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned v; std::memcpy(&v, &f, 4); return v; }
inline int __float_as_int(float f) { int v; std::memcpy(&v, &f, 4); return v; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline float emu_h2f(unsigned short h) { _Float16 v; std::memcpy(&v, &h, 2); return (float)v; }
inline unsigned short emu_f2h(float f) {
  _Float16 v = (_Float16)f; unsigned short h; std::memcpy(&h, &v, 2); return h; }
inline unsigned short emu_f2bf(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline float emu_ex2(float x) {  // ex2.approx.ftz: denormal results flush to zero
  float y = std::exp2(x);
  return std::fabs(y) < 1.17549435e-38f ? 0.f : y;
}
struct Bar {  // blocking barrier (no spinning: thousands of emulated threads share few cores)
  explicit Bar(int n) : n(n) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> l(m);
    const unsigned long long g = gen;
    if (++count == n) { count = 0; ++gen; cv.notify_all(); return; }
    cv.wait(l, [&] { return gen != g; });
  }
  int n, count = 0; unsigned long long gen = 0; std::mutex m; std::condition_variable cv;
};
struct Warp { Bar bar{32}; unsigned long long buf[32]; };
struct Cta {
  explicit Cta(int n) : bar(n), warps(n / 32) {
    for (auto& w : warps) w = std::make_unique<Warp>();
  }
  Bar bar; std::vector<std::unique_ptr<Warp>> warps; std::atomic<int> fail{0};
  std::mutex m; std::map<int, void*> shared;
  std::vector<unsigned char> dyn;  // the launch's dynamic shared memory, then a guard zone
};
// Dynamic shared memory a CTA gets (emu_set_dyn: the planner's figure); a kernel that writes
// past it overwrites the guard, which emu_launch checks (emu_dyn_overrun).
constexpr int kDynGuard = 4096;
inline int g_dyn_bytes = 0;
inline int g_dyn_overrun = 0;
extern "C" void emu_set_dyn(int bytes) { g_dyn_bytes = bytes; }
extern "C" int emu_dyn_overrun() { return g_dyn_overrun; }
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 gridDim, blockDim;
inline thread_local Cta* g_cta;
template <typename A, int TAG> A& cta_shared() {
  std::lock_guard<std::mutex> l(g_cta->m); void*& p = g_cta->shared[TAG];
  if (!p) p = new A{}; return *static_cast<A*>(p); }
inline void __syncthreads() { g_cta->bar.arrive_and_wait(); }
inline int __syncthreads_and(int p) {
  Cta* c = g_cta; c->bar.arrive_and_wait(); if (!p) c->fail.store(1); c->bar.arrive_and_wait();
  int r = !c->fail.load(); c->bar.arrive_and_wait(); if (threadIdx.x == 0) c->fail.store(0);
  return r; }
inline Warp& my_warp() { return *g_cta->warps[threadIdx.x / 32]; }
template <typename V> V __shfl_xor_sync(unsigned, V v, int o) {
  Warp& w = my_warp(); unsigned l = threadIdx.x % 32; unsigned long long b = 0;
  std::memcpy(&b, &v, sizeof(V)); w.buf[l] = b; w.bar.arrive_and_wait();
  unsigned long long r = w.buf[l ^ o]; w.bar.arrive_and_wait(); V out;
  std::memcpy(&out, &r, sizeof(V)); return out; }
inline int emu_vote(int p, bool all) {
  Warp& w = my_warp(); w.buf[threadIdx.x % 32] = p ? 1 : 0; w.bar.arrive_and_wait();
  int any = 0, every = 1;
  for (int i = 0; i < 32; ++i) { any |= (int)w.buf[i]; every &= (int)w.buf[i]; }
  w.bar.arrive_and_wait(); return all ? every : any; }
inline int __any_sync(unsigned, int p) { return emu_vote(p, false); }
inline int __all_sync(unsigned, int p) { return emu_vote(p, true); }
inline int atomicAdd(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __trap() { std::abort(); }
template <typename F> void emu_launch(dim3 grid, dim3 block, F fn) {
  gridDim = grid; blockDim = block;
  const int ctas = grid.x * grid.y, n = block.x;
  std::vector<std::unique_ptr<Cta>> cs;
  for (int i = 0; i < ctas; ++i) {
    cs.push_back(std::make_unique<Cta>(n));
    cs.back()->dyn.assign(g_dyn_bytes + kDynGuard, 0xA5);
  }
  struct Arg { F* fn; Cta* cta; dim3 b, t; };
  std::vector<Arg> args;
  for (unsigned by = 0; by < grid.y; ++by)
    for (unsigned bx = 0; bx < grid.x; ++bx)
      for (int t = 0; t < n; ++t)
        args.push_back({&fn, cs[by * grid.x + bx].get(), dim3{bx, by, 0}, dim3{(unsigned)t, 0, 0}});
  std::vector<pthread_t> th(args.size());
  pthread_attr_t attr; pthread_attr_init(&attr); pthread_attr_setstacksize(&attr, 256 * 1024);
  for (size_t i = 0; i < args.size(); ++i)
    if (pthread_create(&th[i], &attr, [](void* p) -> void* {
          Arg* a = static_cast<Arg*>(p); g_cta = a->cta; blockIdx = a->b; threadIdx = a->t;
          (*a->fn)(); return nullptr; }, &args[i])) std::abort();
  for (auto& t : th) pthread_join(t, nullptr);
  g_dyn_overrun = 0;
  for (auto& c : cs)
    for (int i = g_dyn_bytes; i < g_dyn_bytes + kDynGuard; ++i) g_dyn_overrun |= c->dyn[i] != 0xA5;
}
"""

_EMU_MAIN = r"""
#include "mock.h"
#include "softmax.cu"
#if IS_FWD
extern "C" void run_fwd(int gx, int gy, int threads, const TT* x, const unsigned char* mask,
    TT* y, int rows, int cols, long long xs, long long ys, long long ms, int sq, int heads,
    int mb, float scale, float* stats, int* barrier) {
  emu_launch(dim3{(unsigned)gx, (unsigned)gy, 1}, dim3{(unsigned)threads, 1, 1}, [&] {
    KERNEL(x, mask, y, rows, cols, xs, ys, ms, sq, heads, mb, scale, stats, barrier); });
}
#else
extern "C" void run_bwd(int gx, int gy, int threads, const TT* dy, const TT* y, TT* dx, int rows,
    int cols, long long s0, long long s1, long long s2, float scale, float* stats, int* barrier) {
  emu_launch(dim3{(unsigned)gx, (unsigned)gy, 1}, dim3{(unsigned)threads, 1, 1}, [&] {
    KERNEL(dy, y, dx, rows, cols, s0, s1, s2, scale, stats, barrier); });
}
#endif
"""


def _emu_rewrite_asm(m: re.Match) -> str:
    tmpl = "".join(re.findall(r'"([^"]*)"', m.group(2)))
    parts = m.group(3).split(":")
    opnd = re.compile(r'"[=+]?\w+"\s*\(([^()]*)\)')
    o = opnd.findall(parts[1]) if len(parts) > 1 else []
    i = opnd.findall(parts[2]) if len(parts) > 2 else []
    table = [
        ("cvt.f32.f16 %0, l", lambda: f"{o[0]} = emu_h2f((unsigned short)({i[0]} & 0xffffu));"),
        ("cvt.f32.f16 %0, h", lambda: f"{o[0]} = emu_h2f((unsigned short)({i[0]} >> 16));"),
        ("cvt.f32.f16 %0, %1", lambda: f"{o[0]} = emu_h2f({i[0]});"),  # a 16-bit operand
        (
            "cvt.rn.f16x2.f32",
            lambda: f"{o[0]} = emu_f2h({i[1]}) | (unsigned)emu_f2h({i[0]}) << 16;",
        ),
        (
            "cvt.rn.bf16x2.f32",
            lambda: f"{o[0]} = emu_f2bf({i[1]}) | (unsigned)emu_f2bf({i[0]}) << 16;",
        ),
        ("cvt.rn.f16.f32", lambda: f"{o[0]} = emu_f2h({i[0]});"),
        ("cvt.rn.bf16.f32", lambda: f"{o[0]} = emu_f2bf({i[0]});"),
        (
            "st.global.cg.v2.f32",
            lambda: f"{{ volatile float* q_ = {i[0]}; q_[0] = {i[1]}; q_[1] = {i[2]}; }}",
        ),
        (
            "ld.global.cg.v2.f32",
            lambda: f"{{ const volatile float* q_ = {i[0]}; {o[0]} = q_[0]; {o[1]} = q_[1]; }}",
        ),
        ("prmt.b32 %0, %1, 0, 0x1044", lambda: f"{o[0]} = {i[0]} << 16;"),  # bf16 Remat
        ("prmt.b32 %0, %1, 0, 0x3244", lambda: f"{o[0]} = {i[0]} & 0xffff0000u;"),
        # the streaming forward's evict-first accesses: plain ones here
        (
            "ld.global.cs.v4.u32",
            lambda: (
                f"{{ const unsigned* q_ = (const unsigned*)({i[0]}); "
                + " ".join(f"{o[k]} = q_[{k}];" for k in range(4))
                + " }"
            ),
        ),
        (
            "ld.global.cs.v2.u32",
            lambda: (
                f"{{ const unsigned* q_ = (const unsigned*)({i[0]}); {o[0]} = q_[0]; "
                f"{o[1]} = q_[1]; }}"
            ),
        ),
        ("ld.global.cs.u32", lambda: f"{o[0]} = *(const unsigned*)({i[0]});"),
        (
            "st.global.cs.v4.u32",
            lambda: (
                f"{{ unsigned* q_ = (unsigned*)({i[0]}); "
                + " ".join(f"q_[{k}] = {i[k + 1]};" for k in range(4))
                + " }"
            ),
        ),
        (
            "st.global.cs.v2.u32",
            lambda: f"{{ unsigned* q_ = (unsigned*)({i[0]}); q_[0] = {i[1]}; q_[1] = {i[2]}; }}",
        ),
        ("st.global.cs.u32", lambda: f"*(unsigned*)({i[0]}) = {i[1]};"),
        ("ex2.approx", lambda: f"{o[0]} = emu_ex2({i[0]});"),
        ("rcp.approx", lambda: f"{o[0]} = 1.f / {i[0]};"),
        ("lg2.approx", lambda: f"{o[0]} = std::log2({i[0]});"),
        ("ld.acquire.gpu", lambda: f"{o[0]} = __atomic_load_n({i[0]}, __ATOMIC_ACQUIRE);"),
        # FP8 conversions live under `__CUDA_ARCH__ >= 890`, which the host build never defines.
        ("cvt.rn.satfinite", lambda: "__builtin_trap();"),
        # as the dependent-launch prologue (`__CUDA_ARCH__ >= 900`): one stream, nothing to wait for
        ("griddepcontrol", lambda: ";"),
        # clusters (`__CUDA_ARCH__ >= 900` too): the host build runs no cluster
        ("%%cluster_nctarank", lambda: f"{o[0]} = 1;"),
        ("barrier.cluster", lambda: ";"),
        ("mapa.shared::cluster", lambda: f"{o[0]} = {i[0]};"),
        ("st.shared::cluster", lambda: ";"),
    ]
    if tmpl == "":  # an empty asm only hides values from the compiler (Pack::opaque)
        return ";"
    for key, fn in table:
        if key in tmpl:
            return fn()
    raise NotImplementedError(f"the host emulation has no C++ for asm {tmpl!r}: add it")


def _emu_source(text: str) -> str:
    text = re.sub(
        r'asm\s*(volatile\s*)?\(\s*((?:"[^"]*"\s*)+)(.*?)\);', _emu_rewrite_asm, text, flags=re.S
    )
    # the dynamic shared memory of a staged row: the CTA's, sized by emu_set_dyn
    text = re.sub(
        r"extern\s+__shared__\s+__align__\(\d+\)\s+unsigned char\s+(\w+)\[\];",
        r"unsigned char* const \1 = g_cta->dyn.data();",
        text,
    )
    return re.sub(
        r"__shared__\s+(\w+)\s+(\w+)((?:\[[^\]]+\])+);",
        lambda m: f"auto& {m.group(2)} = cta_shared<{m.group(1)}{m.group(3)}, __LINE__>();",
        text,
    )


_EMU_CT = {"fp32": "float", "fp16": "nn::fp16", "bf16": "nn::bf16"}
_EMU_NP = {"fp32": np.float32, "fp16": np.float16, "bf16": ml_dtypes.bfloat16}
_EMU_BITS = {"fp32": np.uint32, "fp16": np.uint16, "bf16": np.uint16}
# NaN canaries in the padding of outputs (a kernel that writes there is caught)
_EMU_FILL = {"fp32": 0x7FC00001, "fp16": 0x7E01, "bf16": 0x7FC1}


def emu_workdir(tmp_path_factory, stem: str, sources: dict[str, str], main: str, mock: str) -> Path:
    """A build folder of the host emulation: the stand-in (``mock.h``), the CUDA sources with
    their asm rewritten (``sources``: name -> text) and the host entry points (``main.cpp``).
    Skips without g++."""
    if shutil.which("g++") is None:
        pytest.skip("the host emulation needs g++")
    d = tmp_path_factory.mktemp(stem)
    (d / "mock.h").write_text(mock)
    for name, text in sources.items():
        (d / name).write_text(_emu_source(text))
    (d / "main.cpp").write_text(main)
    return d


def emu_build(d: Path, defines: list[str]) -> ctypes.CDLL:
    """``main.cpp`` of ``d`` built with ``-D`` ``defines`` (once per set) and loaded."""
    so = d / f"k{abs(hash(tuple(defines)))}.so"
    if not so.exists():
        cmd = ["g++", "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-w",
               "-fno-strict-aliasing", f"-I{d}", *(f"-D{v}" for v in defines),
               str(d / "main.cpp"), "-o", str(so)]  # fmt: skip
        subprocess.run(cmd, check=True, capture_output=True, text=True)
    return ctypes.CDLL(str(so))


@pytest.fixture(scope="module")
def emu_dir(tmp_path_factory):
    src = Path(nv_softmax.__file__).resolve().parent
    files = {name: (src / name).read_text() for name in ("norms.cuh", "softmax.cu")}
    return emu_workdir(tmp_path_factory, "softmax-emu", files, _EMU_MAIN, _EMU_MOCK)


def _emu_lib(d: Path, expr: str, ctas: int) -> ctypes.CDLL:
    """The kernel built as the launcher builds it for rows of ``ctas`` CTAs (one-CTA builds
    without the exchange, others with the count fixed)."""
    tt = expr[expr.index("<") + 1 : expr.index(",")]
    fwd = int(expr.startswith("softmax_fwd"))
    return emu_build(d, [f"KERNEL={expr}", f"TT={tt}", f"SOFTMAX_MULTI_CTA={int(ctas > 1)}",
                         f"SOFTMAX_ROW_CTAS={ctas}", f"IS_FWD={fwd}"])  # fmt: skip


# (dtype, (warps_m, warps_n, num_elts, ldgs), variant, rows, cols, pitch, grid, sq, heads, mb)
# ..., prefetch: the software pipeline (every case with it runs several trips a CTA)
_EMU_FWD = [
    ("bf16", (4, 1, 8, 4), "scaled", 13, 1000, 1000, (1, 2), 13, 1, 1, False),
    ("fp16", (4, 1, 8, 4), "masked", 30, 1001, 1008, (1, 2), 5, 3, 2, True),  # partial last vector
    ("fp32", (4, 1, 4, 2), "upper_triang", 15, 250, 250, (1, 3), 5, 3, 1, True),  # idle warps
    ("bf16", (4, 1, 1, 1), "aligned_causal", 10, 7, 7, (1, 2), 10, 1, 1, False),  # sk < sq
    ("fp32", (4, 1, 1, 1), "scaled", 3, 1, 1, (1, 2), 3, 1, 1, False),
    ("bf16", (1, 4, 8, 2), "masked", 7, 2043, 2048, (1, 3), 7, 1, 1, True),  # block kernel
    ("bf16", (1, 2, 8, 1), "aligned_causal", 7, 1500, 1504, (3, 2), 7, 1, 1, True),  # 3 CTAs a row
    ("fp32", (4, 1, 4, 2), "masked", 12, 600, 600, (3, 1), 3, 2, 2, False),
    ("fp32", (4, 1, 4, 2), "aligned_causal", 40, 300, 300, (3, 2), 330, 1, 1, True),  # empty rows
    ("fp16", (4, 1, 8, 1), "upper_triang", 9, 600, 608, (3, 2), 9, 1, 1, False),
    (
        "fp16",
        (1, 16, 1, 16),
        "masked",
        4,
        4097,
        4097,
        (1, 1),
        2,
        2,
        2,
        True,
    ),  # 512 threads, 4 trips
]


def _emu_id(case) -> str:
    dtype, cfg, variant, rows, cols, pitch, grid = case[:7]
    pf = "-pf" if case[-1] else ""
    shape = f"{rows}x{cols}p{pitch}-g{grid[0]}x{grid[1]}{pf}"
    return f"{variant}-{dtype}-{'x'.join(map(str, cfg))}-{shape}"


def _emu_buffers(grid, warps_m):
    stats = np.zeros(2 * grid[1] * warps_m * grid[0] * 2, np.float32)
    return stats, np.zeros(grid[1], np.int32)


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(a.ctypes.data)


@pytest.mark.slow
@pytest.mark.parametrize("case", _EMU_FWD, ids=_emu_id)
def test_emulated_forward(emu_dir, case):
    dtype, cfg, variant, rows, cols, pitch, grid, sq, heads, mb, prefetch = case
    wm, wn, n, ldgs = cfg
    pf = "true" if prefetch else "false"
    vid = nv_softmax.VARIANT_IDS[variant]
    expr = f"softmax_fwd<{_EMU_CT[dtype]}, {wm}, {wn}, {n}, {ldgs}, {vid}, 1, {pf}>"
    stats, barrier = _emu_buffers(grid, wm)
    lib = _emu_lib(emu_dir, expr, grid[0])
    _emu_check_forward(lib, dtype, variant, rows, cols, pitch, grid, wm * wn * 32, (sq, heads, mb),
                       (_ptr(stats), _ptr(barrier)))  # fmt: skip


def _emu_check_forward(lib, dtype, variant, rows, cols, pitch, grid, threads, dims, scratch):
    """Run an emulated forward kernel on random rows (a fully masked row, mask bytes 7, NaN
    canaries in the padding) and compare with the float64 reference."""
    sq, heads, mb = dims
    rng = np.random.default_rng(rows * cols)
    x = (rng.standard_normal((rows, pitch)) * 3).astype(_EMU_NP[dtype])
    mask = None
    if variant == "masked":
        mask = (rng.random((mb * sq, pitch)) < 0.3).astype(np.uint8)
        mask[0, :cols] = 1  # a fully masked row; its padding (never read) unmasked
        mask[0, cols:] = 0
        mask[min(2, len(mask) - 1), : cols // 2] = 7  # nonzero means masked
    fill = _EMU_FILL[dtype]
    y = np.full((rows, pitch), fill, _EMU_BITS[dtype])
    lib.run_fwd(
        *(ctypes.c_int(v) for v in (grid[0], grid[1], threads)),
        _ptr(x), None if mask is None else _ptr(mask), _ptr(y),
        *(ctypes.c_int(v) for v in (rows, cols)),
        *(ctypes.c_longlong(v) for v in (pitch, pitch, pitch)),
        *(ctypes.c_int(v) for v in (sq, heads, mb)),
        ctypes.c_float(0.37), *scratch,
    )  # fmt: skip
    got = y.view(_EMU_NP[dtype])[:, :cols].astype(np.float64)
    want, keep = ref.softmax_rows(
        x[:, :cols], variant, sq, 0.37, None if mask is None else mask[:, :cols], heads, mb
    )
    err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
    assert err < {"fp32": 1e-5, "fp16": 2e-3, "bf16": 1e-2}[dtype], err
    assert np.all(got[~keep] == 0.0), "masked/excluded positions must be exactly 0"
    assert np.all(y[:, cols:] == fill), "padding written"


# The streaming forward (SoftmaxConfig.chunk): (dtype, (warps_n, num_elts, chunk, reverse),
# variant, rows, cols, pitch, CTAs, sq, heads, mask_batch); every case runs several chunks a row.
_EMU_STREAM = [
    ("bf16", (1, 8, 2, 0), "scaled", 5, 1100, 1104, 2, 5, 1, 1),  # partial last vector
    ("bf16", (1, 8, 2, 1), "scaled", 5, 1100, 1104, 2, 5, 1, 1),  # the same walked back
    ("fp16", (2, 8, 2, 0), "masked", 12, 2050, 2056, 3, 3, 2, 2),  # a fully masked row
    ("fp32", (2, 4, 3, 1), "upper_triang", 9, 900, 900, 2, 9, 1, 1),  # chunks past the limit
    ("bf16", (1, 2, 4, 0), "aligned_causal", 10, 300, 300, 3, 10, 1, 1),
    ("bf16", (2, 8, 2, 1), "aligned_causal", 14, 7, 8, 4, 14, 1, 1),  # sk < sq: empty rows
    ("fp32", (1, 1, 2, 0), "masked", 4, 75, 75, 2, 2, 2, 1),  # scalar vectors
    # rows of several CTAs (contiguous parts, (max, sum) pairs through stats and the counter)
    ("bf16", (1, 8, 2, 0), "scaled", 5, 1700, 1704, (3, 2), 5, 1, 1),
    ("fp16", (1, 8, 2, 1), "masked", 6, 2050, 2056, (2, 2), 3, 2, 2),  # a fully masked row
    ("fp32", (1, 4, 2, 0), "aligned_causal", 9, 1700, 1700, (3, 2), 1705, 1, 1),  # empty parts
    ("bf16", (1, 8, 1, 0), "upper_triang", 7, 12, 16, (3, 2), 7, 1, 1),  # a CTA without columns
]


@pytest.mark.slow
@pytest.mark.parametrize("stage", [False, True], ids=["load", "staged"])
@pytest.mark.parametrize(
    "case",
    _EMU_STREAM,
    ids=lambda c: f"{c[2]}-{c[0]}-{'x'.join(map(str, c[1]))}-{c[3]}x{c[4]}p{c[5]}-g{c[6]}".replace(
        " ", ""
    ),
)
def test_emulated_stream_forward(emu_dir, case, stage):
    dtype, (wn, n, chunk, rev), variant, rows, cols, pitch, ctas, sq, heads, mb = case
    grid = ctas if isinstance(ctas, tuple) else (1, ctas)  # (CTAs a row, row groups)
    vid = nv_softmax.VARIANT_IDS[variant]
    rv = "true" if rev else "false"
    st = "true" if stage else "false"
    expr = f"softmax_fwd_stream<{_EMU_CT[dtype]}, {wn}, {n}, {chunk}, {vid}, 1, {rv}, {st}>"
    tiny = cols < sq or cols <= 2 * grid[0] * n  # rows keeping nothing, CTAs without columns
    assert cols > grid[0] * wn * 32 * n * chunk or tiny, "a case of one chunk a part"
    stats, barrier = _emu_buffers(grid, 1)
    lib = _emu_lib(emu_dir, expr, grid[0])
    # a staged CTA gets exactly the planner's shared memory for its part (guarded past it)
    cfg = SoftmaxConfig(
        "softmax_fwd", "block", wn * 32 * 16 // np.dtype(_EMU_NP[dtype]).itemsize, dtype, 1, wn,
        16, variant, 1, chunk=chunk, grid="rows", stage=True,
    )  # fmt: skip
    staged = SoftmaxSpec(cfg, n, chunk, grid[0]).stage_bytes(cols) if stage else 0
    assert staged or not stage
    lib.emu_set_dyn(ctypes.c_int(staged))
    _emu_check_forward(lib, dtype, variant, rows, cols, pitch, grid, wn * 32, (sq, heads, mb),
                       (_ptr(stats), _ptr(barrier)))  # fmt: skip
    assert lib.emu_dyn_overrun() == 0, "the kernel wrote past the planner's shared memory"


# (dtype, (warps_m, warps_n, num_elts, ldgs), rows, cols, pitch, grid, prefetch)
_EMU_BWD = [
    ("bf16", (4, 1, 8, 4), 13, 1000, 1000, (1, 2), False),
    ("fp16", (4, 1, 8, 1), 9, 600, 608, (3, 2), False),  # 3 CTAs a row, partial last vector
    ("fp32", (1, 2, 4, 2), 7, 1101, 1104, (3, 2), False),
    ("bf16", (4, 1, 1, 1), 5, 7, 7, (1, 2), False),
    ("fp32", (1, 16, 1, 16), 3, 4097, 4097, (1, 1), False),  # 512 threads, 3 trips (smem reuse)
    ("bf16", (4, 1, 8, 4), 29, 1000, 1000, (1, 2), True),  # pipelined, 4 trips a CTA
    ("fp16", (1, 2, 8, 1), 11, 601, 608, (3, 2), True),  # pipelined, 3 CTAs a row, tail
    ("fp32", (1, 16, 1, 16), 5, 4097, 4097, (1, 1), True),  # pipelined, 512 threads, 5 trips
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    _EMU_BWD,
    ids=lambda c: f"{c[0]}-{'x'.join(map(str, c[1]))}-{c[2]}x{c[3]}p{c[4]}{'-pf' if c[6] else ''}",
)
def test_emulated_backward(emu_dir, case):
    dtype, (wm, wn, n, ldgs), rows, cols, pitch, grid, prefetch = case
    pf = "true" if prefetch else "false"
    expr = f"softmax_bwd<{_EMU_CT[dtype]}, {wm}, {wn}, {n}, {ldgs}, 1, {pf}>"
    stats, barrier = _emu_buffers(grid, wm)
    lib = _emu_lib(emu_dir, expr, grid[0])
    _emu_check_backward(lib, dtype, rows, cols, pitch, grid, wm * wn * 32,
                        (_ptr(stats), _ptr(barrier)))  # fmt: skip


# The streaming backward: (dtype, (warps_n, num_elts, chunk, reverse), rows, cols, pitch, CTAs);
# several chunks a row.
_EMU_BWD_STREAM = [
    ("bf16", (1, 8, 2, 0), 5, 1100, 1104, 2),  # partial last vector
    ("fp16", (2, 8, 2, 1), 7, 2050, 2056, 3),  # cross-warp sum by row parity, walked back
    ("fp32", (2, 4, 3, 1), 9, 900, 900, 2),
    ("bf16", (1, 1, 3, 0), 4, 250, 250, 2),  # scalar vectors
    ("fp32", (2, 4, 2, 1), 3, 7, 8, 2),  # most threads past the row
    ("bf16", (1, 8, 2, 0), 5, 1700, 1704, (3, 2)),  # rows of 3 CTAs, sums through the counter
    ("fp32", (1, 4, 1, 1), 4, 9, 12, (4, 2)),  # CTAs without columns
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    _EMU_BWD_STREAM,
    ids=lambda c: f"{c[0]}-{'x'.join(map(str, c[1]))}-{c[2]}x{c[3]}p{c[4]}-g{c[5]}".replace(
        " ", ""
    ),
)
def test_emulated_stream_backward(emu_dir, case):
    dtype, (wn, n, chunk, rev), rows, cols, pitch, ctas = case
    grid = ctas if isinstance(ctas, tuple) else (1, ctas)  # (CTAs a row, row groups)
    rv = "true" if rev else "false"
    expr = f"softmax_bwd_stream<{_EMU_CT[dtype]}, {wn}, {n}, {chunk}, 1, {rv}>"
    assert cols > grid[0] * wn * 32 * n * chunk or cols < wn * 32 * n, "one chunk a part"
    stats, barrier = _emu_buffers(grid, 1)
    lib = _emu_lib(emu_dir, expr, grid[0])
    _emu_check_backward(lib, dtype, rows, cols, pitch, grid, wn * 32, (_ptr(stats), _ptr(barrier)))


def _emu_check_backward(lib, dtype, rows, cols, pitch, grid, threads, scratch):
    """Run an emulated backward kernel on random rows (zeros in the padding) and compare with
    the float64 reference."""
    rng = np.random.default_rng(cols)
    p = rng.random((rows, pitch)) ** 4
    p /= p[:, :cols].sum(1, keepdims=True)
    yv = p.astype(_EMU_NP[dtype])
    dy = rng.standard_normal((rows, pitch)).astype(_EMU_NP[dtype])
    dx = np.zeros((rows, pitch), _EMU_BITS[dtype])
    lib.run_bwd(
        *(ctypes.c_int(v) for v in (grid[0], grid[1], threads)),
        _ptr(dy), _ptr(yv), _ptr(dx), *(ctypes.c_int(v) for v in (rows, cols)),
        *(ctypes.c_longlong(v) for v in (pitch, pitch, pitch)),
        ctypes.c_float(0.37), *scratch,
    )  # fmt: skip
    y64, dy64 = yv[:, :cols].astype(np.float64), dy[:, :cols].astype(np.float64)
    want = 0.37 * y64 * (dy64 - (dy64 * y64).sum(1, keepdims=True))
    got = dx.view(_EMU_NP[dtype])[:, :cols].astype(np.float64)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err < {"fp32": 1e-5, "fp16": 2e-3, "bf16": 1e-2}[dtype], err
    assert np.all(dx[:, cols:] == 0), "padding written"


def test_launcher_layouts_match_the_kernel_source():
    from tests.test_nvrtc_norms import _source_params

    src = (Path(nv_softmax.__file__).parent / "softmax.cu").read_text()
    assert _source_params(src, "softmax_fwd") == SOFTMAX_FWD_PARAMS
    assert _source_params(src, "softmax_bwd") == SOFTMAX_BWD_PARAMS


@dataclasses.dataclass
class _T:
    ptr: int
    shape: tuple
    strides: tuple
    device: int = 0


def test_recorded_launches(monkeypatch):
    """The parameter blocks the forward and backward launchers hand to the driver (fake)."""
    from numba_norms import planner
    from numba_norms.backends.common import SoftmaxBwdArgs, SoftmaxFwdArgs
    from numba_norms.registry import select_softmax
    from tests.fakes import FakeDriver

    drv = FakeDriver({0xB1: "KERNEL"}).install(monkeypatch)
    monkeypatch.setattr(nv_softmax, "load", lambda spec, device=None: 0xB1)
    monkeypatch.setattr(nv_softmax, "_launches", {})
    rows, cols, sq = 64, 1024, 16
    cfg = select_softmax("softmax_fwd", "masked", "bf16", cols)
    spec = softmax_spec(cfg, cols, cfg.num_elts, H200)
    plan = planner.softmax_plan(spec, rows, cols, H200, 4)
    x, y = _T(0x1000, (4, sq, cols), (sq * cols, cols, 1)), _T(0x2000, (rows, cols), (cols + 8, 1))
    mask = _T(0x3000, (sq, cols), (cols, 1))
    nv_softmax.forward(plan, SoftmaxFwdArgs(x, y, mask, 0.125, sq, 4, 1), 9)
    (label, grid, block, a, stream, coop) = drv.launches[-1]
    assert (label, grid, block, stream, coop) == ("KERNEL", plan.grid, plan.block, 9, False)
    assert a == (0x1000, 0x3000, 0x2000, rows, cols, cols, cols + 8, cols, sq, 4, 1, 0.125, 0, 0)
    assert [type(v) for v in a[3:5] + a[8:12]] == [np.int32] * 5 + [np.float32]
    cfg = select_softmax("softmax_bwd", "scaled", "bf16", cols)
    spec = softmax_spec(cfg, cols, cfg.num_elts, H200)
    plan = planner.softmax_plan(spec, rows, cols, H200, 4)
    dy, dx = _T(0x4000, (rows, cols), (cols, 1)), _T(0x5000, (rows, cols), (cols, 1))
    nv_softmax.backward(plan, SoftmaxBwdArgs(dy, y, dx, 2.0), 0)
    a = drv.launches[-1][3]
    assert a == (0x4000, 0x2000, 0x5000, rows, cols, cols, cols + 8, cols, 2.0, 0, 0)


def test_loads_of_different_kernels_compile_concurrently(monkeypatch):
    """``load`` held one lock over every softmax compile, so a thread's first call of one kernel
    waited for another thread's compile of another; rtc already compiles an equal request
    once. Both fake compiles must be in flight together, and equal loads share one kernel."""
    import threading

    cfgs = {(c.op, c.variant, c.dtype, c.max_cols): c for c in softmax_configs(measured=False)}
    a = softmax_spec(cfgs["softmax_fwd", "scaled", "bf16", 4096], 4096, 8, H200)
    b = softmax_spec(cfgs["softmax_bwd", "scaled", "fp32", 128], 100, 1, H200)
    both_inside = threading.Barrier(2, timeout=20)

    class _Kernel(tuple):
        device = 0

    class _Module:  # a fresh kernel object at each call, as a fresh module's would be
        def __init__(self, spec):
            self.spec = spec

        def kernel(self, name):
            return _Kernel((self.spec.kernel_key,))

    def compile_spec(spec):
        both_inside.wait()  # raises BrokenBarrierError if the other compile cannot start
        return _Module(spec)

    monkeypatch.setattr(nv_softmax, "compile_spec", compile_spec)
    monkeypatch.setattr(nv_softmax, "current_device", lambda what: 0)
    monkeypatch.setattr(nv_softmax, "_kernels", {})
    got, errors = {}, []

    def load(spec):
        try:
            got[spec.kernel_key] = nv_softmax.load(spec)
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=load, args=(s,)) for s in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert got[a.kernel_key] == (a.kernel_key,) and got[b.kernel_key] == (b.kernel_key,)
    monkeypatch.setattr(nv_softmax, "compile_spec", lambda spec: _Module(spec))
    assert nv_softmax.load(a) is got[a.kernel_key]  # the first loaded kernel stays the one
