"""Torch side of the benchmark: inputs, implementations, the correctness check and the timer.

Imported only once the command line has been parsed (``--help`` and ``--list`` need no torch).
All tensors live on torch's current CUDA device; our functions take torch tensors and launch on
torch's current stream, so CUDA events recorded on that stream bracket their kernels.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import torch
import torch.nn.functional as F
from _bench_cases import Case, norm_bwd_partial_bytes

DEVICE = "cuda"  # torch's current CUDA device
EPS = 1e-5
SCALE = 0.125
MASKED_VALUE = -10000.0  # TE's value for masked positions of scaled_masked_softmax
TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
# Loose bounds on ||out - ref|| / ||ref|| against an fp32 reference: they catch garbage
# (unwritten outputs, wrong indexing, wrong formula), not last-bit differences.
CHECK_TOL = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 3e-2, "fp8": 8e-2}
FP8_SCALE = 4.0  # FP8 outputs: y = fp8(normalised * FP8_SCALE)
OUR_IMPLS = ("nvrtc", "numba")
# torch.cuda._sleep counts SM clock cycles; ~2 GHz is the H200's top clock, so at a lower clock
# the sleep only lasts longer (which is harmless).
SLEEP_CYCLES_PER_MS = 2_000_000
MAX_SLEEP_MS = 200.0

Tensors = dict[str, torch.Tensor]
Runner = Callable[[int], Any]


# --------------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------------


def _randn(shape: tuple[int, ...], dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    return torch.randn(shape, device=DEVICE, dtype=torch.float32, generator=gen).to(dtype)


def make_set(case: Case, seed: int) -> Tensors:
    """One independent set of random inputs for ``case`` (never zeros)."""
    gen = torch.Generator(device=DEVICE)
    gen.manual_seed(seed)
    dt = TORCH_DTYPES[case.dtype]
    shape = case.x_shape
    t: Tensors = {}
    if case.is_norm:
        h = case.cols
        t["x"] = _randn(shape, dt, gen)
        t["gamma"] = (1.0 + 0.1 * _randn((h,), torch.float32, gen)).to(dt)
        if not case.is_rms:
            t["beta"] = (0.1 * _randn((h,), torch.float32, gen)).to(dt)
        if case.is_fp8:
            t["scale"] = torch.full((1,), FP8_SCALE, device=DEVICE)
            t["amax"] = torch.zeros(1, device=DEVICE)
        if case.is_backward:
            t["dy"] = _randn(shape, dt, gen)
            xf = t["x"].float()
            if case.is_rms:
                t["rsigma"] = torch.rsqrt(xf.square().mean(-1) + EPS)
            else:
                t["mu"] = xf.mean(-1)
                t["rsigma"] = torch.rsqrt(xf.var(-1, unbiased=False) + EPS)
            del xf
        return t
    t["x"] = _randn(shape, dt, gen)
    if case.op.startswith("masked"):
        mshape = (case.b, 1, case.sq, case.cols)
        t["mask"] = torch.rand(mshape, device=DEVICE, generator=gen) < 0.3
    if case.is_backward:
        t["dy"] = _randn(shape, dt, gen)
        t["y"] = torch.softmax(t["x"].float() * SCALE, -1).to(dt)
    return t


def causal_mask(case: Case) -> torch.Tensor | None:
    """The bool mask (True = excluded) torch eager uses for the causal variants."""
    if case.op.startswith("upper_triang"):
        return torch.ones(case.sq, case.cols, device=DEVICE, dtype=torch.bool).triu(1)
    if case.op.startswith("aligned_causal"):
        ones = torch.ones(case.sq, case.cols, device=DEVICE, dtype=torch.bool)
        return ones.triu(case.cols - case.sq + 1)
    return None


# --------------------------------------------------------------------------------------------
# implementations
# --------------------------------------------------------------------------------------------

OUTPUT_NAMES = {
    "layernorm_fwd": ("y", "mu", "rsigma"),
    "rmsnorm_fwd": ("y", "rsigma"),
    "layernorm_bwd": ("dx", "dgamma", "dbeta"),
    "rmsnorm_bwd": ("dx", "dgamma"),
    "softmax_bwd": ("dx",),
    "layernorm_fwd_fp8": ("y", "mu", "rsigma"),
    "rmsnorm_fwd_fp8": ("y", "rsigma"),
}


def output_names(op: str) -> tuple[str, ...]:
    return OUTPUT_NAMES.get(op, ("y",))


def output_bytes(case: Case) -> list[int]:
    """Sizes of our outputs in the order our functions allocate them (for poisoning)."""
    big = case.elements * case.size
    if case.is_fp8:
        return [case.elements] + [case.rows * 4] * (1 if case.is_rms else 2)
    if case.op.endswith("norm_fwd"):
        return [big] + [case.rows * 4] * (1 if case.is_rms else 2)
    if case.op.endswith("norm_bwd"):
        return [big] + [case.cols * case.size] * (1 if case.is_rms else 2)
    return [big]


@contextlib.contextmanager
def backend_env(impl: str) -> Iterator[None]:
    """Select our backend: DISABLE_NVRTC is read at call time, so it can change per call."""
    old = os.environ.get("DISABLE_NVRTC")
    if impl.split("+")[0] == "numba":
        os.environ["DISABLE_NVRTC"] = "1"
    else:
        os.environ.pop("DISABLE_NVRTC", None)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("DISABLE_NVRTC", None)
        else:
            os.environ["DISABLE_NVRTC"] = old


def ours_runner(case: Case, sets: list[Tensors], out: Any = None) -> Runner:
    """A call of our public function on input set ``i % len(sets)`` (with ``out``: writing
    into those arrays instead of allocating; not for FP8 cases)."""
    import numba_norms as nn

    op = case.op
    if op == "layernorm_fwd":
        fn, keys = nn.layernorm_fwd, ("x", "gamma", "beta")
    elif op == "rmsnorm_fwd":
        fn, keys = nn.rmsnorm_fwd, ("x", "gamma")
    elif op == "layernorm_bwd":
        fn, keys = nn.layernorm_bwd, ("dy", "x", "mu", "rsigma", "gamma")
    elif op == "rmsnorm_bwd":
        fn, keys = nn.rmsnorm_bwd, ("dy", "x", "rsigma", "gamma")
    elif case.is_fp8:
        base = nn.layernorm_fwd if op.startswith("layernorm") else nn.rmsnorm_fwd
        keys = ("x", "gamma") + (() if case.is_rms else ("beta",)) + ("scale", "amax")

        def fn(*a):
            *xs, scale, amax = a
            return base(*xs, EPS, out_dtype=torch.float8_e4m3fn, scale=scale, amax=amax)

        args = [tuple(s[k] for k in keys) for s in sets]
        return lambda i: fn(*args[i % len(args)])
    elif op == "softmax_fwd":
        fn, keys = nn.scaled_softmax_fwd, ("x",)
    elif op == "softmax_bwd":
        fn, keys = nn.scaled_softmax_bwd, ("dy", "y")
    elif op == "masked_softmax_fwd":
        fn, keys = nn.scaled_masked_softmax_fwd, ("x", "mask")
    elif op == "upper_triang_softmax_fwd":
        fn, keys = nn.scaled_upper_triang_masked_softmax_fwd, ("x",)
    elif op == "aligned_causal_softmax_fwd":
        fn, keys = nn.scaled_aligned_causal_masked_softmax_fwd, ("x",)
    else:
        raise ValueError(f"unknown op {op}")
    extra: tuple[Any, ...] = (EPS,) if op.endswith("norm_fwd") else ()
    if not case.is_norm:
        extra = (SCALE,)
    args = [tuple(s[k] for k in keys) + extra for s in sets]
    n = len(args)
    if out is not None:
        return lambda i: fn(*args[i % n], out=out)
    return lambda i: fn(*args[i % n])


def torch_function(case: Case) -> tuple[Callable[..., torch.Tensor], tuple[str, ...]]:
    """The torch eager forward of ``case`` and the names of its tensor arguments."""
    op, h = case.op, case.cols
    if case.is_fp8:  # eager: the norm, then scale, amax and the cast as separate kernels
        norm, keys = torch_function(replace(case, op=op.removesuffix("_fp8")))

        def fp8(*a):
            *xs, scale, amax = a
            y = norm(*xs).float()
            torch.maximum(amax, y.abs().amax(), out=amax)
            return (y * scale).to(torch.float8_e4m3fn)

        return fp8, keys + ("scale", "amax")
    if op.startswith("layernorm"):
        return (lambda x, g, b: F.layer_norm(x, (h,), g, b, EPS)), ("x", "gamma", "beta")
    if op.startswith("rmsnorm"):
        if hasattr(F, "rms_norm"):
            return (lambda x, g: F.rms_norm(x, (h,), g, EPS)), ("x", "gamma")

        def rms(x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
            xf = x.float()
            return (xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + EPS)).to(x.dtype) * g

        return rms, ("x", "gamma")
    if op.startswith("masked"):

        def masked(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
            return torch.softmax((x * SCALE).masked_fill(m, MASKED_VALUE), -1)

        return masked, ("x", "mask")
    if op.startswith(("upper_triang", "aligned_causal")):

        def causal(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
            return torch.softmax((x * SCALE).masked_fill(m, float("-inf")), -1)

        return causal, ("x", "causal")
    return (lambda x: torch.softmax(x * SCALE, -1)), ("x",)


def stream_runner(case: Case, sets: list[Tensors]) -> tuple[Runner, int]:
    """(runner, bytes) of the streaming torch kernel that moves the op's big tensors and
    nothing else: the ceiling of a kernel of this size (its launch, ramp and tail included),
    where the 2 GiB copy is that of an endless one.

    Forwards: ``x`` converted to the output dtype (a copy where they match; the mask of the
    masked forward is left out); backwards: ``dy + x`` (norms) or ``dy + y`` (softmax), two
    reads and one write of the input dtype, as ``dx``.
    """
    n = len(sets)
    if case.is_backward:
        other = "x" if case.is_norm else "y"
        pairs = [(s["dy"], s[other]) for s in sets]
        nbytes = 3 * case.elements * case.size
        return (lambda i: torch.add(*pairs[i % n])), nbytes
    xs = [s["x"] for s in sets]
    if case.is_fp8:
        fp8 = torch.float8_e4m3fn
        return (lambda i: xs[i % n].to(fp8)), case.elements * (case.size + 1)
    return (lambda i: xs[i % n].clone()), 2 * case.elements * case.size


def liger_available() -> bool:
    try:
        import liger_kernel  # noqa: F401
    except Exception:
        return False
    return True


def liger_function(case: Case) -> tuple[Callable[..., torch.Tensor], tuple[str, ...]]:
    """Liger-Kernel's Triton LayerNorm / RMSNorm (norms only), as an autograd function."""
    if case.op.startswith("layernorm"):
        from liger_kernel.ops.layer_norm import LigerLayerNormFunction

        return (lambda x, g, b: LigerLayerNormFunction.apply(x, g, b, EPS)), ("x", "gamma", "beta")
    if case.op.startswith("rmsnorm"):
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction

        def rms(x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
            try:  # offset 0, "llama" casting, in_place=False: keep dy intact across calls
                return LigerRMSNormFunction.apply(x, g, EPS, 0.0, "llama", False)
            except TypeError:
                return LigerRMSNormFunction.apply(x, g, EPS)

        return rms, ("x", "gamma")
    raise NotImplementedError("Liger rows exist for the norms only")


def _raise_dynamo_limits() -> None:
    """dynamic=False recompiles per shape; keep dynamo from falling back to eager silently."""
    try:
        import torch._dynamo

        for name in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit"):
            if hasattr(torch._dynamo.config, name):
                setattr(torch._dynamo.config, name, max(256, getattr(torch._dynamo.config, name)))
    except Exception:
        pass


def torch_runner(case: Case, sets: list[Tensors], flavor: str = "torch") -> Runner:
    """torch eager / torch.compile / Liger forward, or its backward through autograd.grad.

    ``flavor`` is the impl name: "torch", "torch_compile" or "liger".
    """
    if flavor == "liger":
        fwd, keys = liger_function(case)
    else:
        fwd, keys = torch_function(case)
    if flavor == "torch_compile":
        _raise_dynamo_limits()
        fwd = torch.compile(fwd, dynamic=False)
    shared: Tensors = {}
    mask = causal_mask(case)
    if mask is not None:
        shared["causal"] = mask
    n = len(sets)
    if not case.is_backward:
        args = [tuple(s.get(k, shared.get(k)) for k in keys) for s in sets]
        return lambda i: fwd(*args[i % n])
    # Backward: one retained graph per set, then only the backward runs in the timed loop.
    graphs = []
    for s in sets:
        leaves = []
        call_args = []
        for k in keys:
            v = s.get(k, shared.get(k))
            if k in ("x", "gamma", "beta"):
                v = v.detach().requires_grad_(True)
                leaves.append(v)
            call_args.append(v)
        with torch.enable_grad():
            y = fwd(*call_args)
        graphs.append((y, tuple(leaves), s["dy"]))

    def run(i: int) -> Any:
        y, leaves, dy = graphs[i % n]
        return torch.autograd.grad(y, leaves, dy, retain_graph=True)

    return run


def as_outputs(case: Case, impl: str, out: Any) -> dict[str, torch.Tensor]:
    """Name the outputs of one call (torch impls return fewer: y only, or the grads)."""
    if isinstance(out, torch.Tensor):
        out = (out,)
    if impl not in OUR_IMPLS:
        if case.op.endswith("norm_bwd"):
            return dict(zip(("dx", "dgamma", "dbeta"), out, strict=False))
        if case.op == "softmax_bwd":
            return {"dx": out[0]}
        return {"y": out[0]}
    return dict(zip(output_names(case.op), out, strict=False))


# --------------------------------------------------------------------------------------------
# reference and check
# --------------------------------------------------------------------------------------------


def reference(case: Case, s: Tensors) -> dict[str, torch.Tensor]:
    """fp32 reference outputs of ``case`` on input set ``s``."""
    op = case.op
    if case.is_norm:
        x = s["x"].float()
        g = s["gamma"].float()
        if not case.is_backward:
            # FP8: y as the kernel stores it, fp8(v * scale), widened (the check's tolerance
            # covers the one-rounding difference of the fp32 reference)
            q = (lambda v: (v * FP8_SCALE).to(torch.float8_e4m3fn).float()) if case.is_fp8 else None
            if case.is_rms:
                rs = torch.rsqrt(x.square().mean(-1) + EPS)
                y = x * rs[:, None] * g
                return {"y": q(y) if q else y, "rsigma": rs}
            mu = x.mean(-1)
            rs = torch.rsqrt(x.var(-1, unbiased=False) + EPS)
            y = (x - mu[:, None]) * rs[:, None] * g + s["beta"].float()
            return {"y": q(y) if q else y, "mu": mu, "rsigma": rs}
        dy = s["dy"].float()
        rs = s["rsigma"][:, None]
        xhat = x * rs if case.is_rms else (x - s["mu"][:, None]) * rs
        dyg = dy * g
        dx = dyg - (dyg * xhat).mean(-1, keepdim=True) * xhat
        if not case.is_rms:
            dx = dx - dyg.mean(-1, keepdim=True)
        out = {"dx": dx * rs, "dgamma": (dy * xhat).sum(0)}
        if not case.is_rms:
            out["dbeta"] = dy.sum(0)
        return out
    if op == "softmax_bwd":
        y, dy = s["y"].float(), s["dy"].float()
        return {"dx": SCALE * y * (dy - (dy * y).sum(-1, keepdim=True))}
    v = s["x"].float() * SCALE
    if op.startswith("masked"):
        v = v.masked_fill(s["mask"], MASKED_VALUE)
    mask = causal_mask(case)
    if mask is not None:
        v = v.masked_fill(mask, float("-inf"))
    return {"y": torch.softmax(v, -1)}


def compare(case: Case, got: dict[str, torch.Tensor], ref: dict[str, torch.Tensor]) -> str:
    """'' when every output is close to the reference, else what is wrong."""
    bad = []
    for name, r in ref.items():
        tol = CHECK_TOL["fp8" if case.is_fp8 and name == "y" else case.dtype]
        a = got.get(name)
        if a is None:
            continue
        if tuple(a.shape) != tuple(r.shape):
            bad.append(f"{name}: shape {tuple(a.shape)} != {tuple(r.shape)}")
            continue
        af = a.float()
        nans = int(torch.isnan(af).sum())
        if nans:
            bad.append(f"{name}: {nans} NaN (unwritten?)")
            continue
        denom = float(torch.linalg.vector_norm(r)) or 1.0
        err = float(torch.linalg.vector_norm(af - r)) / denom
        if a.dtype != torch.float32:
            # What storing the exact answer in the output's dtype costs already: a few bits when
            # the values are (fp16-)subnormal, e.g. the softmax backward's dx at 131072 keys.
            floor = float(torch.linalg.vector_norm(r.to(a.dtype).float() - r)) / denom
            tol += 2 * floor
        if not err <= tol:
            bad.append(f"{name}: rel err {err:.2e} > {tol:.1e}")
    return "; ".join(bad)


def poison(nbytes: list[int]) -> None:
    """Make the caching allocator hand out NaN-filled memory to the next allocations.

    Without this a kernel that writes nothing could pass the check with an earlier call's
    result left in a recycled block. Free cached blocks go back to the driver first, then
    blocks of exactly the outputs' sizes are filled with 0xFF (NaN in fp32/fp16/bf16) and freed.
    """
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    blocks = [torch.empty(n, dtype=torch.uint8, device=DEVICE).fill_(255) for n in nbytes]
    torch.cuda.synchronize()
    del blocks


# --------------------------------------------------------------------------------------------
# plans (best effort: private dispatch state, for the "extra" column only)
# --------------------------------------------------------------------------------------------


def plan_keys() -> set:
    try:
        from numba_norms import dispatch

        return set(dispatch._plan_cache)
    except Exception:
        return set()


def describe_new_plans(before: set, case: Case) -> str:
    """Short description of the plan(s) the last call added to dispatch's plan cache."""
    try:
        from numba_norms import dispatch

        new = [dispatch._plan_cache[k] for k in set(dispatch._plan_cache) - before]
    except Exception:
        return ""
    parts = []
    for plan in new:
        try:
            spec, cfg = plan.spec, plan.spec.config
            text = (
                f"{cfg.kind} wm{cfg.warps_m}xwn{cfg.warps_n} ne{spec.num_elts} ldgs{spec.ldgs}"
                f" cpr{plan.ctas_per_row} grid{plan.grid[0]}x{plan.grid[1]} blk{plan.block[0]}"
            )
            if plan.cooperative:
                text += " coop"
            if case.op.endswith("norm_bwd") and plan.partial_rows:
                extra = norm_bwd_partial_bytes(plan.partial_rows, case.cols, case.is_rms)
                text += f" partials_MB={extra / 1e6:.1f}"
            parts.append(text)
        except Exception as exc:  # plan layout changed: say so, do not fail the row
            parts.append(f"plan? {type(exc).__name__}")
    return " | ".join(parts)


# --------------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------------


@dataclass
class Timing:
    median_us: float
    p20_us: float
    p80_us: float
    reps: int
    loop_us: float  # whole timed loop / reps: includes launch gaps between calls
    host_us: float  # host time to enqueue one call (no synchronization inside the loop)


def _quantile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def time_calls(
    fn: Runner,
    n_sets: int,
    *,
    target_ms: float = 40.0,
    min_reps: int = 10,
    max_reps: int = 200,
    warmup: int = 3,
) -> Timing:
    """Median of per-call CUDA-event times, rotating over ``n_sets`` input sets.

    The outputs of the last ``n_sets`` calls are kept alive, so outputs rotate as well. Before
    the timed loop the stream sleeps long enough for the host to queue every call, so the
    events measure device time, not Python overhead (which the host-cost section measures).
    """
    keep: deque = deque(maxlen=max(1, n_sets))
    i = 0
    # At least one call per set, so the allocator holds every rotating output block before
    # the timed loop (no cudaMalloc inside it).
    for _ in range(max(warmup, n_sets + 1)):
        keep.append(fn(i))
        i += 1
    torch.cuda.synchronize()
    # Device time per call (host-bound calls make this an over-estimate: fine for sizing) and
    # host time to enqueue one call (read before the synchronize).
    probe = max(2, min(5, n_sets))
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    e0.record()
    for _ in range(probe):
        keep.append(fn(i))
        i += 1
    e1.record()
    host_s = (time.perf_counter() - t0) / probe
    torch.cuda.synchronize()
    est_ms = max(e0.elapsed_time(e1) / probe, 1e-3)
    reps = int(min(max_reps, max(min_reps, target_ms / est_ms)))

    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    sleep_ms = min(MAX_SLEEP_MS, 1.5 * reps * host_s * 1e3 + 1.0)
    if hasattr(torch.cuda, "_sleep"):
        torch.cuda._sleep(int(sleep_ms * SLEEP_CYCLES_PER_MS))
    for k in range(reps):
        starts[k].record()
        keep.append(fn(i))
        ends[k].record()
        i += 1
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends, strict=True)]
    loop_us = starts[0].elapsed_time(ends[-1]) * 1e3 / reps
    keep.clear()
    return Timing(
        median_us=statistics.median(times),
        p20_us=_quantile(times, 0.2),
        p80_us=_quantile(times, 0.8),
        reps=reps,
        loop_us=loop_us,
        host_us=host_s * 1e6,
    )


