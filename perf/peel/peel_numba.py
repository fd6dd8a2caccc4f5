"""The Numba twin of ``peel_probe.cu`` (session 59; perf only, not a library kernel): the same
row cover of whole 16-byte vectors counted from the array's aligned base, for 16-bit rows of an
odd hidden size, built from the library's Numba primitives (``_ld_g`` / ``_st``, the warp
sums) so a GPU run can tell whether the Numba path would keep up with NVRTC's form. Timed in
session 59 (H100): 0.66-1.07x the CUDA C probe's speed, and like it slower than the library.

Differences from the CUDA C probe: gamma / beta (and the backward's dgamma / dbeta sums) sit in
dynamic shared memory as fp32 (a Numba shared array has one dtype; the probe's NVRTC form keeps
the weights in their 16-bit storage), and the block sums go through a shared slot per thread
under the simulator, which has no warp shuffles.

:func:`fwd_kernel` / :func:`bwd_kernel` give the Python function of one instantiation (threads,
vectors a thread, LayerNorm or RMSNorm, dtype); :func:`load` compiles it for the current GPU
through the library's Numba cubin cache; :func:`signature` is its argument types.
:func:`simulate` runs both kernels under Numba's CUDA simulator at a tiny size against float64
references (``NUMBA_ENABLE_CUDASIM=1 python3 perf/peel/peel_numba.py`` prints each case's
worst error in units of the library's tolerance for the dtype; 1 is the limit).
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from numba_norms.backends.numba import _cubin
from numba_norms.backends.numba import _norms as nb

__all__ = ["E", "bwd_kernel", "fwd_kernel", "load", "shared_bytes", "signature", "simulate"]

E = 8  # 16-bit elements of a 16-byte vector
F32 = np.float32


def shared_bytes(cols: int, ln: bool, backward: bool) -> int:
    """Dynamic shared memory of one CTA: fp32 gamma (and beta), the backward's fp32 column sums."""
    if backward:
        return 4 * cols * (3 if ln else 2)
    return 4 * cols * (2 if ln else 1)


