"""Dispatch's planning decisions against a stand-in backend (no GPU, no kernels)."""

from __future__ import annotations

import collections
import dataclasses
import types

import pytest

import numba_norms
from numba_norms import dispatch, planner, registry

KEY = registry.NormKey("layernorm_bwd", "bf16", "bf16", "bf16")


@pytest.fixture
def h200(monkeypatch):
    limits = planner.DeviceLimits(sm_count=132)
    monkeypatch.setattr(dispatch, "device_limits", lambda device: limits)
    monkeypatch.setattr(dispatch, "_plan_cache", {})
    return limits


def _backend(occupancy):
    return types.SimpleNamespace(occupancy_forward=occupancy, occupancy_backward=occupancy)


def test_measured_entry_is_planned_when_resident(h200):
    measured = registry.select_norm(KEY, 4096, 16384, 16)
    assert measured.origin == "measured"
    plan = dispatch._norm_plan("nvrtc", _backend(lambda s: 2), KEY, 16384, 4096, ((256, 2),), 0)
    assert plan.spec.config == measured


def test_measured_entry_that_cannot_be_resident_falls_back_to_te(h200):
    te = registry.select_norm(KEY, 4096, 16384, 16, measured=False)

    def occupancy(spec):  # as if the measured kernel took too many registers on this device
        return 0 if spec.config.origin == "measured" else 3

    plan = dispatch._norm_plan("numba", _backend(occupancy), KEY, 16384, 4096, ((256, 2),), 0)
    assert plan.spec.config == te and te.origin == "te"


def test_te_fallback_of_a_measured_entry_fits_the_device_too(monkeypatch):
    """Where the measured kernel cannot be resident, TE's entry is chosen as any call's is:
    its tuned shape of several CTAs a row gives way to a general one where the device runs one
    CTA a row."""
    limits = planner.DeviceLimits(sm_count=132, max_ctas_per_row=1)
    monkeypatch.setattr(dispatch, "device_limits", lambda device: limits)
    monkeypatch.setattr(dispatch, "_plan_cache", {})
    key = registry.NormKey("layernorm_fwd", "bf16", "bf16", "bf16")
    te = registry.select_norm(key, 12288, 4096, 256, measured=False)
    assert te.ctas_per_row > 1  # TE's tuned entry would not fit

    def occupancy(spec):
        return 0 if spec.config.origin == "measured" else 2

    plan = dispatch._norm_plan("nvrtc", _backend(occupancy), key, 4096, 12288, ((256, 2),), 0)
    assert plan.spec.ctas_per_row == 1 and plan.spec.config.origin != "measured"


@pytest.mark.parametrize("backend", ["nvrtc", "numba"])
@pytest.mark.parametrize("cols", [1000, 4104, 20472])
def test_fp8_output_rows_of_8_byte_pitch_take_16_byte_vectors_of_x(h200, backend, cols):
    """An fp8 row of 8 mod 16 bytes allows 8-element vectors (8 bytes of fp8, 16 of bf16 x):
    the entry selected is the one of 16-byte aligned rows, not a narrow shape of half-width
    vectors or TE's several-CTA entry."""
    key = registry.NormKey("layernorm_fwd", "bf16", "bf16", "fp8e4m3")
    vec = ((cols % 16, 1), (16, 2))  # fp8 y: 8-byte rows; bf16 x, gamma and beta: 16
    cfg, spec = dispatch.norm_spec_for(backend, key, 16384, cols, vec, h200)
    assert cfg == registry.select_norm(key, cols, 16384, 16, backend=backend)
    assert cfg.origin == "measured" and spec.num_elts == 8 and spec.ctas_per_row == 1
    # fp32 x of 16-byte rows, bf16 y of 4-byte rows: 2-element vectors, 8 bytes of x
    wide = registry.NormKey("layernorm_fwd", "fp32", "fp32", "bf16")
    cfg, spec = dispatch.norm_spec_for(backend, wide, 16384, cols, ((16, 4), (4, 2)), h200)
    assert cfg == registry.select_norm(wide, cols, 16384, 8, backend=backend)
    assert spec.num_elts == 2


def test_te_entry_that_cannot_be_resident_is_an_error(h200):
    with pytest.raises(planner.PlanError, match="occupancy 0"):
        dispatch._norm_plan("nvrtc", _backend(lambda s: 0), KEY, 16384, 4096, ((256, 2),), 0)


