"""The launch planner against hand-computed cases on fake devices (TE's entries: the measured
table would change the shapes these cases were computed for)."""

from __future__ import annotations

import dataclasses

import pytest

from numba_norms import planner as p
from numba_norms import registry as r

H200 = p.DeviceLimits(sm_count=132)
A100 = p.DeviceLimits(sm_count=108)
FWD = r.NormKey("layernorm_fwd", "bf16", "bf16", "bf16")
BWD = r.NormKey("layernorm_bwd", "bf16", "bf16", "bf16")


def test_vector_elements():
    assert p.vector_elements([(16, 2), (16, 4)], 8) == 4
    assert p.vector_elements([(16, 2), (4, 4)], 8) == 1
    assert p.vector_elements([(256, 2)], 8) == 8
    assert p.vector_elements([(2, 2)], 8) == 1


def test_tuned_single_cta_forward():
    cfg = r.select_norm(FWD, 4096, 16384, 256, measured=False)
    spec = p.norm_spec(cfg, 4096, 8, H200)
    assert (spec.num_elts, spec.ldgs, spec.general, spec.ctas_per_row) == (8, 4, False, 1)
    plan = p.norm_plan(spec, 16384, 4096, H200, 8)
    # TE: ctas_per_col = sm_count * occupancy / ctas_per_row = 132 * 8.
    assert plan.grid == (1, 1056, 1) and plan.block == (128, 1, 1)
    assert not plan.cooperative and plan.scratch_bytes == 0
    assert plan.row_iterations == 16
    # Fewer rows than resident CTAs: one row group per row (warps_m == 1).
    assert p.norm_plan(spec, 100, 4096, H200, 8).ctas_per_col == 100


def test_grid_of_rows_gives_a_row_group_per_cta():
    persistent = r.NormConfig.tuned_for(
        FWD, 4096, ctas_per_row=1, warps_m=2, warps_n=2, origin="measured", min_ctas_per_sm=8
    )
    cfg = dataclasses.replace(persistent, grid="rows")
    spec = p.norm_spec(cfg, 4096, 8, H200)
    assert spec.grid_of_rows and not p.norm_spec(persistent, 4096, 8, H200).grid_of_rows
    plan = p.norm_plan(spec, 16384, 4096, H200, 8)
    assert plan.grid == (1, 8192, 1) and plan.row_iterations == 1  # 2 rows a CTA
    assert plan.scratch_bytes == 0 and not plan.cooperative
    assert p.norm_plan(spec, 7, 4096, H200, 8).ctas_per_col == 4
    # the persistent grid of the same kernel: the resident CTAs loop over the rows
    assert p.norm_plan(p.norm_spec(persistent, 4096, 8, H200), 16384, 4096, H200, 8).grid == (
        1, 1056, 1,
    )  # fmt: skip
    # past the grid's y limit the CTAs loop, as persistent ones do
    big = p.norm_plan(spec, 300000, 4096, H200, 8)
    assert big.ctas_per_col == 65535 and big.row_iterations == 3
    small_y = dataclasses.replace(H200, max_grid_y=100)
    assert p.norm_plan(spec, 16384, 4096, small_y, 8).ctas_per_col == 100
    # a general entry's rows longer than one CTA covers keep the persistent grid
    gen = r.NormConfig.general_for(
        FWD, 1024, warps_m=1, warps_n=4, bytes_per_ldg=16, origin="measured", grid="rows"
    )
    assert p.norm_spec(gen, 1000, 8, H200).grid_of_rows
    long_rows = p.norm_spec(gen, 3000, 8, H200)
    assert long_rows.ctas_per_row == 3 and not long_rows.grid_of_rows
    assert p.norm_plan(long_rows, 16384, 3000, H200, 8).ctas_per_col == 132 * 8 // 3
    with pytest.raises(ValueError, match="max_grid_y"):
        p.DeviceLimits(sm_count=132, max_grid_y=0)


def test_tuned_multi_cta_forward_is_cooperative_with_barrier_and_stats():
    cfg = r.select_norm(FWD, 65536, 16384, 256, measured=False)
    assert cfg.ctas_per_row == 8
    spec = p.norm_spec(cfg, 65536, 8, H200)
    assert spec.ldgs == 65536 // (8 * 4 * 32 * 8)
    plan = p.norm_plan(spec, 16384, 65536, H200, 2)
    assert plan.ctas_per_col == 132 * 2 // 8 == 33
    assert plan.grid == (8, 33, 1) and plan.cooperative
    assert (plan.barrier_offset, plan.barrier_bytes) == (0, 33 * 4)
    # [2 buffers][33 row groups][1 warp row][8 CTAs][2 values] fp32, after a 256-byte boundary.
    assert (plan.stats_offset, plan.stats_bytes) == (256, 2 * 33 * 1 * 8 * 2 * 4)
    assert plan.scratch_bytes == 256 + 4352


