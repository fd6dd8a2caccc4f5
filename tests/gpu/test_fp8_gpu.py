"""FP8 output (scale, amax, scale_inv) of LayerNorm / RMSNorm forward on a GPU, both backends.

Through the public functions (numpy arrays; torch tensors and torch float8 dtypes at the end):
tuned (4096 columns, rows a multiple of 4), general (1000) and multi-CTA (65536) rows, e4m3 and
e5m2, fp32 / fp16 / bf16 inputs.

* fp32 inputs: y is bit-exactly ``quantize(y32 * scale)`` with ``y32`` the same backend's fp32
  output, amax is exactly ``max|y32|``, scale_inv exactly ``1 / scale``; NVRTC and Numba give
  identical bytes wherever their fp32 outputs are identical;
* fp16 / bf16 inputs: within one FP8 step of the float64 reference;
* amax of bf16 / fp16 / fp32 outputs (the converted values), saturation, NaN rows, repeats.
"""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
import pytest

from tests.conftest import HAS_GPU, SIMULATOR

pytestmark = pytest.mark.gpu
if not HAS_GPU or SIMULATOR:
    pytest.skip("needs a CUDA GPU (and no simulator)", allow_module_level=True)

import numba_norms as nn  # noqa: E402
from numba_norms import dispatch, registry  # noqa: E402
from numba_norms import reference as ref  # noqa: E402

BACKENDS = ["nvrtc", "numba"]
OPS = ["layernorm", "rmsnorm"]
FP8 = ["fp8e4m3", "fp8e5m2"]
ML = {"fp8e4m3": ml_dtypes.float8_e4m3fn, "fp8e5m2": ml_dtypes.float8_e5m2}
NP = {"fp32": np.float32, "fp16": np.float16, "bf16": ml_dtypes.bfloat16}
FORMAT = {"fp8e4m3": (7, 3), "fp8e5m2": (15, 2)}  # exponent bias, mantissa bits
# (rows, cols): tuned, general, several CTAs a row (cooperative; 58368: generated, 4 CTAs of 19
# warps, whose odd warp count put Numba's cluster slots on an odd word before run 155's fix);
# 1000 / 20472: rows of 8 mod 16 fp8 bytes, 16-byte vectors of 16-bit x (one CTA a row)
SHAPES = [(64, 4096), (37, 1000), (8, 65536), (8, 58368), (16, 20472)]
EPS = 1e-5


def inputs(op: str, rows: int, cols: int, dtype: str, seed: int):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, cols)) * 2.0 + 0.5).astype(NP[dtype])
    g = (rng.standard_normal(cols) * 0.5 + 1.0).astype(NP[dtype])
    b = (rng.standard_normal(cols) * 0.1).astype(NP[dtype]) if op == "layernorm" else None
    return x, g, b


def forward(backend: str, op: str, x, g, b, **kw):
    if op == "layernorm":
        y = nn.layernorm_fwd(x, g, b, EPS, **kw)[0]
    else:
        y = nn.rmsnorm_fwd(x, g, EPS, **kw)[0]
    assert nn.last_backend() == backend
    return y


def fp32_on_fp8_plan(monkeypatch, out: str) -> None:
    """Make fp32-output forwards run on the launch shape the ``out`` FP8 forward uses.

    The measured table picks launch shapes per output dtype; another shape reduces a row in
    another order and moves the last bit of the fp32 output, so the bit-exact comparisons below
    need both outputs from one shape (the FP8 output differs only in its epilogue).
    """
    select = registry.select_norm

    def same_shape(key, cols, rows, alignment, **kw):
        if key.op.endswith("_fwd") and key.output == "fp32":
            cfg = select(dataclasses.replace(key, output=out), cols, rows, alignment, **kw)
            return dataclasses.replace(cfg, output="fp32")
        return select(key, cols, rows, alignment, **kw)

    monkeypatch.setattr(registry, "select_norm", same_shape)
    monkeypatch.setattr(dispatch, "_plan_cache", {})


def reference(op: str, x, g, b) -> np.ndarray:
    if op == "layernorm":
        return ref.layernorm_fwd(x, g, b, EPS)[0]
    return ref.rmsnorm_fwd(x, g, EPS)[0]


def fp8_step(v: np.ndarray, dtype: str) -> np.ndarray:
    """Spacing of the FP8 grid at magnitude ``|v|``."""
    bias, mant = FORMAT[dtype]
    mag = np.maximum(np.abs(v), 2.0 ** (1 - bias))
    return 2.0 ** (np.floor(np.log2(mag)) - mant)


def fp8_call(backend, op, x, g, b, out, scale_value):
    scale = np.array([scale_value], np.float32)
    amax = np.zeros(1, np.float32)
    scale_inv = np.zeros(1, np.float32)
    y = forward(backend, op, x, g, b, out_dtype=out, scale=scale, amax=amax, scale_inv=scale_inv)
    assert y.dtype == ML[out] and y.shape == x.shape
    return y, amax[0], scale_inv[0], scale[0]


