"""NVRTC LayerNorm/RMSNorm kernels compile to CUBIN for every registry entry (no GPU needed).

Every norm registry entry (FP8 outputs excluded) is specialised with ``planner.norm_spec`` for its
own hidden size with full-width vectors; general entries also for a ragged size (its row pitch
allows 2-element vectors) and with ``vec_elts=1`` (a misaligned call). Specs are deduplicated on
``spec.kernel_key``. The full sweep is ``slow``; an unmarked subset covers each op, kind, dtype
family, multi-CTA rows, the fused add and every vector width. The launchers are checked against
the kernel signatures of docs/design.md with a fake driver under ``rtc.Launcher``.
"""

from __future__ import annotations

import dataclasses
import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import rtc
from numba_norms import planner, registry
from numba_norms.backends.common import (
    NORM_BWD_PARAMS,
    NORM_FINALIZE_PARAMS,
    NORM_FWD_PARAMS,
    NormBwdArgs,
    NormFwdArgs,
)
from numba_norms.backends.nvrtc import _norms, layernorm, rmsnorm
from numba_norms.planner import DeviceLimits, NormSpec, norm_spec

H200 = DeviceLimits(sm_count=132, name="H200 (planning only)")
MODULES = {"layernorm": layernorm, "rmsnorm": rmsnorm}


def _ragged_vec(cfg: registry.NormConfig, cols: int) -> int:
    """Vector width a contiguous ``rows x cols`` call allows (its row pitch limits it)."""
    pitch = cols * registry.itemsize(cfg.input)
    return planner.vector_elements([(pitch & -pitch, registry.itemsize(cfg.input))], cfg.num_elts)


def _all_specs(configs=None) -> list[NormSpec]:
    """One spec per distinct kernel of ``configs`` (default: every non-FP8 entry): each entry at
    its own width, general ones also ragged (narrower vectors) and with scalar accesses."""
    seen: dict[tuple, NormSpec] = {}
    for cfg in registry.norm_configs() if configs is None else configs:
        shapes = [(cfg.hidden_size, cfg.num_elts)]
        if cfg.kind == "general":
            ragged = cfg.hidden_size + 2
            shapes += [(ragged, _ragged_vec(cfg, ragged)), (cfg.hidden_size, 1)]
        for cols, vec in shapes:
            spec = norm_spec(cfg, cols, vec, H200)
            seen.setdefault(spec.kernel_key, spec)
    return list(seen.values())


ALL_SPECS = _all_specs()


def _find(op, kind, hidden, weight, inp, out, *, add=False, cols=None, vec=None) -> NormSpec:
    for cfg in registry.norm_configs():
        if (
            (cfg.op, cfg.kind, cfg.hidden_size, cfg.weight, cfg.input, cfg.output)
            == (
                op,
                kind,
                hidden,
                weight,
                inp,
                out,
            )
            and cfg.fused_add == add
            and cfg.origin == "te"
        ):
            cols = hidden if cols is None else cols
            return norm_spec(cfg, cols, cfg.num_elts if vec is None else vec, H200)
    raise LookupError((op, kind, hidden, weight, inp, out, add))


QUICK_SPECS = [
    # the performance targets: tuned bf16 4096, both ops, both directions, the fused add
    _find("layernorm_fwd", "tuned", 4096, "bf16", "bf16", "bf16"),
    _find("layernorm_bwd", "tuned", 4096, "bf16", "bf16", "bf16"),
    _find("rmsnorm_fwd", "tuned", 4096, "bf16", "bf16", "bf16"),
    _find("rmsnorm_bwd", "tuned", 4096, "bf16", "bf16", "bf16", add=True),
    # warps_m = 4, fp32 in / bf16 out; fp16 2-element vectors
    _find("layernorm_fwd", "tuned", 1024, "fp32", "fp32", "bf16"),
    _find("layernorm_fwd", "tuned", 12800, "fp16", "fp16", "fp16"),
    # several CTAs per row (forward 8, backward with 8 warps per row)
    _find("layernorm_fwd", "tuned", 65536, "bf16", "bf16", "bf16"),
    _find("layernorm_bwd", "tuned", 65536, "bf16", "bf16", "bf16"),
    _find("layernorm_bwd", "tuned", 8192, "fp16", "fp32", "fp16"),
    # general: full width, ragged pitch (2-element vectors), misaligned (1 element)
    _find("layernorm_fwd", "general", 128, "fp32", "fp32", "fp32"),
    _find("layernorm_fwd", "general", 1024, "bf16", "bf16", "bf16", cols=1026, vec=2),
    _find("rmsnorm_fwd", "general", 512, "fp16", "fp16", "fp16", vec=1),
    _find("layernorm_bwd", "general", 512, "bf16", "fp32", "bf16", vec=1),
    _find("rmsnorm_bwd", "general", 128, "fp32", "fp32", "fp32", add=True),
]
SM80_SPECS = [QUICK_SPECS[i] for i in (0, 1, 3, 6, 11)]


def _narrow_specs() -> list[NormSpec]:
    """The measured one-CTA general entries of rows without 16-byte vectors (one per op, bucket
    and the sizes they were measured at; the fused add; fp32 rows)."""
    out = []
    keys = [registry.NormKey(op, "bf16", "bf16", "bf16") for op in registry.NORM_OPS]
    keys += [
        registry.NormKey("rmsnorm_bwd", "bf16", "bf16", "bf16", True),
        registry.NormKey("layernorm_fwd", "fp32", "fp32", "fp32"),
    ]
    for key in keys:
        size = registry.itemsize(key.input)
        for cols in (2053, 5003, 12289):
            cfg = registry.select_norm(key, cols, 16384, size)
            assert cfg.origin == "measured" and cfg.kind == "general"
            out.append(norm_spec(cfg, cols, cfg.num_elts, H200))
    return out