@pytest.mark.parametrize(("cc", "chained"), [((9, 0), True), ((10, 0), True), ((8, 0), False)])
def test_device_limits_and_info_say_whether_launches_are_chained(monkeypatch, cc, chained):
    """Programmatic dependent launches from compute capability 9.0 on (a stand-in device)."""
    import rtc
    from numba_norms import cli

    info = rtc.DeviceInfo(
        ordinal=0, name="stand-in", arch=f"sm_{cc[0]}{cc[1]}", cc=cc, sm_count=132,
        max_threads_per_sm=2048, max_threads_per_block=1024, max_shared_per_block=48 * 1024,
        max_shared_per_block_optin=227 * 1024, max_shared_per_sm=228 * 1024,
        regs_per_sm=65536, l2_bytes=50 << 20, cooperative_launch=True, driver_version=(13, 0),
    )  # fmt: skip
    monkeypatch.setattr(rtc, "device_info", lambda ordinal=None: info)
    monkeypatch.setattr(dispatch, "simulator_enabled", lambda: False)
    monkeypatch.setattr(dispatch, "_limits_cache", {})
    limits = dispatch.device_limits(0)
    assert limits.dependent_launch is chained and limits.sm_count == 132
    assert limits.max_ctas_per_row == planner.DeviceLimits(sm_count=1).max_ctas_per_row
    # without cooperative launch a row's CTAs are resident together only as one cluster
    monkeypatch.setattr(dispatch, "_limits_cache", {})
    plain = dataclasses.replace(info, cooperative_launch=False)
    monkeypatch.setattr(rtc, "device_info", lambda ordinal=None: plain)
    assert dispatch.device_limits(0).max_ctas_per_row == (planner.MAX_CLUSTER if chained else 1)
    assert limits.clusters is chained  # thread-block clusters: the same bound
    rows = dict(cli.info_lines())
    assert rows["numba-norms"] == numba_norms.__version__
    assert rows["launches"].startswith("chained" if chained else "plain")
    assert rows["multi-CTA rows"].startswith("clusters" if chained else "cooperative")


def test_staged_softmax_entry_too_long_for_shared_memory_runs_unstaged(monkeypatch):
    """A staged entry whose row does not fit a CTA's shared memory on this device plans the
    same shape unstaged (its second read from L2) instead of failing."""
    small = planner.DeviceLimits(sm_count=132, max_shared_per_block_optin=48 * 1024)
    monkeypatch.setattr(dispatch, "device_limits", lambda device: small)
    monkeypatch.setattr(dispatch, "_plan_cache", {})
    staged = registry.SoftmaxConfig(
        "softmax_fwd", "block", 32768, "bf16", 1, 16, min_ctas_per_sm=2, keys=32768, chunk=4,
        grid="rows", stage=True,
    )  # fmt: skip
    monkeypatch.setattr(registry, "select_softmax", lambda *a, **k: staged)
    mod = types.SimpleNamespace(occupancy_forward=lambda s: 2, active_clusters=lambda s, c: 0)
    args = ("nvrtc", mod, "softmax_fwd", "scaled", "bf16")
    plan = dispatch._softmax_plan(*args, 64, 32768, ((256, 2),), 0)
    assert not plan.spec.config.stage and plan.shared_bytes == 0
    assert plan.spec.config == dataclasses.replace(staged, stage=False)
    fits = dispatch._softmax_plan(*args, 64, 16384, ((256, 2),), 0)
    assert fits.spec.config.stage and fits.shared_bytes == 32768


@pytest.mark.parametrize("cols", [65536, 131072])
def test_staged_cluster_rows_without_clusters_run_unstaged_on_the_counter(monkeypatch, cols):
    """The fp32 forward's staged entry (rows of four CTAs, a cluster a row, run 212) on a GPU
    without clusters: its CTAs meet through the counter on the persistent grid, where a staged
    row cannot go (its shared memory is not in the occupancy): the same shape unstaged. (Run
    217, H100 with clusters masked off: the GPU test's own planning had missed this fallback.)"""
    staged = registry.select_softmax("softmax_fwd", "scaled", "fp32", cols)
    assert staged.stage and staged.grid == "rows"
    plain = planner.DeviceLimits(sm_count=132, clusters=False)
    monkeypatch.setattr(dispatch, "device_limits", lambda device: plain)
    monkeypatch.setattr(dispatch, "_plan_cache", {})
    mod = types.SimpleNamespace(occupancy_forward=lambda s: 3, active_clusters=lambda s, c: 0)
    args = ("nvrtc", mod, "softmax_fwd", "scaled", "fp32", 397, cols, ((256, 4),), 0)
    with pytest.raises(planner.PlanError, match="a staged row needs the grid of rows"):
        spec = planner.softmax_spec(staged, cols, 4, plain)
        planner.softmax_plan(spec, 397, cols, plain, 3)
    plan = dispatch._softmax_plan(*args)
    assert plan.spec.config == dataclasses.replace(staged, stage=False)
    assert plan.cluster == 1 and plan.cooperative and plan.ctas_per_row > 1
    assert plan.shared_bytes == 0 and plan.row_iterations > 1


