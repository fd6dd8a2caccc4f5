"""FP8 output (scale, amax, scale_inv) of the Numba norm kernels on the CPU.

* both passes: the fp32 -> FP8 conversion the kernels use without ``cvt.rn.satfinite`` (its
  Python twin :func:`_norms.f32_to_fp8_bits`) against ml_dtypes over every class of fp32 input
  (each FP8 value's neighbourhood, midpoints, subnormals, overflow, infinities, NaN, +-0);
* without the simulator: the same conversion as the LLVM IR the GPU gets (run by llvmlite's
  JIT), the packing of FP8 vector stores, and PTX of the FP8 registry entries for sm_90 (a
  representative subset; all of them under ``-m slow``);
* with ``NUMBA_ENABLE_CUDASIM=1``: the public ``layernorm_fwd`` / ``rmsnorm_fwd`` with numpy
  arrays: bit-exact against quantising our own fp32 output, within one FP8 step of the float64
  reference, saturation, amax (FP8 and other outputs), scale_inv and argument errors.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import ml_dtypes
import numpy as np
import pytest

import numba_norms as nn
from numba_norms import planner, registry
from numba_norms import reference as ref
from numba_norms.backends.numba import _norms
from tests.conftest import SIMULATOR

FP8 = ("fp8e4m3", "fp8e5m2")
ML = {"fp8e4m3": ml_dtypes.float8_e4m3fn, "fp8e5m2": ml_dtypes.float8_e5m2}
NP = {"fp32": np.float32, "fp16": np.float16, "bf16": ml_dtypes.bfloat16}
# (exponent bias, mantissa bits) of the formats
FORMAT = {"fp8e4m3": (7, 3), "fp8e5m2": (15, 2)}
EPS = 1e-5

needs_sim = pytest.mark.skipif(
    not SIMULATOR, reason="numerics on the CPU need NUMBA_ENABLE_CUDASIM=1 (run_cpu.sh pass 1)"
)
needs_compiler = pytest.mark.skipif(
    SIMULATOR, reason="LLVM IR / compile_ptx are not available under the simulator (pass 2)"
)


# ---------------------------------------------------------------------------------------------
# the conversion
# ---------------------------------------------------------------------------------------------


def conversion_inputs(dtype: str) -> np.ndarray:
    """float32 values covering every rounding case of ``dtype`` (both signs).

    Every finite FP8 value and the midpoints between neighbours, each with the 4 float32
    neighbours on either side (ties, just-below / just-above ties, exact values); every fp32
    exponent with every pattern of the top 5 mantissa bits and the low-bit classes that decide
    rounding (zero, sticky, half - 1, half, half + 1, all ones); specials; random bits.
    """
    vals = np.arange(256, dtype=np.uint8).view(ML[dtype]).astype(np.float64)
    mags = np.unique(np.abs(vals[np.isfinite(vals)]))
    mids = (mags[1:] + mags[:-1]) / 2
    beyond = np.array([mags[-1] * 2, mags[-1] + (mags[-1] - mags[-2]) / 2])  # overflow, tie
    centres = np.concatenate([mags, mids, beyond, mags[1:2] / 2, mags[1:2] / 4])
    bits = centres.astype(np.float32).view(np.uint32).astype(np.int64)
    near = (bits[:, None] + np.arange(-4, 5)).ravel()
    exps = np.arange(256, dtype=np.int64)[:, None, None] << 23
    top = np.arange(32, dtype=np.int64)[None, :, None] << 18
    low = np.array([0, 1, (1 << 17) - 1, 1 << 17, (1 << 17) + 1, (1 << 18) - 1])[None, None, :]
    classes = (exps | top | low).ravel()
    special = np.array(
        [0, 0x7F800000, 0x7F800001, 0x7FC00000, 0x7FFFFFFF, 0x7F7FFFFF, 1, 0x007FFFFF],
        np.int64,
    )
    rnd = np.random.default_rng(0).integers(0, 2**31, 50000)
    u = np.concatenate([near, classes, special, rnd])
    u = u[(u >= 0) & (u < 2**31)].astype(np.uint32)
    return np.concatenate([u, u | np.uint32(0x80000000)]).view(np.float32)


def expected_bits(f: np.ndarray, dtype: str) -> np.ndarray:
    """ml_dtypes' saturating RNE conversion (``reference.quantize_fp8``) as bits."""
    with np.errstate(invalid="ignore", over="ignore"):
        return ref.quantize_fp8(f, dtype).view(np.uint8)


