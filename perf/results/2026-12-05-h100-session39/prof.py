# cProfile of the fast path: layernorm_fwd / rmsnorm_fwd / softmax on 8x4096 bf16 torch tensors.
import cProfile
import io
import pstats
import time

import torch

import numba_norms as nn

x = torch.randn(8, 4096, device="cuda", dtype=torch.bfloat16)
g = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
b = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
s = torch.randn(4, 32, 8, 128, device="cuda", dtype=torch.bfloat16)
calls = {
    "layernorm_fwd": lambda: nn.layernorm_fwd(x, g, b, 1e-05),
    "rmsnorm_fwd": lambda: nn.rmsnorm_fwd(x, g, 1e-05),
    "scaled_softmax_fwd": lambda: nn.scaled_softmax_fwd(s, 0.5),
    "torch_layer_norm": lambda: torch.nn.functional.layer_norm(x, (4096,), g, b, 1e-05),
}
for name, f in calls.items():
    for _ in range(300):
        f()
    torch.cuda.synchronize()
    best = []
    for _ in range(20):
        t0 = time.perf_counter()
        for _ in range(200):
            f()
        best.append((time.perf_counter() - t0) / 200 * 1000000.0)
        torch.cuda.synchronize()
    best.sort()
    print(f"{name}: median {best[10]:.2f} us, min {best[0]:.2f} us")
f = calls["layernorm_fwd"]
pr = cProfile.Profile()
pr.enable()
for _ in range(5000):
    f()
pr.disable()
torch.cuda.synchronize()
st = io.StringIO()
pstats.Stats(pr, stream=st).sort_stats("tottime").print_stats(30)
print(st.getvalue()[:6000])