NARROW_SPECS = _narrow_specs()


def _vector_specs() -> list[NormSpec]:
    """The measured one-CTA general entries of 16-byte-aligned rows without a tuned entry
    (registry._VECTOR_GENERAL, NVRTC's, and _WIDE_VECTOR_GENERAL), at the sizes they were
    measured at and the fused add."""
    keys = [registry.NormKey(op, "bf16", "bf16", "bf16") for op in registry.NORM_OPS]
    keys.append(registry.NormKey("layernorm_bwd", "fp16", "fp16", "fp16"))
    wide = registry._WIDE_VECTOR_GENERAL["nvrtc"]
    out = []
    for key in keys:
        # 1000: _VECTOR_GENERAL; 4104 / 8200 / 18944: _WIDE_VECTOR_GENERAL's bands (the
        # band's last length where it ends before 18944)
        for cols, band in zip((1000, 4104, 8200, 18944), (None, 0, 1, 2)):
            if band is None:
                if key.op not in registry._VECTOR_GENERAL["nvrtc"]:
                    continue
            elif key.input != "bf16" or wide[key.op][band][1] is None:
                continue
            else:
                cols = min(cols, wide[key.op][band][0] - 8)
            cfg = registry.select_norm(key, cols, 16384, 16, backend="nvrtc")
            assert cfg.origin == "measured" and cfg.kind == "general" and cfg.num_elts == 8
            out.append(norm_spec(cfg, cols, cfg.num_elts, H200))
    return out


VECTOR_SPECS = _vector_specs()


def _capped_specs() -> list[NormSpec]:
    """TE's general entries under register caps (registry._general_cap; 16-bit rows of 16-byte
    vectors past the one-CTA bands: several CTAs a row), every op and an FP8 output, and the
    forwards' last one-CTA bands (22784, 26368)."""
    keys = [registry.NormKey(op, "bf16", "bf16", "bf16") for op in registry.NORM_OPS]
    keys.append(registry.NormKey("layernorm_fwd", "fp16", "fp16", "fp8e4m3"))
    out = []
    for key in keys:
        cfg = registry.select_norm(key, 46336, 16384, 16, backend="nvrtc")
        assert cfg.origin == "measured" and cfg.kind == "general" and cfg.min_ctas_per_sm > 1
        out.append(norm_spec(cfg, 46336, cfg.num_elts, H200))
        if key.op.endswith("_fwd") and key.output == "bf16":
            for cols, hidden in ((22784, 24576), (26368, 28672)):
                cfg = registry.select_norm(key, cols, 16384, 16, backend="nvrtc")
                assert cfg.origin == "measured" and cfg.warps_n == 16
                assert cfg.hidden_size == hidden
                out.append(norm_spec(cfg, cols, cfg.num_elts, H200))
    return out


CAPPED_SPECS = _capped_specs()


def _spec_id(spec: NormSpec) -> str:
    c = spec.config
    dt = "-".join(dict.fromkeys((c.weight, c.input, c.output)))
    add = "-add" if c.fused_add else ""
    kind = "g" if spec.general else "t"
    shape = f"w{c.warps_m}x{c.warps_n}-e{spec.num_elts}-l{spec.ldgs}"
    return f"{c.op}{add}-{dt}-{kind}{c.hidden_size}-{shape}"


def _compile(spec: NormSpec, arch: str) -> rtc.CompiledModule:
    family = spec.op.split("_")[0]
    mod = MODULES[family]
    fn = mod.compile_backward if spec.config.is_backward else mod.compile_forward
    return fn(spec, arch)


def _names(spec: NormSpec) -> tuple[str, ...]:
    if spec.config.is_backward:
        return _norms.backward_names(spec)
    return (_norms.forward_name(spec),)


def _check_module(spec: NormSpec, mod: rtc.CompiledModule, arch: str) -> None:
    assert mod.arch == arch
    assert mod.cubin[:4] == b"\x7fELF"
    for name in _names(spec):
        assert name in mod.symbols, (name, mod.symbols)
        kernel = name.split("<", 1)[0]
        assert mod.symbols[name].startswith(f"_Z{len(kernel)}{kernel}I"), mod.symbols[name]


@pytest.fixture(autouse=True)
def _tmp_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBA_NORMS_CACHE_DIR", str(tmp_path / "rtc-cache"))


# ------------------------------------------------------------------------------------------------
# name expressions
# ------------------------------------------------------------------------------------------------


def test_register_cap_reaches_ptxas():
    """min_ctas_per_sm is a template argument: ptxas caps the registers to fit that many CTAs."""
    import dataclasses
    import re

    base = _find("layernorm_bwd", "tuned", 4096, "bf16", "bf16", "bf16")
    capped = dataclasses.replace(
        base, config=dataclasses.replace(base.config, min_ctas_per_sm=3, origin="measured")
    )
    assert _norms.backward_names(capped)[0].endswith(", 3, false, 0>")
    assert capped.kernel_key != base.kernel_key

    def regs(spec):
        log = _norms.compile_spec(spec, "sm_90", options=("-Xptxas=-v",)).log
        sections = log.split("Compiling entry function '")[1:]
        (main,) = [t for t in sections if "finalize" not in t.split("'")[0]]
        return int(re.search(r"Used (\d+) registers", main).group(1))

    assert regs(capped) <= 65536 // (3 * capped.threads)
    assert regs(base) > 65536 // (3 * base.threads)  # uncapped it takes more: the cap bites