def check_conversion(got: np.ndarray, f: np.ndarray, dtype: str) -> None:
    want = expected_bits(f, dtype)
    nan = np.isnan(f)
    bad = np.nonzero(got[~nan] != want[~nan])[0]
    assert bad.size == 0, (
        f"{dtype}: {bad.size} mismatches, e.g. {f[~nan][bad[:4]]} -> {got[~nan][bad[:4]]}, "
        f"expected {want[~nan][bad[:4]]}"
    )
    assert (got[nan] == 0x7F).all(), "NaN must become 0x7F (CUDA's canonical FP8 NaN)"


@pytest.mark.parametrize("dtype", FP8)
def test_software_conversion_matches_ml_dtypes(dtype):
    f = conversion_inputs(dtype)
    check_conversion(_norms.f32_to_fp8_bits(f, dtype), f, dtype)


@pytest.mark.parametrize("dtype", FP8)
def test_software_conversion_edge_values(dtype):
    bias, mant = FORMAT[dtype]
    top = ref.FP8_MAX[dtype]
    tiny = 2.0 ** (1 - bias - mant)  # smallest subnormal
    top_code = 0x7E if dtype == "fp8e4m3" else 0x7B
    cases = [  # a list: 0.0 == -0.0 as dict keys
        (0.0, 0x00),
        (-0.0, 0x80),
        (tiny, 0x01),
        (-tiny, 0x81),
        (tiny / 2, 0x00),  # tie to even (0)
        (tiny * 1.5, 0x02),  # tie to even (2)
        (-tiny / 2, 0x80),  # rounds to -0
        (top, top_code),
        (-top * 4, 0x80 | top_code),
        (float("inf"), top_code),  # satfinite: no infinity
        (float("-inf"), 0x80 | top_code),
        (1.0, bias << mant),
    ]
    for v, code in cases:
        got = int(_norms.f32_to_fp8_bits(np.float32(v), dtype))
        assert got == code, f"{dtype}: {v} -> {got:#x}, expected {code:#x}"
    assert int(_norms.f32_to_fp8_bits(np.float32("nan"), dtype)) == 0x7F
    assert int(_norms.f32_to_fp8_bits(-np.float32("nan"), dtype)) == 0x7F


def _jit(build: Callable, argtypes: list) -> tuple[object, Callable]:
    """llvmlite-JIT a ``void f(...)`` whose body ``build(builder, args)`` emits."""
    import ctypes

    import llvmlite.binding as llvm
    from llvmlite import ir

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    mod = ir.Module(name="fp8")
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), argtypes), name="f")
    b = ir.IRBuilder(fn.append_basic_block())
    build(b, fn.args)
    b.ret_void()
    module = llvm.parse_assembly(str(mod))
    module.verify()
    tm = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(module, tm)
    engine.finalize_object()
    proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (len(argtypes) - 1) + [ctypes.c_int64]))
    return engine, proto(engine.get_function_address("f"))


def _jit_convert(dtype: str):
    """``void f(float* src, u8* dst, i64 n)``: dst[i] = fp8(src[i]) by the GPU's software IR."""
    from llvmlite import ir

    f32, i8, i64 = ir.FloatType(), ir.IntType(8), ir.IntType(64)

    def build(b, args):
        src, dst, n = args
        pre = b.block
        head = b.append_basic_block("head")
        body = b.append_basic_block("body")
        done = b.append_basic_block("done")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(i64)
        i.add_incoming(ir.Constant(i64, 0), pre)
        b.cbranch(b.icmp_signed("<", i, n), body, done)
        b.position_at_end(body)
        code = _norms._fp8_rne(b, b.load(b.gep(src, [i])), dtype)
        b.store(code, b.gep(dst, [i]))
        i.add_incoming(b.add(i, ir.Constant(i64, 1)), body)
        b.branch(head)
        b.position_at_end(done)

    return _jit(build, [f32.as_pointer(), i8.as_pointer(), i64])


def _run_convert(dtype: str, f: np.ndarray) -> np.ndarray:
    keep, conv = _jit_convert(dtype)
    f = np.ascontiguousarray(f, np.float32)
    out = np.zeros(f.size, np.uint8)
    conv(f.ctypes.data, out.ctypes.data, f.size)
    del keep
    return out


@needs_compiler
@pytest.mark.parametrize("dtype", FP8)
def test_ir_conversion_matches_ml_dtypes(dtype):
    f = conversion_inputs(dtype)
    got = _run_convert(dtype, f)
    check_conversion(got, f, dtype)
    np.testing.assert_array_equal(got, _norms.f32_to_fp8_bits(f, dtype))  # twin == IR