@pytest.mark.parametrize("cols", [4096, 32768, 131072])
def test_measured_softmax_entry_that_cannot_be_resident_falls_back_to_the_default(h200, cols):
    """A measured entry's kernel that cannot be resident on this device (occupancy 0; the
    entries were timed on one GPU) gives way to the default table's, as for the norms."""
    measured = registry.select_softmax("softmax_fwd", "scaled", "bf16", cols)
    assert measured.keys  # a measured entry serves this length

    def occupancy(spec):
        return 0 if spec.config.keys else 2

    mod = types.SimpleNamespace(occupancy_forward=occupancy, active_clusters=lambda s, c: 0)
    args = ("nvrtc", mod, "softmax_fwd", "scaled", "bf16", 64, cols, ((256, 2),), 0)
    plan = dispatch._softmax_plan(*args)
    assert plan.spec.config == registry.select_softmax(
        "softmax_fwd", "scaled", "bf16", cols, measured=False, backend="nvrtc"
    )
    mod.occupancy_forward = lambda spec: 0  # nothing resident at all: the planner's error
    dispatch._plan_cache.clear()
    with pytest.raises(planner.PlanError):
        dispatch._softmax_plan(*args)


def test_a_plan_made_meanwhile_by_another_thread_is_the_one_returned(h200):
    """Two threads planning one problem keep one plan object: the torch fast path checks its
    remembered plan by identity against the cache."""
    cache_key = ("nvrtc", 0, KEY, 16384, 4096, ((256, 2),))
    first = []

    def occupancy(spec):  # the other thread's plan lands while this one is being made
        if not first:
            first.append(
                dispatch._norm_plan(
                    "nvrtc", _backend(lambda s: 2), KEY, 16384, 4096, ((256, 2),), 0
                )
            )
        return 2

    plan = dispatch._norm_plan("nvrtc", _backend(occupancy), KEY, 16384, 4096, ((256, 2),), 0)
    assert plan is first[0] is dispatch._plan_cache[cache_key]


class _PoolCall:
    """A call of a kind without a caching allocator (numpy, Numba, CuPy) on ``stream``."""

    kind, device = "numba", 0

    def __init__(self, stream: int):
        self.stream_handle = stream

    def scratch(self, nbytes: int):
        return types.SimpleNamespace(size=nbytes)


@pytest.fixture
def pool(monkeypatch):
    """An empty scratch pool."""
    monkeypatch.setattr(dispatch, "_scratch_pool", collections.OrderedDict())


def test_pooled_scratch_is_one_calls_until_its_launches_are_queued(pool):
    """A backward's main kernel writes partial sums its finalize reads: another thread's
    launches on the same stream must not come in between, so the pooled buffer is held for the
    call's launches. The per-thread default stream (handle 2) is a different stream in each
    thread: a buffer each."""
    import threading

    got = []

    def other(stream):
        with dispatch._scratch(_PoolCall(stream), 64) as buf:
            got.append((stream, buf))

    with dispatch._scratch(_PoolCall(0), 64) as mine:
        same = threading.Thread(target=other, args=(0,))
        same.start()
        own = threading.Thread(target=other, args=(2,))
        own.start()
        own.join(5)
        same.join(0.3)
        assert same.is_alive()  # waits for this call
        assert [s for s, _ in got] == [2] and got[0][1] is not mine
    same.join(5)
    assert got[1] == (0, mine)  # then has the same buffer
    with dispatch._scratch(_PoolCall(0), 0) as none:
        assert none is None


def test_per_thread_streams_of_ended_threads_keep_their_buffers(pool):
    """The per-thread default stream (handle 2) is a different stream in each thread, and a new
    thread can get an ended one's id while the ended thread's kernels still run: each thread
    has its own buffer, never an earlier thread's."""
    import threading

    got = []

    def use():
        with dispatch._scratch(_PoolCall(2), 64) as buf:
            got.append((threading.get_ident(), buf))

    for _ in range(3):  # one after another: CPython usually hands out the same thread id
        t = threading.Thread(target=use)
        t.start()
        t.join(5)
    assert len({id(buf) for _, buf in got}) == 3


