"""Shared test configuration: the gpu marker, the simulator switch and the tolerance table."""

from __future__ import annotations

import os

import numpy as np
import pytest

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM", "") == "1"

from numba_norms.reference import TOLERANCE  # noqa: E402  (one table for tests and `check`)
from tests.fakes import FakeDriver  # noqa: E402


def _has_gpu() -> bool:
    if SIMULATOR:
        return False
    try:
        import rtc

        return rtc.has_gpu()
    except Exception:
        return False


HAS_GPU = _has_gpu()


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def assert_close(actual, expected, dtype: str, *, scale: float = 1.0, what: str = "") -> None:
    """Compare with a float64 reference under the tolerance table (``scale`` widens it)."""
    atol, rtol = TOLERANCE[dtype]
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    assert not np.isnan(a).any(), f"{what}: NaN in result"
    np.testing.assert_allclose(a, e, atol=atol * scale, rtol=rtol * scale, err_msg=what)


def non_finite_scores(n: int, dtype: str, rng) -> tuple[np.ndarray, np.ndarray]:
    """Scores ``[1, 1, n, n]`` (square: the upper-triangular variant's shape) and a mask:
    row 0 all -inf, row 1 a +inf, row 2 a -inf, row 3 a NaN, row 4 a NaN the mask masks, each
    at column 0 (kept by every variant); rows 5 on finite."""
    from numba_norms.reference import NP

    x = (rng.standard_normal((1, 1, n, n))).astype(NP[dtype])
    x[..., 0, :] = -np.inf
    for row, value in ((1, np.inf), (2, -np.inf), (3, np.nan), (4, np.nan)):
        x[..., row, 0] = value
    mask = np.zeros(x.shape, bool)
    mask[..., 4, 0] = True
    return x, mask


def softmax_of(lib, variant: str, x, mask, scale: float):
    """``lib``'s forward of a softmax variant on ``[1, 1, sq, sk]`` scores (``lib``: the
    package or its reference module)."""
    if lib.__name__.endswith("reference"):
        fns = {
            "scaled": lambda: lib.scaled_softmax(x, scale),
            "masked": lambda: lib.scaled_masked_softmax(x, mask, scale),
            "upper_triang": lambda: lib.scaled_upper_triang_softmax(x, scale),
            "aligned_causal": lambda: lib.scaled_aligned_causal_softmax(x, scale),
        }
    else:
        fns = {
            "scaled": lambda: lib.scaled_softmax_fwd(x, scale),
            "masked": lambda: lib.scaled_masked_softmax_fwd(x, mask, scale),
            "upper_triang": lambda: lib.scaled_upper_triang_masked_softmax_fwd(x[0], scale)[None],
            "aligned_causal": lambda: lib.scaled_aligned_causal_masked_softmax_fwd(x, scale),
        }
    return fns[variant]()


def check_non_finite_rows(variant: str, y, expected, dtype: str) -> None:
    """The forward of :func:`non_finite_scores` against the float64 reference: a row whose kept
    scores hold a NaN or +inf, or are all -inf, is NaN at its kept positions (as TE and torch);
    a single -inf gives 0 there and a softmax elsewhere; a masked NaN is not read. Excluded
    positions are 0, except (causal variants) in the vector that straddles the limit of a NaN
    row: the kernels scale that vector whole by the row's factor (0 * NaN)."""
    from numba_norms.reference import softmax_keep

    y = np.asarray(y, np.float64)
    expected = np.asarray(expected, np.float64)
    n = y.shape[-1]
    keep = np.broadcast_to(softmax_keep(variant, n, n), y.shape)
    nan_rows = [0, 1, 3] + ([4] if variant != "masked" else [])
    assert np.isnan(expected[..., nan_rows, :][keep[..., nan_rows, :]]).all()
    assert not np.isnan(expected[..., 5:, :]).any() and expected[..., 2, 0].item() == 0
    np.testing.assert_array_equal(np.isnan(y[keep]), np.isnan(expected[keep]))
    finite = keep & ~np.isnan(expected)
    assert_close(y[finite], expected[finite], dtype, what="y")
    finite_rows = np.broadcast_to(~np.isnan(expected).any(-1, keepdims=True), y.shape)
    assert (y[~keep & finite_rows] == 0).all()
    assert not np.nan_to_num(y[~keep]).any()


def huge_scores(sq: int, sk: int, dtype: str, rng) -> tuple[np.ndarray, np.ndarray]:
    """Finite scores ``[1, 1, sq, sk]`` (sq >= 8) at the edge of ``dtype``'s range, and a mask
    (about 30%, columns 0 and 1 never): rows 0 and 5 all ``finfo.min`` (the usual additive
    padding fill); row 1 the same but ``0.9 * finfo.min`` at column 0; row 2 ``finfo.max`` at
    column 0 and ``0.75 * finfo.max`` at column 1; row 3 all -1e9 (``finfo.min`` where that is
    out of range); rows 4 and 6 on 1000 plus standard normal noise (large scores whose
    differences are small: exact in fp32, lost by scaling into another base first)."""
    import ml_dtypes

    from numba_norms.reference import NP

    fi = ml_dtypes.finfo(NP[dtype])
    lo, hi = float(fi.min), float(fi.max)
    x = 1000.0 + rng.standard_normal((1, 1, sq, sk))
    x[..., 2, :] = rng.standard_normal(sk)
    for row in (0, 1, 5):
        x[..., row, :] = lo
    x[..., 1, 0] = 0.9 * lo
    x[..., 2, :2] = (hi, 0.75 * hi)
    x[..., 3, :] = max(-1e9, lo)
    mask = rng.random(x.shape) < 0.3
    mask[..., :2] = False
    return x.astype(NP[dtype]), mask


