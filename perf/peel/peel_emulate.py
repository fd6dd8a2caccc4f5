"""A float64 emulation of peel_probe.cu's index arithmetic (lead, avail, the masks) on tiny
arrays, checked against a float64 reference: every element written once, every whole-vector
read aligned and inside the array.

    python3 perf/peel/peel_emulate.py
"""

from __future__ import annotations

import numpy as np


def run(rows: int, cols: int, threads: int, nv: int, ln: bool, e: int = 8) -> tuple:
    """The kernel's row loop, thread by thread; returns (max |err|, unwritten, whole reads)."""
    eps = 1e-5
    rng = np.random.default_rng(0)
    x = rng.standard_normal(rows * cols)
    g = rng.standard_normal(cols)
    b = rng.standard_normal(cols) if ln else np.zeros(cols)
    y = np.full(rows * cols, np.nan)
    total = rows * cols
    whole = 0
    for r in range(rows):
        start = r * cols
        lead = start & (e - 1)
        avail = min(total - start, 2 * cols + 2 * e)
        v = np.zeros((threads, nv, e))
        col0 = np.array([[(t + k * threads) * e - lead for k in range(nv)] for t in range(threads)])
        for t in range(threads):
            for k in range(nv):
                c0 = col0[t, k]
                if c0 < cols and c0 + e <= avail:
                    assert (start + c0) % e == 0 and start + c0 + e <= total
                    v[t, k] = x[start + c0 : start + c0 + e]
                    whole += 1
                else:
                    for i in range(e):
                        v[t, k, i] = x[start + c0 + i] if c0 + i < cols else 0.0
                for i in range(e):
                    if not 0 <= c0 + i < cols:
                        v[t, k, i] = 0.0
        cols_of = col0[:, :, None] + np.arange(e)
        inside = (cols_of >= 0) & (cols_of < cols)
        mean = v.sum() / cols if ln else 0.0
        rs = 1.0 / np.sqrt((np.where(inside, v - mean, 0.0) ** 2).sum() / cols + eps)
        for t in range(threads):
            for k in range(nv):
                for i in range(e):
                    c = col0[t, k] + i
                    if 0 <= c < cols:
                        assert np.isnan(y[start + c])
                        y[start + c] = (v[t, k, i] - mean) * rs * g[c] + b[c]
    xs = x.reshape(rows, cols)
    d = xs - (xs.mean(1, keepdims=True) if ln else 0.0)
    ref = d / np.sqrt((d * d).mean(1, keepdims=True) + eps) * g + b
    return float(np.nanmax(np.abs(y.reshape(rows, cols) - ref))), int(np.isnan(y).sum()), whole


def run_bwd(rows: int, cols: int, threads: int, nv: int, ln: bool, e: int = 8) -> tuple:
    """The backward kernel's loop: dx, and dgamma / dbeta summed by column in one CTA's shared
    memory; returns (max |dx err|, max |dgamma err|, max |dbeta err|, unwritten dx)."""
    eps = 1e-5
    rng = np.random.default_rng(1)
    x = rng.standard_normal(rows * cols)
    dy = rng.standard_normal(rows * cols)
    g = rng.standard_normal(cols)
    xs = x.reshape(rows, cols)
    mu = xs.mean(1) if ln else np.zeros(rows)
    rsig = 1.0 / np.sqrt(((xs - mu[:, None]) ** 2).mean(1) + eps)
    dx = np.full(rows * cols, np.nan)
    sdg = np.zeros(cols)
    sdb = np.zeros(cols)
    total = rows * cols
    for r in range(rows):
        start = r * cols
        lead = start & (e - 1)
        avail = min(total - start, 2 * cols + 2 * e)
        xh = np.zeros((threads, nv, e))
        dyg = np.zeros((threads, nv, e))
        for t in range(threads):
            for k in range(nv):
                c0 = (t + k * threads) * e - lead
                whole = c0 < cols and c0 + e <= avail
                assert not whole or (start + c0) % e == 0
                for i in range(e):
                    c = c0 + i
                    xv = x[start + c] if c < cols else 0.0
                    dv = dy[start + c] if c < cols else 0.0
                    xh[t, k, i] = (xv - mu[r]) * rsig[r]
                    if 0 <= c < cols:
                        sdg[c] += dv * xh[t, k, i]
                        sdb[c] += dv
                        dyg[t, k, i] = dv * g[c]
        inside = np.array(
            [[[0 <= (t + k * threads) * e - lead + i < cols for i in range(e)] for k in range(nv)]
             for t in range(threads)]
        )  # fmt: skip
        m1 = dyg.sum() / cols if ln else 0.0
        m2 = (dyg * xh).sum() / cols
        for t in range(threads):
            for k in range(nv):
                for i in range(e):
                    if inside[t, k, i]:
                        c = (t + k * threads) * e - lead + i
                        assert np.isnan(dx[start + c])
                        dx[start + c] = rsig[r] * (dyg[t, k, i] - m1 - xh[t, k, i] * m2)
    dys = dy.reshape(rows, cols)
    xh = (xs - mu[:, None]) * rsig[:, None]
    rg = dys * g
    ref = rsig[:, None] * (
        rg - (rg.mean(1, keepdims=True) if ln else 0.0) - xh * (rg * xh).mean(1, keepdims=True)
    )
    return (
        float(np.nanmax(np.abs(dx.reshape(rows, cols) - ref))),
        float(np.abs(sdg - (dys * xh).sum(0)).max()),
        float(np.abs(sdb - dys.sum(0)).max()),
        int(np.isnan(dx).sum()),
    )


if __name__ == "__main__":
    for cols, threads, nv in ((13, 2, 2), (5, 1, 2), (21, 2, 2), (29, 2, 3), (3, 1, 2)):
        for ln in (True, False):
            err, unwritten, whole = run(9, cols, threads, nv, ln)
            print(
                f"cols {cols} {threads}x{nv} ln {ln}: max|err| {err:.2g}, unwritten "
                f"{unwritten}, whole reads {whole}"
            )
            assert err < 1e-12 and unwritten == 0
            errs = run_bwd(9, cols, threads, nv, ln)
            print(f"  backward: max|err| dx / dgamma / dbeta {errs[:3]}, unwritten {errs[3]}")
            assert max(errs[:3]) < 1e-12 and errs[3] == 0
