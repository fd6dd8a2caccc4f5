"""NVRTC compile time of representative kernels, with option variants (no GPU needed).

Every compile bypasses both rtc caches (memory cleared, disk cache off); the best of
``--repeats`` is printed per kernel and option set, so two machines (or two NVRTC versions) can
be compared on the same kernels.

    python3 perf/nvrtc_compile_times.py [--repeats 3] [--arch sm_90]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ["NUMBA_NORMS_DISABLE_DISK_CACHE"] = "1"

import rtc  # noqa: E402
from numba_norms import planner, registry  # noqa: E402
from numba_norms.backends.nvrtc import _norms, softmax  # noqa: E402

LIMITS = planner.DeviceLimits(sm_count=132, name="H200 (planning only)")


def _norm(op: str, cols: int):
    cfg = registry.select_norm(registry.NormKey(op, "bf16", "bf16", "bf16"), cols, 2048, 16)
    return planner.norm_spec(cfg, cols, cfg.num_elts, LIMITS), _norms


def _softmax(op: str, variant: str, cols: int):
    cfg = registry.select_softmax(op, variant, "bf16", cols)
    return planner.softmax_spec(cfg, cols, cfg.num_elts, LIMITS), softmax


CASES = {
    "layernorm_fwd 4096": lambda: _norm("layernorm_fwd", 4096),
    "rmsnorm_bwd 4096": lambda: _norm("rmsnorm_bwd", 4096),
    "softmax_fwd scaled 1024": lambda: _softmax("softmax_fwd", "scaled", 1024),
    "softmax_bwd 1024": lambda: _softmax("softmax_bwd", "scaled", 1024),
    "softmax_fwd masked 1024": lambda: _softmax("softmax_fwd", "masked", 1024),
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--arch", default="sm_90")
    args = p.parse_args()
    print(f"NVRTC {'.'.join(map(str, rtc.nvrtc_version()))}, arch {args.arch}")
    print(f"{'kernel':28s} {'options':38s} {'best ms':>8s}")
    for name, make in CASES.items():
        spec, mod = make()
        base = mod.NVRTC_OPTIONS
        variants = {"(module default)": ()}
        if "-Ofast-compile=min" in base:
            variants["without -Ofast-compile=min"] = None
        else:
            variants["+ -Ofast-compile=min"] = ("-Ofast-compile=min",)
        for label, extra in variants.items():
            saved = mod.NVRTC_OPTIONS
            if extra is None:
                mod.NVRTC_OPTIONS, extra = tuple(o for o in base if o != "-Ofast-compile=min"), ()
            try:
                best = float("inf")
                for _ in range(args.repeats):
                    rtc.clear_cache(memory=True, disk=False)
                    t0 = time.perf_counter()
                    mod.compile_spec(spec, args.arch, options=extra)
                    best = min(best, time.perf_counter() - t0)
            finally:
                mod.NVRTC_OPTIONS = saved
            print(f"{name:28s} {label:38s} {best * 1e3:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
