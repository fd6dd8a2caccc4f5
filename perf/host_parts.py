# ruff: noqa: E402
"""Where the host microseconds of one small norm call go, part by part (GPU, torch).

Times, in a loop of ``--calls`` calls (median of ``--repeats`` loops, the device synchronised
between loops; 200 calls: 2000 filled the launch queue, so the launch-only loops timed the
GPU's pace instead of the host's), each thing a fast-path ``layernorm_fwd`` call
does on real CUDA tensors, and the whole call beside ``torch.nn.functional.layer_norm``:

- the output allocations (``torch.empty_like``, ``torch.empty`` of the row statistics);
- reading the signature (``data_ptr``, dtype/shape/stride/device) and the current stream;
- the launch: ``rtc.Launcher`` (``cuda.bindings`` ``cuLaunchKernelEx`` since session 11,
  ``cuLaunchKernel`` before) and the same parameter block handed to the driver's
  ``cuLaunchKernel`` through ``ctypes``.

    python3 perf/host_parts.py [--rows 8] [--hidden 4096] [--calls 200] [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import ctypes
import datetime
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _time(fn, calls: int, repeats: int, sync) -> float:
    """Median over ``repeats`` loops of the microseconds per call of ``fn``."""
    for _ in range(50):
        fn()
    sync()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) / calls * 1e6)
        sync()
    return statistics.median(out)


def _function_of(launcher) -> int:
    """The ``CUfunction`` (current context) of ``launcher``'s ``CUkernel``."""
    from cuda.bindings import driver

    err, fn = driver.cuKernelGetFunction(driver.CUkernel(launcher._fn))
    if int(err):
        raise RuntimeError(f"cuKernelGetFunction: {err}")
    return int(fn)


def _ctypes_launch(launcher, fn: int | None = None):
    """A launch of ``launcher``'s kernel (or the function ``fn``) and parameter block through
    ctypes and libcuda."""
    lib = ctypes.CDLL("libcuda.so.1")
    f = lib.cuLaunchKernel
    u = ctypes.c_uint
    f.argtypes = [ctypes.c_void_p, u, u, u, u, u, u, u, ctypes.c_void_p, ctypes.c_void_p,
                  ctypes.c_void_p]  # fmt: skip
    f.restype = ctypes.c_int
    (gx, gy, gz), (bx, by, bz) = launcher._grid, launcher._block
    fn, smem, addr = fn or launcher._fn, launcher._smem, launcher._addr

    def launch(stream: int) -> None:
        err = f(fn, gx, gy, gz, bx, by, bz, smem, stream, addr, None)
        if err:
            raise RuntimeError(f"cuLaunchKernel: {err}")

    return launch


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=8)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--repeats", type=int, default=50)
    p.add_argument("--out", default=None, help="write host_parts.csv here")
    args = p.parse_args()

    import torch
    import torch.nn.functional as F

    import numba_norms as nn
    import rtc
    from numba_norms.ops import _fast

    os.environ.pop("DISABLE_NVRTC", None)
    dev = torch.device("cuda", 0)
    bf16, f32 = torch.bfloat16, torch.float32
    x = torch.randn(args.rows, args.hidden, device=dev).to(bf16)
    g = torch.randn(args.hidden, device=dev).to(bf16)
    b = torch.randn(args.hidden, device=dev).to(bf16)
    y, mu, rs = nn.layernorm_fwd(x, g, b, 1e-5)
    y, mu, rs = nn.layernorm_fwd(x, g, b, 1e-5)  # the second call is remembered
    key = _fast._fwd_key("layernorm", x, g, b, False, None, None)[0]  # (key, ins, outs)
    entry = _fast._hit(_fast._fwd, key)
    if entry is None:
        print("layernorm_fwd was not remembered by the fast path", file=sys.stderr)
        return 1
    fire = entry[0]
    raw = torch._C._cuda_getCurrentRawStream
    stream = raw(0)
    rows, cols = args.rows, args.hidden
    params = (
        x.data_ptr(), g.data_ptr(), b.data_ptr(), y.data_ptr(), mu.data_ptr(), rs.data_ptr(),
        rows, cols, cols, cols, 1e-5, 0, 0, 0, 0, 0, 0,
    )  # fmt: skip
    fire(stream, *params)
    ct = _ctypes_launch(fire)
    # the same kernel as a CUfunction of this context (rtc.Kernel hands the launcher the
    # context-independent CUkernel, which the driver resolves at each launch)
    cufn = _function_of(fire)
    ct_fn = _ctypes_launch(fire, cufn)
    fire_fn = rtc.Launcher(cufn, fire._grid, fire._block, fire.params, shared_mem=fire._smem,
                           programmatic=fire._dep, device=0)  # fmt: skip
    fire_fn(stream, *params)
    sync = torch.cuda.synchronize

    parts = {
        "torch.empty_like(x)": lambda: torch.empty_like(x),
        "torch.empty(rows, f32)": lambda: torch.empty(rows, dtype=f32, device=dev),
        "3 x data_ptr()": lambda: (x.data_ptr(), g.data_ptr(), b.data_ptr()),
        "signature of x (dtype, shape, stride, device)": lambda: _fast._sig(x),
        "fast-path key": lambda: _fast._fwd_key("layernorm", x, g, b, False, None, None),
        "current raw stream": lambda: raw(0),
        "rtc.Launcher call (cuda.bindings)": lambda: fire(stream, *params),
        "pack + ctypes cuLaunchKernel": lambda: (
            fire._struct.pack_into(fire._buf, 0, *params),
            ct(stream),
        ),
        "ctypes cuLaunchKernel alone": lambda: ct(stream),
        "ctypes cuLaunchKernel alone, CUfunction": lambda: ct_fn(stream),
        "rtc.Launcher call, CUfunction": lambda: fire_fn(stream, *params),
        "numba_norms.layernorm_fwd (whole call)": lambda: nn.layernorm_fwd(x, g, b, 1e-5),
        "numba_norms.layernorm_fwd, out= (whole call)": lambda: nn.layernorm_fwd(
            x, g, b, 1e-5, out=(y, mu, rs)
        ),
        "torch F.layer_norm (whole call)": lambda: F.layer_norm(x, (cols,), g, b, 1e-5),
    }
    rows_out = []
    print(f"host cost per call, {args.rows} x {args.hidden} bf16, {torch.cuda.get_device_name()}")
    for name, fn in parts.items():
        us = _time(fn, args.calls, args.repeats, sync)
        rows_out.append((name, round(us, 3)))
        print(f"{us:8.2f} us  {name}")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "host_parts.csv"), "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["part", "us_per_call", "rows", "hidden", "gpu", "date", "torch"])
            day = datetime.date.today().isoformat()
            for name, us in rows_out:
                w.writerow([name, us, args.rows, args.hidden, torch.cuda.get_device_name(), day,
                            torch.__version__])  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
