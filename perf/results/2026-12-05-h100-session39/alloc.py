# Host cost of output-allocation alternatives and fast-path parts, interleaved rounds (H100).
import statistics
import time

import torch

import numba_norms as nn
from numba_norms.ops import _fast

dev = torch.device("cuda", 0)
f32 = torch.float32
bf16 = torch.bfloat16
rows, cols = (8, 4096)
x = torch.randn(rows, cols, device=dev).to(bf16)
g = torch.randn(cols, device=dev).to(bf16)
b = g.clone()
for _ in range(3):
    nn.layernorm_fwd(x, g, b, 1e-05)
    nn.rmsnorm_fwd(x, g, 1e-05)
key = _fast._fwd_key("layernorm", x, g, b, False, None, None)[0]
y0, mu0, rs0 = nn.layernorm_fwd(x, g, b, 1e-05)
out = (
    torch.empty_like(x),
    torch.empty(rows, dtype=f32, device=dev),
    torch.empty(rows, dtype=f32, device=dev),
)
E = torch.empty
parts = {
    "empty(rows) x2": lambda: (E(rows, dtype=f32, device=dev), E(rows, dtype=f32, device=dev)),
    "empty(2,rows).unbind(0)": lambda: E(2, rows, dtype=f32, device=dev).unbind(0),
    "empty(2,rows) [0],[1]": lambda: (lambda t: (t[0], t[1]))(E(2, rows, dtype=f32, device=dev)),
    "empty_like(x)": lambda: torch.empty_like(x),
    "empty(rows,cols,bf16)": lambda: E(rows, cols, dtype=bf16, device=dev),
    "x.new_empty((rows,))": lambda: x.new_empty((rows,), dtype=f32),
    "fwd key": lambda: _fast._fwd_key("layernorm", x, g, b, False, None, None),
    "hit": lambda: _fast._hit(_fast._fwd, key),
    "layernorm_fwd": lambda: nn.layernorm_fwd(x, g, b, 1e-05),
    "layernorm_fwd out=": lambda: nn.layernorm_fwd(x, g, b, 1e-05, out=out),
    "rmsnorm_fwd": lambda: nn.rmsnorm_fwd(x, g, 1e-05),
    "torch layer_norm": lambda: torch.nn.functional.layer_norm(x, (cols,), g, b, 1e-05),
    "torch native_layer_norm": lambda: torch.native_layer_norm(x, (cols,), g, b, 1e-05),
    "torch rms_norm": lambda: torch.nn.functional.rms_norm(x, (cols,), g, 1e-05),
    "noop lambda": lambda: None,
}
res = {k: [] for k in parts}
for f in parts.values():
    for _ in range(200):
        f()
torch.cuda.synchronize()
for _r in range(30):
    for k, f in parts.items():
        t0 = time.perf_counter()
        for _ in range(200):
            f()
        res[k].append((time.perf_counter() - t0) / 200 * 1000000.0)
        torch.cuda.synchronize()
for k, v in res.items():
    v.sort()
    print(f"{statistics.median(v):7.2f} us (p10 {v[3]:6.2f})  {k}")
