# Session 56: one norm backward (bf16, 16384 rows) on the backend DISABLE_NVRTC picks, for ncu;
# FORCE=nvrtc|numba serves it the configuration that backend's tables would pick.
import os
import sys

import torch

import numba_norms as nn
from numba_norms import registry

op, cols = sys.argv[1], int(sys.argv[2])
n = int(sys.argv[3]) if len(sys.argv) > 3 else 20
force = os.environ.get("FORCE")
if force:
    real = registry.select_norm

    def select(key, c, r, a, **kw):
        kw["backend"] = force
        return real(key, c, r, a, **kw)

    registry.select_norm = select
rows = 16384
g = torch.Generator(device="cuda").manual_seed(0)
x = torch.randn(rows, cols, device="cuda", generator=g).to(torch.bfloat16)
gam = (1 + 0.1 * torch.randn(cols, device="cuda", generator=g)).to(torch.bfloat16)
bet = (0.1 * torch.randn(cols, device="cuda", generator=g)).to(torch.bfloat16)
dy = torch.randn(rows, cols, device="cuda", generator=g).to(torch.bfloat16)
if op == "layernorm_bwd":
    _, mu, rs = nn.layernorm_fwd(x, gam, bet)

    def call():
        return nn.layernorm_bwd(dy, x, mu, rs, gam)
else:
    _, rs = nn.rmsnorm_fwd(x, gam)

    def call():
        return nn.rmsnorm_bwd(dy, x, rs, gam)


for _ in range(3):
    call()
torch.cuda.synchronize()
t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
t0.record()
for _ in range(n):
    call()
t1.record()
torch.cuda.synchronize()
us = t0.elapsed_time(t1) * 1e3 / n
print(
    f"{op} {cols} {nn.last_backend()} FORCE={force} {us:.1f} us a call, "
    f"{rows * cols * 2 * 3 / us / 1e3:.0f} GB/s (x, dy, dx only)"
)
