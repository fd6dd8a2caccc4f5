"""FP8 output (scale, amax, scale_inv) of the NVRTC norm kernels, on the CPU (no GPU needed).

* every FP8-output registry entry (``fp8e4m3`` and ``fp8e5m2``) compiles to CUBIN for sm_90
  (full width; general entries also with a ragged pitch and 1-element vectors, i.e. the 2- and
  1-byte stores; deduplicated on ``spec.kernel_key``): the full sweep is ``slow``, an unmarked
  subset covers each op, input dtype, both formats, multi-CTA rows and every vector width;
* a subset for sm_80 (the software conversion path under ``__CUDA_ARCH__ < 890``), and the PTX
  shows which path each architecture takes;
* the software conversion of ``norms.cuh`` compiled for the host (g++) against ml_dtypes over
  every rounding class of fp32 input;
* ``forward()`` passes scale / amax / scale_inv in the kernel's last three argument slots.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from numba_norms import planner, registry
from numba_norms import reference as ref
from numba_norms.backends.common import NormFwdArgs
from numba_norms.backends.nvrtc import _norms, layernorm, rmsnorm
from numba_norms.planner import NormSpec, norm_spec
from tests.test_nvrtc_norms import (
    FWD_SIGNATURE,
    H200,
    FakeTensor,
    _all_specs,
    _kind,
    _matches,
    _matrix,
)

MODULES = {"layernorm": layernorm, "rmsnorm": rmsnorm}
FP8 = ("fp8e4m3", "fp8e5m2")
CUH = Path(_norms.__file__).resolve().parent / "norms.cuh"


def _fp8_configs() -> list[registry.NormConfig]:
    return [c for c in registry.norm_configs(include_fp8=True) if c.output in FP8]


ALL_SPECS = _all_specs(_fp8_configs())


def _find(op, kind, hidden, dt, out, *, cols=None, vec=None) -> NormSpec:
    for cfg in _fp8_configs():
        key = (cfg.op, cfg.kind, cfg.hidden_size, cfg.weight, cfg.input, cfg.output)
        if key == (op, kind, hidden, dt, dt, out) and cfg.origin == "te":
            cols = hidden if cols is None else cols
            return norm_spec(cfg, cols, cfg.num_elts if vec is None else vec, H200)
    raise LookupError((op, kind, hidden, dt, out))


QUICK_SPECS = [
    _find("layernorm_fwd", "tuned", 4096, "bf16", "fp8e4m3"),  # 8-byte stores
    _find("rmsnorm_fwd", "tuned", 4096, "bf16", "fp8e5m2"),
    _find("layernorm_fwd", "tuned", 1024, "fp32", "fp8e5m2"),  # 4-byte stores
    _find("layernorm_fwd", "tuned", 12800, "fp16", "fp8e4m3"),  # 2-byte stores
    _find("layernorm_fwd", "tuned", 65536, "bf16", "fp8e4m3"),  # several CTAs per row
    _find("layernorm_fwd", "general", 1024, "bf16", "fp8e4m3", cols=1026, vec=2),  # 2 bytes
    _find("rmsnorm_fwd", "general", 512, "fp16", "fp8e5m2", vec=1),  # 1 byte
    _find("layernorm_fwd", "general", 128, "fp32", "fp8e4m3"),
]
SM80_SPECS = [QUICK_SPECS[i] for i in (0, 1, 4, 6)]


def _spec_id(spec: NormSpec) -> str:
    c = spec.config
    kind = "g" if spec.general else "t"
    shape = f"w{c.warps_m}x{c.warps_n}-e{spec.num_elts}-l{spec.ldgs}"
    return f"{c.op}-{c.input}-{c.output}-{kind}{c.hidden_size}-{shape}"


@pytest.fixture(autouse=True)
def _tmp_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBA_NORMS_CACHE_DIR", str(tmp_path / "rtc-cache"))


def _compile_check(spec: NormSpec, arch: str) -> None:
    mod = MODULES[spec.op.split("_")[0]].compile_forward(spec, arch)
    assert mod.arch == arch
    assert mod.cubin[:4] == b"\x7fELF"
    name = _norms.forward_name(spec)
    assert name in mod.symbols, (name, mod.symbols)
    assert mod.symbols[name].startswith("_Z8norm_fwdI"), mod.symbols[name]


def test_fp8_name_expressions():
    spec = _find("layernorm_fwd", "tuned", 4096, "bf16", "fp8e4m3")
    assert _norms.forward_name(spec) == (
        "norm_fwd<nn::bf16, nn::bf16, nn::fp8e4m3, 1, 4, 8, 4, false, false, 1, false, false>"
    )
    spec = _find("rmsnorm_fwd", "general", 512, "fp16", "fp8e5m2", vec=1)
    assert _norms.forward_name(spec).startswith("norm_fwd<nn::fp16, nn::fp16, nn::fp8e5m2, ")
    # a name is shared only by keys that differ in multi_cta alone (RMSNorm kernels with the
    # exchange serve rows of one CTA and of several: fp32 -> FP8 32768 and 65536, say)
    by_name: dict[str, set] = {}
    for s in ALL_SPECS:
        by_name.setdefault(_norms.forward_name(s), set()).add(s.kernel_key)
    for keys in by_name.values():
        assert len({k[:-1] for k in keys}) == 1, keys


@pytest.mark.parametrize("spec", QUICK_SPECS, ids=_spec_id)
def test_fp8_compile_sm90_quick(spec):
    _compile_check(spec, "sm_90")


@pytest.mark.parametrize("spec", SM80_SPECS, ids=_spec_id)
def test_fp8_compile_sm80(spec):
    _compile_check(spec, "sm_80")


@pytest.mark.slow
@pytest.mark.parametrize("spec", ALL_SPECS, ids=_spec_id)
def test_fp8_compile_sm90_all(spec):
    _compile_check(spec, "sm_90")


def test_fp8_kernels_use_no_local_memory():
    for spec in QUICK_SPECS[:2]:
        log = _norms.compile_spec(spec, "sm_90", options=("-Xptxas=-v",)).log
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores", log)
        assert m and m.groups() == ("0", "0"), log


def _ptx(name: str, arch: str) -> str:
    from cuda.bindings import nvrtc

    d = CUH.parent
    err, prog = nvrtc.nvrtcCreateProgram((d / "norms.cu").read_bytes(), b"norms.cu", 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    try:
        nvrtc.nvrtcAddNameExpression(prog, name.encode())
        opts = [f"-arch=compute_{arch[3:]}".encode(), f"-I{d}".encode(), b"-minimal"]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
        _, n = nvrtc.nvrtcGetPTXSize(prog)
        buf = b" " * n
        nvrtc.nvrtcGetPTX(prog, buf)
        return buf.decode()
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def test_one_cta_layernorm_forwards_leave_the_exchange_out():
    """LayerNorm's one-CTA rows compile the forward without the inter-CTA exchange (no grid size
    read); rows of several CTAs and RMSNorm entries without ``fold`` keep it."""
    one = _find("layernorm_fwd", "tuned", 8192, "bf16", "fp8e4m3")
    assert one.ctas_per_row == 1 and not _norms.exchange(one)
    multi = dataclasses.replace(one, ctas_per_row=2)
    rms = _find("rmsnorm_fwd", "tuned", 4096, "bf16", "fp8e5m2")
    assert _norms.exchange(multi) and rms.ctas_per_row == 1 and _norms.exchange(rms)
    without, with_ = (_ptx(_norms.forward_name(s), "sm_90") for s in (one, multi))
    assert "%nctaid.x" not in without
    assert "%nctaid.x" in with_


def _selected(inp: str, out: str, hidden: int) -> NormSpec:
    key = registry.NormKey("rmsnorm_fwd", inp, inp, out)
    cfg = registry.select_norm(key, hidden, 16384, 16, backend="nvrtc")
    return norm_spec(cfg, hidden, cfg.num_elts, H200)


FOLDED = [c for c in registry.measured_configs() if c.fold]


@pytest.mark.parametrize("cfg", FOLDED, ids=lambda c: f"{c.input}-{c.output}-{c.hidden_size}")
def test_folded_entries_are_selected_and_compile_without_the_exchange(cfg):
    """Every measured entry with ``fold`` is what rows of its length run on NVRTC, it compiles
    without the exchange, and the same shape unfolded (TE's or a generated entry at the sizes
    run 140 measured) keeps it."""
    spec = _selected(cfg.input, cfg.output, cfg.hidden_size)
    assert spec.config == cfg and not spec.general and spec.ctas_per_row == 1
    assert not _norms.exchange(spec)
    assert _norms.exchange(dataclasses.replace(spec, ctas_per_row=2))
    assert _norms.exchange(dataclasses.replace(spec, config=dataclasses.replace(cfg, fold=False)))


def test_folded_entries_are_the_measured_shapes():
    """fold is measured data, not a rule: every entry that sets it names the run that timed it
    folded (runs 139-140 for the 16 shapes set by hand, the tune_norms.py --fold sweeps since),
    and run 140's shapes not re-swept since keep it."""
    raw = json.loads(
        resources.files("numba_norms").joinpath("data/measured_norms.json").read_text()
    )
    folded = [e for e in raw["entries"] if e.get("fold")]
    assert folded
    runs = ("run139", "run142", "run143")
    assert all(any(r in e.get("fold_run", e.get("run", "")) for r in runs) for e in folded)
    shapes = {(c.input, c.output, c.hidden_size) for c in FOLDED}
    assert {("fp16", "fp16", 768), ("bf16", "fp8e4m3", 65536), ("fp32", "fp8e5m2", 2048)} <= shapes
    assert ("bf16", "fp8e4m3", 32768) not in shapes  # lost folded in run 139


