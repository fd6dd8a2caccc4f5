"""The configuration registry: TE's table as data, validation and TE's selection rules."""

from __future__ import annotations

import dataclasses
import json
from importlib import resources

import pytest

from numba_norms import planner
from numba_norms import registry as r

BF16 = r.NormKey("layernorm_fwd", "bf16", "bf16", "bf16")


def test_every_te_registration_is_present_without_fp8():
    raw = json.loads(
        resources.files("numba_norms").joinpath("data/te_norm_registry.json").read_text()
    )["entries"]
    non_fp8 = [e for e in raw if not e["output"].startswith("fp8")]
    te = [c for c in r.norm_configs() if c.origin == "te"]
    assert len(te) == len(non_fp8)
    have = {(c.op, c.kind, c.hidden_size, c.weight, c.input, c.output, c.fused_add) for c in te}
    for e in non_fp8:
        key = (
            e["op"],
            e["kind"],
            e["hidden_size"],
            e["weight"],
            e["input"],
            e["output"],
            e["stage"] == "BackwardAdd",
        )
        assert key in have


def test_fp8_entries_come_in_e4m3_and_e5m2():
    fp8 = [c for c in r.norm_configs(include_fp8=True) if c.output.startswith("fp8")]
    assert fp8 and {c.output for c in fp8} == {"fp8e4m3", "fp8e5m2"}
    assert sum(c.output == "fp8e4m3" for c in fp8) == sum(c.output == "fp8e5m2" for c in fp8)


def test_derived_shape_of_a_tuned_entry():
    cfg = r.select_norm(BF16, 4096, 16384, 256, measured=False)
    assert (cfg.kind, cfg.warps_m, cfg.warps_n, cfg.bytes_per_ldg) == ("tuned", 1, 4, 16)
    assert cfg.threads == 128 and cfg.num_elts == 8 and cfg.cols_per_pass == 1024


def test_measured_entries_take_precedence_and_record_their_run():
    raw = json.loads(
        resources.files("numba_norms").joinpath("data/measured_norms.json").read_text()
    )
    assert raw["source"]["gpu"] and raw["source"]["command"].startswith("python3 perf/tune_norms")
    measured = r.measured_configs()
    assert measured and all(c.origin == "measured" and c.kind == "tuned" for c in measured)
    for c in measured:
        key = r.NormKey(c.op, c.weight, c.input, c.output)
        assert r.select_norm(key, c.hidden_size, 16384, 16) == c
        # misaligned calls or odd row counts still take TE's general path
        assert r.select_norm(key, c.hidden_size, 16383, 16).kind == "general"
        te = r.select_norm(key, c.hidden_size, 16384, 16, measured=False)
        assert te.origin in ("te", "generated") and te != c
    e4m3 = {(c.op, c.hidden_size) for c in measured if c.output == "fp8e4m3"}
    assert e4m3 == {(c.op, c.hidden_size) for c in measured if c.output == "fp8e5m2"}


def test_numba_entries_serve_the_numba_backend_only():
    """The Numba backend's own measured norm entries come first for it; the shared table (and
    NVRTC) is unchanged by them; each one is a shape the shared table does not pick there."""
    raw = json.loads(
        resources.files("numba_norms").joinpath("data/measured_norms_numba.json").read_text()
    )
    assert raw["source"]["backend"] == "numba" and "--backend numba" in raw["source"]["command"]
    own = r.measured_configs("numba")
    assert own and all(c.origin == "measured" and c.kind == "tuned" for c in own)
    assert not set(own) & set(r.norm_configs(include_fp8=True))
    for c in own:
        key = r.NormKey(c.op, c.weight, c.input, c.output)
        assert r.select_norm(key, c.hidden_size, 16384, 16, backend="numba") == c
        shared = r.select_norm(key, c.hidden_size, 16384, 16)
        assert shared != c and r.select_norm(key, c.hidden_size, 16384, 16, backend="nvrtc") == (
            shared
        )
        # TE's rules still hold: misaligned calls take the general path on Numba too
        assert r.select_norm(key, c.hidden_size, 16384, 8, backend="numba").kind == "general"
    assert set(own) <= set(r.norm_configs(include_fp8=True, backend="numba"))
    with pytest.raises(ValueError, match="backend"):
        r.select_norm(BF16, 4096, 16384, 16, backend="cuda")


def test_numba_softmax_entries_replace_shared_ones_of_their_length():
    own = r.measured_softmax_configs("numba")
    assert own and all(c.origin == "measured" for c in own)
    shared = r.measured_softmax_configs()
    by_len = {(c.op, c.variant, c.dtype, c.keys): c for c in shared}
    for c in own:
        assert (c.op, c.variant, c.dtype, c.keys) in by_len  # same lengths: same ranges served
        assert by_len[c.op, c.variant, c.dtype, c.keys] != c
        assert r.select_softmax(c.op, c.variant, c.dtype, c.keys, backend="numba") == c
        # the length below is served by the entry timed there on both backends, or by Numba's
        below = c.keys - 1
        nb = r.select_softmax(c.op, c.variant, c.dtype, below, backend="numba")
        assert nb.keys <= c.keys
    mixed = r.softmax_configs(True, "numba")
    assert set(own) <= set(mixed)
    assert len(mixed) == len(r.softmax_configs())  # one entry replaced by one
    # the Numba backward builds without the pipeline: its own entries do not ask for it
    assert not any(c.prefetch for c in own if c.is_backward)
    with pytest.raises(ValueError, match="backend"):
        r.select_softmax("softmax_fwd", "scaled", "bf16", 1024, backend="cuda")


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(warps_n=64), "exceeds 1024 threads"),
        (dict(min_ctas_per_sm=17), "exceeds the 2048 threads"),
        (dict(min_ctas_per_sm=0), "min_ctas_per_sm must be >= 1"),
        (dict(bytes_per_ldg=12), "power of two"),
        (dict(hidden_size=4000), "not a multiple"),
        (dict(op="groupnorm_fwd"), "op: expected"),
        (dict(weight="int8"), "unknown dtype"),
        (dict(warps_n=0), "warps_n must be >= 1"),
        (dict(input="fp8e4m3"), "cannot be fp8"),
        (dict(fused_add=True), "fused_add exists only"),
        (dict(grid="blocks"), "grid: expected one of"),
        (dict(op="layernorm_bwd", bytes_per_ldg_final=4, grid="rows"), "grid 'rows' needs"),
        (dict(ctas_per_row=2, grid="rows"), "grid 'rows' needs"),
        (dict(fold=True), "fold: expected a tuned rmsnorm_fwd"),
        (dict(op="rmsnorm_fwd", kind="general", fold=True), "fold: expected"),
        (dict(op="rmsnorm_fwd", ctas_per_row=2, fold=True), "fold: expected"),
        (dict(op="rmsnorm_bwd", bytes_per_ldg_final=4, fold=True), "fold: expected"),
    ],
)
def test_invalid_entries_are_rejected(changes, message):
    base = dict(
        op="layernorm_fwd",
        kind="tuned",
        hidden_size=4096,
        weight="bf16",
        input="bf16",
        output="bf16",
    )
    with pytest.raises(ValueError, match=message):
        r.NormConfig(**{**base, **changes})