def copy_ceiling(gib: float = 2.0, reps: int = 20) -> tuple[float, float, int]:
    """(median us, GB/s, bytes) of ``dst.copy_(src)`` over ``gib`` GiB; bytes = read + write."""
    n = int(gib * (1 << 30))
    src = torch.empty(n, dtype=torch.uint8, device=DEVICE).random_(0, 255)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        dst.copy_(src)
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) * 1e3)
    med = statistics.median(times)
    nbytes = 2 * n
    del src, dst
    torch.cuda.empty_cache()
    return med, nbytes / (med * 1e-6) / 1e9, nbytes


# --------------------------------------------------------------------------------------------
# host cost
# --------------------------------------------------------------------------------------------

HOST_OPS = ("layernorm_fwd", "layernorm_bwd", "rmsnorm_fwd", "softmax_fwd")


def host_runner(op: str, impl: str, rows: int, hidden: int) -> Callable[[], Any]:
    """A zero-argument call of ``op`` at a tiny shape (bf16, torch tensors on the GPU);
    ``nvrtc+out`` / ``numba+out``: our call writing into outputs allocated once (``out=``)."""
    if op == "softmax_fwd":
        case = Case(op, "bf16", rows, hidden, 1, 1, rows)
    else:
        case = Case(op, "bf16", rows, hidden)
    s = make_set(case, seed=1234)
    if impl in OUR_IMPLS:
        fn = ours_runner(case, [s])
        return lambda: fn(0)
    if impl.removesuffix("+out") in OUR_IMPLS:
        fn = ours_runner(case, [s], out=ours_runner(case, [s])(0))
        return lambda: fn(0)
    if op == "layernorm_bwd":
        # The aten kernel call torch's autograd makes, without the autograd bookkeeping.
        # mean/rstd as torch's own forward saves them (dtype and shape are torch's choice).
        x, g, b = s["x"], s["gamma"], s["beta"]
        _, mu, rs = torch.ops.aten.native_layer_norm(x, (hidden,), g, b, EPS)
        mask = [True, True, True]
        bwd = torch.ops.aten.native_layer_norm_backward
        return lambda: bwd(s["dy"], x, (hidden,), mu, rs, g, b, mask)
    fwd, keys = torch_function(case)
    args = tuple(s[k] for k in keys)
    return lambda: fwd(*args)


def host_cost(fn: Callable[[], Any], calls: int, warmup: int = 20) -> float:
    """Wall microseconds per call over ``calls`` back-to-back calls (synchronized around)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls * 1e6