def test_name_expressions():
    fwd = _find("layernorm_fwd", "tuned", 4096, "bf16", "bf16", "bf16")
    assert _norms.forward_name(fwd) == (
        "norm_fwd<nn::bf16, nn::bf16, nn::bf16, 1, 4, 8, 4, false, false, 1, false, false>"
    )
    mixed = _find("layernorm_fwd", "tuned", 1024, "fp32", "fp32", "bf16")
    assert (
        _norms.forward_name(mixed)
        == "norm_fwd<float, float, nn::bf16, 4, 1, 4, 8, false, false, 1, false, false>"
    )
    rms = _find("rmsnorm_bwd", "general", 128, "fp16", "fp16", "fp16", add=True, cols=130, vec=1)
    assert _norms.backward_names(rms) == (
        "norm_bwd<nn::fp16, nn::fp16, nn::fp16, 4, 1, 1, 4, true, true, true, 1, false, 0>",
        "norm_bwd_finalize<nn::fp16, false>",
    )
    ln = _find("layernorm_bwd", "tuned", 8192, "fp16", "fp32", "fp16")
    assert _norms.backward_names(ln) == (
        "norm_bwd<float, nn::fp16, nn::fp16, 1, 4, 4, 8, false, false, false, 1, false, 0>",
        "norm_bwd_finalize<nn::fp16, true>",
    )
    with pytest.raises(ValueError):
        _norms.forward_name(ln)
    with pytest.raises(ValueError):
        layernorm.compile_forward(_find("rmsnorm_fwd", "tuned", 4096, "bf16", "bf16", "bf16"))


def test_every_spec_has_a_distinct_name():
    """Specs share a name expression only where their keys differ in ``multi_cta`` alone and the
    NVRTC kernel does not depend on it (the backward and RMSNorm's forwards without ``fold``
    always carry the inter-CTA exchange; Numba's kernels do depend on it)."""
    by_name: dict[str, list] = {}
    for spec in ALL_SPECS:
        by_name.setdefault(_names(spec)[0], []).append(spec)
    shared = [specs for specs in by_name.values() if len(specs) > 1]
    for specs in shared:
        assert len({s.kernel_key[:-1] for s in specs}) == 1
        assert len({s.multi_cta for s in specs}) == 2
        assert all(s.config.is_backward or s.config.is_rms for s in specs)
    assert len(by_name) > len(shared) > 0


def test_fp8_output_name():  # FP8 outputs: tests/test_nvrtc_fp8.py
    cfg = next(c for c in registry.norm_configs(include_fp8=True) if c.output == "fp8e4m3")
    spec = norm_spec(cfg, cfg.hidden_size, cfg.num_elts, H200)
    assert ", nn::fp8e4m3, " in _norms.forward_name(spec)


# ------------------------------------------------------------------------------------------------
# compilation
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", QUICK_SPECS, ids=_spec_id)
def test_compile_sm90_quick(spec):
    _check_module(spec, _compile(spec, "sm_90"), "sm_90")


@pytest.mark.parametrize("spec", SM80_SPECS, ids=_spec_id)
def test_compile_sm80(spec):
    _check_module(spec, _compile(spec, "sm_80"), "sm_80")


@pytest.mark.parametrize("spec", NARROW_SPECS, ids=_spec_id)
def test_compile_narrow_general(spec):
    assert spec.ctas_per_row == 1 and spec.general
    _check_module(spec, _compile(spec, "sm_90"), "sm_90")


@pytest.mark.parametrize("spec", NARROW_SPECS[3:6], ids=_spec_id)
def test_compile_narrow_general_sm80(spec):
    _check_module(spec, _compile(spec, "sm_80"), "sm_80")


@pytest.mark.parametrize("spec", VECTOR_SPECS, ids=_spec_id)
def test_compile_vector_general(spec):
    assert spec.ctas_per_row == 1 and spec.general
    _check_module(spec, _compile(spec, "sm_90"), "sm_90")


@pytest.mark.parametrize("spec", VECTOR_SPECS[::2], ids=_spec_id)
def test_compile_vector_general_sm80(spec):
    _check_module(spec, _compile(spec, "sm_80"), "sm_80")


