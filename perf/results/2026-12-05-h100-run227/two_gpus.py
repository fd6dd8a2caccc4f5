"""Session 38, run 226: a call on cuda:1 tensors while cuda:0 is current (old tree vs new)."""

import numpy as np
import torch

import numba_norms as nn
from numba_norms import reference as ref

print("numba_norms from", nn.__file__)
torch.cuda.set_device(0)
for backend in ("nvrtc", "numba"):
    import os

    if backend == "numba":
        os.environ["DISABLE_NVRTC"] = "1"
    for rep in range(2):
        x = torch.randn(8, 4096, device="cuda:1", dtype=torch.bfloat16)
        g = torch.ones(4096, device="cuda:1", dtype=torch.bfloat16)
        try:
            y, rs = nn.rmsnorm_fwd(x, g, 1e-6)
            torch.cuda.synchronize(1)
            xf, gf = x.float().cpu().numpy(), g.float().cpu().numpy()
            err = np.abs(y.float().cpu().numpy() - ref.rmsnorm_fwd(xf, gf, 1e-6)[0]).max()
            print(backend, rep, "ok, max err", err, "current", torch.cuda.current_device())
        except Exception as e:
            print(backend, rep, "raised", type(e).__name__, str(e)[:200])
