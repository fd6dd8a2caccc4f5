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
