"""Fingerprints of the Numba kernels' PTX, to show a refactor leaves the generated code alone.

Compiles representative Numba norm kernels to PTX for sm_90 (no GPU needed), strips what varies
between processes without changing code (Numba's function version counters, shared-array
numbering, NumbaEnv pointer globals) and hashes the rest. Save before a change, compare after:

    python3 perf/ptx_fingerprint.py --save /tmp/before.json
    python3 perf/ptx_fingerprint.py --compare /tmp/before.json   # exit 1 if any kernel differs

Identical fingerprints mean identical kernel code, so no GPU run is needed to keep the measured
performance; a difference means the change must be timed on a GPU.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from numba_norms import planner, registry  # noqa: E402
from numba_norms.backends.numba import _norms  # noqa: E402

LIMITS = planner.DeviceLimits(sm_count=132, name="H200 (planning only)")
# (op, (weight, input, output), cols, rows, pointer alignment, fused add): tuned, general,
# several CTAs a row, misaligned rows, FP8 outputs, the fused add
CASES = [
    (op, dt, cols, rows, align, False)
    for op in ("layernorm_fwd", "rmsnorm_fwd", "layernorm_bwd", "rmsnorm_bwd")
    for dt, cols, rows, align in (
        (("bf16", "bf16", "bf16"), 4096, 64, 16),
        (("fp32", "fp32", "fp32"), 1000, 37, 4),
        (("fp16", "fp16", "fp16"), 65536, 8, 16),
        (("bf16", "bf16", "bf16"), 5003, 8, 2),
    )
] + [
    ("layernorm_fwd", ("bf16", "bf16", "fp8e4m3"), 4096, 64, 16, False),
    ("rmsnorm_fwd", ("fp32", "fp32", "fp8e5m2"), 1000, 37, 4, False),
    ("rmsnorm_bwd", ("bf16", "bf16", "bf16"), 4096, 64, 16, True),
]


def normalized(ptx: str) -> str:
    ptx = re.sub(r"B\d+v\d+B", "BvB", ptx)
    names: dict[str, str] = {}
    ptx = re.sub(r"_cudapy_smem_\d+", lambda m: names.setdefault(m.group(0), f"s{len(names)}"), ptx)
    ptx = "\n".join(line for line in ptx.splitlines() if "NumbaEnv" not in line)
    # extern declarations (cooperative-groups runtime) come in varying order between processes
    decl = re.compile(r"^\.extern \.func[^;]*;", re.M)
    externs = sorted(decl.findall(ptx))
    body = re.sub(r"\n{3,}", "\n\n", decl.sub("", ptx))
    return "\n".join(externs) + "\n" + body


def fingerprints() -> dict[str, str]:
    out = {}
    for op, (w, i, o), cols, rows, align, add in CASES:
        cfg = registry.select_norm(registry.NormKey(op, w, i, o, add), cols, rows, align)
        vec = planner.vector_elements(((align, 4 if i == "fp32" else 2),), cfg.num_elts)
        spec = planner.norm_spec(cfg, cols, vec, LIMITS)
        if cfg.is_backward:
            ptx = _norms.compile_backward(spec, "sm_90")
        else:  # with and without the amax reduction
            ptx = _norms.compile_forward(spec, "sm_90")
            ptx += _norms.compile_forward(spec, "sm_90", amax=True)
        name = f"{op} {w}/{i}/{o} cols={cols} align={align}" + (" +add" if add else "")
        out[name] = hashlib.sha256(normalized(ptx).encode()).hexdigest()
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--save", help="write the fingerprints to this JSON file")
    g.add_argument("--compare", help="compare with fingerprints saved earlier")
    args = p.parse_args()
    now = fingerprints()
    if args.save:
        with open(args.save, "w") as f:
            json.dump(now, f, indent=1)
        print(f"{len(now)} kernels fingerprinted -> {args.save}")
        return 0
    with open(args.compare) as f:
        before = json.load(f)
    changed = [k for k in now if before.get(k) != now[k]]
    for k in changed:
        print(f"changed: {k}")
    print(f"{len(now) - len(changed)} of {len(now)} kernels unchanged")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
