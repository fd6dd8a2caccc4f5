"""JIT cost per kernel, measured in fresh subprocesses.

The parent (:func:`run_jit`) starts two children with the same, initially empty, cache
directories (``NUMBA_NORMS_CACHE_DIR`` for the NVRTC disk cache, ``NUMBA_CACHE_DIR`` for Numba's
own cache, if the Numba backend uses one):

``cold``
    First call of each kernel in a process with empty caches: NVRTC compiles, Numba compiles.
``cached``
    The same calls in a second fresh process: NVRTC should hit its disk cache; Numba shows
    whatever caching it has (or none).

Inside a child every number is a ``time.perf_counter`` difference around a public call plus
``torch.cuda.synchronize()``: ``first_ms`` (first call), ``warm_ms`` (best of five repeated
calls), ``jit_ms = first_ms - warm_ms``. ``lookup_us`` is the in-process cache hit: the time of
the backend's ``compile_forward``/``compile_backward`` for the plan the call used, once
compiled (best effort: it reads dispatch's plan cache). Before the kernels, each backend is
primed (a trivial NVRTC program / a trivial ``@cuda.jit`` kernel, backend modules imported) so
one-time library loading is reported on its own ``(init)`` row, not charged to the first kernel.
Rows travel to the parent as ``JITROW <json>`` lines on stdout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _bench_cases import Case

PREFIX = "JITROW "
PHASES = ("cold", "cached")
DTYPE = "bf16"
# One shape per kernel (bf16). The softmax backward kernel is shared by every variant.
JIT_CASES = (
    Case("layernorm_fwd", DTYPE, 2048, 4096),
    Case("layernorm_bwd", DTYPE, 2048, 4096),
    Case("rmsnorm_fwd", DTYPE, 2048, 4096),
    Case("rmsnorm_bwd", DTYPE, 2048, 4096),
    Case("softmax_fwd", DTYPE, 8192, 1024, 2, 4, 1024),
    Case("softmax_bwd", DTYPE, 8192, 1024, 2, 4, 1024),
    Case("masked_softmax_fwd", DTYPE, 8192, 1024, 2, 4, 1024),
    Case("upper_triang_softmax_fwd", DTYPE, 8192, 1024, 2, 4, 1024),
    Case("aligned_causal_softmax_fwd", DTYPE, 8192, 1024, 2, 4, 1024),
)
FIELDS = (
    "phase",
    "backend",
    "op",
    "dtype",
    "shape",
    "first_ms",
    "warm_ms",
    "jit_ms",
    "lookup_us",
    "origin",
    "nvrtc_compiles",
    "disk_hits",
    "memory_hits",
    "error",
)


# --------------------------------------------------------------------------------------------
# child side
# --------------------------------------------------------------------------------------------


def _emit(**row: Any) -> None:
    print(PREFIX + json.dumps(row), flush=True)


def _module_name(op: str) -> str:
    """Backend module of an op: layernorm, rmsnorm or softmax."""
    return "softmax" if "softmax" in op else op.split("_", 1)[0]


def _prime(backend: str) -> None:
    """Load the backend's compiler and modules once, outside the per-kernel numbers."""
    from numba_norms import dispatch

    if backend == "nvrtc":
        import rtc

        src = "__global__ void bench_prime(int* p) { if (p) *p = 1; }"
        rtc.compile(src, ["bench_prime"], name="bench_prime")
    else:
        import numpy as np
        from numba import cuda

        @cuda.jit
        def bench_prime(a):  # pragma: no cover - runs on the GPU
            a[0] = 1

        arr = cuda.to_device(np.zeros(1, dtype=np.int32))
        bench_prime[1, 1](arr)
        cuda.synchronize()
    for name in ("layernorm", "rmsnorm", "softmax"):
        dispatch.backend_module(backend, name)
    dispatch.device_limits(None)


def _lookup_us(backend: str, op: str, plans: list, repeats: int = 200) -> float | None:
    """Microseconds of the backend's compile lookup for already-compiled specs."""
    if not plans:
        return None
    from numba_norms import dispatch

    mod = dispatch.backend_module(backend, _module_name(op))
    total = 0.0
    for plan in plans:
        spec = plan.spec
        compile_fn = mod.compile_backward if spec.config.is_backward else mod.compile_forward
        compile_fn(spec)
        t0 = time.perf_counter()
        for _ in range(repeats):
            compile_fn(spec)
        total += (time.perf_counter() - t0) / repeats
    return total * 1e6


