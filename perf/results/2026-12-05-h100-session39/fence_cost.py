# Host cost of a CuPy layernorm_bwd call (pooled scratch) on a tree: python3 fence_cost.py TREE
import statistics
import sys
import time

sys.path.insert(0, sys.argv[1])
import cupy
import numpy as np

import numba_norms as nn

assert nn.__file__.startswith(sys.argv[1]) or sys.argv[1] == ".", nn.__file__
x = cupy.random.standard_normal((8, 4096), dtype=np.float32)
dy = x.copy()
g = cupy.ones(4096, np.float32)
_, mu, rs = nn.layernorm_fwd(x, g, g)
f = lambda: nn.layernorm_bwd(dy, x, mu, rs, g)
for _ in range(300):
    f()
cupy.cuda.Device().synchronize()
res = []
for _ in range(15):
    t0 = time.perf_counter()
    for _ in range(200):
        f()
    res.append((time.perf_counter() - t0) / 200 * 1000000.0)
    cupy.cuda.Device().synchronize()
print(
    f"{sys.argv[1]}: cupy layernorm_bwd 8x4096 fp32 median {statistics.median(res):.1f} us,"
    f" min {min(res):.1f} us"
)