def test_fold_is_read_per_entry_and_shared_with_e5m2():
    """``fold`` comes from the measured JSON entry (absent: False); the e5m2 copy of an e4m3
    entry carries it; TE's and generated entries never set it."""
    raw = json.loads(
        resources.files("numba_norms").joinpath("data/measured_norms.json").read_text()
    )
    flagged = {(e["input"], e["output"], e["hidden_size"]) for e in raw["entries"] if e.get("fold")}
    measured = r.measured_configs()
    e4m3_or_16bit = [c for c in measured if c.fold and c.output != "fp8e5m2"]
    assert flagged == {(c.input, c.output, c.hidden_size) for c in e4m3_or_16bit}
    for c in measured:
        if c.output == "fp8e4m3":
            assert r._replace(c, output="fp8e5m2") in measured
    key = r.NormKey("rmsnorm_fwd", "fp16", "fp16", "fp8e4m3")
    assert r.select_norm(key, 5120, 16384, 16).fold
    assert not r.select_norm(key, 5120, 16384, 16, measured=False).fold  # generated
    assert not r.select_norm(key, 6144, 16384, 16).fold  # generated from the folded neighbours
    assert not any(c.fold for c in r.norm_configs(include_fp8=True) if c.origin == "te")


def test_tuned_needs_alignment_and_rows_multiple_of_four():
    assert r.select_norm(BF16, 4096, 16384, 16).kind == "tuned"
    assert r.select_norm(BF16, 4096, 16383, 16).kind == "general"
    assert r.select_norm(BF16, 4096, 16384, 8).kind == "general"
    assert r.select_norm(BF16, 4096, 16384, 16, allow_tuned=False).kind == "general"


def test_general_takes_smallest_chunk_that_fits_else_largest():
    assert r.select_norm(BF16, 1000, 8, 256).hidden_size == 1024
    assert r.select_norm(BF16, 100, 8, 256).hidden_size == 128
    assert r.select_norm(BF16, 129, 8, 256).hidden_size == 512
    biggest = r.select_norm(BF16, 131072, 7, 256)
    assert biggest.kind == "general" and biggest.hidden_size == 8192


def test_mixed_combinations_of_te_are_served():
    fwd = r.supported_norm_dtypes("layernorm_fwd")
    assert ("fp32", "fp32", "bf16") in fwd and ("fp32", "fp32", "fp16") in fwd
    bwd = r.supported_norm_dtypes("layernorm_bwd")
    assert ("bf16", "fp32", "bf16") in bwd
    assert ("bf16", "bf16", "bf16") in r.supported_norm_dtypes("rmsnorm_bwd", fused_add=True)


def test_unsupported_combination_lists_the_supported_ones():
    key = r.NormKey("layernorm_fwd", "fp16", "bf16", "bf16")
    with pytest.raises(r.UnsupportedError, match="supported .*bf16/bf16/bf16"):
        r.select_norm(key, 1024, 8, 256)


def test_softmax_selection():
    def default(op, variant, dtype, cols):
        return r.select_softmax(op, variant, dtype, cols, measured=False)

    assert default("softmax_fwd", "scaled", "bf16", 1).max_cols == 32
    assert default("softmax_fwd", "masked", "bf16", 1000).max_cols == 1024
    cfg = default("softmax_fwd", "scaled", "fp16", 4097)
    assert (cfg.kind, cfg.max_cols) == ("block", 8192)
    assert default("softmax_fwd", "scaled", "fp32", 131072).max_cols == 16384
    # The backward is one kernel for every variant.
    assert r.select_softmax("softmax_bwd", "upper_triang", "bf16", 64).variant == "scaled"
    with pytest.raises(r.UnsupportedError, match="expected one of"):
        r.select_softmax("softmax_fwd", "scaled", "fp8e4m3", 64)


def test_measured_softmax_selection():
    """Measured entries serve rows from half the shortest timed length up, each the entry
    timed at the next length at or above; past the longest, that one with several CTAs."""
    measured = r.measured_softmax_configs()
    keys = sorted({c.keys for c in measured})
    assert keys[0] == 512 and keys[-1] == 131072
    for c in measured:
        assert c.origin == "measured" and c.keys % c.max_cols == 0 or c.kind == "warp"
    # short rows keep the default table
    assert r.select_softmax("softmax_fwd", "scaled", "bf16", 256).origin == "default"
    for dtype in ("bf16", "fp16", "fp32"):
        for op, variant in (
            ("softmax_fwd", "scaled"),
            ("softmax_bwd", "scaled"),
            ("softmax_fwd", "masked"),
            ("softmax_fwd", "upper_triang"),
        ):
            mine = sorted((c for c in measured if (c.op, c.variant, c.dtype) == (op, variant,
                           dtype)), key=lambda c: c.keys)  # fmt: skip
            assert mine, (op, variant, dtype)
            for cols in (257, 1000, 4096, 4097, 20000, 200000):
                got = r.select_softmax(op, variant, dtype, cols)
                want = next((c for c in mine if c.keys >= cols), mine[-1])
                assert got == want, (op, variant, dtype, cols)
                assert cols <= got.max_cols or got.kind == "block"
    # the aligned causal forward shares the upper-triangular entries
    a = r.select_softmax("softmax_fwd", "aligned_causal", "bf16", 8192)
    u = r.select_softmax("softmax_fwd", "upper_triang", "bf16", 8192)
    assert a.variant == "aligned_causal" and (a.warps_n, a.min_ctas_per_sm) == (
        u.warps_n, u.min_ctas_per_sm)  # fmt: skip
    # every measured entry is also in the table precompile walks
    assert set(measured) <= set(r.softmax_configs())
    assert not set(measured) & set(r.softmax_configs(measured=False))


def test_precompile_walks_the_several_cta_builds_of_long_entries():
    """Measured softmax entries timed on rows of several CTAs (131072 keys over 32768-column
    CTAs) are precompiled for that count as well: the NVRTC build fixes it."""
    from numba_norms import precompile

    specs = [s for _, _, s in precompile.all_specs(("softmax",))]
    long = [c for c in r.softmax_configs() if c.origin == "measured" and c.keys > c.max_cols]
    assert long
    for cfg in long:
        want = -(-cfg.keys // cfg.max_cols)
        assert any(s.config == cfg and s.ctas_per_row == want for s in specs), cfg
    assert any(s.ctas_per_row == 1 for s in specs)
    counts = [(s.kernel_key, s.ctas_per_row) for s in specs]
    assert len(counts) == len(set(counts))


def test_softmax_entries_validate():
    with pytest.raises(ValueError, match="warps_n == 1"):
        r.SoftmaxConfig("softmax_fwd", "warp", 256, "bf16", 4, 2)
    with pytest.raises(ValueError, match="not a multiple"):
        r.SoftmaxConfig("softmax_fwd", "block", 1000, "bf16", 1, 4)
    with pytest.raises(ValueError, match="min_ctas_per_sm"):
        r.SoftmaxConfig("softmax_fwd", "block", 8192, "bf16", 1, 32, min_ctas_per_sm=3)
    with pytest.raises(ValueError, match="grid: expected one of"):
        r.SoftmaxConfig("softmax_fwd", "block", 8192, "bf16", 1, 8, grid="all")


def test_streaming_entries_serve_longer_rows_on_more_ctas():
    """Past its timed length a streaming entry serves on more CTAs a row, each streaming at most
    its ``max_cols`` keys (run 175's entries: 2-4 CTAs at 131072), so the rows in flight stay
    what the sweep timed."""
    scaled = r.select_softmax("softmax_fwd", "scaled", "bf16", 131072)
    assert scaled.stream and scaled.keys == 131072
    assert r.select_softmax("softmax_fwd", "scaled", "bf16", 40000) == scaled
    assert r.select_softmax("softmax_fwd", "scaled", "bf16", 300000) == scaled
    limits = planner.DeviceLimits(sm_count=132)
    assert planner.softmax_spec(scaled, 300000, 8, limits).ctas_per_row == 3
    bwd = r.select_softmax("softmax_bwd", "scaled", "bf16", 131072)
    assert bwd.stream and planner.softmax_spec(bwd, 131072, 8, limits).ctas_per_row == 2
    upper = r.select_softmax("softmax_fwd", "upper_triang", "bf16", 40000)
    assert upper.stream and planner.softmax_spec(upper, 40000, 8, limits).ctas_per_row == 2


def test_streaming_softmax_entries_validate():
    """``chunk`` (the streaming kernels) only on block entries (forward or backward) without the
    pipeline, on either grid, and at most MAX_STREAM_CHUNK vectors a step; ``reverse`` only
    with ``chunk``; the JSON fields read back."""
    ok = r.SoftmaxConfig("softmax_fwd", "block", 32768, "bf16", 1, 16, min_ctas_per_sm=3, chunk=2)
    assert ok.stream and not dataclasses.replace(ok, chunk=0).stream
    bwd = dataclasses.replace(ok, op="softmax_bwd", reverse=True)
    assert bwd.stream and bwd.is_backward and bwd.reverse
    for cfg in (ok, bwd):
        assert dataclasses.replace(cfg, grid="rows").grid == "rows"
    bad = [
        dict(kind="warp", warps_m=4, warps_n=1, max_cols=1024),
        dict(prefetch=True),
    ]
    for change in bad:
        for cfg in (ok, bwd):
            with pytest.raises(ValueError, match="streaming kernels"):
                dataclasses.replace(cfg, **change)
    for chunk in (-1, r.MAX_STREAM_CHUNK + 1):
        with pytest.raises(ValueError, match="chunk must be in"):
            dataclasses.replace(ok, chunk=chunk)
    with pytest.raises(ValueError, match="reverse"):
        dataclasses.replace(bwd, chunk=0)
    raw = dict(
        op="softmax_fwd", variant="masked", dtype="fp16", keys=32768, kind="block",
        max_cols=32768, warps_m=1, warps_n=16, bytes_per_ldg=16, min_ctas_per_sm=3, chunk=4,
    )  # fmt: skip
    assert r._softmax_from_json(raw).chunk == 4 and not r._softmax_from_json(raw).reverse
    assert r._softmax_from_json({**raw, "reverse": True}).reverse
    assert r._softmax_from_json({**raw, "chunk": 0}).chunk == 0


def test_staged_softmax_entries_validate():
    """``stage`` only on streaming forward entries on the grid of rows (every variant); the
    JSON field reads back (absent: False)."""
    ok = r.SoftmaxConfig(
        "softmax_fwd", "block", 32768, "bf16", 1, 16, min_ctas_per_sm=2, chunk=4, grid="rows",
        stage=True,
    )  # fmt: skip
    assert all(dataclasses.replace(ok, variant=v).stage for v in r.SOFTMAX_VARIANTS)
    for change in (
        dict(grid="persistent"),
        dict(chunk=0),
        dict(op="softmax_bwd"),
    ):
        with pytest.raises(ValueError, match="stage needs"):
            dataclasses.replace(ok, **change)
    raw = dict(
        op="softmax_fwd", variant="scaled", dtype="bf16", keys=32768, kind="block",
        max_cols=32768, warps_m=1, warps_n=16, bytes_per_ldg=16, min_ctas_per_sm=2, chunk=4,
        grid="rows",
    )  # fmt: skip
    assert not r._softmax_from_json(raw).stage
    assert r._softmax_from_json({**raw, "stage": True}) == dataclasses.replace(ok, keys=32768)


def test_measured_softmax_entries_carry_their_grid():
    raw = dict(
        op="softmax_bwd", variant="scaled", dtype="bf16", keys=4096, kind="block", max_cols=4096,
        warps_m=1, warps_n=4, bytes_per_ldg=16, min_ctas_per_sm=2, prefetch=True,
    )  # fmt: skip
    assert r._softmax_from_json(raw).grid == "persistent"  # entries written before the field
    cfg = r._softmax_from_json(dict(raw, grid="rows"))
    assert (cfg.grid, cfg.warps_n, cfg.min_ctas_per_sm, cfg.prefetch) == ("rows", 4, 2, True)
    measured = r.measured_softmax_configs() + r.measured_softmax_configs("numba")
    assert all(c.grid in r.GRIDS for c in measured)
    # the aligned causal copies of the upper-triangular entries keep their grid (its own
    # entries are at keys the upper-triangular table has none: 131072)
    copies = 0
    for c in r.measured_softmax_configs():
        if c.variant == "aligned_causal":
            u = r.select_softmax(c.op, "upper_triang", c.dtype, c.keys)
            if u.keys == c.keys:
                copies += 1
                assert c.grid == u.grid
    assert copies and any(c.grid == "rows" for c in r.measured_softmax_configs())


def test_generated_tuned_entries_for_sizes_te_does_not_register():
    for cols in (2560, 3584, 7168):
        cfg = r.select_norm(BF16, cols, 16384, 256, measured=False)
        assert (cfg.kind, cfg.origin, cfg.hidden_size) == ("tuned", "generated", cols)
        assert cfg.bytes_per_ldg == 16  # a warp split that keeps 16-byte vectors exists
        assert cols % cfg.cols_per_pass == 0
    # RMSNorm sizes beyond TE's six take LayerNorm's neighbouring CTAs per row, and the warp
    # split that gives a thread the targeted slice (32 elements forward).
    rms_key = r.NormKey("rmsnorm_fwd", "bf16", "bf16", "bf16")
    rms = r.select_norm(rms_key, 16384, 64, 256, measured=False)
    ln = r.select_norm(BF16, 16384, 64, 256, measured=False)
    assert rms.origin == "generated" and rms.ctas_per_row == ln.ctas_per_row
    assert 16384 // (rms.ctas_per_row * rms.warps_n * 32) == 32


@pytest.mark.parametrize(
    "op, cols, elts",
    [
        ("layernorm_fwd", 9216, 32),
        ("layernorm_fwd", 6656, 16),  # 26 x 256: 13 warps (16) beats 2 x 2 warps (104)
        ("layernorm_bwd", 6656, 16),
        ("layernorm_bwd", 640, 4),  # 2.5 x 256: 8-byte vectors
        ("rmsnorm_bwd", 3072, 8),
    ],
)
def test_generated_slice_sizes(op, cols, elts):
    cfg = r.generated_tuned(r.NormKey(op, "bf16", "bf16", "bf16"), cols, measured=False)
    assert cfg.origin == "generated" and cols % cfg.cols_per_pass == 0
    assert cols // (cfg.ctas_per_row * cfg.warps_n * 32) == elts
    assert cfg.threads >= 128 or cfg.ctas_per_row > 1
    assert cfg.bytes_per_ldg == (8 if cols == 640 else 16)


def test_generated_entries_keep_slices_register_sized():
    for op in ("layernorm_fwd", "layernorm_bwd"):
        key = r.NormKey(op, "bf16", "bf16", "bf16")
        for cols in range(256, 65537, 256):
            cfg = r.generated_tuned(key, cols, measured=False)
            if cfg is not None:
                assert cols // (cfg.ctas_per_row * cfg.warps_n * 32) <= r._GEN_MAX_ELTS, cfg


@pytest.mark.parametrize("backend", ["nvrtc", "numba"])
def test_wide_vector_rows_take_measured_one_cta_shapes(backend):
    """Rows of 16-bit vector multiples past 1024 columns that no shape tiles (4104 = 8 x 513):
    each backend's measured one-CTA shapes by band (registry._WIDE_VECTOR_GENERAL), TE's
    general entries where a band has none, and past the last band TE's entries under a
    register cap."""
    for op, bands in r._WIDE_VECTOR_GENERAL[backend].items():
        key = r.NormKey(op, "fp16", "fp16", "fp16")
        prev = r._VECTOR_GENERAL_COLS[1] + 8
        for upto, *shape in bands:
            for cols in (prev, upto - 8, 4104):
                if not prev <= cols <= upto:
                    continue
                assert r.generated_tuned(key, cols) is None  # 8 x odd: nothing tiles
                cfg = r.select_norm(key, cols, 16384, 16, backend=backend)
                te = r.select_norm(key, cols, 16384, 16, measured=False)
                if shape[0] is None:
                    assert cfg == te and cfg.origin == "te"
                    continue
                wm, wn, min_ctas, prefetch = shape
                assert (cfg.kind, cfg.origin, cfg.bytes_per_ldg) == ("general", "measured", 16)
                assert (cfg.warps_m, cfg.warps_n, cfg.min_ctas_per_sm, cfg.prefetch) == (
                    wm, wn, min_ctas, prefetch,
                )  # fmt: skip
                assert cols <= cfg.hidden_size < cols + wn * 32 * 8  # one CTA covers the row
                # the measured slice at most: 40 elements a thread, 48 / 56 in the forwards'
                # bands past 20480
                most = {24576: 48, 28672: 56}.get(upto, 40)
                assert cfg.hidden_size // (wn * 32) <= most
            prev = upto + 8
        past = r.select_norm(key, bands[-1][0] + 8, 16384, 16, backend=backend)
        assert past == r._capped_general(key, bands[-1][0] + 8, backend)
        assert past.origin == "measured"  # a register cap (_general_cap)
        assert past.min_ctas_per_sm == r._general_cap(key, backend)[0] > 1
    fp32 = r.NormKey("layernorm_fwd", "fp32", "fp32", "fp32")
    assert r.select_norm(fp32, 4100, 16384, 16).origin == "te"  # measured on 16-bit rows only
    assert r.select_norm(fp32, 46336, 16384, 16).origin == "te"


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("op", r.NORM_OPS)
def test_long_vector_rows_take_capped_te_general(op, dtype):
    """Past the last band of registry._WIDE_VECTOR_GENERAL, 16-bit rows of 16-byte vectors that
    nothing tiles take TE's general entry with a register cap on NVRTC (_CAPPED_GENERAL; the
    bf16 LayerNorm forward _CAPPED_GENERAL_BF16's): the same CTA shape and chunk (several CTAs
    a row), only the cap and the pipeline differ; the Numba path's caps are its own
    (_CAPPED_GENERAL_NUMBA; the forwards' _CAPPED_GENERAL_NUMBA_LEAN, but with FP8 outputs).
    NVRTC's FP8-output RMSNorm, the fused add, narrower alignment and fp32 keep TE's entry."""
    key = r.NormKey(op, dtype, dtype, dtype)
    start = max(by_op[op][-1][0] for by_op in r._WIDE_VECTOR_GENERAL.values()) + 8
    for cols in (start, 46336, 121344, 131064):
        assert r.generated_tuned(key, cols) is None, cols  # nothing tiles these
        te = r.select_norm(key, cols, 16384, 16, measured=False)
        assert te.kind == "general" and te.origin == "te" and te.hidden_size < cols
        cfg = r.select_norm(key, cols, 16384, 16, backend="nvrtc")
        bf16_cap = r._CAPPED_GENERAL_BF16.get(op) if dtype == "bf16" else None
        min_ctas, prefetch = bf16_cap or r._CAPPED_GENERAL[op]
        assert cfg == dataclasses.replace(
            te, origin="measured", min_ctas_per_sm=min_ctas, prefetch=prefetch
        )
        assert cfg.threads * min_ctas <= r.MAX_THREADS_PER_SM
        numba = r.select_norm(key, cols, 16384, 16, backend="numba")
        # the forwards' lean form fits a tighter cap than the backwards take
        nb_min, nb_pf = r._CAPPED_GENERAL_NUMBA_LEAN.get(op) or r._CAPPED_GENERAL_NUMBA[op]
        assert nb_min > r._CAPPED_GENERAL_NUMBA[op][0] or not op.endswith("_fwd")
        assert numba == dataclasses.replace(
            te, origin="measured", min_ctas_per_sm=nb_min, prefetch=nb_pf
        )
        assert r.select_norm(key, cols, 16384, 8, backend="nvrtc").origin == "te"
        assert r.select_norm(key, cols, 16384, 8, backend="numba").origin == "te"
        assert r.select_norm(key, cols, 16383, 16, backend="nvrtc") == cfg  # general anyway
    if op.endswith("_fwd"):
        for out in ("fp8e4m3", "fp8e5m2"):
            fp8 = r.NormKey(op, dtype, dtype, out)
            numba = r.select_norm(fp8, 46336, 16384, 16, backend="numba")
            assert (numba.origin, numba.min_ctas_per_sm) == (
                "measured", r._CAPPED_GENERAL_NUMBA[op][0],
            )  # fmt: skip
            cfg = r.select_norm(fp8, 46336, 16384, 16, backend="nvrtc")
            cap = r._CAPPED_GENERAL_FP8[op]
            assert cfg.origin == ("te" if cap is None else "measured")
            if cap is not None:  # its own cap (LayerNorm: not bf16 output's)
                assert (cfg.min_ctas_per_sm, cfg.prefetch) == cap
                bf16 = r.select_norm(r.NormKey(op, "bf16", "bf16", "bf16"), 46336, 16384, 16)
                assert cfg.min_ctas_per_sm != bf16.min_ctas_per_sm
    if op == "rmsnorm_bwd":
        add = r.NormKey(op, dtype, dtype, dtype, True)
        for backend in ("nvrtc", "numba"):
            assert r.select_norm(add, 46336, 16384, 16, backend=backend).origin == "te"


@pytest.mark.parametrize(
    "op, cols, shape",
    [
        # 12544 = 49 x 256 (bf16: 1568 vectors): TE's 5-CTA 12800 entry scales to 5 CTAs,
        # which tile nothing; one CTA of 7 warps (56 elements a thread) does
        ("rmsnorm_bwd", 12544, (1, 1, 7)),
        ("layernorm_bwd", 12544, (1, 1, 7)),
        # 13312 = 52 x 256: one CTA of 13 warps, 32 elements a thread (the backward's target)
        ("layernorm_bwd", 13312, (1, 1, 13)),
        # 26112 = 102 x 256: 2 CTAs of 17 warps (24 elements) nearer the target than one (48)
        ("rmsnorm_bwd", 26112, (2, 1, 17)),
    ],
)
def test_generated_fallback_ctas(op, cols, shape):
    key = r.NormKey(op, "bf16", "bf16", "bf16")
    cfg = r.generated_tuned(key, cols)
    assert cfg is not None and cfg.origin == "generated" and cfg.bytes_per_ldg == 16
    assert (cfg.ctas_per_row, cfg.warps_m, cfg.warps_n) == shape
    assert cols % cfg.cols_per_pass == 0
    # the count scaled from the nearest entry is not one of them
    tuned, _ = r._index(True, True)
    base = r._nearest_tuned(key, cols, tuned)
    assert round(base.ctas_per_row * cols / base.hidden_size) != cfg.ctas_per_row
    assert r.select_norm(key, cols, 16384, 16) == cfg
    # nothing tiles 18944 = 37 x 512 with at most 8 CTAs: general
    assert r.generated_tuned(key, 18944) is None


def test_generated_forwards_scale_from_measured_entries():
    """Forwards take their CTA count from the measured entries (one CTA a row from 8192 to
    32768 columns), not from TE's nearer several-CTA entries (registry._nearest_tuned)."""
    for op in ("layernorm_fwd", "rmsnorm_fwd"):
        key = r.NormKey(op, "bf16", "bf16", "bf16")
        tuned, _ = r._index(True, True)
        for cols, te_shape, shape in (
            (28160, (4, 5, 8), (1, 22, 16)),
            (13312, (2, 13, 16), (1, 13, 16)),
        ):
            te_based = r.generated_tuned(key, cols, measured=False)  # TE's table only
            gen = r.generated_tuned(key, cols)
            assert (te_based.ctas_per_row, te_based.warps_n, te_based.bytes_per_ldg) == te_shape
            assert (gen.ctas_per_row, gen.warps_n, gen.bytes_per_ldg) == shape
            assert r._nearest_tuned(key, cols, tuned).origin == "measured"
    # backwards keep the nearest of both tables (TE's 4-CTA 30720 entry here)
    bwd = r.NormKey("layernorm_bwd", "bf16", "bf16", "bf16")
    gen = r.generated_tuned(bwd, 28160)
    assert gen.ctas_per_row == 4 and gen == r.generated_tuned(bwd, 28160, measured=False)


@pytest.mark.parametrize(
    "op, cols, shape, prefetch",
    [
        # one CTA, 224-896 threads, 32-56 elements a thread: the pipeline fits (run 150 / 153)
        ("rmsnorm_fwd", 13312, (1, 1, 13), True),
        ("layernorm_fwd", 28672, (1, 1, 28), True),  # LayerNorm: up to 32 elements a thread
        ("rmsnorm_fwd", 36864, (1, 1, 24), True),  # RMSNorm: 72 of 80 registers
        ("layernorm_fwd", 58368, (4, 1, 19), True),  # 24 elements, 4 CTAs
        # LayerNorm past 32 elements where 4 registers an element fit (ptxas: no spill)
        ("layernorm_fwd", 8960, (1, 1, 7), True),  # 40 elements, 160 of 255 registers
        ("layernorm_fwd", 12544, (1, 1, 7), True),  # 56 elements, 224 of 255
        ("layernorm_fwd", 4992, (1, 1, 3), False),  # 3 warps: several CTAs an SM without it
        # where it does not (runs 153-154: 0.43-0.85x with it)
        ("layernorm_fwd", 36864, (1, 1, 24), False),  # 48 elements
        ("layernorm_fwd", 25088, (1, 1, 14), False),  # 56 elements
        ("rmsnorm_fwd", 57344, (1, 1, 32), False),  # 84 of 64 registers
        ("layernorm_fwd", 61440, (1, 1, 30), False),
        # backwards keep it off
        ("layernorm_bwd", 13312, (1, 1, 13), False),
    ],
)
def test_generated_pipeline(op, cols, shape, prefetch):
    """Generated 16-bit forwards run the pipeline where it paid (registry._gen_prefetch);
    fp32 rows and backwards do not. (The widest vectors: NVRTC may narrow them, below.)"""
    cfg = r.generated_tuned(r.NormKey(op, "bf16", "bf16", "bf16"), cols, narrow=False)
    assert (cfg.ctas_per_row, cfg.warps_m, cfg.warps_n) == shape
    assert cfg.prefetch is prefetch
    assert r.select_norm(cfg.key, cols, 16384, 16, backend="numba").prefetch is prefetch
    # fp16 and FP8 outputs follow the same rule; their shapes may differ (other measured bases)
    for w, o in (("fp16", "fp16"), ("bf16", "fp8e4m3")):
        other = r.generated_tuned(r.NormKey(op, w, w, o), cols, narrow=False)
        if other and (other.ctas_per_row, other.warps_m, other.warps_n) == shape:
            assert other.prefetch is prefetch
    fp32 = r.generated_tuned(r.NormKey(op, "fp32", "fp32", "fp32"), cols)
    assert fp32 is None or not fp32.prefetch


@pytest.mark.parametrize(
    "cols, wide, narrow",
    [
        # (warps_n, bytes_per_ldg) of one CTA: 14 / 21 / 25 warps of 40-56 elements without the
        # pipeline -> 28 / 30 / 30 warps of 28-30 elements with it (run 161: 1.14-1.70x)
        (25088, (14, 16), (28, 8)),
        (26880, (21, 16), (30, 8)),
        (28800, (25, 8), (30, 4)),
        # from 11 warps (19712: 0.84-0.89x) or 3 (4992: 0.95x) the widest vectors stay
        (19712, (11, 16), (11, 16)),
        (4992, (3, 8), (3, 8)),
    ],
)
def test_generated_narrow_vectors(cols, wide, narrow):
    """NVRTC's generated one-CTA 16-bit forwards take narrower vectors where the widest leave
    13 or more warps without the pipeline (registry._GEN_NARROW_MIN_WARPS); Numba's keep them."""
    for w, o in (("bf16", "bf16"), ("fp16", "fp16"), ("bf16", "fp8e4m3")):
        key = r.NormKey("layernorm_fwd", w, w, o)
        nv = r.select_norm(key, cols, 16384, 16, backend="nvrtc")
        nb = r.select_norm(key, cols, 16384, 16, backend="numba")
        assert nv.origin == nb.origin == "generated" and nv.ctas_per_row == nb.ctas_per_row == 1
        assert (nb.warps_n, nb.bytes_per_ldg, nb.prefetch) == (*wide, False)
        assert (nv.warps_n, nv.bytes_per_ldg, nv.prefetch) == (*narrow, narrow != wide)
        assert nv == r.generated_tuned(key, cols) and nb == r.generated_tuned(
            key, cols, narrow=False
        )


@pytest.mark.parametrize(
    "op, cols, before, after",
    [
        # 2 CTAs of 23 warps (736 threads, 88 registers each) would hold 40 elements: 4 CTAs of
        # 8-byte vectors, 20 elements, fit (run 155: the 40-element shape ran 1036 GB/s)
        ("layernorm_bwd", 58880, (2, 23, 16), (4, 23, 8)),
        ("rmsnorm_bwd", 58880, (2, 23, 16), (4, 23, 8)),
        # one CTA of 26 warps (832 threads, 72 registers) would hold 32: 2 CTAs of 13 warps
        ("rmsnorm_bwd", 26624, (1, 26, 16), (2, 13, 16)),
        # 32 elements on 2 x 17 warps (120 registers): RMSNorm's 3 an element fit, so the shape
        # stays (run 156: moved to 4 CTAs of 16 elements it ran 0.78x)
        ("rmsnorm_bwd", 34816, (2, 17, 16), (2, 17, 16)),
    ],
)
def test_generated_backward_slices_fit_registers(op, cols, before, after):
    """Generated backward slices take at most registry._GEN_BWD_REGS_PER_ELT registers an
    element (LayerNorm 4, RMSNorm 3) of their threads' share of an SM."""
    key = r.NormKey(op, "bf16", "bf16", "bf16")
    per_elt = r._GEN_BWD_REGS_PER_ELT[op.split("_")[0]]
    cfg = r.generated_tuned(key, cols)
    assert (cfg.ctas_per_row, cfg.warps_n, cfg.bytes_per_ldg) == after
    elts = cols // (cfg.ctas_per_row * cfg.warps_n * 32)
    assert per_elt * elts <= r._thread_registers(cfg.threads)
    ctas, wn, _ = before  # what the same candidates give without the constraint
    unconstrained = r._gen_shape(cols, r.itemsize("bf16"), (ctas,), r._target_elts(op, cols))
    assert unconstrained == before
    if after != before:
        assert per_elt * (cols // (ctas * wn * 32)) > r._thread_registers(wn * 32)
    assert r.select_norm(key, cols, 16384, 16) == cfg
    assert r._thread_registers(1024) == 64 and r._thread_registers(32) == 255


def test_odd_sizes_and_rows_stay_general():
    # Odd sizes that nothing tiles stay general; so do unaligned or odd row counts.
    assert r.select_norm(BF16, 5003, 16384, 256).kind == "general"
    assert r.select_norm(BF16, 2560, 16383, 256).kind == "general"
    assert r.select_norm(BF16, 2560, 16384, 256, generate=False, measured=False).kind == "general"
    # With the measured table, sizes it does not list take a measured neighbour as template.
    gen = r.select_norm(BF16, 6656, 16384, 256)  # 26 x 256: neither TE nor the sweep has it
    assert gen.origin == "generated" and 6656 % gen.cols_per_pass == 0


def test_narrow_rows_take_the_measured_one_cta_shapes():
    # 5003 bf16 columns: 2-byte row pitch, scalar accesses; one CTA covers the row.
    cfg = r.select_norm(BF16, 5003, 16384, 2, backend="numba")
    assert (cfg.kind, cfg.origin, cfg.num_elts) == ("general", "measured", 1)
    assert (cfg.warps_m, cfg.warps_n) == (2, 8)
    assert 5003 <= cfg.hidden_size < 5003 + cfg.warps_n * 32  # no empty warp-column
    # NVRTC's own layernorm_fwd shapes (16-bit rows): 1 x 4 warps, pipelined, at 5003
    nv = r.select_norm(BF16, 5003, 16384, 2, backend="nvrtc")
    assert (nv.warps_m, nv.warps_n, nv.min_ctas_per_sm, nv.prefetch) == (1, 4, 3, True)
    assert nv == r.select_norm(BF16, 5003, 16384, 2)  # no backend: NVRTC's
    assert 5003 <= nv.hidden_size < 5003 + 4 * 32
    fp32_ln = r.NormKey("layernorm_fwd", "fp32", "fp32", "fp32")
    assert r.select_norm(fp32_ln, 5003, 16384, 4).warps_n == 8  # fp32: the shared table
    # each op and bucket takes its row of its backend's table
    for backend in ("numba", "nvrtc"):
        for op, table in r._NARROW_GENERAL.items():
            if backend == "nvrtc":
                table = r._NARROW_GENERAL_NVRTC.get(op, table)
            key = r.NormKey(op, "bf16", "bf16", "bf16", op == "rmsnorm_bwd")
            prev = r._NARROW_MIN_COLS
            for upto, wm, wn, min_ctas, prefetch in table:
                for cols in (prev, upto - 1):
                    c = r.select_norm(key, cols, 16384, 2, backend=backend)
                    assert (c.warps_m, c.warps_n, c.min_ctas_per_sm, c.prefetch) == (
                        wm, wn, min_ctas, prefetch,
                    )  # fmt: skip
                    assert c.fused_add == key.fused_add and c.hidden_size >= cols
                    assert -(-cols // (wn * 32)) <= 64  # elements a thread: register-sized
                prev = upto + 1
    # wider vectors where the alignment allows them (8 bytes: 4 bf16; fp32 rows: 4 bytes)
    assert r.select_norm(BF16, 4100, 16384, 8).num_elts == 4
    fp32 = r.NormKey("rmsnorm_fwd", "fp32", "fp32", "fp32")
    assert r.select_norm(fp32, 5003, 16384, 4).bytes_per_ldg == 4
    # FP8 output rows of odd length are 1-byte aligned: still one bf16 element of x a vector
    fp8 = r.NormKey("layernorm_fwd", "bf16", "bf16", "fp8e4m3")
    cfg = r.select_norm(fp8, 5003, 16384, 1)
    assert (cfg.origin, cfg.num_elts, cfg.warps_n) == ("measured", 1, 8)


def test_narrow_table_leaves_other_rows_to_te():
    te = r.select_norm(BF16, 5003, 16384, 2, measured=False)
    assert te.origin == "te" and te.hidden_size == 8192
    assert r.narrow_general(BF16, 5003, 16) is None  # 16-byte vectors: TE's general entries
    assert r.select_norm(BF16, 1000, 16384, 2).origin == "te"  # short rows: not measured
    assert r.select_norm(BF16, 16385, 16384, 2).origin == "te"  # long rows: several CTAs


def test_measured_entries_carry_their_grid():
    raw = dict(
        op="rmsnorm_fwd", hidden_size=4096, weight="bf16", input="bf16", output="bf16",
        ctas_per_row=1, warps_m=1, warps_n=2, bytes_per_ldg=16, min_ctas_per_sm=8, prefetch=True,
    )  # fmt: skip
    assert r._measured_from_json(raw).grid == "persistent"  # entries written before the field
    cfg = r._measured_from_json(dict(raw, grid="rows"))
    assert (cfg.grid, cfg.warps_n, cfg.min_ctas_per_sm, cfg.prefetch) == ("rows", 2, 8, True)
    assert all(c.grid in r.GRIDS for c in r.measured_configs() + r.measured_configs("numba"))
    assert not any(c.grid == "rows" for c in r.measured_configs() if c.is_backward)


@pytest.mark.parametrize("backend", ["nvrtc", "numba"])
def test_vector_rows_without_a_tuned_entry_take_the_measured_one_cta_shapes(backend):
    # 1000 bf16 columns: 16-byte vectors (125 a row) but no tile shape divides them
    table = r._VECTOR_GENERAL[backend]
    for op in r.NORM_OPS:
        for add in (False, True) if op == "rmsnorm_bwd" else (False,):
            key = r.NormKey(op, "bf16", "bf16", "bf16", add)
            te = r.select_norm(key, 1000, 16384, 16, measured=False)
            for cols, rows in ((1000, 16384), (1000, 6), (520, 16384), (1016, 16384)):
                cfg = r.select_norm(key, cols, rows, 16, backend=backend)
                if op not in table:  # not swept on this backend: TE's entry
                    assert cfg == r.select_norm(key, cols, rows, 16, measured=False)
                    continue
                wm, wn, min_ctas, prefetch = table[op]
                assert (cfg.kind, cfg.origin, cfg.bytes_per_ldg) == ("general", "measured", 16)
                assert (cfg.warps_m, cfg.warps_n, cfg.min_ctas_per_sm, cfg.prefetch) == (
                    wm, wn, min_ctas, prefetch,
                )  # fmt: skip
                assert cfg.fused_add == add
                # one CTA covers the row, with less than one pass of vectors to spare
                assert cols <= cfg.hidden_size < cols + wn * 32 * 8
            assert te.origin == "te" and (te.warps_m, te.warps_n) == (4, 1)


@pytest.mark.parametrize("backend", ["nvrtc", "numba"])
def test_fp8_outputs_take_their_own_band_shapes(backend):
    """registry._WIDE_VECTOR_GENERAL_FP8: FP8-output forwards take their own shape in the bands
    it lists and the band's shape elsewhere; 16-bit outputs keep the band's."""
    for op, bands in r._WIDE_VECTOR_GENERAL[backend].items():
        if op.endswith("_bwd"):
            continue
        own = r._WIDE_VECTOR_GENERAL_FP8[backend].get(op, {})
        assert set(own) <= {b[0] for b in bands}
        for upto, *shape in bands:
            if shape[0] is None:
                continue
            cols = upto - 8
            for out in ("bf16", "fp8e4m3", "fp8e5m2"):
                key = r.NormKey(op, "bf16", "bf16", out)
                cfg = r.select_norm(key, cols, 16384, 16, backend=backend)
                want = own.get(upto, shape) if out.startswith("fp8") else shape
                got = (cfg.warps_m, cfg.warps_n, cfg.min_ctas_per_sm, cfg.prefetch)
                assert (cfg.origin, got) == ("measured", tuple(want)), (op, cols, out)
    if backend == "nvrtc":
        assert r._WIDE_VECTOR_GENERAL_FP8[backend]  # (the NVRTC sweep's shapes)


def test_vector_table_leaves_other_rows_alone():
    key = r.NormKey("layernorm_fwd", "bf16", "bf16", "bf16")
    assert r.vector_general(key, 1000, 8) is None  # 8-byte vectors only
    assert r.vector_general(key, 512, 16) is None  # TE's 512-column entry's rows
    assert r.vector_general(key, 1032, 8, "numba") is None  # the bands want 16-byte vectors too
    fp32 = r.NormKey("layernorm_fwd", "fp32", "fp32", "fp32")
    assert r.vector_general(fp32, 1000, 16) is None  # measured on 16-bit rows only
    assert r.select_norm(fp32, 1000, 16384, 16).origin == "te"
    # tuned sizes keep their tuned entries
    assert r.select_norm(key, 1024, 16384, 16).kind == "tuned"
    assert r.select_norm(key, 768, 16384, 16).kind == "tuned"
    # a misaligned view of 1000 columns (2-byte pitch): TE's general entry (the narrow table
    # starts at 1025 columns)
    assert r.select_norm(key, 1000, 16384, 2).origin == "te"


@pytest.mark.parametrize("backend", ["nvrtc", "numba"])
def test_size_specs_hold_what_dispatch_plans(monkeypatch, backend):
    """``precompile --hidden/--keys`` compiles the kernels dispatch plans for those sizes
    (generated tuned entries, measured general shapes, staged entries and their unstaged
    fallback, rows of several CTAs), rows a multiple of four and not, arrays freshly allocated."""
    from types import SimpleNamespace

    from numba_norms import dispatch, precompile

    monkeypatch.setattr(dispatch, "device_limits", lambda device: precompile._LIMITS)
    monkeypatch.setattr(dispatch, "_plan_cache", {})
    fake = SimpleNamespace(
        occupancy_forward=lambda spec: 2,
        occupancy_backward=lambda spec: 2,
        active_clusters=lambda spec, cluster: 64,
    )
    hidden, keys = (1000, 1536, 5003 * 2, 65536), (17, 1000, 4097, 32768, 131072)
    specs = precompile.size_specs(backend, hidden, keys)
    have = {s.kernel_key for _, _, s in specs} | {
        (s.kernel_key, s.ctas_per_row) for _, _, s in specs
    }
    assert len(specs) == len(set((s.kernel_key, s.ctas_per_row) for _, _, s in specs))

    def aligned(nbytes):
        return min(256, nbytes & -nbytes)

    norm_keys = dict.fromkeys(c.key for c in r.norm_configs(include_fp8=True))  # every one
    for key in norm_keys:
        for cols in hidden:
            for rows in (64, 37):
                vec = tuple(
                    (aligned(cols * n), n) for n in (r.itemsize(key.input), r.itemsize(key.output))
                )
                plan = dispatch._norm_plan(backend, fake, key, rows, cols, vec, None)
                assert plan.spec.kernel_key in have, (key, cols, rows)
    for op in r.SOFTMAX_OPS:
        for variant in r.SOFTMAX_VARIANTS:
            for dtype in r.SOFTMAX_DTYPES:
                size = r.itemsize(dtype)
                for cols in keys:
                    vec = [(aligned(cols * size), size)] * 2
                    if variant == "masked" and op == "softmax_fwd":
                        vec.append((aligned(cols), 1))
                    plan = dispatch._softmax_plan(
                        backend, fake, op, variant, dtype, 48, cols, tuple(vec), None
                    )
                    want = (plan.spec.kernel_key, plan.spec.ctas_per_row)
                    assert want in have, (op, variant, dtype, cols)


def test_precompile_cli_takes_sizes(tmp_path, monkeypatch, capsys):
    """``numba-norms precompile --hidden`` compiles the kernels of those sizes into the disk
    cache (a second run finds them all); sizes must be positive integers."""
    import rtc
    from numba_norms import cli, precompile

    monkeypatch.setenv("NUMBA_NORMS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("NUMBA_NORMS_DISABLE_DISK_CACHE", raising=False)
    with pytest.raises(SystemExit):
        cli.main(["precompile", "--arch", "sm_90", "--hidden", "0"])
    assert "expected a positive integer, got '0'" in capsys.readouterr().err
    argv = ["precompile", "--arch", "sm_90", "--ops", "rmsnorm", "--hidden", "1000", "1536"]
    want = len(precompile.size_specs("nvrtc", (1000, 1536), (), ("rmsnorm",)))
    assert want > 4
    rtc.clear_cache(memory=True, disk=False)
    try:
        assert cli.main(argv) == 0
        assert f"compiled {want} kernels (0 already cached)" in capsys.readouterr().out
        assert len(rtc.cache_entries()) == want
        rtc.clear_cache(memory=True, disk=False)
        assert cli.main(argv) == 0
        assert f"compiled 0 kernels ({want} already cached)" in capsys.readouterr().out
    finally:
        rtc.clear_cache(memory=True, disk=False)


def test_precompile_cli_repairs_and_fills_the_directory_it_names(tmp_path, monkeypatch, capsys):
    """A damaged entry is compiled again in its place and the run succeeds (before, exit 2: no
    entry was added); a second directory in the same process gets every kernel (before, the
    in-memory modules counted as cached and it stayed empty). Session 41's cache stress test."""
    import rtc
    from numba_norms import cli

    argv = ["precompile", "--arch", "sm_90", "--ops", "rmsnorm", "--hidden", "64"]
    monkeypatch.delenv("NUMBA_NORMS_DISABLE_DISK_CACHE", raising=False)
    monkeypatch.setenv("NUMBA_NORMS_CACHE_DIR", str(tmp_path / "a"))
    try:
        assert cli.main(argv) == 0
        entries = [p for p, _ in rtc.cache_entries()]
        capsys.readouterr()
        entries[0].write_bytes(entries[0].read_bytes()[:100])
        assert cli.main(argv) == 0
        assert f"compiled 1 kernels ({len(entries) - 1} already cached)" in capsys.readouterr().out
        assert [p for p, _ in rtc.cache_entries()] == entries
        assert entries[0].stat().st_size > 100
        monkeypatch.setenv("NUMBA_NORMS_CACHE_DIR", str(tmp_path / "b"))
        assert cli.main(argv) == 0
        assert len(rtc.cache_entries()) == len(entries)
    finally:
        rtc.clear_cache(memory=True, disk=False)


def test_precompile_cli_refuses_a_cache_that_keeps_nothing(tmp_path, monkeypatch, capsys):
    from numba_norms import cli

    argv = ["precompile", "--arch", "sm_90", "--ops", "rmsnorm", "--hidden", "64"]
    monkeypatch.setenv("NUMBA_NORMS_DISABLE_DISK_CACHE", "1")
    assert cli.main(argv) == 2
    assert "nothing compiled now would be kept" in capsys.readouterr().err
    monkeypatch.delenv("NUMBA_NORMS_DISABLE_DISK_CACHE")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("NUMBA_NORMS_CACHE_DIR", str(blocker / "cache"))
    assert cli.main(argv) == 2
    assert "is not writable" in capsys.readouterr().err
    # a usable root whose entries/ is not a directory: nothing could be stored either
    root = tmp_path / "cache"
    root.mkdir()
    (root / "entries").write_text("a file where the entries go")
    monkeypatch.setenv("NUMBA_NORMS_CACHE_DIR", str(root))
    assert cli.main(argv) == 2
    assert "is not writable" in capsys.readouterr().err


def test_precompiled_entries_are_readable_by_every_user(tmp_path, monkeypatch, capsys):
    """cuda.core writes entries owner-only; precompile opens them (and their directories) to
    every user's reading, so a cache built by root in an image serves its runtime user."""
    import stat

    import rtc
    from numba_norms import cli

    monkeypatch.setenv("NUMBA_NORMS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("NUMBA_NORMS_DISABLE_DISK_CACHE", raising=False)
    rtc.clear_cache(memory=True, disk=False)
    try:
        assert (
            cli.main(["precompile", "--arch", "sm_90", "--ops", "rmsnorm", "--hidden", "64"]) == 0
        )
        entries = [p for p, _ in rtc.cache_entries()]
        assert entries
        for p in entries + [p.parent for p in entries] + [tmp_path / "cache" / "entries"]:
            mode = stat.S_IMODE(p.stat().st_mode)
            assert mode & 0o444 == 0o444, (p, oct(mode))
        assert stat.S_IMODE((tmp_path / "cache" / "tmp").stat().st_mode) & 0o077 == 0
    finally:
        rtc.clear_cache(memory=True, disk=False)


def test_cache_clear_fails_when_entries_stay(tmp_path, monkeypatch, capsys):
    import pathlib

    from numba_norms import cli

    entry = tmp_path / "cache" / "entries" / "ab" / ("c" * 62)
    entry.parent.mkdir(parents=True)
    entry.write_bytes(b"x")
    monkeypatch.setenv("NUMBA_NORMS_CACHE_DIR", str(tmp_path / "cache"))

    def unlink(self, missing_ok=False):
        raise PermissionError(13, "Permission denied", str(self))

    with monkeypatch.context() as m:
        m.setattr(pathlib.Path, "unlink", unlink)
        with pytest.warns(RuntimeWarning, match="cannot remove cache entry"):
            assert cli.main(["cache", "clear"]) == 1
    assert "1 entries could not be removed" in capsys.readouterr().err
    assert cli.main(["cache", "clear"]) == 0 and not entry.exists()


@pytest.mark.parametrize("action", ["list", "clear"])
def test_cache_cli_names_a_cache_path_that_is_a_file(tmp_path, monkeypatch, capsys, action):
    from numba_norms import cli

    blocker = tmp_path / "a-file"
    blocker.write_text("not a cache")
    monkeypatch.setenv("NUMBA_NORMS_CACHE_DIR", str(blocker))
    assert cli.main(["cache", action]) == 2  # was "0 entries" / "removed 0" and 0
    assert f"cache: {blocker} is not a directory" in capsys.readouterr().err


def test_bench_cli_hands_every_later_argument_to_the_script(monkeypatch):
    """Options after ``bench`` are perf/bench.py's, in order; --quick unless a size is given."""
    import subprocess

    from numba_norms import cli

    calls = []
    monkeypatch.setattr(cli, "_has_gpu", lambda: True)
    monkeypatch.setattr(subprocess, "call", lambda cmd: calls.append(cmd[2:]) or 0)
    assert cli.main(["bench", "--ops", "layernorm_fwd", "--no-jit"]) == 0
    assert cli.main(["bench", "--full", "--dtypes", "bf16"]) == 0
    assert calls == [
        ["--quick", "--ops", "layernorm_fwd", "--no-jit"],
        ["--full", "--dtypes", "bf16"],
    ]
