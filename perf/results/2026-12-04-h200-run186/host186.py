"""Session 30: host cost of one softmax call whose rows take several CTAs (fp32, 131072 keys,
4 rows: the GPU's share is a few microseconds), wall us a call over a loop, both backends.

    python3 .exp/host186.py BACKEND LABEL OUT.csv
"""

import csv
import os
import statistics
import sys
import time

import torch

backend, label, out = sys.argv[1], sys.argv[2], sys.argv[3]
if backend == "numba":
    os.environ["DISABLE_NVRTC"] = "1"
import numba_norms as nn  # noqa: E402
from numba_norms import dispatch  # noqa: E402

x = torch.randn(1, 1, 4, 131072, device="cuda")
mask = torch.rand(1, 1, 4, 131072, device="cuda") < 0.3
y = torch.softmax(x, -1)
dy = torch.randn_like(x)
x16 = torch.randn(1, 1, 4, 4096, device="cuda", dtype=torch.bfloat16)
cases = {
    "masked_fwd_fp32_131072": lambda: nn.scaled_masked_softmax_fwd(x, mask, 0.5),
    "scaled_fwd_fp32_131072": lambda: nn.scaled_softmax_fwd(x, 0.5),
    "bwd_fp32_131072": lambda: nn.scaled_softmax_bwd(dy, y, 0.5),
    "scaled_fwd_bf16_4096 (one CTA a row)": lambda: nn.scaled_softmax_fwd(x16, 0.5),
}
rows = []
for name, fn in cases.items():
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    per = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(200):
            fn()
        torch.cuda.synchronize()
        per.append((time.perf_counter() - t0) / 200 * 1e6)
    plans = [p for p in dispatch._plan_cache.values() if p.cols == x.shape[-1]]
    rows.append(
        dict(
            case=name,
            backend=backend,
            tree=label,
            us=round(statistics.median(per), 2),
            plans=";".join(f"cpr{p.ctas_per_row}/cl{p.cluster}" for p in plans),
        )
    )
    print(rows[-1], flush=True)
with open(out, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