def test_general_multi_cta_for_very_long_rows():
    cfg = r.select_norm(
        FWD, 131072, 63, 256, measured=False
    )  # 63 rows: not a multiple of 4, so general
    spec = p.norm_spec(cfg, 131072, 8, A100)
    assert (spec.general, spec.ctas_per_row, spec.ldgs) == (True, 16, 8)
    plan = p.norm_plan(spec, 64, 131072, A100, 4)
    assert plan.ctas_per_col == min(108 * 4 // 16, 64) == 27
    assert plan.cooperative and plan.grid == (16, 27, 1)


def test_kernel_key_says_whether_ctas_share_a_row():
    """Both backends compile in whether CTAs share a row (the inter-CTA exchange), so the key
    carries it; the CTA count itself stays a run-time value."""
    cfg = r.select_norm(FWD, 131072, 63, 256, measured=False)
    one, three, many = (p.norm_spec(cfg, n, 8, A100) for n in (cfg.hidden_size, 3 * 8192, 131072))
    assert [s.ctas_per_row for s in (one, three, many)] == [1, 3, 16]
    assert (one.multi_cta, three.multi_cta, many.multi_cta) == (False, True, True)
    assert one.kernel_key[:-1] == many.kernel_key[:-1] and one.kernel_key != many.kernel_key
    assert three.kernel_key == many.kernel_key
    sm = r.select_softmax("softmax_fwd", "scaled", "bf16", 16384)
    one, many = (p.softmax_spec(sm, n, 8, H200) for n in (16384, 131072))
    assert (one.ctas_per_row, many.ctas_per_row) == (1, 8)
    assert one.kernel_key[:-1] == many.kernel_key[:-1] and one.kernel_key != many.kernel_key


def test_simulator_keeps_one_cta_per_row():
    sim = p.DeviceLimits.simulator()
    cfg = r.select_norm(FWD, 131072, 63, 256, measured=False)
    spec = p.norm_spec(cfg, 131072, 8, sim)
    assert spec.ctas_per_row == 1 and spec.ldgs == 131072 // (4 * 32 * 8)
    plan = p.norm_plan(spec, 5, 131072, sim, 2)
    assert not plan.cooperative and plan.barrier_bytes == 0
    tuned = r.select_norm(FWD, 65536, 16, 256, measured=False)
    with pytest.raises(p.PlanError, match="CTAs per row"):
        p.norm_spec(tuned, 65536, 8, sim)


def test_misaligned_general_uses_scalar_accesses_with_same_coverage():
    cfg = r.select_norm(FWD, 4095, 16, 2, measured=False)
    assert cfg.kind == "general" and cfg.hidden_size == 8192
    spec = p.norm_spec(cfg, 4095, 1, H200)
    assert (spec.num_elts, spec.ldgs) == (1, 64)
    assert spec.cols_per_row_pass == 8192


def test_backward_partials_and_finalize():
    cfg = r.select_norm(BWD, 1024, 16384, 256, measured=False)
    assert (cfg.warps_m, cfg.warps_n) == (4, 1)
    spec = p.norm_spec(cfg, 1024, 8, H200)
    plan = p.norm_plan(spec, 16384, 1024, H200, 6)
    assert plan.ctas_per_col == min(132 * 6, 16384 // 4) == 792
    assert plan.partial_rows == 792 * 4
    assert plan.partial_bytes == 792 * 4 * 1024 * 4
    assert plan.scratch_bytes == 2 * plan.partial_bytes  # dgamma and dbeta partials
    assert plan.dbeta_partial_offset == plan.partial_bytes
    # 32 columns a CTA; 3168 partial rows want 396 thread rows of 8, capped at 32
    assert plan.finalize_grid == (32, 1, 1) and plan.finalize_block == (32, 32, 1)
    rms = r.select_norm(r.NormKey("rmsnorm_bwd", "bf16", "bf16", "bf16"), 1024, 16384, 256)
    rplan = p.norm_plan(p.norm_spec(rms, 1024, 8, H200), 16384, 1024, H200, 6)
    assert rplan.scratch_bytes == rplan.partial_bytes  # dgamma only


def test_dependent_launches_only_where_the_device_has_them():
    """On sm_90+ limits every one-CTA-a-row main kernel and the backward's finalize are launched
    as programmatic dependents; multi-CTA (cooperative) kernels never; older devices (the
    default limits) never."""
    hopper = dataclasses.replace(H200, dependent_launch=True)
    bwd = r.select_norm(BWD, 4096, 16384, 256)
    fwd = r.select_norm(FWD, 4096, 16384, 256)
    for limits, want in ((hopper, True), (H200, False)):
        plan = p.norm_plan(p.norm_spec(bwd, 4096, 8, limits), 16384, 4096, limits, 2)
        assert plan.dependent is want and plan.finalize_dependent is want
        fplan = p.norm_plan(p.norm_spec(fwd, 4096, 8, limits), 16384, 4096, limits, 2)
        assert fplan.dependent is want and fplan.finalize_dependent is False
    long = r.select_norm(BWD, 65536, 16384, 256, measured=False)
    lplan = p.norm_plan(p.norm_spec(long, 65536, 8, hopper), 16384, 65536, hopper, 1)
    assert lplan.cooperative and not lplan.dependent and lplan.finalize_dependent
    cfg = r.select_softmax("softmax_fwd", "scaled", "bf16", 1000)
    splan = p.softmax_plan(p.softmax_spec(cfg, 1000, 8, hopper), 4000, 1000, hopper, 16)
    assert splan.dependent and not splan.finalize_dependent


def test_capped_streaming_grids_are_not_dependent_launches():
    """A streaming softmax grid capped below the kernel's residency (3 CTAs an SM where 4 fit)
    waits for the previous kernel instead: launched beside it, some SMs would take 4 of its CTAs
    (run 180). At or above the cap it keeps the dependent launch."""
    hopper = dataclasses.replace(H200, dependent_launch=True)
    cfg = r.SoftmaxConfig("softmax_fwd", "block", 32768, "bf16", 1, 16, min_ctas_per_sm=3, chunk=2)
    spec = p.softmax_spec(cfg, 32768, 8, hopper)
    capped = p.softmax_plan(spec, 4096, 32768, hopper, 4)
    assert capped.grid == (1, 3 * 132, 1) and not capped.dependent
    full = p.softmax_plan(spec, 4096, 32768, hopper, 3)
    assert full.grid == (1, 3 * 132, 1) and full.dependent


def test_staged_softmax_plans():
    """A staged entry (``stage``): the row's vectors in dynamic shared memory (the last one
    whole, at least a word each), a CTA a row on the grid of rows; a row past what a CTA may
    have, or of several CTAs, is a PlanError (dispatch then runs the entry unstaged)."""
    cfg = r.SoftmaxConfig(
        "softmax_fwd", "block", 32768, "bf16", 1, 16, min_ctas_per_sm=2, chunk=4, grid="rows",
        stage=True,
    )  # fmt: skip
    spec = p.softmax_spec(cfg, 32768, 8, H200)
    assert spec.kernel_key != p.softmax_spec(dataclasses.replace(cfg, stage=False), 32768, 8,
                                             H200).kernel_key  # fmt: skip
    plan = p.softmax_plan(spec, 4096, 32768, H200, 3)
    assert plan.shared_bytes == 65536 and plan.grid == (1, 4096, 1)
    assert p.softmax_plan(p.softmax_spec(cfg, 1001, 8, H200), 8, 1001, H200, 3).shared_bytes == (
        126 * 16
    )
    assert p.softmax_plan(p.softmax_spec(cfg, 1001, 1, H200), 8, 1001, H200, 3).shared_bytes == (
        1001 * 4  # scalar bf16 vectors: a word each
    )
    assert p.softmax_spec(dataclasses.replace(cfg, stage=False), 100, 8, H200).stage_bytes(100) == 0
    small = dataclasses.replace(H200, max_shared_per_block_optin=64 * 1024)
    with pytest.raises(p.PlanError, match="65536 bytes of shared memory"):
        p.softmax_plan(spec, 4096, 32768, small, 3)
    longer = p.softmax_spec(cfg, 65536, 8, H200)  # two CTAs a row, timed on one: persistent
    with pytest.raises(p.PlanError, match="the grid of rows, one CTA or one cluster a row"):
        p.softmax_plan(longer, 4096, 65536, H200, 3)


def test_staged_rows_of_a_cluster():
    """A staged entry timed with rows of several CTAs: each CTA stages its part of the row
    (the kernels' RowPart, ``ceil(cols / ctas)`` rounded up to a vector), launched a cluster a
    row on the grid of rows; without clusters (the counter path, whose CTAs must all be
    resident) or where none can be placed, there is no staged plan."""
    hopper = dataclasses.replace(H200, clusters=True)
    cfg = r.SoftmaxConfig(
        "softmax_fwd", "block", 32768, "bf16", 1, 16, min_ctas_per_sm=1, keys=131072, chunk=4,
        grid="rows", stage=True,
    )  # fmt: skip
    for cols, ctas, part_bytes in (
        (131072, 4, 65536),
        (131064, 4, 65536),  # parts of 4096 vectors, the last one shorter
        (100000, 4, 3125 * 16),
        (65536, 2, 65536),
    ):
        spec = p.softmax_spec(cfg, cols, 8, hopper)
        plan = p.softmax_plan(spec, 256, cols, hopper, 2, max_active_clusters=30)
        assert (plan.grid, plan.cluster, plan.shared_bytes) == ((ctas, 256, 1), ctas, part_bytes)
    fp32 = dataclasses.replace(cfg, dtype="fp32", variant="aligned_causal")
    plan = p.softmax_plan(p.softmax_spec(fp32, 131072, 4, hopper), 64, 131072, hopper, 2, 30)
    assert plan.shared_bytes == 131072 and plan.cluster == 4
    scalar = p.softmax_plan(p.softmax_spec(cfg, 131071, 1, hopper), 64, 131071, hopper, 2, 30)
    assert scalar.shared_bytes == 32768 * 4  # a word a bf16 element
    # the masked variant: the mask bytes after the elements, a word per 4 columns
    masked = dataclasses.replace(cfg, variant="masked")
    plan = p.softmax_plan(p.softmax_spec(masked, 131072, 8, hopper), 64, 131072, hopper, 2, 30)
    assert plan.shared_bytes == 65536 + 32768
    plan = p.softmax_plan(p.softmax_spec(masked, 131070, 2, hopper), 64, 131070, hopper, 2, 30)
    assert plan.shared_bytes == 65536 + 8192 * 4 * 2  # 2-element vectors (x: 16384 words)
    with pytest.raises(p.PlanError, match="262144 bytes of shared memory"):  # a word each
        p.softmax_plan(p.softmax_spec(masked, 131069, 1, hopper), 64, 131069, hopper, 2, 30)
    spec = p.softmax_spec(cfg, 131072, 8, hopper)
    for limits, clusters in ((H200, None), (hopper, 0)):
        with pytest.raises(p.PlanError, match="one cluster a row"):
            p.softmax_plan(spec, 256, 131072, limits, 2, clusters)


def test_streaming_entries_on_the_grid_of_rows():
    """A streaming entry on the grid of all rows: a CTA a row (the hardware deals rows to SMs as
    they free up), no cap on the CTAs an SM, so a dependent launch like other grids of rows;
    rows longer than its CTA keep the persistent grid (and the cap); the kernel is the same."""
    hopper = dataclasses.replace(H200, dependent_launch=True)
    cfg = r.SoftmaxConfig(
        "softmax_fwd", "block", 32768, "bf16", 1, 16, min_ctas_per_sm=3, chunk=2, grid="rows"
    )
    spec = p.softmax_spec(cfg, 32768, 8, hopper)
    assert spec.stream and spec.grid_of_rows and spec.ctas_per_sm_cap is None
    plan = p.softmax_plan(spec, 4096, 32768, hopper, 4)
    assert plan.grid == (1, 4096, 1) and plan.dependent and plan.scratch_bytes == 0
    assert p.softmax_plan(spec, 100000, 32768, hopper, 4).grid == (1, 65535, 1)
    persistent = p.softmax_spec(dataclasses.replace(cfg, grid="persistent"), 32768, 8, hopper)
    assert persistent.kernel_key == spec.kernel_key  # the grid is the launch's, not the kernel's
    longer = p.softmax_spec(cfg, 131072, 8, hopper)
    assert longer.ctas_per_row == 4 and not longer.grid_of_rows and longer.ctas_per_sm_cap == 3
    assert p.softmax_plan(longer, 4096, 131072, hopper, 4).grid == (4, 99, 1)


def test_rows_of_cluster_ctas_on_the_grid_of_rows():
    """Where a row's CTAs are one cluster (sm_90+), an entry timed on the grid of rows with
    rows of several CTAs launches a cluster a row, however many clusters fit at once (the
    hardware places them as SMs free up); without clusters (the arrival counter: every CTA
    must be resident), where the driver can place no such cluster, or for an entry timed on
    one CTA a row, the persistent grid. Held and streaming entries alike."""
    hopper = dataclasses.replace(H200, clusters=True, dependent_launch=True)
    for chunk in (2, 0):
        cfg = r.SoftmaxConfig(
            "softmax_fwd", "block", 32768, "bf16", 1, 16, min_ctas_per_sm=3, chunk=chunk,
            grid="rows", keys=131072,
        )  # fmt: skip
        spec = p.softmax_spec(cfg, 131072, 8, hopper)
        assert spec.ctas_per_row == 4 and not spec.grid_of_rows
        plan = p.softmax_plan(spec, 1024, 131072, hopper, 4, max_active_clusters=30)
        assert plan.grid == (4, 1024, 1) and plan.cluster == 4 and plan.ctas_per_col == 1024
        assert not plan.cooperative and plan.barrier_bytes == 0 and not plan.dependent
        assert plan.stats_bytes == 2 * 1024 * 1 * 4 * 2 * 4
        persistent = p.softmax_plan(
            p.softmax_spec(dataclasses.replace(cfg, grid="persistent"), 131072, 8, hopper),
            1024, 131072, hopper, 4, max_active_clusters=30,
        )  # fmt: skip
        assert persistent.grid == (4, 30, 1)
        counter = p.softmax_plan(p.softmax_spec(cfg, 131072, 8, H200), 1024, 131072, H200, 4)
        assert counter.cluster == 1 and counter.grid[1] < 1024 and counter.barrier_bytes > 0
        unplaced = p.softmax_plan(spec, 1024, 131072, hopper, 4, max_active_clusters=0)
        assert unplaced.cluster == 1 and unplaced.grid[1] < 1024
        one_cta = p.softmax_spec(dataclasses.replace(cfg, keys=32768), 131072, 8, hopper)
        timed_short = p.softmax_plan(one_cta, 1024, 131072, hopper, 4, max_active_clusters=30)
        assert timed_short.cluster == 4 and timed_short.grid == (4, 30, 1)


def test_multi_cta_rows_run_as_clusters_where_the_device_has_them():
    """sm_90+ limits: a row group of 2-8 CTAs is one cluster (no cooperative launch, no barrier
    counter), as many groups as the driver says clusters fit; larger groups, a device that can
    place no such cluster, and older devices keep the counter and the cooperative launch."""
    hopper = dataclasses.replace(H200, clusters=True)
    cfg = r.select_norm(FWD, 65536, 16384, 256, measured=False)
    spec = p.norm_spec(cfg, 65536, 8, hopper)
    assert spec.ctas_per_row == 8 == p.cluster_size(8, hopper)
    # GPCs leave SMs over: 15 clusters of 8 fit where the occupancy alone would give 33 groups
    plan = p.norm_plan(spec, 16384, 65536, hopper, 2, max_active_clusters=15)
    assert plan.cluster == 8 and not plan.cooperative
    assert plan.grid == (8, 15, 1) and plan.ctas_per_col == 15
    assert plan.barrier_bytes == 0 and plan.stats_bytes == 2 * 15 * 1 * 8 * 2 * 4
    assert plan.stats_offset == 0 and plan.scratch_bytes == 2048  # 1920 up to 256 bytes
    # without the driver's count: the occupancy's figure; few rows: one group a row
    assert p.norm_plan(spec, 16384, 65536, hopper, 2).ctas_per_col == 33
    assert p.norm_plan(spec, 5, 65536, hopper, 2, max_active_clusters=15).ctas_per_col == 5
    # no such cluster fits: the counter path
    fallback = p.norm_plan(spec, 16384, 65536, hopper, 2, max_active_clusters=0)
    assert fallback.cluster == 1 and fallback.cooperative and fallback.barrier_bytes == 33 * 4
    # the same problem on a device without clusters: unchanged
    old = p.norm_plan(p.norm_spec(cfg, 65536, 8, H200), 16384, 65536, H200, 2, 15)
    assert old.cluster == 1 and old.cooperative and old.grid == (8, 33, 1)
    # more CTAs a row than a portable cluster holds; one CTA a row: no cluster
    assert p.cluster_size(p.MAX_CLUSTER + 1, hopper) == 1 and p.cluster_size(1, hopper) == 1
    general = r.select_norm(FWD, 131072, 63, 256, measured=False)
    gspec = p.norm_spec(general, 131072, 8, hopper)
    assert gspec.ctas_per_row == 16
    gplan = p.norm_plan(gspec, 64, 131072, hopper, 4, max_active_clusters=None)
    assert gplan.cluster == 1 and gplan.cooperative and gplan.barrier_bytes > 0
    soft = r.select_softmax("softmax_fwd", "masked", "fp32", 131072)  # 4 CTAs of 32768 keys
    sspec = p.softmax_spec(soft, 131072, 4, hopper)
    splan = p.softmax_plan(sspec, 96, 131072, hopper, 1, max_active_clusters=30)
    assert splan.cluster == sspec.ctas_per_row > 1 and not splan.cooperative
    assert splan.ctas_per_col == 30 and splan.barrier_bytes == 0
    # run 201's entry: 8 CTAs of 16384 keys, timed on the grid of rows: a cluster a row
    rows = r.select_softmax("softmax_fwd", "scaled", "fp32", 131072)
    rspec = p.softmax_spec(rows, 131072, 4, hopper)
    rplan = p.softmax_plan(rspec, 96, 131072, hopper, 3, max_active_clusters=30)
    assert rows.grid == "rows" and rplan.cluster == rspec.ctas_per_row == 8
    assert rplan.grid == (8, 96, 1) and rplan.barrier_bytes == 0


@pytest.mark.parametrize(
    ("partial_rows", "cols", "grid", "block"),
    [
        (1, 1, (1, 1, 1), (32, 1, 1)),
        (8, 33, (2, 1, 1), (32, 1, 1)),
        (9, 4096, (128, 1, 1), (32, 2, 1)),
        (66, 65536, (2048, 1, 1), (32, 16, 1)),
        (132, 1000, (32, 1, 1), (32, 32, 1)),
        (264, 4096, (128, 1, 1), (32, 32, 1)),
    ],
)
def test_finalize_shape(partial_rows, cols, grid, block):
    assert p.finalize_shape(partial_rows, cols) == (grid, block)
    ty = block[1]
    assert ty & (ty - 1) == 0 and ty <= p.FINALIZE_MAX_ROWS  # the kernels' tree and shared memory
    with pytest.raises(p.PlanError, match="partial rows"):
        p.finalize_shape(0, cols)


def test_finalize_row_limit_matches_the_cuda_source():
    from pathlib import Path

    import numba_norms.backends.nvrtc as nv

    src = (Path(nv.__file__).parent / "norms.cu").read_text()
    assert f"constexpr int FIN_MAX_ROWS = {p.FINALIZE_MAX_ROWS};" in src
    assert f"constexpr int BATCH = {p.FINALIZE_ROWS_PER_THREAD};" in src


def test_plan_errors():
    cfg = r.select_norm(FWD, 4096, 16384, 256, measured=False)
    spec = p.norm_spec(cfg, 4096, 8, H200)
    with pytest.raises(p.PlanError, match="occupancy 0"):
        p.norm_plan(spec, 16, 4096, H200, 0)
    with pytest.raises(p.PlanError, match="exceed"):
        p.norm_plan(spec, 16, 8192, H200, 4)
    with pytest.raises(p.PlanError, match="tuned entry"):
        p.norm_spec(cfg, 2048, 8, H200)
    tiny = p.DeviceLimits(sm_count=1)
    big = p.norm_spec(r.select_norm(FWD, 131072, 7, 256, measured=False), 131072, 8, tiny)
    with pytest.raises(p.PlanError, match="cannot all be resident"):
        p.norm_plan(big, 8, 131072, tiny, 4)


def test_softmax_plans():
    cfg = r.select_softmax("softmax_fwd", "scaled", "bf16", 1000, measured=False)
    spec = p.softmax_spec(cfg, 1000, 8, H200)
    assert (spec.num_elts, spec.ldgs, spec.ctas_per_row) == (8, 4, 1)
    plan = p.softmax_plan(spec, 4 * 32 * 1000, 1000, H200, 16)
    assert plan.block == (128, 1, 1) and plan.ctas_per_col == 132 * 16
    long = r.select_softmax("softmax_fwd", "scaled", "bf16", 131072, measured=False)
    lspec = p.softmax_spec(long, 131072, 8, H200)
    assert (lspec.ctas_per_row, lspec.ldgs) == (8, 4)
    lplan = p.softmax_plan(lspec, 7, 131072, H200, 2)
    assert lplan.cooperative and lplan.grid == (8, 7, 1) and lplan.barrier_bytes == 28
    odd = p.softmax_spec(r.select_softmax("softmax_fwd", "scaled", "bf16", 7), 7, 1, H200)
    assert odd.num_elts == 1 and odd.cols_per_row_pass >= 7


def test_softmax_grid_of_rows():
    """A softmax entry on the grid of all rows: a row group per CTA where a row takes one CTA
    (the backward too: it writes no partial rows); longer rows keep the persistent grid."""
    base = r.select_softmax("softmax_fwd", "masked", "bf16", 4096, measured=False)
    for op in ("softmax_fwd", "softmax_bwd"):
        variant = "masked" if op == "softmax_fwd" else "scaled"
        cfg = dataclasses.replace(base, op=op, variant=variant, grid="rows")
        spec = p.softmax_spec(cfg, 4096, 8, H200)
        assert spec.grid_of_rows
        plan = p.softmax_plan(spec, 4 * 32 * 256, 4096, H200, 2)
        assert plan.grid == (1, 32768, 1) and plan.row_iterations == 1
        assert plan.scratch_bytes == 0 and not plan.cooperative
        big = p.softmax_plan(spec, 4 * 32 * 4096, 4096, H200, 2)  # past the y limit: 9 trips
        assert big.ctas_per_col == 65535 and big.row_iterations == 9
    persistent = p.softmax_spec(base, 4096, 8, H200)
    assert not persistent.grid_of_rows
    assert p.softmax_plan(persistent, 32768, 4096, H200, 2).ctas_per_col == 264
    # the grid is a launch parameter: one compiled kernel serves both
    assert (
        p.softmax_spec(cfg, 4096, 8, H200).kernel_key
        == p.softmax_spec(dataclasses.replace(cfg, grid="persistent"), 4096, 8, H200).kernel_key
    )
    long_rows = p.softmax_spec(dataclasses.replace(base, grid="rows"), 20000, 8, H200)
    assert long_rows.ctas_per_row == 5 and not long_rows.grid_of_rows


def test_streaming_softmax_plans():
    """A streaming entry (``chunk``): ``chunk`` vectors a step, ``ceil(cols / max_cols)`` CTAs a
    row (each streams a contiguous part; a cluster up to 8), the grid capped at
    ``min_ctas_per_sm`` CTAs an SM however many fit; its own kernel key."""
    cfg = r.SoftmaxConfig("softmax_fwd", "block", 32768, "bf16", 1, 16, min_ctas_per_sm=3, chunk=2)
    for cols, vec, ctas in ((131072, 8, 4), (32768, 8, 1), (32769, 4, 2), (1000, 4, 1), (5, 1, 1)):
        spec = p.softmax_spec(cfg, cols, vec, H200)
        assert spec.stream and (spec.ctas_per_row, spec.ldgs, spec.num_elts) == (ctas, 2, vec)
        assert spec.cols_per_row_pass >= cols and spec.multi_cta == (ctas > 1)
    one = p.softmax_spec(dataclasses.replace(cfg, max_cols=131072), 131072, 8, H200)
    assert one.ctas_per_row == 1 and not one.multi_cta
    plan = p.softmax_plan(one, 4096, 131072, H200, 4)  # 4 fit an SM, the entry asks for 3
    assert plan.grid == (1, 396, 1) and plan.block == (512, 1, 1)
    assert plan.scratch_bytes == 0 and not plan.cooperative and plan.cluster == 1
    assert p.softmax_plan(one, 4096, 131072, H200, 2).grid == (1, 264, 1)  # 2 fit
    assert p.softmax_plan(one, 100, 131072, H200, 4).grid == (1, 100, 1)  # the rows
    with pytest.raises(p.PlanError, match="exceed"):  # the column step would overflow int32
        p.softmax_plan(one, 1, p.STREAM_MAX_COLS + 1, H200, 4)
    spec = p.softmax_spec(cfg, 131072, 8, H200)
    four = p.softmax_plan(spec, 4096, 131072, H200, 4)  # 396 CTAs fit: 99 groups of 4
    assert four.grid == (4, 99, 1) and four.stats_bytes > 0 and four.barrier_bytes > 0
    clustered = dataclasses.replace(H200, clusters=True)
    assert p.softmax_plan(spec, 4096, 131072, clustered, 4, 90).cluster == 4
    sim = p.softmax_spec(cfg, 131072, 8, p.DeviceLimits.simulator())
    assert sim.ctas_per_row == 1  # CTAs that cannot wait for each other: one a row
    rev = p.softmax_spec(dataclasses.replace(cfg, reverse=True), 131072, 8, H200)
    assert rev.kernel_key != spec.kernel_key  # the second pass's walk is compiled in
    bwd = p.softmax_spec(dataclasses.replace(cfg, op="softmax_bwd"), 131072, 8, H200)
    assert bwd.stream and bwd.ctas_per_row == 4 and bwd.ctas_per_sm_cap == 3
    held = p.softmax_spec(dataclasses.replace(cfg, chunk=0), 131072, 8, H200)
    assert held.ctas_per_row == 4 and held.kernel_key != spec.kernel_key
    assert held.ctas_per_sm_cap is None
    assert p.softmax_plan(held, 4096, 131072, H200, 4).ctas_per_col == 132


def test_measured_softmax_plans():
    """A measured entry timed at 131072 keys with 32768 a CTA: four CTAs a row there, two at
    40000 keys, held or streaming; its register cap is part of the kernel key."""
    cfg = r.select_softmax("softmax_fwd", "masked", "fp32", 131072)
    assert (cfg.keys, cfg.max_cols, cfg.chunk) == (131072, 32768, 0)
    spec = p.softmax_spec(cfg, 131072, 4, H200)
    assert spec.ctas_per_row == 4 and spec.cols_per_row_pass == 131072
    assert p.softmax_spec(cfg, 40000, 4, H200).ctas_per_row == 2
    parts = r.select_softmax("softmax_fwd", "masked", "bf16", 131072)  # run 201: 8 parts a row
    assert parts.chunk and parts.max_cols == 16384 and parts.grid == "rows"
    assert p.softmax_spec(parts, 131072, 8, H200).ctas_per_row == 8
    stream = r.select_softmax("softmax_fwd", "scaled", "bf16", 131072)  # run 166: one CTA a row
    assert stream.chunk and p.softmax_spec(stream, 131072, 8, H200).ctas_per_row == 1
    capped = r.select_softmax("softmax_fwd", "scaled", "bf16", 4096)  # session 17: cap 7
    assert capped.min_ctas_per_sm == 7
    cspec = p.softmax_spec(capped, 4096, 8, H200)
    assert cspec.ctas_per_row == 1
    assert cspec.kernel_key[-6:] == (7, False, False, False, False, False)
    assert (
        cspec.kernel_key
        != p.softmax_spec(dataclasses.replace(capped, min_ctas_per_sm=1), 4096, 8, H200).kernel_key
    )


def test_rows_of_fewer_ctas_than_te_asks_cover_the_row():
    """Where a device allows fewer CTAs a row than an entry asks for (``max_ctas_per_row``),
    general norm entries and softmax entries take that many, each with a longer part of the
    row; one CTA where none may wait for another, as before."""
    key = r.NormKey("layernorm_bwd", "fp32", "fp32", "fp32")
    cfg = r.select_norm(key, 65536, 16, 256, allow_tuned=False)
    lanes = cfg.warps_n * 32
    asked = -(-65536 // cfg.hidden_size)
    for most in (1, 3, asked - 1):
        spec = p.norm_spec(cfg, 65536, 4, dataclasses.replace(H200, max_ctas_per_row=most))
        assert spec.ctas_per_row == most and spec.general
        assert spec.ldgs == -(-65536 // (most * lanes * 4)) and spec.cols_per_row_pass >= 65536
    assert p.norm_spec(cfg, 65536, 4, H200).ctas_per_row == asked  # a device that holds them
    for stream in (False, True):
        sm = r.select_softmax("softmax_fwd", "scaled", "fp32", 131072, measured=False)
        sm = dataclasses.replace(sm, chunk=4 if stream else 0)
        asked = -(-131072 // sm.max_cols)
        spec = p.softmax_spec(sm, 131072, 4, dataclasses.replace(H200, max_ctas_per_row=3))
        assert spec.ctas_per_row == 3 and spec.cols_per_row_pass >= 131072 and asked > 3
        if not stream:
            assert spec.ldgs == -(-131072 // (3 * sm.warps_n * 32 * 4))
        else:
            assert spec.ldgs == 4