@needs_compiler
@pytest.mark.slow
@pytest.mark.parametrize("dtype", FP8)
def test_ir_conversion_every_float32(dtype):
    """All 2^32 fp32 bit patterns through the IR converter (about a minute per format)."""
    keep, conv = _jit_convert(dtype)
    chunk = 1 << 24
    out = np.empty(chunk, np.uint8)
    for start in range(0, 1 << 32, chunk):
        f = np.arange(start, start + chunk, dtype=np.uint64).astype(np.uint32).view(np.float32)
        conv(f.ctypes.data, out.ctypes.data, chunk)
        check_conversion(out, f, dtype)
    del keep


def _aligned(nbytes: int) -> np.ndarray:
    buf = np.zeros(nbytes + 64, np.uint8)
    off = (-buf.ctypes.data) % 64
    return buf[off : off + nbytes]


@needs_compiler
@pytest.mark.parametrize("guarded", [False, True])
@pytest.mark.parametrize("n", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("dtype", FP8)
def test_ir_vector_store_packing(dtype, n, guarded):
    # element order within the packed words, chunking, bounds checks (software conversion)
    from llvmlite import ir

    f32, i8, i64 = ir.FloatType(), ir.IntType(8), ir.IntType(64)

    def build(b, args):
        g, a, avail = args

        def at(p, j):
            return b.gep(p, [ir.Constant(i64, j)])

        def full():
            _norms._emit_store(b, "fp8", g, a, n, False, dtype, False)

        def one(j):
            _norms._emit_store(b, "fp8", at(g, j), at(a, j), 1, False, dtype, False)

        if guarded:
            _norms._guarded(b, n, avail, full, one)
        else:
            full()

    keep, store = _jit(build, [i8.as_pointer(), f32.as_pointer(), i64])
    rng = np.random.default_rng(n)
    vals = (rng.standard_normal(n) * 100).astype(np.float32)
    vals[: min(n, 4)] = np.array([np.nan, -np.inf, 0.1, -3e4], np.float32)[: min(n, 4)]
    for avail in [n, n - 1, 0] if guarded else [n]:
        src = _aligned(4 * n).view(np.float32)
        src[:] = vals
        out = _aligned(n)
        out[:] = 0xAA
        store(out.ctypes.data, src.ctypes.data, avail)
        want = np.full(n, 0xAA, np.uint8)
        want[:avail] = _norms.f32_to_fp8_bits(vals[:avail], dtype)
        np.testing.assert_array_equal(out, want)
    del keep


# ---------------------------------------------------------------------------------------------
# PTX of the FP8 registry entries (no GPU)
# ---------------------------------------------------------------------------------------------

LIMITS = planner.DeviceLimits(sm_count=132)


def fp8_specs() -> list[planner.NormSpec]:
    """One spec per distinct FP8 kernel (``kernel_key`` carries multi-CTA)."""
    specs: dict[tuple, planner.NormSpec] = {}
    for cfg in registry.norm_configs(include_fp8=True):
        if cfg.output in FP8:
            spec = planner.norm_spec(cfg, cfg.hidden_size, cfg.num_elts, LIMITS)
            specs.setdefault(spec.kernel_key, spec)
    return list(specs.values())


def find_spec(op: str, kind: str, hidden: int, dtypes: tuple[str, str, str]) -> planner.NormSpec:
    for cfg in registry.norm_configs(include_fp8=True):
        if (cfg.op, cfg.kind, cfg.hidden_size, cfg.weight, cfg.input, cfg.output) == (
            op, kind, hidden, *dtypes,
        ):  # fmt: skip
            return planner.norm_spec(cfg, hidden, cfg.num_elts, LIMITS)
    raise LookupError((op, kind, hidden, dtypes))


def check_fp8_ptx(spec: planner.NormSpec, arch: str = "sm_90") -> str:
    ptx = _norms.compile_forward(spec, arch)
    assert ".local" not in ptx, "the row must stay in registers"
    hw = arch >= "sm_89"
    assert (re.search(r"cvt\.rn\.satfinite\.e[45]m[32]x2\.f32", ptx) is not None) == hw
    fmt = spec.config.output[3:]
    assert hw is (f"cvt.rn.satfinite.{fmt}x2" in ptx)
    # amax: one atomic max per CTA; scale_inv: an IEEE division
    assert len(re.findall(r"atom\.global\.max\.s32", ptx)) == 1
    assert "div.rn.f32" in ptx
    assert ("cudaCG" in ptx) == (spec.ctas_per_row > 1)
    return ptx


REPRESENTATIVE = [
    ("layernorm_fwd", "tuned", 4096, ("bf16", "bf16", "fp8e4m3")),
    ("layernorm_fwd", "tuned", 8192, ("fp32", "fp32", "fp8e5m2")),
    ("layernorm_fwd", "tuned", 65536, ("fp16", "fp16", "fp8e4m3")),  # multi-CTA
    ("rmsnorm_fwd", "tuned", 4096, ("fp16", "fp16", "fp8e5m2")),
    ("rmsnorm_fwd", "general", 1024, ("fp32", "fp32", "fp8e4m3")),
    ("layernorm_fwd", "general", 8192, ("bf16", "bf16", "fp8e5m2")),
]


@needs_compiler
@pytest.mark.parametrize("op, kind, hidden, dtypes", REPRESENTATIVE)
def test_ptx_representative_fp8_kernels(op, kind, hidden, dtypes):
    spec = find_spec(op, kind, hidden, dtypes)
    ptx = check_fp8_ptx(spec)
    if not spec.general:  # full vectors: one packed store per vector (4 or 8 bytes)
        nbytes = spec.num_elts
        store = {4: r"st\.global\.u32", 8: r"st\.global\.v2\.u32", 16: r"st\.global\.v4\.u32"}
        assert len(re.findall(store[nbytes], ptx)) >= spec.ldgs


@needs_compiler
@pytest.mark.parametrize(
    "op, kind, hidden, dtypes", [REPRESENTATIVE[0], REPRESENTATIVE[2], REPRESENTATIVE[4]]
)
def test_ptx_before_sm89_converts_in_software(op, kind, hidden, dtypes):
    check_fp8_ptx(find_spec(op, kind, hidden, dtypes), "sm_80")


@needs_compiler
def test_ptx_amax_variant_of_other_outputs():
    spec = find_spec("layernorm_fwd", "tuned", 4096, ("bf16", "bf16", "bf16"))
    plain = _norms.compile_forward(spec, "sm_90")
    with_amax = _norms.compile_forward(spec, "sm_90", amax=True)
    assert "atom." not in plain
    assert len(re.findall(r"atom\.global\.max\.s32", with_amax)) == 1
    assert ".local" not in with_amax and "satfinite" not in with_amax


@needs_compiler
@pytest.mark.slow
def test_ptx_every_fp8_registry_kernel():
    """All distinct FP8 kernels (~220; a few minutes on two cores)."""
    times, failures = [], []
    for spec in fp8_specs():
        t0 = time.perf_counter()
        try:
            check_fp8_ptx(spec)
        except AssertionError as exc:
            failures.append((spec, exc))
        times.append(time.perf_counter() - t0)
    print(f"\n{len(times)} FP8 kernels: total {sum(times):.0f} s, max {max(times):.2f} s")
    assert not failures, failures[:3]


# ---------------------------------------------------------------------------------------------
# the public functions under the simulator
# ---------------------------------------------------------------------------------------------

SHAPES = [(4, 64), (3, 33)]
OUTS = [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, "fp8e4m3"]


def _out_id(o) -> str:
    return o if isinstance(o, str) else np.dtype(o).name


def inputs(op: str, rows: int, cols: int, dtype: str, seed: int, zero_centered: bool = False):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, cols)) * 2.0 + 0.5).astype(NP[dtype])
    g = (rng.standard_normal(cols) * 0.5 + (0.0 if zero_centered else 1.0)).astype(NP[dtype])
    b = (rng.standard_normal(cols) * 0.1).astype(NP[dtype]) if op == "layernorm" else None
    return x, g, b


