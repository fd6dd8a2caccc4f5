"""Prototype timing (session 58): norm forwards and backwards for 16-bit rows of an odd hidden
size that read each row through whole 16-byte vectors counted from the array's aligned base
(neighbouring rows' elements masked out), the weights in shared memory, against the library's
path for such rows (vectors as wide as the row's alignment: one element for an odd size) on
both backends and a same-size copy. Session 59 added the Numba twin (``peel_numba.py``,
lines ``peel-numba``). Session 59's result (H100): the peel lost to the faster library backend
everywhere, 0.74-0.98x on the forwards and 0.46-0.72x on the backwards
(``perf/results/2026-12-08-session59``).

    python3 perf/peel/peel_probe.py [--cols 5003 2053 12289] [--dtypes fp16 bf16]

Prints one line per (op, dtype, cols, implementation): median us, GB/s (forwards: x read, y
written, with % of the copy; backwards: x, dy read, dx written) and the largest difference from
a float64 reference (dx, and dgamma relative to its largest value).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # perf/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # perf/peel

import numba_norms as nn  # noqa: E402
import rtc  # noqa: E402

# torch is imported by main(): the CPU tests import this module (kernel_names) without it.
torch = None
HERE = os.path.dirname(os.path.abspath(__file__))
CT = {"fp16": "__half", "bf16": "__nv_bfloat16"}
# (threads, vectors a thread) tried per row length: the cover of a row is at most
# ceil(cols / 8) + 1 vectors.
SHAPES = {2053: ((64, 5), (128, 3)), 5003: ((128, 5), (256, 3)), 12289: ((256, 7), (512, 4))}


def kernel_names(dtypes, cols_list) -> list[str]:
    """The instantiations the probe times: each dtype, row length, shape and op."""
    return sorted(
        {
            f"norm_{d}_peel<{CT[dt]}, {th}, {nv}, {ln}>"
            for d in ("fwd", "bwd")
            for dt in dtypes
            for cols in cols_list
            for th, nv in SHAPES[cols]
            for ln in ("true", "false")
        }
    )


def peel_kernels(mod, dt: str, cols: int, ln: bool, backward: bool):
    """(label, kernel, threads, dynamic shared bytes) of each peel instantiation at ``cols``:
    the CUDA C probe's (weights as T in shared memory) and its Numba twin's (fp32 weights)."""
    import peel_numba

    size = 2  # 16-bit storage
    for th, nv in SHAPES[cols]:
        name = f"norm_{'bwd' if backward else 'fwd'}_peel<{CT[dt]}, {th}, {nv}, {str(ln).lower()}>"
        smem = cols * ((4 * (2 if ln else 1) + size) if backward else size * (2 if ln else 1))
        yield f"peel {th}x{nv}", mod.kernel(name), th, smem
    for th, nv in SHAPES[cols]:
        k = peel_numba.load(dt, th, nv, ln, backward)
        yield f"peel-numba {th}x{nv}", k, th, peel_numba.shared_bytes(cols, ln, backward)


def timed(fn) -> float:
    """Median device time of ``fn`` in us, by bench.py's method (CUDA events, the host's
    queueing hidden behind a sleep)."""
    from _bench_torch import time_calls

    return time_calls(lambda _i: fn(), 1).median_us


def reference(x, g, b, ln: bool, eps: float):
    """float64 forward output, on the GPU (the host would take seconds at 12289 columns)."""
    xd = x.double()
    d = xd - xd.mean(1, keepdim=True) if ln else xd
    out = d * torch.rsqrt((d * d).mean(1, keepdim=True) + eps) * g.double()
    return out + b.double() if ln else out


def reference_bwd(dy, x, g, ln: bool, eps: float) -> tuple:
    """float64 dx and dgamma of the forward :func:`reference` computes, on the GPU."""
    xd, dyd = x.double(), dy.double()
    d = xd - xd.mean(1, keepdim=True) if ln else xd
    rs = torch.rsqrt((d * d).mean(1, keepdim=True) + eps)
    xh = d * rs
    dyg = dyd * g.double()
    m1 = dyg.mean(1, keepdim=True) if ln else 0.0
    dx = rs * (dyg - m1 - xh * (dyg * xh).mean(1, keepdim=True))
    return dx, (dyd * xh).sum(0)


def maxerr(a, ref) -> float:
    return float((a.double() - ref).abs().max())


def case_bwd(mod, props, x, g, dt: str, eps: float, gen) -> None:
    """Time the library's backwards and the peel backward (kernel plus the sum of the CTAs'
    column parts) on x's shape; bytes: dy, x read, dx written."""
    rows, cols = x.shape
    dy = torch.randn(rows, cols, device="cuda", generator=gen).to(x.dtype)
    nbytes = 3 * rows * cols * x.element_size()
    stream = torch.cuda.current_stream().cuda_stream
    for ln in (True, False):
        op = "layernorm_bwd" if ln else "rmsnorm_bwd"
        rdx, rdg = reference_bwd(dy, x, g, ln, eps)
        if ln:
            _, mu, rs = nn.layernorm_fwd(x, g, torch.zeros_like(g), eps=eps)
        else:
            _, rs = nn.rmsnorm_fwd(x, g, eps=eps)
            mu = rs

        def lib(ln=ln, mu=mu, rs=rs):
            if ln:
                return nn.layernorm_bwd(dy, x, mu, rs, g)
            return nn.rmsnorm_bwd(dy, x, rs, g)

        def errs(dx, dgam, rdx=rdx, rdg=rdg):
            e1 = maxerr(dx, rdx)
            e2 = maxerr(dgam, rdg) / float(rdg.abs().max())
            return f"dx {e1:.3g} dgamma(rel) {e2:.3g}"

        out = []
        for backend in ("nvrtc", "numba"):
            os.environ.pop("DISABLE_NVRTC", None)
            if backend == "numba":
                os.environ["DISABLE_NVRTC"] = "1"
            res = lib()
            out.append((f"library {nn.last_backend()}", timed(lib), errs(res[0], res[1])))
        os.environ.pop("DISABLE_NVRTC", None)
        dx = torch.empty_like(x)
        for label, k, th, smem in peel_kernels(mod, dt, cols, ln, True):
            grid = props.multi_processor_count * max(1, k.occupancy(th, smem))
            pg = torch.empty(grid, cols, device="cuda")
            pb = torch.empty(grid, cols, device="cuda")
            args = (
                dy.data_ptr(),
                x.data_ptr(),
                mu.data_ptr(),
                rs.data_ptr(),
                g.data_ptr(),
                dx.data_ptr(),
                pg.data_ptr(),
                pb.data_ptr(),
                np.int32(rows),
                np.int32(cols),
            )

            def peel(k=k, grid=grid, th=th, smem=smem, args=args, pg=pg, pb=pb, ln=ln):
                rtc.launch(k, grid, th, *args, stream=stream, shared_mem=smem)
                return pg.sum(0).to(x.dtype), pb.sum(0).to(x.dtype) if ln else None

            dx.zero_()
            dgam, _ = peel()
            label = f"{label} regs {k.num_regs} grid {grid}"
            out.append((label, timed(peel), errs(dx, dgam)))
        for label, us, err in out:
            print(
                f"{op} {dt} {cols} {label:36s} {us:8.1f} us {nbytes / us / 1e3:6.0f} GB/s  {err}",
                flush=True,
            )