@pytest.mark.parametrize("out", FP8)
@pytest.mark.parametrize("rows, cols", SHAPES)
@pytest.mark.parametrize("op", OPS)
def test_fp32_inputs_bit_exact(monkeypatch, backend, op, rows, cols, out):
    fp32_on_fp8_plan(monkeypatch, out)
    x, g, b = inputs(op, rows, cols, "fp32", cols + rows)
    y32 = forward(backend, op, x, g, b)
    y, amax, scale_inv, scale = fp8_call(backend, op, x, g, b, out, 3.0)
    want = ref.quantize_fp8(np.float32(y32) * scale, out)
    np.testing.assert_array_equal(y.view(np.uint8), want.view(np.uint8))
    assert amax == np.abs(y32).max()
    assert scale_inv == np.float32(1) / scale
    e = reference(op, x, g, b) * np.float64(scale)
    assert (np.abs(y.astype(np.float64) - e) <= fp8_step(e, out)).all()
    # repeats: the same bytes and the same amax (one atomic max per CTA, exact)
    y2, amax2, _, _ = fp8_call(backend, op, x, g, b, out, 3.0)
    np.testing.assert_array_equal(y2.view(np.uint8), y.view(np.uint8))
    assert amax2 == amax


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("out", FP8)
@pytest.mark.parametrize("rows, cols", SHAPES)
@pytest.mark.parametrize("op", OPS)
def test_half_inputs_within_one_step(backend, op, rows, cols, out, dtype):
    x, g, b = inputs(op, rows, cols, dtype, cols + 7)
    y, amax, scale_inv, scale = fp8_call(backend, op, x, g, b, out, 0.75)
    e = reference(op, x, g, b)
    es = e * np.float64(scale)
    err = np.abs(y.astype(np.float64) - es)
    step = fp8_step(es, out)
    assert (err <= step).all(), f"max excess {np.max(err - step):.3g}"
    np.testing.assert_allclose(amax, np.abs(e).max(), rtol=1e-5)
    assert scale_inv == np.float32(1) / scale


NUMBA_OWN_FP8 = [c for c in registry.measured_configs("numba") if c.output in FP8]


@pytest.mark.parametrize(
    "cfg", NUMBA_OWN_FP8, ids=lambda c: f"{c.op}-{c.input}-{c.output}-{c.hidden_size}"
)
def test_numba_own_fp8_entry(monkeypatch, cfg):
    """The Numba backend's own FP8-output entries: picked by the Numba path, within one FP8 step
    of the float64 reference, amax as the reference's."""
    monkeypatch.setenv("DISABLE_NVRTC", "1")
    monkeypatch.setattr(dispatch, "_plan_cache", {})
    op = cfg.op.split("_")[0]
    x, g, b = inputs(op, 64, cfg.hidden_size, cfg.input, cfg.hidden_size + 3)
    y, amax, _, scale = fp8_call("numba", op, x, g, b, cfg.output, 0.75)
    assert any(p.spec.config == cfg for p in dispatch._plan_cache.values()), "entry not used"
    e = reference(op, x, g, b)
    es = e * np.float64(scale)
    err = np.abs(y.astype(np.float64) - es)
    step = fp8_step(es, cfg.output)
    assert (err <= step).all(), f"max excess {np.max(err - step):.3g}"
    np.testing.assert_allclose(amax, np.abs(e).max(), rtol=1e-5)


@pytest.mark.parametrize("out", FP8)
@pytest.mark.parametrize("rows, cols", SHAPES)
@pytest.mark.parametrize("op", OPS)
def test_backends_agree(monkeypatch, op, rows, cols, out):
    """Identical bytes wherever the two backends' fp32 outputs are identical.

    The fp32 math of the two backends need not agree to the last bit (e.g. ``rsqrtf`` against
    ``1 / sqrtf``); given the same fp32 value, both must produce the same FP8 byte.
    """
    fp32_on_fp8_plan(monkeypatch, out)
    x, g, b = inputs(op, rows, cols, "fp32", cols)
    res = {}
    for name in BACKENDS:
        if name == "numba":
            monkeypatch.setenv("DISABLE_NVRTC", "1")
        else:
            monkeypatch.delenv("DISABLE_NVRTC", raising=False)
        y32 = forward(name, op, x, g, b)
        res[name] = (y32, *fp8_call(name, op, x, g, b, out, 3.0))
    (a32, ay, aamax, asi, _), (b32, by, bamax, bsi, _) = res["nvrtc"], res["numba"]
    same = a32.view(np.uint32) == b32.view(np.uint32)
    print(f"\n{op} {rows}x{cols} {out}: {same.mean():.4%} of fp32 outputs bitwise equal")
    np.testing.assert_array_equal(ay.view(np.uint8)[same], by.view(np.uint8)[same])
    assert asi == bsi
    if np.abs(a32).max() == np.abs(b32).max():
        assert aamax == bamax