def _block_sum(threads: int):
    """A CTA's sum of one float per thread (every thread must call it; all get the sum)."""
    nwarps = threads // 32
    warp_sum = nb._warp_sum

    @nb._device
    def block_sum(v, xch, red, tid):
        v = warp_sum(v, xch, tid, tid % 32)
        cuda.syncthreads()  # red is reused by the next sum
        if tid % 32 == 0:
            red[tid // 32] = v
        cuda.syncthreads()
        s = F32(0.0)
        for i in range(nwarps):
            s += red[i]
        return s

    return block_sum


def _row_cover(rows: int, cols: int, r: int):
    """(start, lead, cover): the row's first element, its offset from the 16-byte vector that
    holds it, and how many columns from the row's start lie inside the array (capped)."""
    start = np.int64(r) * cols
    lead = np.int32(start & (E - 1))
    left = np.int64(rows) * cols - start
    cap = 2 * cols + 2 * E
    return start, lead, np.int32(left if left < cap else cap)


def _store_cover(hw: bool):
    """``store(out, start, c0, cols, o)``: the vector of ``o`` at column ``c0`` of the row at
    ``start``, whole where the row holds all of it, else only the row's elements (the edge
    vectors' other columns are the neighbouring rows')."""
    st = nb._stores(hw)[0]

    @nb._device
    def store(out, start, c0, cols, o):
        if c0 >= 0 and c0 + E <= cols:
            st(out, start + c0, o, 0, E)
        else:
            for i in range(E):
                if c0 + i >= 0 and c0 + i < cols:
                    st(out, start + c0 + i, o, i, 1)

    return store


def _load_weights(threads: int):
    """``load(w, sm, at, cols, t)``: ``sm[at + c] = fp32(w[c])`` for every column, strided over
    the CTA's threads (``t``: a one-float local array)."""
    ld_g = nb._ld_g

    @nb._device
    def load(w, sm, at, cols, t):
        c = cuda.threadIdx.x
        while c < cols:
            ld_g(w, c, t, 0, 1, 1)
            sm[at + c] = t[0]
            c += threads

    return load


def fwd_kernel(threads: int, nv: int, ln: bool, hw: bool):
    """The forward: ``x, gamma, beta, y, mu, rsigma, rows, cols, eps`` (x, y contiguous rows;
    x's and y's base 16-byte aligned), grid-strided over rows."""
    xch_n = threads if nb._SIM else 1
    nve = nv * E  # a constant for cuda.local.array
    nred = threads // 32
    ld_g = nb._ld_g
    store = _store_cover(hw)
    weights = _load_weights(threads)
    block_sum = _block_sum(threads)
    cover = nb._device(_row_cover)

    def norm_fwd_peel(x, gamma, beta, y, mu, rsigma, rows, cols, eps):
        tid = cuda.threadIdx.x
        sm = cuda.shared.array(0, nb.F32)  # gamma[cols], then beta[cols]
        red = cuda.shared.array(nred, nb.F32)
        xch = cuda.shared.array(xch_n, nb.F32)
        v = cuda.local.array(nve, nb.F32)
        o = cuda.local.array(E, nb.F32)
        t = cuda.local.array(1, nb.F32)
        weights(gamma, sm, 0, cols, t)
        if ln:
            weights(beta, sm, cols, cols, t)
        cuda.syncthreads()
        inv = F32(1.0) / F32(cols)
        r = cuda.blockIdx.x
        while r < rows:
            start, lead, avail = cover(rows, cols, r)
            for k in range(nv):
                c0 = (tid + k * threads) * E - lead
                n = avail - c0 if c0 < cols else 0  # whole where the array holds the vector
                ld_g(x, start + c0, v, k * E, E, n)
                for i in range(E):
                    if c0 + i < 0 or c0 + i >= cols:
                        v[k * E + i] = 0.0
            mean = F32(0.0)
            if ln:
                s = F32(0.0)
                for j in range(nve):
                    s += v[j]
                mean = block_sum(s, xch, red, tid) * inv
            q = F32(0.0)
            for k in range(nv):
                c0 = (tid + k * threads) * E - lead
                for i in range(E):
                    if c0 + i >= 0 and c0 + i < cols:
                        d = v[k * E + i] - mean
                        q += d * d
            rs = F32(1.0) / F32(math.sqrt(block_sum(q, xch, red, tid) * inv + eps))
            if tid == 0:
                rsigma[r] = rs
                if ln:
                    mu[r] = mean
            for k in range(nv):
                c0 = (tid + k * threads) * E - lead
                if c0 < cols:
                    for i in range(E):
                        c = c0 + i
                        g = F32(0.0)
                        b = F32(0.0)
                        if c >= 0 and c < cols:
                            g = sm[c]
                            if ln:
                                b = sm[cols + c]
                        o[i] = (v[k * E + i] - mean) * rs * g + b
                    store(y, start, c0, cols, o)
            r += cuda.gridDim.x

    return norm_fwd_peel


def bwd_kernel(threads: int, nv: int, ln: bool, hw: bool):
    """The backward: ``dy, x, mu, rsigma, gamma, dx, dgamma_part, dbeta_part, rows, cols``; each
    CTA writes its column sums to ``part[blockIdx.x * cols + c]`` (the caller sums the parts)."""
    xch_n = threads if nb._SIM else 1
    nve = nv * E
    nred = threads // 32
    ld_g = nb._ld_g
    store = _store_cover(hw)
    weights = _load_weights(threads)
    block_sum = _block_sum(threads)
    cover = nb._device(_row_cover)

    def norm_bwd_peel(dy, x, mu, rsigma, gamma, dx, dgamma_part, dbeta_part, rows, cols):
        tid = cuda.threadIdx.x
        sm = cuda.shared.array(0, nb.F32)  # gamma[cols], dgamma sums[cols], dbeta sums[cols]
        red = cuda.shared.array(nred, nb.F32)
        xch = cuda.shared.array(xch_n, nb.F32)
        xv = cuda.local.array(nve, nb.F32)
        dv = cuda.local.array(nve, nb.F32)
        o = cuda.local.array(E, nb.F32)
        t = cuda.local.array(1, nb.F32)
        weights(gamma, sm, 0, cols, t)
        c = tid
        while c < (2 if ln else 1) * cols:  # the column sums start at 0
            sm[cols + c] = 0.0
            c += threads
        cuda.syncthreads()
        inv = F32(1.0) / F32(cols)
        r = cuda.blockIdx.x
        while r < rows:
            start, lead, avail = cover(rows, cols, r)
            for k in range(nv):
                c0 = (tid + k * threads) * E - lead
                n = avail - c0 if c0 < cols else 0
                ld_g(x, start + c0, xv, k * E, E, n)
                ld_g(dy, start + c0, dv, k * E, E, n)
            m = mu[r] if ln else F32(0.0)
            rs = rsigma[r]
            s1 = F32(0.0)
            s2 = F32(0.0)
            for k in range(nv):
                c0 = (tid + k * threads) * E - lead
                for i in range(E):
                    c = c0 + i
                    j = k * E + i
                    xh = (xv[j] - m) * rs
                    dyg = F32(0.0)
                    # a column is one thread's in a row; the row's block sums order the rows
                    if c >= 0 and c < cols:
                        sm[cols + c] += dv[j] * xh
                        if ln:
                            sm[2 * cols + c] += dv[j]
                        dyg = dv[j] * sm[c]
                    xv[j] = xh
                    dv[j] = dyg
                    s1 += dyg
                    s2 += dyg * xh
            mdyg = block_sum(s1, xch, red, tid) * inv if ln else F32(0.0)
            mdygx = block_sum(s2, xch, red, tid) * inv
            for k in range(nv):
                c0 = (tid + k * threads) * E - lead
                if c0 < cols:
                    for i in range(E):
                        j = k * E + i
                        o[i] = rs * (dv[j] - mdyg - xv[j] * mdygx)
                    store(dx, start, c0, cols, o)
            r += cuda.gridDim.x
        cuda.syncthreads()
        c = tid
        base = np.int64(cuda.blockIdx.x) * cols
        while c < cols:
            dgamma_part[base + c] = sm[cols + c]
            if ln:
                dbeta_part[base + c] = sm[2 * cols + c]
            c += threads

    return norm_bwd_peel


def signature(dtype: str, backward: bool):
    """The kernel's argument types (raw pointers, as the library's Numba kernels take them)."""
    from numba.cuda import types

    p, t, f32 = types.CPointer, nb.STORAGE_TYPES[dtype], nb.F32
    if backward:
        return types.void(p(t), p(t), p(f32), p(f32), p(t), p(t), p(f32), p(f32), nb.I32, nb.I32)
    return types.void(p(t), p(t), p(t), p(t), p(f32), p(f32), nb.I32, nb.I32, f32)


def load(dtype: str, threads: int, nv: int, ln: bool, backward: bool):
    """One instantiation compiled for the current GPU (a ``rtc.Kernel``, cubin cached on disk
    by the library's Numba cache)."""
    cc, _ = _cubin.current_device()
    hw = nb._hw_flags(cc)[0]
    make = bwd_kernel if backward else fwd_kernel
    key = ("peel-probe", dtype, threads, nv, ln, backward)
    return _cubin.load(
        key, lambda: make(threads, nv, ln, hw), signature(dtype, backward), (threads, 1), cc
    )


def simulate(
    dtype: str, rows: int, cols: int, threads: int, nv: int, ln: bool, grid: int = 3
) -> dict[str, float]:
    """Both kernels under the simulator on random rows, against float64 references: y's and
    dx's worst error in units of the tolerance table's ``atol + rtol * |ref|``, and dgamma's /
    dbeta's worst difference relative to the reference's largest value."""
    import ml_dtypes

    from numba_norms.reference import TOLERANCE

    rng = np.random.default_rng(cols)
    npdt = {"bf16": ml_dtypes.bfloat16, "fp16": np.float16}[dtype]
    x = rng.standard_normal(rows * cols).astype(npdt)
    g = (1 + 0.1 * rng.standard_normal(cols)).astype(npdt)
    b = (0.1 * rng.standard_normal(cols)).astype(npdt)
    dy = rng.standard_normal(rows * cols).astype(npdt)

    def bits(a):  # bf16 travels as its bits
        return a.view(np.uint16) if dtype == "bf16" else a

    y = np.full(rows * cols, np.nan, npdt)  # an element left unwritten fails as NaN
    mu = np.zeros(rows, F32)
    rs = np.zeros(rows, F32)
    eps = F32(1e-5)
    fwd = cuda.jit(fwd_kernel(threads, nv, ln, False))
    fwd[grid, threads, 0, shared_bytes(cols, ln, False)](
        bits(x), bits(g), bits(b), bits(y), mu, rs, rows, cols, eps
    )
    dx = np.full(rows * cols, np.nan, npdt)
    pg = np.zeros(grid * cols, F32)
    pb = np.zeros(grid * cols, F32)
    bwd = cuda.jit(bwd_kernel(threads, nv, ln, False))
    bwd[grid, threads, 0, shared_bytes(cols, ln, True)](
        bits(dy), bits(x), mu, rs, bits(g), bits(dx), pg, pb, rows, cols
    )
    xd = x.astype(np.float64).reshape(rows, cols)
    d = xd - xd.mean(1, keepdims=True) if ln else xd
    r = 1.0 / np.sqrt((d * d).mean(1, keepdims=True) + float(eps))
    xh = d * r
    ref_y = xh * g.astype(np.float64) + (b.astype(np.float64) if ln else 0.0)
    dyd = dy.astype(np.float64).reshape(rows, cols)
    dyg = dyd * g.astype(np.float64)
    m1 = dyg.mean(1, keepdims=True) if ln else 0.0
    ref_dx = r * (dyg - m1 - xh * (dyg * xh).mean(1, keepdims=True))
    atol, rtol = TOLERANCE[dtype]

    def units(a, ref):
        err = np.abs(a.astype(np.float64).reshape(rows, cols) - ref)
        return float(np.max(err / (atol + rtol * np.abs(ref))))

    def rel(parts, ref):
        return float(np.abs(parts.reshape(grid, cols).sum(0) - ref).max() / np.abs(ref).max())

    out = {"y": units(y, ref_y), "dx": units(dx, ref_dx), "dgamma": rel(pg, (dyd * xh).sum(0))}
    if ln:
        out["dbeta"] = rel(pb, dyd.sum(0))
    return out


# (rows, cols, threads, vectors a thread): rows shorter and longer than one pass of the CTA's
# vectors, every lead 0-7 (rows of an odd length), the last row's vector at the array's end.
SIM_CASES = ((9, 13, 32, 1), (8, 75, 32, 1), (5, 300, 32, 2))


if __name__ == "__main__":
    import json

    results = [
        {"dtype": dt, "rows": rows, "cols": cols, "ln": ln, **simulate(dt, rows, cols, th, nv, ln)}
        for dt in ("bf16", "fp16")
        for rows, cols, th, nv in SIM_CASES
        for ln in (True, False)
    ]
    print(json.dumps(results))
