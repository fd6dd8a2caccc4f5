"""Session 38, run 227: the host cost of the device guard's check (cuCtxGetDevice + int())."""

import time

import torch
from cuda.bindings import driver

torch.zeros(1, device="cuda")
for _ in range(3):
    t0 = time.perf_counter()
    for _ in range(100000):
        err, dev = driver.cuCtxGetDevice()
        if int(err) or int(dev) != 0:
            raise SystemExit("unexpected")
    print(f"cuCtxGetDevice + int(): {(time.perf_counter() - t0) / 100000 * 1e6:.3f} us a call")