def check_huge_rows(variant: str, y, expected, dtype: str) -> None:
    """The forward of :func:`huge_scores` (scale 1) against the float64 reference: every row
    finite and as TE's arithmetic gives it, excluded positions 0."""
    from numba_norms.reference import softmax_keep

    y = np.asarray(y, np.float64)
    expected = np.asarray(expected, np.float64)
    assert np.isfinite(expected).all()
    assert np.isfinite(y).all(), f"non-finite rows {np.unique(np.nonzero(~np.isfinite(y))[-2])}"
    keep = np.broadcast_to(softmax_keep(variant, y.shape[-2], y.shape[-1]), y.shape)
    assert_close(y, expected, dtype, what="y")
    assert not y[~keep].any()


def finalize_in_order(parts: np.ndarray, thread_rows: int) -> np.ndarray:
    """The finalize kernels' fp32 sum of ``parts`` ([partial_rows, cols]) over its rows, in their
    order: thread row ``t`` adds rows t, t + thread_rows, ... from 0; the ``thread_rows`` sums
    then meet in a tree (the lower half adds the upper half's). Bitwise what the kernels give."""
    parts = np.asarray(parts, np.float32)
    sums = np.zeros((thread_rows, parts.shape[1]), np.float32)
    for t in range(thread_rows):
        for r in range(t, parts.shape[0], thread_rows):
            sums[t] = sums[t] + parts[r]
    half = thread_rows // 2
    while half:
        sums[:half] = sums[:half] + sums[half : 2 * half]
        half //= 2
    return sums[0]


def nvrtc_ptx(source: str, names, arch: str, include_dir, defines=()) -> str:
    """PTX of ``names`` in CUDA C ``source`` (NVRTC's own API: cuda.core's PTX output asks the
    driver whether it could load it, and CPU machines have none)."""
    from cuda.bindings import nvrtc

    def ok(ret):
        assert ret[0] == nvrtc.nvrtcResult.NVRTC_SUCCESS, ret
        return ret[1] if len(ret) > 1 else None

    prog = ok(nvrtc.nvrtcCreateProgram(source.encode(), b"kernels.cu", 0, [], []))
    try:
        for n in names:
            ok(nvrtc.nvrtcAddNameExpression(prog, n.encode()))
        opts = [f"-arch=compute_{arch[3:]}", "-std=c++17", "-minimal", f"-I{include_dir}"]
        opts += [f"-D{k}={v}" for k, v in defines]
        ok(nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts]))
        buf = b" " * ok(nvrtc.nvrtcGetPTXSize(prog))
        ok(nvrtc.nvrtcGetPTX(prog, buf))
        return buf.decode().rstrip("\x00")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def assert_dependent_prologue(ptx: str, entries: int, arch: str) -> None:
    """Each of the ``entries`` kernels in ``ptx`` starts, from sm_90, with griddepcontrol.wait
    then launch_dependents, before any global memory access; below sm_90 neither appears."""
    import re

    bodies = re.split(r"\.entry\s", ptx)[1:]
    assert len(bodies) == entries
    want = 1 if int(arch[3:]) >= 90 else 0
    for body in bodies:
        wait = body.find("griddepcontrol.wait;")
        trigger = body.find("griddepcontrol.launch_dependents;")
        assert body.count("griddepcontrol.wait;") == want
        assert body.count("griddepcontrol.launch_dependents;") == want
        if want:
            first = re.search(r"\b(ld|st|atom|red)\.global", body)
            assert 0 <= wait < trigger and (first is None or trigger < first.start())


class _NormLaunches(FakeDriver):
    """Launches of the NVRTC norm launchers (fake driver) and their barrier memsets."""

    MAIN, FINALIZE = 0xA1, 0xF1  # kernel "addresses" the faked load hands to rtc.Launcher

    def __init__(self) -> None:
        super().__init__({self.MAIN: "MAIN", self.FINALIZE: "FINALIZE"})


@pytest.fixture
def recorder(monkeypatch):
    """NVRTC norm launches recorded without a GPU: ``launches`` and ``memsets``."""
    from numba_norms.backends.nvrtc import _norms

    rec = _NormLaunches().install(monkeypatch)
    monkeypatch.setattr(_norms, "load", lambda spec, device=None: (rec.MAIN, rec.FINALIZE))
    monkeypatch.setattr(_norms, "_launches", {})
    return rec


def queue_behind_failing_build(monkeypatch, call, error: Exception, queued: int = 4):
    """Run ``call(build)`` in a thread whose ``build`` blocks, then in ``queued`` threads more
    that wait on rtc's flight for the same key (counted, not timed), then let ``build`` raise
    ``error``.

    Returns
    -------
    (builds, errors, flights)
        How often ``build`` ran, what the threads raised, and the flight each thread took.
    """
    import threading
    import time

    from rtc import cache as rtc_cache

    flights: list = []
    key_lock = rtc_cache.key_lock

    def counting_key_lock(k):
        flight = key_lock(k)
        flights.append(flight)
        return flight

    monkeypatch.setattr(rtc_cache, "key_lock", counting_key_lock)
    entered, go = threading.Event(), threading.Event()
    builds: list = []
    errors: list = []

    def build():
        builds.append(1)
        entered.set()
        go.wait(30)
        raise error

    def work() -> None:
        try:
            call(build)
        except Exception as exc:
            errors.append(exc)

    first = threading.Thread(target=work)
    first.start()
    assert entered.wait(30)
    others = [threading.Thread(target=work) for _ in range(queued)]
    for t in others:
        t.start()
    deadline = time.monotonic() + 30
    while len(flights) < queued + 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    go.set()
    for t in [first, *others]:
        t.join(30)
    return len(builds), errors, flights