def forward(op: str, x, g, b, zero_centered: bool = False, **kw):
    """y (and the statistics) of the public function."""
    if op == "layernorm":
        return nn.layernorm_fwd(x, g, b, EPS, zero_centered_gamma=zero_centered, **kw)[0]
    return nn.rmsnorm_fwd(x, g, EPS, zero_centered_gamma=zero_centered, **kw)[0]


def reference(op: str, x, g, b, zero_centered: bool = False) -> np.ndarray:
    if op == "layernorm":
        return ref.layernorm_fwd(x, g, b, EPS, zero_centered)[0]
    return ref.rmsnorm_fwd(x, g, EPS, zero_centered)[0]


def fp8_name(out) -> str:
    from numba_norms import arrays

    return arrays.dtype_name(out)


def fp8_step(v: np.ndarray, dtype: str) -> np.ndarray:
    """Spacing of the FP8 grid at magnitude ``|v|`` (the binade's ulp, the subnormal one below)."""
    bias, mant = FORMAT[dtype]
    mag = np.maximum(np.abs(v), 2.0 ** (1 - bias))
    return 2.0 ** (np.floor(np.log2(mag)) - mant)


def dequant(y: np.ndarray) -> np.ndarray:
    return np.asarray(y).astype(np.float64)


@needs_sim
@pytest.mark.parametrize("out", OUTS, ids=_out_id)
@pytest.mark.parametrize("rows, cols", SHAPES)
@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
def test_fp32_input_bit_exact(op, rows, cols, out):
    dtype = fp8_name(out)
    zc = cols == 33
    x, g, b = inputs(op, rows, cols, "fp32", rows * cols, zc)
    y32 = forward(op, x, g, b, zc)  # our fp32 output: the same fp32 math
    scale = np.array([2.5], np.float32)
    amax = np.zeros(1, np.float32)
    scale_inv = np.zeros(1, np.float32)
    y = forward(op, x, g, b, zc, out_dtype=out, scale=scale, amax=amax, scale_inv=scale_inv)
    assert y.dtype == ML[dtype] and y.shape == x.shape
    want = ref.quantize_fp8(np.float32(y32) * scale[0], dtype)
    np.testing.assert_array_equal(y.view(np.uint8), want.view(np.uint8))
    assert amax[0] == np.abs(y32).max()  # pre-scale, exactly
    assert scale_inv[0] == np.float32(1) / scale[0]
    # and within one FP8 step of the float64 reference
    e = reference(op, x, g, b, zc) * scale[0]
    assert (np.abs(dequant(y) - e) <= fp8_step(e, dtype)).all()


