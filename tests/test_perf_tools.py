"""The benchmark tools stay runnable without a GPU.

The perf/ scripts reach into the package (planning for ``--list``, the fast path and the launch
stand-ins for ``host_profile.py``); nothing else runs them on a CPU, and ``host_parts.py`` broke
twice that way unnoticed (sessions 9-14). These tests run the GPU-free parts.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import SIMULATOR

ROOT = Path(__file__).resolve().parent.parent

# One pass is enough (the scripts run in their own processes, without the simulator).
pytestmark = pytest.mark.skipif(SIMULATOR, reason="runs in the compile pass only")


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )


def test_bench_list_plans_every_case():
    r = _run("perf/bench.py", "--list", "--quick")
    assert r.returncode == 0, r.stderr
    # 2 norm sizes x 6 norm ops + 2 key lengths x 5 softmax ops
    assert "22 cases x 3 impls" in r.stdout


def test_host_profile_runs_on_stand_ins():
    r = _run("perf/host_profile.py", "--calls", "20")
    assert r.returncode == 0, r.stderr
    timed = [line for line in r.stdout.splitlines() if "us per call" in line]
    assert len(timed) == 8  # four ops, each with and without out=


@dataclass
class _Timing:
    median_us: float
    p20_us: float = 0.0
    p80_us: float = 0.0
    reps: int = 10
    loop_us: float = 0.0
    host_us: float = 0.0


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "perf"))
    return importlib.import_module("bench")


def test_stream_row_and_summary(bench, capsys):
    """The stream row's GB/s is its own bytes over its time; the summary's %stream column is
    the lowest-highest of the implementation rows' pct_stream."""
    from _bench_cases import build_cases

    case = build_cases("quick", ["layernorm_fwd"], ["bf16"])[0][0]  # 16384 x 4096
    nbytes = 2 * case.elements * case.size
    bt = types.SimpleNamespace(
        stream_runner=lambda c, sets: ((lambda i: None), nbytes),
        time_calls=lambda fn, n, target_ms: _Timing(median_us=100.0),
    )
    args = bench.parse_args(["--out", "unused", "--quick"])
    run = types.SimpleNamespace(
        meta={}, args=args, ceiling_gbs=4000.0, rows=[], begin=lambda what: None,
        record_error=lambda what, exc: str(exc), elapsed=lambda: 1.0,
    )  # fmt: skip
    row = bench.measure_stream(run, bt, case, [None])
    assert row["impl"] == "stream" and not row.get("error")
    assert row["gbytes"] == pytest.approx(nbytes / 1e9)
    assert row["gbs"] == pytest.approx(nbytes / 100e-6 / 1e9)
    assert row["pct_ceiling"] == pytest.approx(100 * row["gbs"] / 4000.0)
    ours = [
        dict(row, impl="nvrtc", cols=cols, check="ok", vs_torch=1.5, pct_stream=p)
        for cols, p in ((4096, 91.0), (8192, 84.0))
    ]
    run.rows = [row, *ours]
    bench.print_summary(run)
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("layernorm"))
    assert line.split()[-1] == "84-91"