def test_rms_folded_forward_addresses_a_row_from_one_pointer():
    """A folded RMSNorm forward reads no grid size and reaches its 8 vectors of x (8192 columns
    apart) and of y at immediate offsets from one address each; an unlisted shape does not."""
    folded = _ptx(_norms.forward_name(_selected("bf16", "fp8e4m3", 65536)), "sm_90")
    assert "%nctaid.x" not in folded
    x_offsets = re.findall(r"ld\.global\.v4\.u32 \t\{[^}]*\}, \[%rd\d+\+(\d+)\]", folded)
    assert {str(16384 * k) for k in range(1, 8)} <= set(x_offsets)
    y_offsets = re.findall(r"st\.global\.v2\.u32 \t\[%rd\d+\+(\d+)\]", folded)
    assert {str(8192 * k) for k in range(1, 8)} <= set(y_offsets)
    spec = _selected("bf16", "fp8e4m3", 32768)
    assert not spec.config.fold and _norms.exchange(spec)
    assert "%nctaid.x" in _ptx(_norms.forward_name(spec), "sm_90")


@pytest.mark.parametrize("fmt", FP8)
def test_fp8_conversion_path_per_arch(fmt):
    """sm_90: cvt.rn.satfinite; sm_80: bit arithmetic. Both: one amax atomic, IEEE 1/scale."""
    name = f"norm_fwd<nn::bf16, nn::bf16, nn::{fmt}, 4, 1, 8, 3, false, false, 1, false, false>"
    short = fmt[3:]
    hw, sw = _ptx(name, "sm_90"), _ptx(name, "sm_80")
    assert f"cvt.rn.satfinite.{short}x2.f32" in hw
    assert "satfinite" not in sw
    for ptx in (hw, sw):
        assert len(re.findall(r"atom\.global\.max\.s32", ptx)) == 1
        assert "rcp.approx" not in ptx
    plain = _ptx(
        "norm_fwd<nn::bf16, nn::bf16, nn::bf16, 4, 1, 8, 3, false, false, 1, false, false>", "sm_90"
    )
    assert "satfinite" not in plain and "atom.global.max.s32" in plain