def case(mod, props, dt: str, cols: int, rows: int, gen) -> None:
    """Time the library and the peel kernels on one (dtype, cols) and print a line each."""
    eps = 1e-5
    tdt = {"fp16": torch.float16, "bf16": torch.bfloat16}[dt]
    x = torch.randn(rows, cols, device="cuda", generator=gen).to(tdt)
    assert x.data_ptr() % 16 == 0, "the kernels count vectors from a 16-byte aligned base"
    g = (1 + 0.1 * torch.randn(cols, device="cuda", generator=gen)).to(tdt)
    b = (0.1 * torch.randn(cols, device="cuda", generator=gen)).to(tdt)
    y = torch.empty_like(x)
    mu = torch.empty(rows, device="cuda")
    rs = torch.empty(rows, device="cuda")
    nbytes = 2 * rows * cols * x.element_size()
    copy_us = timed(lambda: x.clone())
    print(f"copy {dt} {cols}: {copy_us:.1f} us, {nbytes / copy_us / 1e3:.0f} GB/s")
    stream = torch.cuda.current_stream().cuda_stream
    for ln in (True, False):
        op = "layernorm_fwd" if ln else "rmsnorm_fwd"
        ref = reference(x, g, b, ln, eps)
        out = []

        def lib(ln=ln):
            if ln:
                return nn.layernorm_fwd(x, g, b, eps=eps)[0]
            return nn.rmsnorm_fwd(x, g, eps=eps)[0]

        for backend in ("nvrtc", "numba"):
            os.environ.pop("DISABLE_NVRTC", None)
            if backend == "numba":
                os.environ["DISABLE_NVRTC"] = "1"
            err = maxerr(lib(), ref)
            out.append((f"library {nn.last_backend()}", timed(lib), err))
        os.environ.pop("DISABLE_NVRTC", None)
        for label, k, th, smem in peel_kernels(mod, dt, cols, ln, False):
            grid = props.multi_processor_count * max(1, k.occupancy(th, smem))
            args = (
                x.data_ptr(),
                g.data_ptr(),
                b.data_ptr(),
                y.data_ptr(),
                mu.data_ptr(),
                rs.data_ptr(),
                np.int32(rows),
                np.int32(cols),
                np.float32(eps),
            )

            def peel(k=k, grid=grid, th=th, smem=smem, args=args):
                rtc.launch(k, grid, th, *args, stream=stream, shared_mem=smem)

            y.zero_()
            peel()
            err = maxerr(y, ref)
            out.append((f"{label} regs {k.num_regs} grid {grid}", timed(peel), err))
        for label, us, err in out:
            print(
                f"{op} {dt} {cols} {label:36s} {us:8.1f} us {nbytes / us / 1e3:6.0f} GB/s "
                f"{100 * copy_us / us:5.1f}% of copy  max|err| {err:.3g}",
                flush=True,
            )
    case_bwd(mod, props, x, g, dt, eps, gen)


def main() -> int:
    global torch
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--cols", type=int, nargs="+", default=[5003, 2053, 12289])
    ap.add_argument("--dtypes", nargs="+", default=["fp16", "bf16"])
    ap.add_argument("--rows", type=int, default=16384)
    args = ap.parse_args()
    src = open(os.path.join(HERE, "peel_probe.cu")).read()
    props = torch.cuda.get_device_properties(0)
    arch = f"sm_{props.major}{props.minor}"
    print(f"{props.name} {arch} {props.multi_processor_count} SMs, torch {torch.__version__}")
    names = kernel_names(args.dtypes, args.cols)
    mod = rtc.compile(src, names, arch=arch, name="peel_probe.cu", cuda_headers=True)
    gen = torch.Generator(device="cuda").manual_seed(0)
    for dt in args.dtypes:
        for cols in args.cols:
            case(mod, props, dt, cols, args.rows, gen)
    return 0


if __name__ == "__main__":
    sys.exit(main())