@needs_sim
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("out", FP8)
@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
def test_half_inputs_within_one_step(op, out, dtype):
    x, g, b = inputs(op, 4, 64, dtype, 7)
    scale = np.array([0.75], np.float32)
    amax = np.zeros(1, np.float32)
    scale_inv = np.zeros(1, np.float32)
    y = forward(op, x, g, b, out_dtype=out, scale=scale, amax=amax, scale_inv=scale_inv)
    e = reference(op, x, g, b)
    es = e * np.float64(scale[0])
    err = np.abs(dequant(y) - es)
    assert (err <= fp8_step(es, out)).all(), f"max excess {np.max(err - fp8_step(es, out)):.3g}"
    np.testing.assert_allclose(amax[0], np.abs(e).max(), rtol=1e-5)
    assert scale_inv[0] == np.float32(1) / scale[0]


@needs_sim
@pytest.mark.parametrize("out", FP8)
@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
def test_saturation(op, out):
    x, g, b = inputs(op, 4, 64, "fp32", 3)
    y32 = forward(op, x, g, b)
    top = ref.FP8_MAX[out]
    scale = np.array([top / 2.0], np.float32)  # |v| > 2 saturates
    y = forward(op, x, g, b, out_dtype=out, scale=scale)
    v = np.float32(y32) * scale[0]
    over = np.abs(v) > top
    assert over.any() and (~over).any()
    yd = dequant(y)
    np.testing.assert_array_equal(yd[over], np.sign(v[over]) * top)
    assert np.isfinite(yd).all()
    want = ref.quantize_fp8(v, out)
    np.testing.assert_array_equal(y.view(np.uint8), want.view(np.uint8))


@needs_sim
@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
def test_amax_accumulates_across_ctas_and_calls(op):
    # 37 rows: several CTAs (2 simulated SMs x 2) and row trips, each CTA one atomic max
    x, g, b = inputs(op, 37, 64, "fp32", 11, zero_centered=True)
    y32 = forward(op, x, g, b, True)
    scale = np.array([1.0], np.float32)
    amax = np.zeros(1, np.float32)
    forward(op, x, g, b, True, out_dtype="fp8e5m2", scale=scale, amax=amax)
    assert amax[0] == np.abs(y32).max()
    big = np.array([1000.0], np.float32)  # a larger amax stays
    forward(op, x, g, b, True, out_dtype="fp8e5m2", scale=scale, amax=big)
    assert big[0] == np.float32(1000.0)
    small = np.array([0.5], np.float32)  # a smaller one is raised
    forward(op, x, g, b, True, out_dtype="fp8e5m2", scale=scale, amax=small)
    assert small[0] == np.abs(y32).max()


@needs_sim
@pytest.mark.parametrize(
    "dtypes",
    [("fp32", "bf16"), ("fp32", "fp16"), ("bf16", "bf16"), ("fp16", "fp16"), ("fp32", "fp32")],
    ids="/".join,
)
@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
def test_amax_of_other_outputs_is_of_the_converted_values(op, dtypes):
    inp, out = dtypes
    x, g, b = inputs(op, 3, 33, inp, 5, zero_centered=True)  # padded columns must not count
    amax = np.zeros(1, np.float32)
    y = forward(op, x, g, b, True, out_dtype=out, amax=amax)
    assert y.dtype == NP[out]
    assert amax[0] == np.abs(y.astype(np.float32)).max()
    y_plain = forward(op, x, g, b, True, out_dtype=out)  # the kernel without amax: same y
    np.testing.assert_array_equal(y.view(np.uint8), y_plain.view(np.uint8))


@needs_sim
@pytest.mark.parametrize("which", ["amax", "scale_inv", "neither"])
def test_any_subset_of_amax_and_scale_inv(which):
    x, g, b = inputs("layernorm", 4, 64, "fp32", 2)
    y32 = forward("layernorm", x, g, b)
    scale = np.array([4.0], np.float32)
    kw = {"amax": np.zeros(1, np.float32)} if which == "amax" else {}
    if which == "scale_inv":
        kw["scale_inv"] = np.zeros(1, np.float32)
    y = forward("layernorm", x, g, b, out_dtype="fp8e4m3", scale=scale, **kw)
    want = ref.quantize_fp8(np.float32(y32) * scale[0], "fp8e4m3")
    np.testing.assert_array_equal(y.view(np.uint8), want.view(np.uint8))
    if which == "amax":
        assert kw["amax"][0] == np.abs(y32).max()
    if which == "scale_inv":
        assert kw["scale_inv"][0] == np.float32(0.25)


@needs_sim
def test_nan_rows_give_nan_and_leave_amax_alone():
    x, g, b = inputs("layernorm", 4, 64, "fp32", 9)
    x[1, 5] = np.nan
    y32 = forward("layernorm", x, g, b)
    amax = np.zeros(1, np.float32)
    y = forward("layernorm", x, g, b, out_dtype="fp8e4m3", scale=np.ones(1, np.float32), amax=amax)
    assert (y.view(np.uint8)[1] == 0x7F).all()
    ok = np.ones(4, bool)
    ok[1] = False
    assert amax[0] == np.abs(y32[ok]).max()  # fmaxf ignores NaN


E4 = ml_dtypes.float8_e4m3fn


@needs_sim
@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"out_dtype": E4}, ValueError, r"^scale: required"),
        ({"out_dtype": E4, "scale": np.ones(2, np.float32)}, ValueError, r"^scale: .*one element"),
        ({"out_dtype": E4, "scale": np.ones(1, np.float64)}, TypeError, r"^scale: .*fp32"),
        ({"out_dtype": "bf16", "scale": np.ones(1, np.float32)}, ValueError, r"^scale: only"),
        ({"scale_inv": np.ones(1, np.float32)}, ValueError, r"^scale_inv: only"),
        (
            {"out_dtype": E4, "scale": np.ones(1, np.float32), "amax": np.ones(1, np.float64)},
            TypeError,
            r"^amax: .*fp32",
        ),
        (
            {"out_dtype": E4, "scale": np.ones(1, np.float32), "amax": np.ones(3, np.float32)},
            ValueError,
            r"^amax: .*one element",
        ),
    ],
    ids=["no-scale", "scale-2", "scale-f64", "scale-bf16-out", "scale_inv-fp32-out", "amax-f64",
         "amax-3"],
)  # fmt: skip
def test_argument_errors(kwargs, error, match):
    x, g, b = inputs("layernorm", 4, 64, "fp32", 1)
    with pytest.raises(error, match=match):
        forward("layernorm", x, g, b, **kwargs)


@needs_sim
def test_fp8_input_is_rejected():
    x, g, _ = inputs("rmsnorm", 4, 64, "fp32", 1)
    with pytest.raises(TypeError, match=r"^x: .*fp8e4m3"):
        nn.rmsnorm_fwd(x.astype(E4), g, out_dtype=E4, scale=np.ones(1, np.float32))