@pytest.mark.parametrize("spec", CAPPED_SPECS, ids=_spec_id)
def test_compile_capped_general(spec):
    c = spec.config
    assert spec.general
    assert spec.ctas_per_row == (1 if c.warps_n == 16 else -(-46336 // c.hidden_size)) >= 1
    _check_module(spec, _compile(spec, "sm_90"), "sm_90")


@pytest.mark.parametrize("spec", CAPPED_SPECS[::3], ids=_spec_id)
def test_compile_capped_general_sm80(spec):
    _check_module(spec, _compile(spec, "sm_80"), "sm_80")


@pytest.mark.slow
@pytest.mark.parametrize("spec", ALL_SPECS, ids=_spec_id)
def test_compile_sm90_all(spec):
    _check_module(spec, _compile(spec, "sm_90"), "sm_90")


def _ptxas_report(spec: NormSpec) -> dict[str, tuple[int, int, int]]:
    """{mangled kernel: (registers, stack frame bytes, spill store bytes)} from ptxas -v."""
    log = _norms.compile_spec(spec, "sm_90", options=("-Xptxas=-v",)).log
    out = {}
    for m in re.finditer(
        r"Function properties for (\S+)\s*\n.*?(\d+) bytes stack frame, (\d+) bytes spill stores"
        r".*?Used (\d+) registers",
        log,
        re.S,
    ):
        out[m.group(1)] = (int(m.group(4)), int(m.group(2)), int(m.group(3)))
    return out


@pytest.mark.parametrize("spec", QUICK_SPECS[:4], ids=_spec_id)
def test_hot_kernels_use_no_local_memory(spec):
    """The row slice, weights and partial sums live in registers (no stack frame, no spills)."""
    report = _ptxas_report(spec)
    assert len(report) == len(_names(spec)), report
    for kernel, (_regs, frame, spills) in report.items():
        assert frame == 0 and spills == 0, (kernel, report[kernel])


def _shape(op, dtype, cols, ctas, warps_m, warps_n, min_ctas, prefetch, *, add=False):
    """The spec of a tuned shape (TE's entry for ``cols`` with another launch shape)."""
    base = registry.select_norm(
        registry.NormKey(op, dtype, dtype, dtype, add), cols, 16384, 256, measured=False
    )
    cfg = dataclasses.replace(
        base, ctas_per_row=ctas, warps_m=warps_m, warps_n=warps_n, min_ctas_per_sm=min_ctas,
        prefetch=prefetch, origin="measured",
    )  # fmt: skip
    return norm_spec(cfg, cols, cfg.num_elts, H200)


# Backward shapes whose registers the wide form (x-hat and dy * gamma in fp32) exceeded: ptxas
# reported 420 B (bf16 layernorm_bwd, 64 elements a thread), 120 B (bf16 rmsnorm_bwd with the
# pipeline; 280 B with the fused add), 212 B (fp32 rmsnorm_bwd 16384) and 92 B (fp32
# layernorm_bwd 12288) of spill stores.
LEAN_SPECS = [
    _shape("layernorm_bwd", "bf16", 16384, 1, 1, 8, 1, False),
    _shape("rmsnorm_bwd", "bf16", 65536, 4, 1, 8, 1, True),
    _shape("rmsnorm_bwd", "bf16", 65536, 4, 1, 8, 1, True, add=True),
    _shape("rmsnorm_bwd", "fp32", 16384, 4, 1, 2, 3, False),
    _shape("layernorm_bwd", "fp32", 12288, 4, 1, 4, 1, False),
]


@pytest.mark.parametrize("spec", LEAN_SPECS, ids=_spec_id)
def test_long_backward_rows_stay_in_registers(spec):
    """Slices too long for the wide backward take the lean form (the row kept packed, x-hat and
    dy * gamma recomputed for dx) and (nearly) fit their register cap: at most 32 B of spill
    stores, where the wide form spilled 92-420 B."""
    report = _ptxas_report(spec)
    main = [v for k, v in report.items() if "finalize" not in k]
    assert len(main) == 1, report
    _regs, _frame, spills = main[0]
    assert spills <= 32, report


@pytest.mark.parametrize("op", ["layernorm_bwd", "rmsnorm_bwd"])
def test_generated_backward_slices_spill_less(op):
    """registry._GEN_BWD_REGS_PER_ELT at 58880 bf16 columns: the shape the rule skips (2 CTAs of
    23 warps, 40 elements at 80 registers) spilled 256-752 B in ptxas (NVRTC 13.0); the one it
    takes (4 CTAs, 20 elements) a fifth of that or less (the A/B: 1.27-1.79x, run 156)."""
    key = registry.NormKey(op, "bf16", "bf16", "bf16")
    cols = 58880
    new = registry.generated_tuned(key, cols)
    ctas, warps_n, nbytes = registry._gen_shape(cols, 2, (2,), registry._target_elts(op, cols))
    assert (ctas, warps_n, nbytes) == (2, 23, 16) != (new.ctas_per_row, new.warps_n, 8)
    old = dataclasses.replace(new, ctas_per_row=ctas, warps_n=warps_n, bytes_per_ldg=nbytes)

    def spills(cfg):
        report = _ptxas_report(norm_spec(cfg, cols, cfg.num_elts, H200))
        (main,) = [v for k, v in report.items() if "finalize" not in k]
        return main[2]

    before, after = spills(old), spills(new)
    assert before >= 256 and after * 5 <= before, (before, after)


@pytest.mark.parametrize("cols", [6400, 9280, 12544, 13248, 15808])
def test_generated_layernorm_pipeline_fits(cols):
    """Generated LayerNorm forwards past 32 elements a thread take the pipeline where 4
    registers an element fit (registry._gen_prefetch): 5-13 warps of 40-58 elements here,
    which ptxas fits with at most 8 B of spill stores (NVRTC 13.0; 16 B with 13.5), where the
    14-32 warp shapes it skips spilled 120-452 B (NVRTC 13.0, dev box)."""
    key = registry.NormKey("layernorm_fwd", "bf16", "bf16", "bf16")
    cfg = registry.generated_tuned(key, cols)
    elts = cols // (cfg.ctas_per_row * cfg.warps_n * 32)
    assert cfg.prefetch and elts > 32, (cfg, elts)
    report = _ptxas_report(norm_spec(cfg, cols, cfg.num_elts, H200))
    (main,) = [v for k, v in report.items() if "finalize" not in k]
    assert main[2] <= 16, main


def _smem_bytes(spec: NormSpec) -> int:
    log = _norms.compile_spec(spec, "sm_90", options=("-Xptxas=-v",)).log
    found = re.finditer(r"Compiling entry function '(\S+)'.*?(\d+) bytes smem", log, re.S)
    (smem,) = [int(m.group(2)) for m in found if "finalize" not in m.group(1)]
    return smem


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("op,w", [("layernorm_bwd", 1), ("layernorm_bwd", 2), ("rmsnorm_bwd", 1)])
def test_wgrad_smem_slots(op, w, arch):
    """dgamma / dbeta sums in shared memory: the slots are the kernel's static shared memory (4
    bytes a column and sum), and spills fall where the register form spilled (2 CTAs of 8 warps a
    16384-column bf16 row with the pipeline: 232 B of spill stores; 120 B with dbeta in shared
    memory, ptxas 13.5)."""
    spec = _shape(op, "bf16", 16384, 4, 1, 4, 3, True)
    moved = norm_spec(dataclasses.replace(spec.config, wgrad_smem=w), 16384, 8, H200)
    assert moved.kernel_key != spec.kernel_key
    _check_module(moved, _compile(moved, arch), arch)
    assert _smem_bytes(moved) - _smem_bytes(spec) == 4 * w * 16384 // 4
    if op == "layernorm_bwd" and w == 1:
        wide = _shape(op, "bf16", 16384, 2, 1, 8, 2, True)
        slim = norm_spec(dataclasses.replace(wide.config, wgrad_smem=1), 16384, 8, H200)
        spill = [v[2] for k, v in _ptxas_report(wide).items() if "finalize" not in k]
        spill_slim = [v[2] for k, v in _ptxas_report(slim).items() if "finalize" not in k]
        assert spill_slim[0] < spill[0], (spill, spill_slim)


# bf16's entries with shared-memory sums (run 117), on fp16: with both halves of a packed word
# unpacked (`mov.b32 {l, h}`) the fp16 backward spilled 140 / 124 B where bf16 spilled 0 / 12 B
# (ptxas 13.0) and ran 0.63 / 0.67x of its old entries (H200, run 119).
@pytest.mark.parametrize("cols,warps_n,min_ctas", [(16384, 1, 2), (32768, 2, 1)])
def test_fp16_backward_spills_no_more_than_bf16(cols, warps_n, min_ctas):
    """The backward widens fp16 so that ptxas can redo it from the packed word (Remat in
    norms.cuh), as it redoes bf16's shift: the same shape spills no more in fp16 than in bf16."""
    spills = {}
    for dtype in ("bf16", "fp16"):
        spec = _shape("layernorm_bwd", dtype, cols, 8, 1, warps_n, min_ctas, True)
        moved = norm_spec(dataclasses.replace(spec.config, wgrad_smem=2), cols, 8, H200)
        report = _ptxas_report(moved)
        (spills[dtype],) = [v[2] for k, v in report.items() if "finalize" not in k]
    assert spills["fp16"] <= spills["bf16"], spills


def test_wgrad_smem_is_validated():
    spec = _shape("layernorm_bwd", "bf16", 16384, 2, 1, 8, 2, True)
    with pytest.raises(ValueError, match="bytes of shared memory"):
        dataclasses.replace(spec.config, wgrad_smem=2)  # 2 x 32 KiB
    with pytest.raises(ValueError, match="wgrad_smem"):
        dataclasses.replace(_shape("rmsnorm_bwd", "bf16", 4096, 1, 1, 4, 1, False).config,
                            wgrad_smem=2)  # fmt: skip
    fwd = _shape("layernorm_fwd", "bf16", 4096, 1, 1, 4, 1, False).config
    with pytest.raises(ValueError, match="wgrad_smem"):
        dataclasses.replace(fwd, wgrad_smem=1)


# RMSNorm forward slices whose packed row and packed weights fill the register cap exactly
# (1 CTA of 32 warps a 65536-column row: 64 + 64 bf16 elements in 64 registers): holding the
# weights spilled 156-164 B (ptxas); they are re-read from L1 instead.
REREAD_FWD_SPECS = [
    _shape("rmsnorm_fwd", "bf16", 65536, 1, 1, 32, 1, False),
    _shape("rmsnorm_fwd", "fp16", 65536, 1, 1, 32, 1, False),
]


@pytest.mark.parametrize("spec", REREAD_FWD_SPECS, ids=_spec_id)
def test_forward_rows_filling_the_cap_reread_weights(spec):
    report = _ptxas_report(spec)
    assert len(report) == 1, report
    _regs, frame, spills = next(iter(report.values()))
    assert frame == 0 and spills == 0, report


def test_broken_template_argument_raises_compile_error():
    good = _find("layernorm_fwd", "tuned", 4096, "bf16", "bf16", "bf16")
    # 3 bf16 elements per vector (6 bytes) is no vector the kernels can move
    broken = NormSpec(good.config, 3, 4, False, 1)
    with pytest.raises(rtc.CompileError) as info:
        _norms.compile_spec(broken, "sm_90")
    assert "odd byte count" in info.value.log


# ------------------------------------------------------------------------------------------------
# launchers, against the kernel signatures of docs/design.md (fake driver, no GPU)
# ------------------------------------------------------------------------------------------------

P, I32, I64, F32 = "ptr", "i32", "i64", "f32"
FWD_SIGNATURE = [P] * 6 + [I32, I32, I64, I64, F32, I32, P, P, P, P, P]
BWD_SIGNATURE = [P] * 9 + [I32, I32, I64, I64, I64, I64, I32, P, P]
FINALIZE_SIGNATURE = [P] * 4 + [I32, I32]


def _kind(v) -> str:
    if isinstance(v, np.int32):
        return I32
    if isinstance(v, np.float32):
        return F32
    if isinstance(v, (int, np.int64)) and not isinstance(v, bool):
        return "int"  # 64-bit: a pointer or a long long
    return type(v).__name__


def _matches(args, signature) -> bool:
    kinds = [_kind(a) for a in args]
    want = ["int" if s in (P, I64) else s for s in signature]
    return kinds == want


@dataclass
class FakeTensor:
    ptr: int
    shape: tuple
    strides: tuple
    dtype: str
    device: int = 0

    def rows_cols(self):
        return self.shape[0], self.shape[-1], self.strides[0]


def _matrix(ptr, rows, cols, dtype, pitch=None):
    return FakeTensor(ptr, (rows, cols), (pitch or cols, 1), dtype)


def test_forward_launch_arguments(recorder):
    spec = _find("layernorm_fwd", "tuned", 65536, "bf16", "bf16", "bf16")
    rows, cols = 100, 65536
    plan = planner.norm_plan(spec, rows, cols, H200, 1)
    assert plan.ctas_per_row > 1 and plan.cooperative
    x = _matrix(0x1000, rows, cols, "bf16", pitch=cols + 64)
    y = _matrix(0x9000, rows, cols, "bf16")
    g, b = FakeTensor(0x100, (cols,), (1,), "bf16"), FakeTensor(0x200, (cols,), (1,), "bf16")
    mu, rs = FakeTensor(0x300, (rows,), (1,), "fp32"), FakeTensor(0x400, (rows,), (1,), "fp32")
    scratch = FakeTensor(0x1_0000_0000, (plan.scratch_bytes,), (1,), "uint8")
    args = NormFwdArgs(x, g, b, y, mu, rs, 1e-5, True, scratch)
    layernorm.forward(plan, args, 7)
    assert recorder.memsets == [(scratch.ptr + plan.barrier_offset, 0, plan.ctas_per_col, 7)]
    (kernel, grid, block, a, stream, coop) = recorder.launches[0]
    assert (kernel, grid, block, stream, coop) == ("MAIN", plan.grid, plan.block, 7, True)
    assert _matches(a, FWD_SIGNATURE), [_kind(v) for v in a]
    assert a[:6] == (x.ptr, g.ptr, b.ptr, y.ptr, mu.ptr, rs.ptr)
    assert (a[6], a[7], a[8], a[9]) == (rows, cols, cols + 64, cols)
    assert a[10] == np.float32(1e-5) and a[11] == 1
    assert a[12] == scratch.ptr + plan.stats_offset and a[13] == scratch.ptr + plan.barrier_offset
    assert a[14:] == (0, 0, 0)


@pytest.mark.parametrize("backward", [False, True])
def test_cluster_launch_has_no_counter(recorder, backward):
    """A multi-CTA plan on sm_90+ limits goes out as one cluster a row group: the cluster
    attribute, not cooperative, no barrier memset; the statistics still live in scratch."""
    if backward:
        spec = _find("layernorm_bwd", "general", 4096, "bf16", "bf16", "bf16", cols=9000)
        rows, cols, n = 33, 9000, 3
    else:
        spec = _find("layernorm_fwd", "tuned", 65536, "bf16", "bf16", "bf16")
        rows, cols, n = 33, 65536, 8
    hopper = dataclasses.replace(H200, clusters=True)
    plan = planner.norm_plan(spec, rows, cols, hopper, 2, max_active_clusters=20)
    assert plan.cluster == plan.ctas_per_row == n and not plan.cooperative
    assert plan.grid == (n, 20, 1) and plan.barrier_bytes == 0
    scratch = FakeTensor(0x1_0000_0000, (plan.scratch_bytes,), (1,), "bf16")
    mu, rs = FakeTensor(0x300, (rows,), (1,), "fp32"), FakeTensor(0x400, (rows,), (1,), "fp32")
    g, dg, db = (FakeTensor(a, (cols,), (1,), "bf16") for a in (0x100, 0x500, 0x600))
    a, b = _matrix(0x1000, rows, cols, "bf16"), _matrix(0x9000, rows, cols, "bf16")
    if backward:
        c = _matrix(0x20000, rows, cols, "bf16")
        layernorm.backward(plan, NormBwdArgs(a, b, mu, rs, g, c, None, dg, db, False, scratch), 3)
        stats = recorder.launches[0][3][16]
    else:
        layernorm.forward(plan, NormFwdArgs(a, g, dg, b, mu, rs, 1e-5, False, scratch), 3)
        stats = recorder.launches[0][3][12]
    assert recorder.memsets == []
    assert recorder.clusters == {0: (n, 1, 1)}
    kernel, grid, _, _, stream, coop = recorder.launches[0]
    assert (kernel, grid, stream, coop) == ("MAIN", (n, 20, 1), 3, False)
    assert stats == scratch.ptr + plan.stats_offset


def test_forward_launch_single_cta_rms(recorder):
    spec = _find("rmsnorm_fwd", "tuned", 4096, "bf16", "bf16", "bf16")
    plan = planner.norm_plan(spec, 64, 4096, H200, 4)
    x, y = _matrix(0x1000, 64, 4096, "bf16"), _matrix(0x9000, 64, 4096, "bf16")
    g = FakeTensor(0x100, (4096,), (1,), "bf16")
    rs = FakeTensor(0x400, (64,), (1,), "fp32")
    rmsnorm.forward(plan, NormFwdArgs(x, g, None, y, None, rs, 1e-6, False), 0)
    assert recorder.memsets == []
    (_, _, _, a, _, coop) = recorder.launches[0]
    assert not coop and _matches(a, FWD_SIGNATURE)
    assert a[2] == 0 and a[4] == 0 and a[11] == 0 and a[12:14] == (0, 0)


@pytest.mark.parametrize("add", [False, True])
def test_backward_launch_arguments(recorder, add):
    if add:
        spec = _find("rmsnorm_bwd", "general", 4096, "bf16", "bf16", "bf16", add=True, cols=9000)
    else:
        spec = _find("layernorm_bwd", "general", 4096, "bf16", "bf16", "bf16", cols=9000)
    rows, cols = 33, 9000
    plan = planner.norm_plan(spec, rows, cols, H200, 2)
    assert plan.ctas_per_row == 3
    dy, x = _matrix(0x1000, rows, cols, "bf16"), _matrix(0x2000, rows, cols, "bf16", cols + 8)
    dx, addt = _matrix(0x3000, rows, cols, "bf16"), _matrix(0x4000, rows, cols, "bf16", cols + 16)
    g = FakeTensor(0x100, (cols,), (1,), "bf16")
    dg = FakeTensor(0x500, (cols,), (1,), "bf16")
    rms = spec.config.is_rms
    db = None if rms else FakeTensor(0x600, (cols,), (1,), "bf16")
    mu = None if rms else FakeTensor(0x300, (rows,), (1,), "fp32")
    rs = FakeTensor(0x400, (rows,), (1,), "fp32")
    scratch = FakeTensor(0x1_0000_0000, (plan.scratch_bytes,), (1,), "uint8")
    args = NormBwdArgs(dy, x, mu, rs, g, dx, addt if add else None, dg, db, False, scratch)
    (rmsnorm if rms else layernorm).backward(plan, args, 5)
    assert len(recorder.memsets) == 1
    main, fin = recorder.launches
    assert main[0] == "MAIN" and main[5] is True and main[1] == plan.grid
    a = main[3]
    assert _matches(a, BWD_SIGNATURE), [_kind(v) for v in a]
    pg = scratch.ptr + plan.partial_offset
    pb = 0 if rms else scratch.ptr + plan.dbeta_partial_offset
    assert a[:9] == (dy.ptr, x.ptr, 0 if rms else mu.ptr, rs.ptr, g.ptr, dx.ptr,
                     addt.ptr if add else 0, pg, pb)  # fmt: skip
    assert a[9:15] == (rows, cols, cols, cols + 8, cols, cols + 16 if add else 0)
    assert a[15] == 0
    assert a[16] == scratch.ptr + plan.stats_offset and a[17] == scratch.ptr + plan.barrier_offset
    assert fin[0] == "FINALIZE" and fin[1] == plan.finalize_grid and fin[2] == plan.finalize_block
    assert fin[4] == 5 and fin[5] is False
    assert _matches(fin[3], FINALIZE_SIGNATURE)
    assert fin[3] == (pg, pb, dg.ptr, 0 if rms else db.ptr, plan.partial_rows, cols)


@pytest.mark.parametrize("dependent", [False, True])
def test_launches_are_programmatic_where_the_plan_says(recorder, dependent):
    """On sm_90+ limits the main kernel and the finalize go out as programmatic dependents
    (cuLaunchKernelEx) with the same shapes and arguments."""
    limits = dataclasses.replace(H200, dependent_launch=dependent)
    key = registry.NormKey("layernorm_bwd", "bf16", "bf16", "bf16")
    spec = norm_spec(registry.select_norm(key, 4096, 64, 256), 4096, 8, limits)
    plan = planner.norm_plan(spec, 64, 4096, limits, 2)
    assert plan.finalize_dependent is dependent
    dy, x, dx = (_matrix(a, 64, 4096, "bf16") for a in (0x1000, 0x2000, 0x3000))
    g, dg, db = (FakeTensor(a, (4096,), (1,), "bf16") for a in (0x100, 0x500, 0x600))
    mu, rs = (FakeTensor(a, (64,), (1,), "fp32") for a in (0x300, 0x400))
    scratch = FakeTensor(0x1_0000_0000, (plan.scratch_bytes,), (1,), "uint8")
    layernorm.backward(plan, NormBwdArgs(dy, x, mu, rs, g, dx, None, dg, db, False, scratch), 7)
    main, fin = recorder.launches
    assert main[0] == "MAIN" and fin[0] == "FINALIZE"
    assert plan.dependent is dependent
    assert recorder.programmatic == ([0, 1] if dependent else [])
    assert fin[1:3] == (plan.finalize_grid, plan.finalize_block) and fin[4] == 7
    pg = scratch.ptr + plan.partial_offset
    assert fin[3] == (pg, scratch.ptr + plan.dbeta_partial_offset, dg.ptr, db.ptr,
                      plan.partial_rows, 4096)  # fmt: skip


def test_dependent_launch_arch_matches_the_planner():
    """The CUDA C prologue's `__CUDA_ARCH__` bound is the planner's DEPENDENT_LAUNCH_CC."""
    major, minor = planner.DEPENDENT_LAUNCH_CC
    src = (Path(_norms.__file__).parent / "norms.cuh").read_text()
    found = set(re.findall(r"__CUDA_ARCH__ >= (\d+)\n  asm volatile\(\"griddepcontrol", src))
    assert found == {f"{major}{minor}0"}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("spec", [QUICK_SPECS[0], QUICK_SPECS[1], QUICK_SPECS[3]], ids=_spec_id)
def test_kernels_start_with_the_dependent_launch_prologue(spec, arch):
    """Every kernel (forward, backward and its finalize) waits for the stream's previous kernel
    and lets the next be scheduled before it touches memory (sm_90+; nothing on sm_80)."""
    from tests.conftest import assert_dependent_prologue, nvrtc_ptx

    names = _norms._names(spec)
    ptx = nvrtc_ptx(_norms.kernel_source("norms.cu"), names, arch, Path(_norms.__file__).parent)
    assert_dependent_prologue(ptx, len(names), arch)


def test_cluster_arch_matches_the_planner():
    """The CUDA C cluster helpers' `__CUDA_ARCH__` bound is the planner's CLUSTER_CC."""
    major, minor = planner.CLUSTER_CC
    src = (Path(_norms.__file__).parent / "norms.cuh").read_text()
    blocks = re.findall(r"__CUDA_ARCH__ >= (\d+)\n(.*?)#endif", src, flags=re.S)
    bounds = [b for b, body in blocks if "cluster" in body]
    assert len(bounds) == 3 and set(bounds) == {f"{major}{minor}0"}  # ctas, sync, store


def test_cluster_slots_match_the_planner():
    """The CUDA C shared slots of the cluster exchange hold planner.MAX_CLUSTER parts: a larger
    planner bound without them would write past the slots."""
    src = (Path(_norms.__file__).parent / "norms.cuh").read_text()
    assert re.findall(r"constexpr int kMaxCluster = (\d+);", src) == [str(planner.MAX_CLUSTER)]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("spec", [QUICK_SPECS[6], QUICK_SPECS[7]], ids=_spec_id)
def test_row_barrier_has_the_cluster_branch_from_sm90(spec, arch):
    """The row barrier of the multi-CTA kernels reads %cluster_nctarank and has the cluster
    barrier (arrive with release, wait with acquire) on sm_90; the counter path stays; sm_80
    has only the counter."""
    from tests.conftest import nvrtc_ptx

    names = _norms._names(spec)[:1]
    ptx = nvrtc_ptx(_norms.kernel_source("norms.cu"), names, arch, Path(_norms.__file__).parent)
    want = arch == "sm_90"
    assert ("mov.u32" in ptx and "%cluster_nctarank" in ptx) is want
    assert ("barrier.cluster.arrive.release.aligned" in ptx) is want
    assert ("barrier.cluster.wait.acquire.aligned" in ptx) is want
    # the pairs go into the other CTAs' shared memory (distributed shared memory)
    assert ("mapa.shared::cluster" in ptx and "st.shared::cluster.v2.f32" in ptx) is want
    assert re.search(r"atom\.global(\.\w+)*\.add", ptx)


def test_launch_host_overhead(recorder):
    """Per-call Python work of the launcher (launch itself faked): a few microseconds."""
    spec = _find("layernorm_fwd", "tuned", 4096, "bf16", "bf16", "bf16")
    plan = planner.norm_plan(spec, 16384, 4096, H200, 4)
    x, y = _matrix(0x1000, 16384, 4096, "bf16"), _matrix(0x9000, 16384, 4096, "bf16")
    g, b = FakeTensor(0x100, (4096,), (1,), "bf16"), FakeTensor(0x200, (4096,), (1,), "bf16")
    mu, rs = FakeTensor(0x300, (16384,), (1,), "fp32"), FakeTensor(0x400, (16384,), (1,), "fp32")
    args = NormFwdArgs(x, g, b, y, mu, rs, 1e-5, False)
    layernorm.forward(plan, args, 0)
    assert len(recorder.launches) == 1
    recorder.record = False  # time our launcher, not the recorder's decoding
    n = 2000
    t = time.perf_counter()
    for _ in range(n):
        layernorm.forward(plan, args, 0)
    per_call = (time.perf_counter() - t) / n
    assert per_call < 50e-6, per_call  # generous: shared CI machines


def _source_params(source: str, kernel: str) -> str:
    """Launcher parameter codes read off a kernel's parameter list in CUDA C source."""
    m = re.search(rf"\b{kernel}\(([^)]*)\)\s*\{{", source)
    assert m, kernel
    codes = ""
    for param in m.group(1).split(","):
        decl = " ".join(param.split()[:-1])  # the type, without the parameter name
        if "*" in param:
            codes += "P"
        else:
            codes += {"int": "i", "long long": "q", "float": "f"}[decl]
    return codes


def test_launcher_layouts_match_the_kernel_source():
    src = (Path(_norms.__file__).parent / "norms.cu").read_text()
    assert _source_params(src, "norm_fwd") == NORM_FWD_PARAMS
    assert _source_params(src, "norm_bwd") == NORM_BWD_PARAMS
    assert _source_params(src, "norm_bwd_finalize") == NORM_FINALIZE_PARAMS
    # and the signatures these launcher tests check values against
    kinds = {P: "P", I32: "i", I64: "q", F32: "f"}
    assert "".join(kinds[k] for k in FWD_SIGNATURE) == NORM_FWD_PARAMS
    assert "".join(kinds[k] for k in BWD_SIGNATURE) == NORM_BWD_PARAMS
    assert "".join(kinds[k] for k in FINALIZE_SIGNATURE) == NORM_FINALIZE_PARAMS