# ------------------------------------------------------------------------------------------------
# the software conversion (sm < 89), compiled for the host
# ------------------------------------------------------------------------------------------------

_HOST_SHIM = r"""
#include <cstdio>
#include <cstring>
#include <vector>
#define __device__
#define __forceinline__ inline
static inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline float __fadd_rn(float a, float b) { volatile float r = a + b; return r; }
namespace nn {
struct fp8e4m3 { unsigned char bits; };
struct fp8e5m2 { unsigned char bits; };
%s
}  // namespace nn
int main() {
  std::vector<float> v;
  float f;
  while (std::fread(&f, 4, 1, stdin) == 1) v.push_back(f);
  for (float x : v) std::fputc((int)nn::fp8_soft<nn::fp8e4m3>(x), stdout);
  for (float x : v) std::fputc((int)nn::fp8_soft<nn::fp8e5m2>(x), stdout);
  return 0;
}
"""


def _conversion_inputs() -> np.ndarray:
    """fp32 values around every FP8 value and midpoint of both formats, every fp32 exponent with
    the rounding-relevant low-bit classes, specials and random bits; both signs."""
    parts = []
    for ml in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2):
        vals = np.arange(256, dtype=np.uint8).view(ml).astype(np.float64)
        mags = np.unique(np.abs(vals[np.isfinite(vals)]))
        mids = (mags[1:] + mags[:-1]) / 2
        extra = [mags[-1] * 2, mags[-1] + (mags[-1] - mags[-2]) / 2, mags[1] / 2, mags[1] / 4]
        centres = np.concatenate([mags, mids, extra]).astype(np.float32)
        bits = centres.view(np.uint32).astype(np.int64)
        parts.append((bits[:, None] + np.arange(-4, 5)).ravel())
    exps = np.arange(256, dtype=np.int64)[:, None, None] << 23
    top = np.arange(32, dtype=np.int64)[None, :, None] << 18
    low = np.array([0, 1, (1 << 17) - 1, 1 << 17, (1 << 17) + 1, (1 << 18) - 1])
    parts.append((exps | top | low[None, None, :]).ravel())
    parts.append(np.array([0, 0x7F800000, 0x7F800001, 0x7FC00000, 0x7FFFFFFF, 1, 0x007FFFFF]))
    parts.append(np.random.default_rng(0).integers(0, 2**31, 50000))
    u = np.concatenate(parts)
    u = u[(u >= 0) & (u < 2**31)].astype(np.uint32)
    return np.concatenate([u, u | np.uint32(0x80000000)]).view(np.float32)


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs a host C++ compiler")
def test_software_conversion_matches_ml_dtypes(tmp_path):
    text = CUH.read_text()
    start = text.index("template <typename T> struct fp8_format;")
    end = text.index("// Two floats -> 16 bits")
    src = tmp_path / "fp8.cpp"
    src.write_text(_HOST_SHIM % text[start:end])
    exe = tmp_path / "fp8"
    subprocess.run(
        ["g++", "-std=c++17", "-O2", "-ffp-contract=off", str(src), "-o", str(exe)],
        check=True,
        capture_output=True,
    )
    f = _conversion_inputs()
    out = subprocess.run([str(exe)], input=f.tobytes(), check=True, capture_output=True).stdout
    got = np.frombuffer(out, np.uint8).reshape(2, -1)
    for i, fmt in enumerate(FP8):
        with np.errstate(all="ignore"):
            want = ref.quantize_fp8(f, fmt).view(np.uint8).copy()
        want[np.isnan(f)] = 0x7F  # CUDA's canonical FP8 NaN
        bad = np.nonzero(got[i] != want)[0]
        assert bad.size == 0, (fmt, f[bad[:8]], got[i][bad[:8]], want[bad[:8]])


