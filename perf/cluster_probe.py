"""How many thread-block clusters of 8 and of 16 CTAs (16: the non-portable size) the driver
fits for the NVRTC kernels of rows that now run 16 CTAs on the counter, or would with 16.

For each kernel: its registers, CTAs an SM by occupancy, and cuOccupancyMaxActiveClusters for
clusters of 8 and 16 (the latter after CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED).
Information for the next step on 16-CTA rows; nothing here is launched. Written in session 13,
whose device time ran out before it ran (a first GPU run may need fixes).

    python3 perf/cluster_probe.py
"""

from __future__ import annotations

import dataclasses
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from _tune_common import main_kernel  # noqa: E402
from cuda.bindings import driver  # noqa: E402

from numba_norms import dispatch, planner, registry  # noqa: E402

LIMITS = dispatch.device_limits(None)


def probe(label: str, cfg, cols: int, vec: int) -> None:
    spec = planner.norm_spec(cfg, cols, vec, LIMITS)
    k = main_kernel("nvrtc", "layernorm", spec)
    threads = spec.threads
    c8 = k.max_active_clusters(8, threads, 0)
    err, fn = driver.cuKernelGetFunction(driver.CUkernel(int(k.handle.handle)))
    if int(err) != 0:
        raise RuntimeError(f"cuKernelGetFunction failed for {k.name}: {err!r}")
    attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
    (set_err,) = driver.cuFuncSetAttribute(fn, attr, 1)
    c16 = k.max_active_clusters(16, threads, 0)
    occ = k.occupancy(threads, 0)
    print(
        f"{label:44s} ctas/row {spec.ctas_per_row:2d} threads {threads:4d} regs {k.num_regs:3d} "
        f"ctas/SM {occ}  clusters of 8: {c8:3d}  of 16: {c16:3d} (attr {int(set_err)})",
        flush=True,
    )


def main() -> int:
    print(f"{LIMITS.name}: {LIMITS.sm_count} SMs")
    key = registry.NormKey("layernorm_bwd", "fp32", "fp32", "fp32")
    probe(
        "layernorm_bwd fp32 131072 (table: 16 CTAs)",
        registry.select_norm(key, 131072, 16384, 256),
        131072,
        4,
    )
    bkey = registry.NormKey("layernorm_bwd", "bf16", "bf16", "bf16")
    for ctas, wn, mc, pf in (
        (16, 4, 1, True),
        (16, 8, 1, True),
        (16, 4, 2, True),
        (16, 16, 1, False),
    ):
        cfg = registry.NormConfig.tuned_for(
            bkey, 65536, ctas_per_row=ctas, warps_m=1, warps_n=wn, origin="measured",
            min_ctas_per_sm=mc,
        )  # fmt: skip
        cfg = dataclasses.replace(cfg, prefetch=pf)
        probe(f"layernorm_bwd bf16 65536 {ctas}/1x{wn} cap {mc} pf {int(pf)}", cfg, 65536, 8)
    return 0


if __name__ == "__main__":
    sys.exit(main())