def _measure(phase: str, backend: str, case: Case) -> None:
    row: dict[str, Any] = {
        "phase": phase,
        "backend": backend,
        "op": case.op,
        "dtype": case.dtype,
        "shape": "x".join(map(str, case.x_shape)),
    }
    try:
        import torch
        from _bench_torch import make_set, ours_runner, plan_keys

        import numba_norms as nn
        import rtc
        from numba_norms import dispatch

        fn = ours_runner(case, [make_set(case, seed=7)])
        torch.cuda.synchronize()
        before = plan_keys()
        st0 = rtc.stats()
        t0 = time.perf_counter()
        fn(0)
        torch.cuda.synchronize()
        first = time.perf_counter() - t0
        origin = rtc.last_origin()  # NVRTC modules and the Numba backend's cubins
        st1 = rtc.stats()
        used = nn.last_backend()
        warm = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            fn(0)
            torch.cuda.synchronize()
            warm = min(warm, time.perf_counter() - t0)
        try:  # private dispatch state: best effort
            plans = [dispatch._plan_cache[k] for k in plan_keys() - before]
            lookup = _lookup_us(backend, case.op, plans)
        except Exception as exc:
            lookup = None
            row["error"] = f"lookup: {type(exc).__name__}: {exc}"
        row.update(
            first_ms=first * 1e3,
            warm_ms=warm * 1e3,
            jit_ms=(first - warm) * 1e3,
            lookup_us=lookup,
            origin=origin,
            nvrtc_compiles=st1["nvrtc_compiles"] - st0["nvrtc_compiles"],
            disk_hits=st1["disk_hits"] - st0["disk_hits"],
            memory_hits=st1["memory_hits"] - st0["memory_hits"],
        )
        if used != backend:
            row["error"] = f"backend used: {used}, expected {backend}"
    except Exception as exc:
        row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    _emit(**row)


def child(phase: str, backends: list[str]) -> None:
    """Entry point of a child process: one row per (backend, kernel), plus init rows."""
    t0 = time.perf_counter()
    import torch

    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    _emit(phase=phase, backend="-", op="(torch import + CUDA init)", first_ms=_ms(t0))
    t0 = time.perf_counter()
    import numba_norms  # noqa: F401

    _emit(phase=phase, backend="-", op="(import numba_norms)", first_ms=_ms(t0))
    for backend in backends:
        if backend == "numba":
            os.environ["DISABLE_NVRTC"] = "1"
        else:
            os.environ.pop("DISABLE_NVRTC", None)
        t0 = time.perf_counter()
        try:
            _prime(backend)
            _emit(phase=phase, backend=backend, op="(init)", first_ms=_ms(t0))
        except Exception as exc:
            _emit(phase=phase, backend=backend, op="(init)", error=f"{type(exc).__name__}: {exc}")
        for case in JIT_CASES:
            _measure(phase, backend, case)


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1e3


# --------------------------------------------------------------------------------------------
# parent side
# --------------------------------------------------------------------------------------------


def run_jit(
    backends: list[str],
    timeout_s: float = 150.0,
    log: Callable[[str], None] = print,
    on_phase: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Run the cold and the cached child; return their rows (errors as rows too).

    ``on_phase(phase)`` is called before each child starts (the parent's watchdog uses it).
    """
    here = Path(__file__).resolve().parent
    repo = here.parent
    tmp = Path(tempfile.mkdtemp(prefix="numba-norms-jit-"))
    env = os.environ.copy()
    env["NUMBA_NORMS_CACHE_DIR"] = str(tmp / "rtc")
    env["NUMBA_CACHE_DIR"] = str(tmp / "numba")
    env.pop("DISABLE_NVRTC", None)
    env.pop("NUMBA_NORMS_DISABLE_DISK_CACHE", None)
    env["PYTHONUNBUFFERED"] = "1"
    paths = [str(here), str(repo)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    rows: list[dict[str, Any]] = []
    try:
        for phase in PHASES:
            code = f"import _bench_jit; _bench_jit.child({phase!r}, {list(backends)!r})"
            if on_phase is not None:
                on_phase(phase)
            t0 = time.perf_counter()
            try:
                proc = subprocess.run(
                    [sys.executable, "-c", code],
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=timeout_s,
                    cwd=str(repo),
                )
                out, err, rc = proc.stdout, proc.stderr, proc.returncode
            except subprocess.TimeoutExpired as exc:
                out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
                err, rc = f"timed out after {timeout_s:.0f} s", -1
            got = [
                json.loads(line[len(PREFIX) :])
                for line in out.splitlines()
                if line.startswith(PREFIX)
            ]
            rows.extend(got)
            log(
                f"  jit child '{phase}': {len(got)} rows, rc={rc}, {time.perf_counter() - t0:.1f} s"
            )
            if rc != 0:
                tail = " | ".join((err or "").strip().splitlines()[-3:])
                rows.append(
                    {"phase": phase, "backend": "-", "op": "(child)", "error": f"rc={rc}: {tail}"}
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows
