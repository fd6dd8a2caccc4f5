# Same process, alternating: a CuPy layernorm_bwd call with the pool's per-use event fence on,
# then off (the tree at b6e122c, which had rtc.StreamFence and dispatch._capturing; the fence was
# replaced by stream ids in 3696ef4). "off" makes every stream look captured: no fence calls.
import time, statistics, numpy as np, cupy, numba_norms as nn, rtc
from numba_norms import dispatch
x = cupy.random.standard_normal((8, 4096), dtype=np.float32); dy = x.copy(); g = cupy.ones(4096, np.float32)
_, mu, rs = nn.layernorm_fwd(x, g, g)
f = lambda: nn.layernorm_bwd(dy, x, mu, rs, g)
real_cap = dispatch._capturing
def mode(on):
    dispatch._capturing = real_cap if on else (lambda s: True)
res = {True: [], False: []}
for _ in range(300): f()
for r in range(12):
    for on in (True, False):
        mode(on)
        for _ in range(50): f()
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for _ in range(200): f()
        res[on].append((time.perf_counter() - t0) / 200 * 1e6)
        cupy.cuda.Device().synchronize()
for on in (True, False):
    print(f"fence {'on ' if on else 'off'}: median {statistics.median(res[on]):.1f} us, min {min(res[on]):.1f} us")
