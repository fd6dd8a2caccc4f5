# ruff: noqa
"""Numba cold build of one kernel in a fresh process, by stage (dev box, no GPU):
frontend+NVVM (numba-cuda's _Kernel: typing, lowering, NVVM to LTO-IR) and link (nvJitLink:
LTO, ptxas) -- python .exp/numba_cold.py OP SIZE"""

import sys, time

t0 = time.perf_counter()
from numba import cuda
from numba.cuda.dispatcher import _Kernel
from numba_norms import precompile
from numba_norms.backends.numba import _cubin, _norms, softmax

t_imp = time.perf_counter() - t0
op, size = sys.argv[1], int(sys.argv[2])
for m, b, s in precompile.all_specs(backend="numba"):
    c = s.config
    dt = getattr(c, "input", getattr(c, "dtype", None))
    n = getattr(c, "hidden_size", None) or c.max_cols
    if c.op == op and n == size and dt == "bf16" and getattr(c, "output", "bf16") == "bf16":
        break
else:
    raise SystemExit("no spec")
cc = (9, 0)
if m == "softmax":
    key, s2, sig, bounds = softmax._build_args(
        softmax._numba_build(s), c.min_ctas_per_sm, softmax._numba_build(s).config.prefetch
    )
    fn = softmax._pyfunc(s2, cc)
else:
    if b:
        fn = _norms._backward_kernel(
            s,
            s.multi_cta,
            _norms._hw_flags(cc)[0],
            _norms._dependent_launch(cc),
            _norms._clusters(cc),
        )
        sig = _norms._backward_signature(c)
    else:
        fn = _norms._forward_kernel(s, s.multi_cta, cc, False)
        sig = _norms._forward_signature(c)
    bounds = _norms._bounds(s)
t1 = time.perf_counter()
disp = cuda.jit(launch_bounds=bounds)(fn)
args = tuple(getattr(sig, "args", sig))
with _cubin.assume_device(cc):
    k = _Kernel(disp.py_func, args, **disp.targetoptions)
    t2 = time.perf_counter()
    img = k._codelibrary.get_cubin(cc)
t3 = time.perf_counter()
print(
    f"{op} {size}: import {t_imp * 1e3:.0f} ms, frontend+NVVM {1e3 * (t2 - t1):.0f} ms, link {1e3 * (t3 - t2):.0f} ms, total {1e3 * (t3 - t1):.0f} ms, lto={disp.targetoptions.get('lto')}"
)