# ------------------------------------------------------------------------------------------------
# launcher
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("with_outputs", [True, False])
def test_fp8_forward_passes_scale_amax_scale_inv(recorder, with_outputs):
    spec = _find("layernorm_fwd", "tuned", 4096, "bf16", "fp8e4m3")
    rows, cols = 64, 4096
    plan = planner.norm_plan(spec, rows, cols, H200, 4)
    x, y = _matrix(0x1000, rows, cols, "bf16"), _matrix(0x9000, rows, cols, "fp8e4m3")
    g, b = FakeTensor(0x100, (cols,), (1,), "bf16"), FakeTensor(0x200, (cols,), (1,), "bf16")
    mu, rs = FakeTensor(0x300, (rows,), (1,), "fp32"), FakeTensor(0x400, (rows,), (1,), "fp32")
    scale = FakeTensor(0x7000, (1,), (1,), "fp32")
    amax = FakeTensor(0x7100, (1,), (1,), "fp32") if with_outputs else None
    sinv = FakeTensor(0x7200, (1,), (1,), "fp32") if with_outputs else None
    args = NormFwdArgs(x, g, b, y, mu, rs, 1e-5, False, scale=scale, amax=amax, scale_inv=sinv)
    layernorm.forward(plan, args, 3)
    (_, _, _, a, stream, _) = recorder.launches[0]
    assert stream == 3 and _matches(a, FWD_SIGNATURE), [_kind(v) for v in a]
    assert a[3] == y.ptr
    assert a[14:] == ((scale.ptr, amax.ptr, sinv.ptr) if with_outputs else (scale.ptr, 0, 0))


def test_amax_of_other_outputs_is_passed(recorder):
    """amax applies to every output dtype (scale / scale_inv are ignored by those kernels)."""
    cfg = next(
        c
        for c in registry.norm_configs()
        if c.op == "rmsnorm_fwd" and c.kind == "tuned" and c.hidden_size == 4096
        and c.output == "bf16"
    )  # fmt: skip
    spec = norm_spec(cfg, 4096, cfg.num_elts, H200)
    plan = planner.norm_plan(spec, 8, 4096, H200, 4)
    x, y = _matrix(0x1000, 8, 4096, "bf16"), _matrix(0x9000, 8, 4096, "bf16")
    g, rs = FakeTensor(0x100, (4096,), (1,), "bf16"), FakeTensor(0x400, (8,), (1,), "fp32")
    amax = FakeTensor(0x7100, (1,), (1,), "fp32")
    rmsnorm.forward(plan, NormFwdArgs(x, g, None, y, None, rs, 1e-6, False, amax=amax), 0)
    a = recorder.launches[0][3]
    assert _matches(a, FWD_SIGNATURE) and a[14:] == (0, amax.ptr, 0)


def test_unknown_dtype_still_raises():
    with pytest.raises(NotImplementedError):
        _norms._ctype("fp4")