def test_pooled_scratch_grows(pool):
    with dispatch._scratch(_PoolCall(7), 64) as small:
        pass
    with dispatch._scratch(_PoolCall(7), 4 << 20) as big:
        assert big is not small and big.size == 4 << 20
    with dispatch._scratch(_PoolCall(7), 64) as again:
        assert again is big


def test_scratch_pool_is_bounded(pool, monkeypatch):
    """Programs that make a new stream per task must not keep a buffer per stream forever: past
    the pool's size the least recently used idle buffer goes (one in use stays)."""
    import threading

    monkeypatch.setattr(dispatch, "_SCRATCH_STREAMS", 3)
    held, release = threading.Event(), threading.Event()

    def hold_10():
        with dispatch._scratch(_PoolCall(10), 64):
            held.set()
            release.wait(5)

    t = threading.Thread(target=hold_10)
    t.start()
    assert held.wait(5)
    for stream in (11, 12, 11):  # now 10 (in use), 12, 11 from the oldest
        with dispatch._scratch(_PoolCall(stream), 64):
            pass
    with dispatch._scratch(_PoolCall(13), 64):  # 10 is the oldest but in use: 12 goes
        pass
    release.set()
    t.join(5)
    assert [k[1] for k in dispatch._scratch_pool] == [10, 11, 13]


def _few_sms(monkeypatch, sms: int) -> planner.DeviceLimits:
    limits = planner.DeviceLimits(sm_count=sms)
    monkeypatch.setattr(dispatch, "device_limits", lambda device: limits)
    monkeypatch.setattr(dispatch, "_plan_cache", {})
    return limits


def _occupancy(spec) -> int:
    """A stand-in that, like registers, lets fewer CTAs in as a thread holds more of a row."""
    return 2 if spec.ldgs <= 16 else 1


@pytest.mark.parametrize("sms", [1, 2, 3, 5, 8])
def test_long_norm_rows_on_a_gpu_of_few_sms_take_the_ctas_that_fit(monkeypatch, sms):
    """Rows that TE gives more CTAs than a small GPU holds at once (every CTA of a row must be
    resident: they wait for each other) run on as many CTAs as fit, each covering a longer part
    of the row; before, a PlanError (a planner fuzz found 2-20 such plans at each of 1-8 SMs)."""
    limits = _few_sms(monkeypatch, sms)
    mod = _backend(_occupancy)
    mod.active_clusters = lambda s, c: 0
    capped = 0
    for op in ("layernorm_fwd", "layernorm_bwd", "rmsnorm_fwd", "rmsnorm_bwd"):
        for dt, size in (("fp32", 4), ("bf16", 2)):
            key = registry.NormKey(op, dt, dt, dt)
            for cols in (16384, 65536, 131072):
                plan = dispatch._norm_plan("nvrtc", mod, key, 64, cols, ((256, size),), 0)
                spec = plan.spec
                assert spec.ctas_per_row <= limits.sm_count * _occupancy(spec)
                assert spec.cols_per_row_pass >= cols and plan.grid[0] == spec.ctas_per_row
                c = spec.config
                capped += spec.ctas_per_row < -(-cols // c.hidden_size)
    assert capped or sms == 8  # 8 SMs hold every row at occupancy 2


@pytest.mark.parametrize("sms", [1, 2, 3, 5, 8])
def test_long_softmax_rows_on_a_gpu_of_few_sms_take_the_ctas_that_fit(monkeypatch, sms):
    limits = _few_sms(monkeypatch, sms)
    mod = types.SimpleNamespace(
        occupancy_forward=_occupancy, occupancy_backward=_occupancy, active_clusters=lambda s, c: 0
    )
    for op in registry.SOFTMAX_OPS:
        for variant in registry.SOFTMAX_VARIANTS:
            for dt, size in (("fp32", 4), ("bf16", 2)):
                for cols in (65536, 131072, 262144):
                    args = ("nvrtc", mod, op, variant, dt, 12, cols, ((256, size),), 0)
                    plan = dispatch._softmax_plan(*args)
                    assert plan.ctas_per_row <= limits.sm_count * _occupancy(plan.spec)
                    assert plan.spec.cols_per_row_pass >= cols