@pytest.mark.parametrize("out", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("rows, cols", SHAPES)
@pytest.mark.parametrize("op", OPS)
def test_amax_of_other_outputs(backend, op, rows, cols, out):
    inp = "fp32" if out != "fp16" else "fp16"  # fp32 -> bf16/fp16/fp32 and fp16 -> fp16
    x, g, b = inputs(op, rows, cols, inp, cols + 3)
    amax = np.full(1, 0.25, np.float32)
    y = forward(backend, op, x, g, b, out_dtype=out, amax=amax)
    assert amax[0] == np.abs(y.astype(np.float32)).max()
    plain = forward(backend, op, x, g, b, out_dtype=out)
    np.testing.assert_array_equal(plain.view(np.uint8), y.view(np.uint8))


@pytest.mark.parametrize("out", FP8)
@pytest.mark.parametrize("op", OPS)
def test_saturation_and_subsets(backend, op, out):
    x, g, b = inputs(op, 64, 4096, "fp32", 5)
    y32 = forward(backend, op, x, g, b)
    top = ref.FP8_MAX[out]
    scale = np.array([top / 2.0], np.float32)
    # amax without scale_inv
    amax = np.full(1, 1e6, np.float32)  # a larger amax stays
    y = forward(backend, op, x, g, b, out_dtype=out, scale=scale, amax=amax)
    v = np.float32(y32) * scale[0]
    over = np.abs(v) > top
    assert over.any()
    np.testing.assert_array_equal(y.astype(np.float64)[over], np.sign(v[over]) * top)
    np.testing.assert_array_equal(y.view(np.uint8), ref.quantize_fp8(v, out).view(np.uint8))
    assert amax[0] == np.float32(1e6)
    # scale_inv without amax
    scale_inv = np.zeros(1, np.float32)
    forward(backend, op, x, g, b, out_dtype=out, scale=scale, scale_inv=scale_inv)
    assert scale_inv[0] == np.float32(1) / scale[0]


@pytest.mark.parametrize("op", OPS)
def test_nan_rows(monkeypatch, backend, op):
    fp32_on_fp8_plan(monkeypatch, "fp8e4m3")  # the amax is compared bit for bit
    x, g, b = inputs(op, 64, 4096, "fp32", 8)
    x[3, 100] = np.nan
    y32 = forward(backend, op, x, g, b)
    y, amax, _, _ = fp8_call(backend, op, x, g, b, "fp8e4m3", 1.0)
    assert np.isnan(y[3].astype(np.float32)).all()
    ok = np.ones(len(x), bool)
    ok[3] = False
    assert amax == np.abs(y32[ok]).max()  # fmaxf: NaN never wins


# ---------------------------------------------------------------------------------------------
# torch tensors and torch float8 dtypes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rows, cols", SHAPES)
@pytest.mark.parametrize("out", FP8)
@pytest.mark.parametrize("op", OPS)
def test_torch_float8(monkeypatch, backend, op, out, rows, cols):
    torch = pytest.importorskip("torch")
    fp32_on_fp8_plan(monkeypatch, out)  # amax is compared bit for bit with the fp32 output's
    tdt = {"fp8e4m3": torch.float8_e4m3fn, "fp8e5m2": torch.float8_e5m2}[out]
    x, g, b = inputs(op, rows, cols, "fp32", rows)
    xt, gt = torch.from_numpy(x).cuda(), torch.from_numpy(g).cuda()
    bt = torch.from_numpy(b).cuda() if b is not None else None
    scale = torch.full((1,), 2.0, dtype=torch.float32, device="cuda")
    amax = torch.zeros(1, dtype=torch.float32, device="cuda")
    scale_inv = torch.zeros(1, dtype=torch.float32, device="cuda")
    y32 = forward(backend, op, xt, gt, bt)
    y = forward(backend, op, xt, gt, bt, out_dtype=tdt, scale=scale, amax=amax,
                scale_inv=scale_inv)  # fmt: skip
    assert isinstance(y, torch.Tensor) and y.dtype == tdt and y.shape == xt.shape
    torch.cuda.synchronize()
    y32n = y32.cpu().numpy()
    want = ref.quantize_fp8(y32n * np.float32(2.0), out)
    np.testing.assert_array_equal(y.view(torch.uint8).cpu().numpy(), want.view(np.uint8))
    assert amax.item() == np.abs(y32n).max()
    assert scale_inv.item() == 0.5
    # an FP8 tensor is no norm input
    with pytest.raises(TypeError, match=r"^x: "):
        forward(backend, op, y, gt, bt, out_dtype=tdt, scale=scale)
