# ruff: noqa: E402
"""Host cost of one public call: where the microseconds go.

Default (no GPU needed): torch tensors are stand-ins (tests/fakes.py), the NVRTC kernels are
never loaded and the driver under ``rtc.Launcher`` returns at once. What remains is everything
numba-norms itself does per call: argument checks, dtype/alignment, outputs (the stand-in
torch.empty is nearly free), plan lookup, launch-record lookup, packing the parameter block.

``--real`` (GPU, torch): the same calls on real CUDA tensors, timed and profiled, so the
stand-in's figure can be compared with what torch and the driver add.

    python perf/host_profile.py [--real] [--calls N] [--rows R] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _stand_ins():
    """Install the stand-in torch and a launch-free NVRTC backend; return torch and a tensor
    factory."""
    from tests.fakes import FakeDriver, FakeTorchDevice, make_fake_torch

    torch, _ = make_fake_torch()
    sys.modules["torch"] = torch
    from numba_norms import arrays, dispatch, planner
    from numba_norms.backends.nvrtc import _norms, softmax

    arrays._TORCH_DTYPES.clear()
    dispatch._limits_cache[0] = planner.DeviceLimits(sm_count=132, name="stand-in H200")
    _norms.load = lambda spec, device=None: (0xA1, 0xF1)  # "addresses" for rtc.Launcher
    _norms.occupancy = lambda spec: 4
    softmax.load = lambda spec, device=None: 0xB1
    softmax.occupancy_forward = softmax.occupancy_backward = lambda spec: 4
    rtc_launch = importlib.import_module("rtc.launch")
    rtc_launch._core()
    rtc_launch._driver = FakeDriver(record=False)  # the driver calls return at once
    dev = FakeTorchDevice("cuda", 0)
    base = [0x1_0000_0000]

    def tensor(*shape, dtype):  # distinct addresses (outputs must not overlap inputs)
        base[0] += 0x100_0000
        return torch.Tensor(shape, arrays._c_strides(shape), dtype, dev, base[0])

    return torch, tensor


def _real():
    import torch

    def tensor(*shape, dtype):
        return torch.randn(*shape, device="cuda").to(dtype)

    return torch, tensor


def _calls(torch, tensor, rows: int, hidden: int):
    import numba_norms as nn

    bf16, f32 = torch.bfloat16, torch.float32
    x, g, b, dy = (
        tensor(*s, dtype=bf16) for s in ((rows, hidden), (hidden,), (hidden,)) + ((rows, hidden),)
    )
    mu, rs = tensor(rows, dtype=f32), tensor(rows, dtype=f32)
    att = tensor(1, 1, rows, hidden, dtype=bf16)
    # outputs allocated once, written by the "+out" calls (out=)
    y, y_att = tensor(rows, hidden, dtype=bf16), tensor(1, 1, rows, hidden, dtype=bf16)
    mu_o, rs_o = tensor(rows, dtype=f32), tensor(rows, dtype=f32)
    dx, dg, db = (
        tensor(rows, hidden, dtype=bf16),
        tensor(hidden, dtype=bf16),
        tensor(hidden, dtype=bf16),
    )
    return {
        "layernorm_fwd": lambda: nn.layernorm_fwd(x, g, b),
        "rmsnorm_fwd": lambda: nn.rmsnorm_fwd(x, g),
        "layernorm_bwd": lambda: nn.layernorm_bwd(dy, x, mu, rs, g),
        "softmax_fwd": lambda: nn.scaled_softmax_fwd(att, 0.5),
        "layernorm_fwd+out": lambda: nn.layernorm_fwd(x, g, b, out=(y, mu_o, rs_o)),
        "rmsnorm_fwd+out": lambda: nn.rmsnorm_fwd(x, g, out=(y, rs_o)),
        "layernorm_bwd+out": lambda: nn.layernorm_bwd(dy, x, mu, rs, g, out=(dx, dg, db)),
        "softmax_fwd+out": lambda: nn.scaled_softmax_fwd(att, 0.5, out=y_att),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--real", action="store_true", help="real torch tensors on the GPU")
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--rows", type=int, default=8)
    p.add_argument("--profile", action="store_true", help="cProfile one op's loop")
    p.add_argument("--op", default="layernorm_fwd", help="the op --profile profiles")
    args = p.parse_args()
    os.environ.pop("DISABLE_NVRTC", None)
    torch, tensor = _real() if args.real else _stand_ins()
    from numba_norms import dispatch

    sync = torch.cuda.synchronize if args.real else (lambda: None)
    calls = _calls(torch, tensor, args.rows, 4096)
    where = "real tensors and launches" if args.real else "Python path, stand-ins, no launch"
    for op, fn in calls.items():
        for _ in range(100):
            fn()
        assert dispatch.last_backend() == "nvrtc"
        sync()
        t0 = time.perf_counter()
        for _ in range(args.calls):
            fn()
        sync()
        us = (time.perf_counter() - t0) / args.calls * 1e6
        print(f"{op:17s} {us:6.2f} us per call ({where}, rows {args.rows}, hidden 4096, bf16)")
    if args.profile:
        fn = calls[args.op]
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.calls):
            fn()
        sync()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
