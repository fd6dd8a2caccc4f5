"""Fused softmax kernels (scaled, masked, upper-triangular, aligned causal) in Numba.

Contract: docs/design.md ("Softmax kernels"). The kernels mirror ``backends/nvrtc/softmax.cu``
operation for operation (same reductions in the same order, the same ``ex2.approx``,
conversions and inter-CTA exchange), so both backends produce the same bits on one GPU.

Specialisation: a kernel is a closure built by :func:`_forward_kernel` / :func:`_backward_kernel`
from the spec's compile-time values (dtype, variant, warps, elements per vector, vectors per
thread); Numba freezes closure variables as constants, so loops over them are unrolled by NVVM
and the row's local arrays live in registers. No source is generated. Each kernel is compiled
once per ``SoftmaxSpec.kernel_key`` (which says whether CTAs share rows: one-CTA kernels leave
the inter-CTA exchange out) with an explicit signature (no type inference at launch).

Vector access: the row is read and written as raw 32-bit words with one aligned 2-16 byte access
per vector (``_rowops.ld_words`` emits ``ld.global.v4.u32`` for 16 bytes), and converted to fp32
in registers: the same code for fp32, fp16 and bf16.

Under Numba's CUDA simulator the same kernels run with Python stand-ins of the intrinsics and
shared-memory-emulated warp shuffles (see ``_rowops``); the planner gives one CTA per row there.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from numba import cuda, types

import rtc

from ...planner import RowPlan, SoftmaxSpec
from ..common import SOFTMAX_BWD_PARAMS, SOFTMAX_FWD_PARAMS, SoftmaxBwdArgs, SoftmaxFwdArgs
from . import _cubin
from . import _rowops as ro
from ._norms import _CL_SLOTS, _cc_of, _clusters, _dependent_launch, _memset_barrier

__all__ = [
    "launchers",
    "SIM_OCCUPANCY",
    "SPILL_LIMIT",
    "backward",
    "compile_backward",
    "compile_forward",
    "forward",
    "active_clusters",
    "occupancy_backward",
    "occupancy_forward",
    "store_cubins",
]

# Occupancy reported under the simulator (it has no SMs; a small grid keeps tests fast).
SIM_OCCUPANCY = 2

VARIANTS = {"scaled": 0, "masked": 1, "upper_triang": 2, "aligned_causal": 3}
_NB_STORAGE = {"fp32": types.float32, "fp16": types.float16, "bf16": types.uint16}
_NP_STORAGE = {
    "fp32": np.dtype(np.float32),
    "fp16": np.dtype(np.float16),
    "bf16": np.dtype(np.uint16),
}

_NEG_INF = np.float32(-np.inf)
_POS_INF = np.float32(np.inf)
_F0 = np.float32(0.0)


# --------------------------------------------------------------------------------------------
# Kernel factories
# --------------------------------------------------------------------------------------------


def _forward_kernel(
    dtype: str,
    variant: str,
    wm: int,
    wn: int,
    ne: int,
    ldgs: int,
    multi: bool,
    prefetch: bool,
    dependent: bool = False,
    clusters: bool = False,
):
    """``softmax_fwd`` of docs/design.md for one compile-time shape (a Python function).

    ``multi``: the kernel serves several CTAs a row (the inter-CTA exchange is compiled in);
    one-CTA kernels leave it out, which saves registers and compile time (as NVRTC's build
    with ``SOFTMAX_MULTI_CTA=0``). ``prefetch``: each vector of the next row is loaded as soon
    as this row's is widened, so the next row's loads are in flight during this row's
    reductions (NVRTC's ``PREFETCH``); the row waiting is kept as loaded. ``dependent``: the
    kernel starts with the griddepcontrol prologue (sm_90+; :func:`_pyfunc`). ``clusters``: launched
    in a cluster (sm_90+), the CTAs of a row exchange through distributed shared memory and
    meet at the cluster barrier.
    """
    var = VARIANTS[variant]
    masked, causal = var == 1, var >= 2
    nw = ro.words_per_vector(dtype, ne)  # words per vector of x / y
    mw = ro.words_per_vector("uint8", ne)  # words per vector of mask bytes
    k_elts = ne * ldgs
    step = wn * 32 * ne  # columns one CTA covers with one vector per thread
    nxch = wm * wn * 32 if ro.SIM else 1  # simulator shuffle exchange (unused on a GPU)
    nred = wm * wn
    st_y = ro.st_words(ne * (4 if dtype == "fp32" else 2))
    ld_x = ro.ld_words(ne * (4 if dtype == "fp32" else 2))
    ld_m = ro.ld_words(ne)
    ld_part, st_part = ro.ld_partial(ne), ro.st_partial(ne)
    unpack, pack = ro.unpack(dtype, ne), ro.pack(dtype, ne)
    copy_x, copy_m = ro.copy_words(nw), ro.copy_words(mw)
    mask_fill = ro.mask_from(ne)
    pre = 1 if prefetch else 0  # trips spent loading before the first row is reduced
    nx_next, nm_next = (nw * ldgs, mw * ldgs) if prefetch else (1, 1)  # the next row's words
    prep, exp_sum, out = ro.softmax_prep(ne, masked), ro.exp_sum(k_elts), ro.softmax_out(ne, causal)
    exp_diff, rcp, st_cg2, cta_merge = ro.exp_diff, ro.rcp, ro.st_cg2, ro.cta_merge
    pair_align = ro.PAIR_ALIGN
    fmaxf, div32, rem32 = ro.fmaxf, ro.div32, ro.rem32
    warp_max, warp_sum, warp_any = ro.warp_max, ro.warp_sum, ro.warp_any
    barrier_sync, row_ptr = ro.inter_cta_barrier, ro.row_ptr
    cluster_ctas, cluster_sync = ro.cluster_ops(clusters)
    st_cluster2 = ro.st_cluster2
    ncl = 2 * wm * _CL_SLOTS if multi else 1  # [trip parity][warp_m][cluster rank][2]
    multi_warp = wn > 1
    neg_inf, f0 = _NEG_INF, _F0
    f32, u32, i32 = types.float32, types.uint32, types.int32
    launch_dependents, wait_primary = ro.dependent_launch(dependent)

    def softmax_fwd(
        x,
        mask,
        y,
        rows,
        cols,
        x_stride,
        y_stride,
        mask_stride,
        sq,
        heads,
        mask_batch,
        scale,
        stats,
        barrier,
    ):
        wait_primary()  # NVRTC's kernel_prologue: before any memory access
        launch_dependents()
        tid = cuda.threadIdx.x
        warp = tid // 32
        lane = tid % 32
        # Compile-time zeros where the config has one warp along a dimension: the shared
        # exchange then has constant addresses (otherwise NVVM hoists one 64-bit address per
        # warp slot out of the row loop and holds them all in registers).
        warp_m = warp // wn if wm > 1 else 0
        warp_n = warp % wn if wn > 1 else 0
        # CTAs sharing a row; a one-CTA kernel has their count, so the column step, as constants
        # (each vector's address is then the row's plus an immediate; NVRTC's as well).
        cta = cuda.blockIdx.x if multi else 0
        ctas = cuda.gridDim.x if multi else 1
        col0 = ((cta * wn + warp_n) * 32 + lane) * ne
        col_step = ctas * step
        rows_step = cuda.gridDim.y * wm
        trips = div32(rows + rows_step - 1, rows_step)
        # The row's partial last vector (cols % ne elements) moves element by element, once,
        # outside the unrolled loops (as in NVRTC's kernel).
        tail_n = cols % ne
        tail_col = cols - tail_n
        tail_mine = tail_n != 0 and tail_col >= col0 and rem32(tail_col - col0, col_step) == 0

        v = cuda.local.array(k_elts, f32)
        xw = cuda.local.array(nw, u32)
        tw = cuda.local.array(nw, u32)
        mb = cuda.local.array(mw, u32)
        tm = cuda.local.array(mw, u32)
        xs = cuda.local.array(nx_next, u32)  # prefetch: the next row's slice as loaded
        ms = cuda.local.array(nm_next, u32)
        xch = cuda.shared.array(nxch, f32)
        cl = cuda.shared.array(ncl, f32, alignment=pair_align)  # pair stores (st_cluster2)
        s_max = cuda.shared.array(nred, f32)
        s_sum = cuda.shared.array(nred, f32)
        s_keep = cuda.shared.array(nred, i32)

        row0 = cuda.blockIdx.y * wm + warp_m
        lim = 0
        lim_next = 0
        # Trip t loads row t and reduces row t - pre (with prefetch, trip 0 only loads).
        for t in range(trips + pre):
            trip = t - pre
            row = row0 + trip * rows_step
            valid = trip >= 0 and row < rows
            lrow = row0 + t * rows_step
            loading = t < trips
            # Columns [0, llim) are read; later ones are excluded (causal) or past the row's end.
            llim = cols if lrow < rows and loading else 0
            qi = 0
            if var != 0:
                qi = rem32(lrow, sq)
            if var == 2:
                llim = min(llim, qi + 1)
            if var == 3:
                llim = min(llim, max(qi + (cols - sq) + 1, 0))
            xr = row_ptr(x, lrow * x_stride)
            mr = mask
            if masked:
                mrow = (0 if mask_batch == 1 else div32(lrow, heads * sq)) * sq + qi
                mr = row_ptr(mask, mrow * mask_stride)
            # The partial last vector behind a branch: as predicated element loads the
            # addresses and loads of every row cost ~40 instructions even without a tail.
            # Columns outside the row read as masked (prep tests "unmasked" on whole words); x
            # there is not read (prep puts -inf at j >= n_in), so tw may keep an older row's.
            tail_n_here = tail_n if tail_mine and tail_col < llim else 0
            if tail_n_here > 0:
                ld_part(tw, xr, tail_col, tail_n_here)
                if masked:
                    ld_part(tm, mr, tail_col, tail_n_here)
                    mask_fill(tm, tail_n_here)
            elif masked:
                mask_fill(tm, 0)
            if prefetch:
                lim = lim_next
                lim_next = llim
            else:
                lim = llim

            # Load (prefetch: take this row's vector, load the next row's in its place), scale,
            # apply the mask; the row maximum along the way.
            m = neg_inf
            keep = i32(0)  # masked variant: an unmasked column among this thread's
            for it in range(ldgs):
                c = col0 + it * col_step
                if prefetch:
                    copy_x(xw, 0, xs, it * nw)
                    if masked:
                        copy_m(mb, 0, ms, it * mw)
                    if c < llim and c + ne <= cols:
                        ld_x(xs, it * nw, xr, c)
                        if masked:
                            ld_m(ms, it * mw, mr, c)
                    elif loading:  # the partial last vector (or nothing)
                        copy_x(xs, it * nw, tw, 0)
                        if masked:
                            copy_m(ms, it * mw, tm, 0)
                elif c < llim and c + ne <= cols:
                    ld_x(xw, 0, xr, c)
                    if masked:
                        ld_m(mb, 0, mr, c)
                else:  # the partial last vector (or nothing: then every column is outside)
                    copy_x(xw, 0, tw, 0)
                    if masked:
                        copy_m(mb, 0, tm, 0)
                unpack(v, it * ne, xw, 0)
                mk = prep(v, it * ne, mb, lim - c, scale, m, keep)
                m = mk[0]
                keep = mk[1]
            if t < pre:
                continue

            m = warp_max(m, xch, tid)
            if masked:
                keep = warp_any(keep, xch, tid)
            if multi_warp:
                if lane == 0:
                    s_max[warp_m * wn + warp_n] = m
                    s_keep[warp_m * wn + warp_n] = keep
                cuda.syncthreads()
                m = s_max[warp_m * wn]
                anyk = s_keep[warp_m * wn]
                for w in range(1, wn):
                    m = fmaxf(m, s_max[warp_m * wn + w])
                    anyk |= s_keep[warp_m * wn + w]
                keep = anyk

            # A part with nothing kept has m = -inf: exponentiate against 0 so its terms are 0.
            # One CTA a row: y = v / s whatever the terms' common 2**rho; rows of several
            # exchange and scale natural sums (times `unit`).
            base = f0 if m == neg_inf else m
            su = exp_sum(v, base)
            s = warp_sum(su[0], xch, tid)
            unit = su[1]
            if multi_warp:
                if lane == 0:
                    s_sum[warp_m * wn + warp_n] = s
                cuda.syncthreads()
                s = s_sum[warp_m * wn]
                for w in range(1, wn):
                    s += s_sum[warp_m * wn + w]

            # Whether the row keeps anything: masked rows need the reduction, causal ones know
            # it from lim (the same in every CTA of the row).
            row_keep = keep != 0 if masked else (lim > 0 if causal else True)
            if multi:
                # One (max, sum) pair per CTA; the masked variant's negative sum says "this CTA
                # keeps nothing" (softmax.cu's merge_max_sum).
                # In a cluster (RowPlan.cluster) lane k writes the pair into CTA k's shared slots
                # and the CTAs meet at the cluster barrier (NVRTC's RowParts); otherwise lane 0
                # writes it to `stats` (L2) and they meet at the counter.
                sb = (((trip & 1) * cuda.gridDim.y + cuda.blockIdx.y) * wm + warp_m) * ctas * 2
                cb = ((trip & 1) * wm + warp_m) * _CL_SLOTS
                sn = s * unit
                pair_s = -sn if masked and keep == 0 else sn
                in_cluster = cluster_ctas() > 1
                if in_cluster:
                    if valid and warp_n == 0 and lane < ctas:
                        st_cluster2(cl, cb + 2 * cta, lane, m, pair_s)
                    cluster_sync()
                else:
                    if valid and warp_n == 0 and lane == 0:
                        st_cg2(stats, sb + 2 * cta, m, pair_s)
                    barrier_sync(barrier, cuda.blockIdx.y, (trip + 1) * ctas)
                factor = f0
                if valid:
                    if in_cluster:
                        gm, gs, anyp = cta_merge(cl, cb, ctas)
                    else:
                        gm, gs, anyp = cta_merge(stats, sb, ctas)
                    if masked:
                        row_keep = anyp != 0
                    # A CTA whose columns are all excluded has only zeros (no inf scaling).
                    # A kept row of -inf scores only is NaN, as on one CTA.
                    if row_keep and (m != neg_inf or gm == neg_inf):
                        factor = exp_diff(m, gm) * rcp(gs) * unit
            else:
                factor = rcp(s) if row_keep else f0

            if valid:
                yr = row_ptr(y, row * y_stride)
                for it in range(ldgs):
                    c = col0 + it * col_step
                    out(v, it * ne, factor, lim - c)
                    pack(xw, 0, v, it * ne)
                    if c + ne <= cols:
                        st_y(yr, c, xw, 0)
                    if c == tail_col:
                        copy_x(tw, 0, xw, 0)
                if tail_mine:
                    st_part(yr, tail_col, tw, tail_n)

    return softmax_fwd


def _stream_forward_kernel(
    dtype: str,
    variant: str,
    wn: int,
    ne: int,
    chunk: int,
    reverse: bool = False,
    multi: bool = False,
    dependent: bool = False,
    clusters: bool = False,
    stage: bool = False,
):
    """``softmax_fwd_stream`` of ``softmax.cu`` (``SoftmaxConfig.chunk``) for one compile-time
    shape: rows of any length, ``chunk`` vectors a thread at a time. The first pass keeps an
    online (max, sum) per thread, merged over the CTA; the second reads the slice again
    (evict-first, as are the stores of y) and writes y, from the last chunk back with
    ``reverse``. ``multi``: each CTA of a row streams a contiguous part of it (``RowPart``) and
    the CTAs merge their (max, sum) pairs as the held forward's do (``clusters``: in a
    cluster). ``stage`` (``SoftmaxConfig.stage``): the first pass also keeps the words it loads
    in dynamic shared memory (word ``w`` of vector ``i`` at ``w * vectors + i``: consecutive
    threads, consecutive banks; the masked variant's mask words after them, from a 16-byte
    boundary, laid out alike) and the second reads them from there; each thread reads only
    what it stored."""
    var = VARIANTS[variant]
    masked, causal = var == 1, var >= 2
    nw = ro.words_per_vector(dtype, ne)
    mw = ro.words_per_vector("uint8", ne)
    vbytes = ne * (4 if dtype == "fp32" else 2)
    step = wn * 32 * ne  # columns from one of a thread's vectors to the next
    span = chunk * step
    walk = -span if reverse else span
    n_v, n_xs, n_ms = chunk * ne, chunk * nw, chunk * mw  # local array sizes: constants
    nxch = wn * 32 if ro.SIM else 1
    ld_x, ld_x_cs = ro.ld_words(vbytes), ro.ld_words(vbytes, cs=True)
    st_y_cs = ro.st_words(vbytes, cs=True)
    ld_m = ro.ld_words(ne)
    ld_part, st_part = ro.ld_partial(ne), ro.st_partial(ne)
    unpack, pack = ro.unpack(dtype, ne), ro.pack(dtype, ne)
    copy_x, copy_m = ro.copy_words(nw), ro.copy_words(mw)
    mask_fill = ro.mask_from(ne)
    prep, probs = ro.softmax_prep(ne, masked), ro.softmax_probs(ne, masked)
    chunk_sum = ro.exp_sum(chunk * ne)
    exp_diff, lg2, fmaxf, div32, rem32 = ro.exp_diff, ro.lg2, ro.fmaxf, ro.div32, ro.rem32
    warp_max, warp_sum, warp_any, row_ptr = ro.warp_max, ro.warp_sum, ro.warp_any, ro.row_ptr
    st_cg2, cta_merge, barrier_sync = ro.st_cg2, ro.cta_merge, ro.inter_cta_barrier
    cluster_ctas, cluster_sync = ro.cluster_ops(clusters)
    st_cluster2, pair_align = ro.st_cluster2, ro.PAIR_ALIGN
    ncl = 2 * _CL_SLOTS if multi else 1  # [trip parity][cluster rank][2]
    multi_warp = wn > 1
    neg_inf, pos_inf, f0 = _NEG_INF, _POS_INF, _F0
    f32, u32, i32 = types.float32, types.uint32, types.int32
    launch_dependents, wait_primary = ro.dependent_launch(dependent)

    def softmax_fwd_stream(
        x, mask, y, rows, cols, x_stride, y_stride, mask_stride, sq, heads, mask_batch, scale,
        stats, barrier,
    ):  # fmt: skip
        wait_primary()
        launch_dependents()
        tid = cuda.threadIdx.x
        warp = tid // 32
        lane = tid % 32
        col0 = tid * ne
        # softmax.cu's RowPart: this CTA's contiguous part [lo, lo + cols_p) of every row
        cta = cuda.blockIdx.x if multi else 0
        ctas = cuda.gridDim.x if multi else 1
        lo, cols_p = i32(0), i32(cols)
        if multi:
            per = div32(cols + ctas * ne - 1, ctas * ne) * ne
            lo = i32(min(cta * per, cols))
            cols_p = i32(min(per, cols - lo))
        v = cuda.local.array(n_v, f32)
        xs = cuda.local.array(n_xs, u32)  # the chunk's vectors as loaded
        ms = cuda.local.array(n_ms, u32)
        xw = cuda.local.array(nw, u32)
        tw = cuda.local.array(nw, u32)
        mb = cuda.local.array(mw, u32)
        tm = cuda.local.array(mw, u32)
        xch = cuda.shared.array(nxch, f32)
        s_max = cuda.shared.array(wn, f32)
        s_sum = cuda.shared.array(wn, f32)
        s_keep = cuda.shared.array(wn, i32)
        cl = cuda.shared.array(ncl, f32, alignment=pair_align)  # pair stores (st_cluster2)
        staged = cuda.shared.array(0, u32)  # the launch's dynamic shared memory (stage)
        nvec = (cols_p + ne - 1) // ne
        mbase = (nvec * nw + 3) // 4 * 4  # the mask's words (masked): after a 16-byte boundary

        trip = 0
        for row in range(cuda.blockIdx.y, rows, cuda.gridDim.y):
            row_lim = cols
            qi = 0
            if var != 0:
                qi = rem32(row, sq)
            if var == 2:
                row_lim = min(row_lim, qi + 1)
            if var == 3:
                row_lim = min(row_lim, max(qi + (cols - sq) + 1, 0))
            lim = row_lim
            if multi:
                lim = i32(min(max(row_lim - lo, 0), cols_p))
            xr = row_ptr(x, row * x_stride + lo)
            mr = mask
            if masked:
                mrow = (0 if mask_batch == 1 else div32(row, heads * sq)) * sq + qi
                mr = row_ptr(mask, mrow * mask_stride + lo)

            # First pass: the chunk's scores and maximum, then the running sum rescaled to the
            # new maximum (exponents against 0 while nothing is kept).
            m = neg_inf
            s = f0
            keep = i32(0)
            for c0 in range(col0, lim, span):
                for it in range(chunk):
                    c = c0 + it * step
                    if c < lim:
                        if c + ne <= cols_p:
                            ld_x(xs, it * nw, xr, c)
                            if masked:
                                ld_m(ms, it * mw, mr, c)
                        else:  # the partial last vector
                            ld_part(tw, xr, c, cols_p - c)
                            copy_x(xs, it * nw, tw, 0)
                            if masked:
                                ld_part(tm, mr, c, cols_p - c)
                                mask_fill(tm, cols_p - c)
                                copy_m(ms, it * mw, tm, 0)
                    elif masked:  # past the row: masked (x is not read: prep gives -inf)
                        mask_fill(tm, 0)
                        copy_m(ms, it * mw, tm, 0)
                if stage:
                    for it in range(chunk):
                        c = c0 + it * step
                        if c < lim:
                            for w in range(nw):
                                staged[w * nvec + c // ne] = xs[it * nw + w]
                            if masked:
                                for w in range(mw):
                                    staged[mbase + w * nvec + c // ne] = ms[it * mw + w]
                cm = neg_inf
                for it in range(chunk):
                    unpack(v, it * ne, xs, it * nw)
                    if masked:
                        copy_m(mb, 0, ms, it * mw)
                    mk = prep(v, it * ne, mb, lim - (c0 + it * step), scale, cm, keep)
                    cm = mk[0]
                    keep = mk[1]
                mm = fmaxf(m, cm)
                base = f0 if mm == neg_inf else mm
                acc = chunk_sum(v, base)
                s = s * exp_diff(m, base) + acc[0] * acc[1]
                m = mm

            # The row's maximum, then the threads' sums rescaled to it, in warp order.
            gm = warp_max(m, xch, tid)
            if masked:
                keep = warp_any(keep, xch, tid)
            if multi_warp:
                if lane == 0:
                    s_max[warp] = gm
                    s_keep[warp] = keep
                cuda.syncthreads()
                gm = s_max[0]
                anyk = s_keep[0]
                for w in range(1, wn):
                    gm = fmaxf(gm, s_max[w])
                    anyk |= s_keep[w]
                keep = anyk
            base = f0 if gm == neg_inf else gm
            gs = warp_sum(s * exp_diff(m, base), xch, tid)
            if multi_warp:
                if lane == 0:
                    s_sum[warp] = gs
                cuda.syncthreads()
                gs = s_sum[0]
                for w in range(1, wn):
                    gs += s_sum[w]
            row_keep = keep != 0 if masked else (row_lim > 0 if causal else True)
            if multi:
                # One (max, signed sum) pair per CTA, merged in CTA order by every CTA (the
                # held forward's exchange: cluster slots, else `stats` and the counter).
                sb = (((trip & 1) * cuda.gridDim.y + cuda.blockIdx.y) * ctas) * 2
                cb = (trip & 1) * _CL_SLOTS
                pair_s = -gs if masked and keep == 0 else gs
                in_cluster = cluster_ctas() > 1
                if in_cluster:
                    if warp == 0 and lane < ctas:
                        st_cluster2(cl, cb + 2 * cta, lane, gm, pair_s)
                    cluster_sync()
                    rm, rs, anyp = cta_merge(cl, cb, ctas)
                else:
                    if warp == 0 and lane == 0:
                        st_cg2(stats, sb + 2 * cta, gm, pair_s)
                    barrier_sync(barrier, cuda.blockIdx.y, (trip + 1) * ctas)
                    rm, rs, anyp = cta_merge(stats, sb, ctas)
                if masked:
                    row_keep = anyp != 0
                base = f0 if rm == neg_inf else rm
                gs = rs
            trip += 1
            # y = exp(score - base) / sum = 2^((score - base) * log2e - lse2); a row that keeps
            # nothing: lse2 = +inf
            lse2 = lg2(gs) if row_keep else pos_inf

            # Second pass: every column written (zeros past the causal limit).
            yr = row_ptr(y, row * y_stride + lo)
            first, stop = col0, cols_p
            if reverse:  # softmax.cu's last_chunk: from the thread's last chunk back to col0
                first, stop = col0 - span, col0 - span
                if col0 < cols_p:
                    first = col0 + (cols_p - 1 - col0) // span * span
            for c0 in range(first, stop, walk):
                for it in range(chunk):
                    c = c0 + it * step
                    if c < lim and stage:  # the words the first pass kept
                        for w in range(nw):
                            xs[it * nw + w] = staged[w * nvec + c // ne]
                        if masked:
                            for w in range(mw):
                                ms[it * mw + w] = staged[mbase + w * nvec + c // ne]
                    elif c < lim:
                        if c + ne <= cols_p:
                            ld_x_cs(xs, it * nw, xr, c)
                            if masked:
                                ld_m(ms, it * mw, mr, c)
                        else:
                            ld_part(tw, xr, c, cols_p - c)
                            copy_x(xs, it * nw, tw, 0)
                            if masked:
                                ld_part(tm, mr, c, cols_p - c)
                                mask_fill(tm, cols_p - c)
                                copy_m(ms, it * mw, tm, 0)
                    elif masked:
                        mask_fill(tm, 0)
                        copy_m(ms, it * mw, tm, 0)
                for it in range(chunk):
                    c = c0 + it * step
                    unpack(v, 0, xs, it * nw)
                    if masked:
                        copy_m(mb, 0, ms, it * mw)
                    probs(v, 0, mb, lim - c, scale, base, lse2)
                    pack(xw, 0, v, 0)
                    if c + ne <= cols_p:
                        st_y_cs(yr, c, xw, 0)
                    elif c < cols_p:
                        st_part(yr, c, xw, cols_p - c)

    return softmax_fwd_stream


def _stream_backward_kernel(
    dtype: str,
    wn: int,
    ne: int,
    chunk: int,
    reverse: bool = False,
    multi: bool = False,
    dependent: bool = False,
    clusters: bool = False,
):
    """``softmax_bwd_stream`` of ``softmax.cu`` (``SoftmaxConfig.chunk``): rows of any length;
    the first pass takes ``sum(dy * y)`` ``chunk`` vectors a thread at a time, the second reads
    dy and y again (evict-first, as are the stores of dx) and writes dx, from the last chunk
    back with ``reverse``. ``multi``: each CTA of a row streams a contiguous part of it and the
    CTAs add their sums through ``stats`` in CTA order (the held backward's exchange)."""
    nw = ro.words_per_vector(dtype, ne)
    vbytes = ne * (4 if dtype == "fp32" else 2)
    step = wn * 32 * ne  # columns from one of a thread's vectors to the next
    span = chunk * step
    walk = -span if reverse else span
    n_w, n_dot = chunk * nw, 2 * wn  # local / shared array sizes: constants
    nxch = wn * 32 if ro.SIM else 1
    ld_v, ld_v_cs = ro.ld_words(vbytes), ro.ld_words(vbytes, cs=True)
    st_v_cs = ro.st_words(vbytes, cs=True)
    ld_part, st_part = ro.ld_partial(ne), ro.st_partial(ne)
    unpack, pack = ro.unpack(dtype, ne), ro.pack(dtype, ne)
    copy_w, dot_acc, dx_vec = ro.copy_words(nw), ro.dot_acc(ne), ro.softmax_dx(ne)
    warp_sum, row_ptr, div32 = ro.warp_sum, ro.row_ptr, ro.div32
    st_cg2, cta_sum, barrier_sync = ro.st_cg2, ro.cta_sum, ro.row_barrier(clusters)
    multi_warp = wn > 1
    f0 = _F0
    f32, u32, i32 = types.float32, types.uint32, types.int32
    launch_dependents, wait_primary = ro.dependent_launch(dependent)

    def softmax_bwd_stream(
        dy, y, dx, rows, cols, dy_stride, y_stride, dx_stride, scale, stats, barrier
    ):
        wait_primary()
        launch_dependents()
        tid = cuda.threadIdx.x
        warp = tid // 32
        lane = tid % 32
        col0 = tid * ne
        cta = cuda.blockIdx.x if multi else 0  # softmax.cu's RowPart, as the forward's
        ctas = cuda.gridDim.x if multi else 1
        lo, cols_p = i32(0), i32(cols)
        if multi:
            per = div32(cols + ctas * ne - 1, ctas * ne) * ne
            lo = i32(min(cta * per, cols))
            cols_p = i32(min(per, cols - lo))
        pd = cuda.local.array(n_w, u32)  # the chunk's vectors as loaded
        py = cuda.local.array(n_w, u32)
        tw = cuda.local.array(nw, u32)
        fd = cuda.local.array(ne, f32)
        fy = cuda.local.array(ne, f32)
        xch = cuda.shared.array(nxch, f32)
        s_dot = cuda.shared.array(n_dot, f32)  # by row parity: one barrier a row

        trip = 0
        for row in range(cuda.blockIdx.y, rows, cuda.gridDim.y):
            dyr = row_ptr(dy, row * dy_stride + lo)
            yr = row_ptr(y, row * y_stride + lo)
            dot = f0
            for c0 in range(col0, cols_p, span):
                for it in range(chunk):
                    c = c0 + it * step
                    if c + ne <= cols_p:
                        ld_v(pd, it * nw, dyr, c)
                        ld_v(py, it * nw, yr, c)
                    else:  # the partial last vector, or zeros past the row's end
                        ld_part(tw, dyr, c, max(cols_p - c, 0))
                        copy_w(pd, it * nw, tw, 0)
                        ld_part(tw, yr, c, max(cols_p - c, 0))
                        copy_w(py, it * nw, tw, 0)
                for it in range(chunk):
                    unpack(fd, 0, pd, it * nw)
                    unpack(fy, 0, py, it * nw)
                    dot = dot_acc(fd, fy, dot)
            dot = warp_sum(dot, xch, tid)
            if multi_warp:
                sl = (trip & 1) * wn
                if lane == 0:
                    s_dot[sl + warp] = dot
                cuda.syncthreads()
                dot = s_dot[sl]
                for w in range(1, wn):
                    dot += s_dot[sl + w]
            if multi:
                sb = ((trip & 1) * cuda.gridDim.y + cuda.blockIdx.y) * ctas * 2
                if warp == 0 and lane == 0:
                    st_cg2(stats, sb + 2 * cta, dot, f0)
                barrier_sync(barrier, cuda.blockIdx.y, (trip + 1) * ctas)
                dot = cta_sum(stats, sb, ctas)
            trip += 1

            dxr = row_ptr(dx, row * dx_stride + lo)
            first, stop = col0, cols_p
            if reverse:  # softmax.cu's last_chunk: from the thread's last chunk back to col0
                first, stop = col0 - span, col0 - span
                if col0 < cols_p:
                    first = col0 + (cols_p - 1 - col0) // span * span
            for c0 in range(first, stop, walk):
                for it in range(chunk):
                    c = c0 + it * step
                    if c + ne <= cols_p:
                        ld_v_cs(pd, it * nw, dyr, c)
                        ld_v_cs(py, it * nw, yr, c)
                    else:
                        ld_part(tw, dyr, c, max(cols_p - c, 0))
                        copy_w(pd, it * nw, tw, 0)
                        ld_part(tw, yr, c, max(cols_p - c, 0))
                        copy_w(py, it * nw, tw, 0)
                for it in range(chunk):
                    c = c0 + it * step
                    unpack(fd, 0, pd, it * nw)
                    unpack(fy, 0, py, it * nw)
                    dx_vec(fd, fy, scale, dot)
                    pack(tw, 0, fd, 0)
                    if c + ne <= cols_p:
                        st_v_cs(dxr, c, tw, 0)
                    elif c < cols_p:
                        st_part(dxr, c, tw, cols_p - c)

    return softmax_bwd_stream


def _backward_kernel(
    dtype: str,
    wm: int,
    wn: int,
    ne: int,
    ldgs: int,
    multi: bool,
    dependent: bool = False,
    clusters: bool = False,
):
    """``softmax_bwd`` of docs/design.md: ``dx = scale * y * (dy - sum(dy * y))``."""
    nw = ro.words_per_vector(dtype, ne)
    kw = nw * ldgs  # words of the row part a thread holds (raw: half the registers of fp32)
    step = wn * 32 * ne
    nxch = wm * wn * 32 if ro.SIM else 1
    nred = 2 * wm * wn  # double-buffered by trip parity: one __syncthreads per trip suffices
    ld_v = ro.ld_words(ne * (4 if dtype == "fp32" else 2))
    st_v = ro.st_words(ne * (4 if dtype == "fp32" else 2))
    ld_part, st_part = ro.ld_partial(ne), ro.st_partial(ne)
    unpack, unpack2, pack = ro.unpack(dtype, ne), ro.unpack(dtype, ne, True), ro.pack(dtype, ne)
    copy_w, dot_acc, dx_vec = ro.copy_words(nw), ro.dot_acc(ne), ro.softmax_dx(ne)
    cta_sum, st_cg2, warp_sum = ro.cta_sum, ro.st_cg2, ro.warp_sum
    barrier_sync, row_ptr = ro.row_barrier(clusters), ro.row_ptr
    div32, rem32 = ro.div32, ro.rem32
    multi_warp = wn > 1
    f0 = _F0
    f32, u32 = types.float32, types.uint32
    launch_dependents, wait_primary = ro.dependent_launch(dependent)

    def softmax_bwd(dy, y, dx, rows, cols, dy_stride, y_stride, dx_stride, scale, stats, barrier):
        wait_primary()  # NVRTC's kernel_prologue: before any memory access
        launch_dependents()
        tid = cuda.threadIdx.x
        warp = tid // 32
        lane = tid % 32
        # Compile-time zeros where the config has one warp along a dimension: the shared
        # exchange then has constant addresses (otherwise NVVM hoists one 64-bit address per
        # warp slot out of the row loop and holds them all in registers).
        warp_m = warp // wn if wm > 1 else 0
        warp_n = warp % wn if wn > 1 else 0
        cta = cuda.blockIdx.x if multi else 0  # as in the forward
        ctas = cuda.gridDim.x if multi else 1
        col0 = ((cta * wn + warp_n) * 32 + lane) * ne
        col_step = ctas * step
        rows_step = cuda.gridDim.y * wm
        trips = div32(rows + rows_step - 1, rows_step)
        tail_n = cols % ne
        tail_col = cols - tail_n
        tail_mine = tail_n != 0 and tail_col >= col0 and rem32(tail_col - col0, col_step) == 0
        opq = cols >> 31  # 0 (cols >= 1), unknown to the compilers: see unpack(again=True)

        pd = cuda.local.array(kw, u32)
        py = cuda.local.array(kw, u32)
        td = cuda.local.array(nw, u32)
        ty = cuda.local.array(nw, u32)
        zw = cuda.local.array(nw, u32)
        for q in range(nw):
            zw[q] = 0
        fd = cuda.local.array(ne, f32)
        fy = cuda.local.array(ne, f32)
        xch = cuda.shared.array(nxch, f32)
        s_sum = cuda.shared.array(nred, f32)

        for trip in range(trips):
            row = (trip * cuda.gridDim.y + cuda.blockIdx.y) * wm + warp_m
            valid = row < rows
            lim = cols if valid else 0
            dyr = row_ptr(dy, row * dy_stride)
            yr = row_ptr(y, row * y_stride)
            tail_n_here = tail_n if tail_mine and valid else 0
            if tail_n_here > 0:  # a branch: see the forward kernel
                ld_part(td, dyr, tail_col, tail_n_here)
                ld_part(ty, yr, tail_col, tail_n_here)

            dot = f0
            for it in range(ldgs):
                c = col0 + it * col_step
                if c + ne <= lim:
                    ld_v(pd, it * nw, dyr, c)
                    ld_v(py, it * nw, yr, c)
                elif c == tail_col and tail_n_here > 0:  # the partial last vector
                    copy_w(pd, it * nw, td, 0)
                    copy_w(py, it * nw, ty, 0)
                else:  # past the row's end: zeros (the tail must not count twice)
                    copy_w(pd, it * nw, zw, 0)
                    copy_w(py, it * nw, zw, 0)
                unpack(fd, 0, pd, it * nw)
                unpack(fy, 0, py, it * nw)
                dot = dot_acc(fd, fy, dot)
            dot = warp_sum(dot, xch, tid)
            if multi_warp:
                sl = ((trip & 1) * wm + warp_m) * wn
                if lane == 0:
                    s_sum[sl + warp_n] = dot
                cuda.syncthreads()
                dot = s_sum[sl]
                for w in range(1, wn):
                    dot += s_sum[sl + w]
            if multi:
                # Through `stats` (L2) also in a cluster (the barrier then the cluster's): the
                # forward's shared-memory exchange made this kernel 0.78-0.98x (run 80).
                sb = (((trip & 1) * cuda.gridDim.y + cuda.blockIdx.y) * wm + warp_m) * ctas * 2
                if valid and warp_n == 0 and lane == 0:
                    st_cg2(stats, sb + 2 * cta, dot, f0)
                barrier_sync(barrier, cuda.blockIdx.y, (trip + 1) * ctas)
                if valid:
                    dot = cta_sum(stats, sb, ctas)

            if valid:
                dxr = row_ptr(dx, row * dx_stride)
                for it in range(ldgs):
                    c = col0 + it * col_step
                    unpack2(fd, 0, pd, it * nw, opq)
                    unpack2(fy, 0, py, it * nw, opq)
                    dx_vec(fd, fy, scale, dot)
                    pack(td, 0, fd, 0)
                    if c + ne <= cols:
                        st_v(dxr, c, td, 0)
                    if c == tail_col:
                        copy_w(ty, 0, td, 0)
                if tail_mine:
                    st_part(dxr, tail_col, ty, tail_n)

    return softmax_bwd


def _signature(spec: SoftmaxSpec) -> tuple:
    """Kernel argument types: global memory as raw pointers (cheap launches), as in CUDA C."""
    t = types.CPointer(_NB_STORAGE[spec.config.dtype])
    f32, i32, i64 = types.float32, types.int32, types.int64
    stats, barrier = types.CPointer(types.float32), types.CPointer(types.int32)
    if spec.config.is_backward:
        return (t, t, t, i32, i32, i64, i64, i64, f32, stats, barrier)
    mask = types.CPointer(types.uint8)
    return (t, mask, t, i32, i32, i64, i64, i64, i32, i32, i32, f32, stats, barrier)


def _pyfunc(spec: SoftmaxSpec, cc: tuple[int, int] | None):
    """The kernel of ``spec`` for compute capability ``cc`` (None: the simulator)."""
    c = spec.config
    shape = (c.warps_m, c.warps_n, spec.num_elts, spec.ldgs, spec.multi_cta)
    dep, clusters = _dependent_launch(cc), _clusters(cc)
    if spec.stream:
        stream = (c.warps_n, spec.num_elts, spec.ldgs, c.reverse, spec.multi_cta)
        if c.is_backward:
            return _stream_backward_kernel(c.dtype, *stream, dependent=dep, clusters=clusters)
        return _stream_forward_kernel(
            c.dtype, c.variant, *stream, dependent=dep, clusters=clusters, stage=c.stage
        )
    if c.is_backward:
        return _backward_kernel(c.dtype, *shape, dependent=dep, clusters=clusters)
    return _forward_kernel(c.dtype, c.variant, *shape, c.prefetch, dependent=dep, clusters=clusters)


# --------------------------------------------------------------------------------------------
# Compilation cache
# --------------------------------------------------------------------------------------------


class _Compiled:
    """One compiled kernel: the loaded :class:`rtc.Kernel` (the simulator's dispatcher under the
    simulator) and its launchers."""

    __slots__ = ("dispatcher", "kernel", "threads", "_launchers")

    def __init__(self, dispatcher: Any, kernel: Any, threads: int) -> None:
        self.dispatcher = dispatcher
        self.kernel = kernel
        self.threads = threads
        self._launchers: dict[tuple, Any] = {}

    def occupancy(self) -> int:
        """Max resident CTAs per SM on the current device."""
        if ro.SIM:
            return SIM_OCCUPANCY
        return self.kernel.occupancy(self.threads, 0)

    def launcher(self, plan: RowPlan) -> Any:
        """The :class:`rtc.Launcher` of this kernel for ``plan``'s launch shape (GPU only)."""
        key = (
            plan.grid, plan.block, plan.cooperative, plan.dependent, plan.cluster,
            plan.shared_bytes,
        )  # fmt: skip
        fire = self._launchers.get(key)
        if fire is None:
            params = SOFTMAX_BWD_PARAMS if plan.spec.op == "softmax_bwd" else SOFTMAX_FWD_PARAMS
            # Several CTAs a row synchronise through their own atomic barrier and need only
            # co-residency, or run as one cluster: properties of the launch, not of the code.
            fire = rtc.Launcher(
                self.kernel, plan.grid, plan.block, params, shared_mem=plan.shared_bytes,
                cooperative=plan.cooperative, cluster=plan.cluster, programmatic=plan.dependent,
            )  # fmt: skip
            self._launchers[key] = fire
        return fire

    def launch(self, args: tuple, plan: RowPlan, stream: int) -> None:
        """Launch on the raw ``CUstream`` handle ``stream`` (the kernels take raw pointers and
        scalars: no Numba argument conversion per call)."""
        if ro.SIM:
            self.dispatcher[plan.grid, plan.block, 0, plan.shared_bytes](*args)
            return
        self.launcher(plan)(stream, *args)


_cache: dict[tuple, Any] = {}


def _cached(key: tuple, build) -> Any:
    """One build per key (threads queued behind a failed build get its error)."""
    return rtc.build_once(_cache, key, build)[0]


def _numba_build(spec: SoftmaxSpec) -> SoftmaxSpec:
    """``spec`` as this backend builds it: the backward without the pipeline (run 42 timed one,
    each vector of the next row loaded as this row's is taken, at 0.74-1.14x of the unpipelined
    kernel on the shapes NVRTC's sweep chose, and it cost the unpipelined code registers)."""
    if spec.config.is_backward and spec.config.prefetch:
        spec = dataclasses.replace(spec, config=dataclasses.replace(spec.config, prefetch=False))
    return spec


def _compile(spec: SoftmaxSpec, backward: bool, arch: str | None) -> Any:
    if spec.config.is_backward != backward:
        want = "softmax_bwd" if backward else "softmax_fwd"
        raise ValueError(f"expected a {want} spec, got {spec.config.op}")
    spec = _numba_build(spec)
    threads = spec.threads
    bounds = (threads, spec.config.min_ctas_per_sm)
    if arch is not None:
        if ro.SIM:
            raise RuntimeError("compile_ptx is not available under Numba's CUDA simulator")
        cc = _cc_of(arch)

        def build_ptx() -> str:
            fn = _pyfunc(spec, cc)
            ptx, _ = cuda.compile_ptx(fn, _signature(spec), cc=cc, launch_bounds=bounds)
            return ptx

        return _cached(("ptx", cc, spec.kernel_key), build_ptx)

    if ro.SIM:
        return _cached(
            ("sim", spec.kernel_key),
            lambda: _Compiled(cuda.jit(_signature(spec))(_pyfunc(spec, None)), None, threads),
        )
    cc, ordinal = _cubin.current_device()
    key = ("softmax", spec.kernel_key, str(_signature(spec)), bounds)

    def build() -> _Compiled:
        return _Compiled(None, _load_fitting(spec, cc), threads)

    return _cached(key + (cc, ordinal), build)


# Local memory (bytes a thread) a capped or pipelined Numba kernel may use before the next build
# of _fallbacks replaces it. Runs 32/33 (H200, bf16/fp16, uncapped build timed against the capped
# one): spills of 52-120 bytes were faster kept (forward 16384 keys 2964 vs 2167 GB/s, masked
# 2816 vs 1962, upper-triangular 8192 3168 vs 1912); 248+ bytes faster replaced (causal 32768
# keys 2142 vs 2751, upper-triangular 16384 2143 vs 2395, the fp16 backward at 16384 with 1024
# threads capped at 32 registers 1690 vs 3686).
SPILL_LIMIT = 128


def _fallbacks(config: Any) -> list[tuple[int, bool]]:
    """(min CTAs an SM, prefetch) to build in turn: the configuration's, then its register cap
    lowered one CTA at a time (the most CTAs an SM that fit: run 39, the upper-triangular
    16384-key entry capped for 3 spilled 292 B and fell back to 1 CTA an SM), then without
    the pipeline as well."""
    out = [(m, config.prefetch) for m in range(config.min_ctas_per_sm, 0, -1)]
    if config.prefetch:
        out.append((1, False))
    return out


def _build_args(spec: SoftmaxSpec, mc: int, pf: bool) -> tuple:
    """(key, spec, signature, launch bounds) of the build of ``spec`` capped for ``mc`` CTAs an
    SM, with or without the pipeline: what :mod:`._cubin` keys its cubin by."""
    s = dataclasses.replace(
        spec, config=dataclasses.replace(spec.config, min_ctas_per_sm=mc, prefetch=pf)
    )
    sig = _signature(s)
    bounds = (s.threads, mc)
    return ("softmax", s.kernel_key), s, sig, bounds


def _fitting_module(spec: SoftmaxSpec, cc: tuple[int, int], origins: list | None = None) -> Any:
    """The cubin of ``spec`` for compute capability ``cc``, without heavy spilling.

    The measured table's register caps and pipelines were timed on NVRTC's kernels; NVVM
    allocates registers differently. Where a cap or the pipeline makes this backend's kernel
    spill more than :data:`SPILL_LIMIT` bytes a thread (the frame size ptxas records in the
    cubin: no GPU needed), the next build of :func:`_fallbacks` runs instead. Each build is
    cached on disk like any kernel; the grid follows the occupancy of the one kept. Where each
    build came from is appended to ``origins``.
    """
    for mc, pf in _fallbacks(spec.config):
        key, s, sig, bounds = _build_args(spec, mc, pf)
        mod = _cubin.module(key, lambda s=s: _pyfunc(s, cc), sig, bounds, cc)
        if origins is not None:
            origins.append(rtc.last_origin())
        if mod.frame_bytes("kernel") <= SPILL_LIMIT:
            break
    return mod  # the first that fits, else the last (uncapped, unpipelined) build


def _load_fitting(spec: SoftmaxSpec, cc: tuple[int, int]) -> Any:
    """The kernel of :func:`_fitting_module`, loaded on the current device."""
    return _fitting_module(spec, cc).kernel("kernel")


def compile_forward(spec: SoftmaxSpec, arch: str | None = None) -> Any:
    """Compile (cached) the forward kernel of ``spec``.

    Parameters
    ----------
    spec : SoftmaxSpec
        A ``softmax_fwd`` spec.
    arch : str, optional
        ``"sm_90"`` etc.: only compile to PTX for that target (no GPU needed) and return the
        PTX text. None: the launchable kernel for the current device.
    """
    return _compile(spec, False, arch)


def compile_backward(spec: SoftmaxSpec, arch: str | None = None) -> Any:
    """Compile (cached) the backward kernel of ``spec``; see :func:`compile_forward`."""
    return _compile(spec, True, arch)


def store_cubins(spec: SoftmaxSpec, arch: str) -> list[str]:
    """Put the cubin of ``spec`` (forward or backward) for ``arch`` in rtc's caches, where a
    GPU of that arch finds it; no GPU needed.

    The builds a GPU would try are stored: the configuration's own and, where it spills past
    :data:`SPILL_LIMIT`, the next of :func:`_fallbacks` in turn. Returns where each came from:
    ``"compiled"`` (built now), ``"disk"`` or ``"memory"``.
    """
    if ro.SIM:
        raise RuntimeError("store_cubins is not available under Numba's CUDA simulator")
    origins: list[str] = []
    _fitting_module(_numba_build(spec), _cc_of(arch), origins)
    return origins


def occupancy_forward(spec: SoftmaxSpec) -> int:
    """Max active CTAs per SM of the forward kernel (:data:`SIM_OCCUPANCY` in the simulator)."""
    return SIM_OCCUPANCY if ro.SIM else compile_forward(spec).occupancy()


def occupancy_backward(spec: SoftmaxSpec) -> int:
    """Max active CTAs per SM of the backward kernel (:data:`SIM_OCCUPANCY` in the simulator)."""
    return SIM_OCCUPANCY if ro.SIM else compile_backward(spec).occupancy()


def active_clusters(spec: SoftmaxSpec, cluster: int) -> int:
    """Clusters of ``cluster`` CTAs of the spec's kernel the current device holds (GPU only)."""
    k = compile_backward(spec) if spec.op == "softmax_bwd" else compile_forward(spec)
    return k.kernel.max_active_clusters(cluster, spec.threads, 0)


# --------------------------------------------------------------------------------------------
# Launch
# --------------------------------------------------------------------------------------------


def _rows_layout(t: Any) -> tuple[int, int, int]:
    """(rows, cols, row stride in elements) of a Tensor or a Numba / numpy array."""
    if hasattr(t, "rows_cols"):
        return t.rows_cols()
    shape = tuple(t.shape)
    itemsize = t.dtype.itemsize
    strides = tuple(s // itemsize for s in t.strides)
    cols = shape[-1]
    if cols > 1 and strides[-1] != 1:
        raise ValueError(f"innermost dimension must be contiguous, got strides {strides}")
    lead = [(n, s) for n, s in zip(shape[:-1], strides[:-1], strict=True) if n != 1]
    rows = int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) > 1 else 1
    if not lead:
        return rows, cols, cols
    n_in, row_stride = lead[-1]
    expected = row_stride * n_in
    for n, s in reversed(lead[:-1]):
        if s != expected:
            raise ValueError(f"shape {shape} with strides {strides} is not a uniform row layout")
        expected = s * n
    return rows, cols, row_stride


def _host_array(t: Any) -> np.ndarray:
    """Simulator: the numpy array behind a Tensor / simulated device array / numpy array."""
    if hasattr(t, "as_numba"):
        t = t.as_numba()
    return t._ary if hasattr(t, "_ary") else np.asarray(t)


def _address(t: Any) -> int:
    """Address of element [0, 0, ...] (the simulator's host address under the simulator)."""
    if ro.SIM:
        return int(_host_array(t).ctypes.data)
    ptr = getattr(t, "ptr", None)
    if isinstance(ptr, int):
        return ptr
    return int(t.__cuda_array_interface__["data"][0])


def _sim_flat(t: Any, n: int, storage: np.dtype) -> Any:
    """Simulator: 1-D ``storage`` array of ``n`` elements from the first element of ``t``."""
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    base = _host_array(t)
    if base.dtype != storage:
        if base.dtype.itemsize != storage.itemsize:
            raise TypeError(f"expected {storage} storage, got {base.dtype}")
        base = base.view(storage)  # bool -> uint8, bfloat16 -> uint16
    flat = np.lib.stride_tricks.as_strided(base, shape=(n,), strides=(storage.itemsize,))
    return FakeCUDAArray(flat)


def _rows_arg(t: Any, rows: int, cols: int, storage: np.dtype, ne: int, name: str):
    """(kernel argument, row stride) for ``rows`` x ``cols`` rows of ``t``, after checking the
    layout and the alignment the kernel's ``ne``-element vectors need."""
    r, c, stride = _rows_layout(t)
    if r != rows or c != cols:
        raise ValueError(f"{name}: expected {rows} x {cols} rows, got {r} x {c}")
    vec = ne * storage.itemsize
    ptr = _address(t)
    if ptr % vec or (rows > 1 and (stride * storage.itemsize) % vec):
        raise ValueError(f"{name}: pointer or row pitch not aligned to {vec}-byte vectors")
    if ro.SIM:
        return _sim_flat(t, (rows - 1) * stride + cols, storage), stride
    return ptr, stride


def _scratch_args(plan: RowPlan, scratch: Any, stream: int) -> tuple[Any, Any]:
    """(stats, barrier) kernel arguments; the barrier counters are zeroed on ``stream``."""
    if plan.ctas_per_row == 1:
        if ro.SIM:
            return _SIM_DUMMY_F32, _SIM_DUMMY_I32
        return 0, 0  # never dereferenced
    if scratch is None:
        raise ValueError(f"this launch needs {plan.scratch_bytes} bytes of scratch")
    if ro.SIM:  # unreachable through the planner (one CTA a row there); kept for completeness
        raw = _host_array(scratch).reshape(-1).view(np.uint8)
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        st = raw[plan.stats_offset : plan.stats_offset + plan.stats_bytes].view(np.float32)
        bar = raw[plan.barrier_offset : plan.barrier_offset + plan.barrier_bytes].view(np.int32)
        bar[:] = 0
        return FakeCUDAArray(st), FakeCUDAArray(bar)
    base = _address(scratch)
    _memset_barrier(base + plan.barrier_offset, plan.barrier_bytes // 4, stream)
    return base + plan.stats_offset, base + plan.barrier_offset


_SIM_DUMMY_F32 = np.zeros(2, np.float32)
_SIM_DUMMY_I32 = np.zeros(1, np.int32)
_SIM_DUMMY_U8 = np.zeros(1, np.uint8)


def launchers(plan: RowPlan, device: int | None = None) -> tuple[Any, None]:
    """(:class:`rtc.Launcher`, None) of ``plan`` on ``device`` (None: the current one; GPU
    only). The fast path asks after dispatch's device guard has closed: the kernel is looked up
    (or loaded) on ``device``, not on whichever is current."""
    spec = plan.spec
    with rtc.on_device(device):
        kern = compile_backward(spec) if spec.config.is_backward else compile_forward(spec)
        return kern.launcher(plan), None


def forward(plan: RowPlan, args: SoftmaxFwdArgs, stream: int) -> None:
    """Launch the forward kernel of ``plan.spec`` on the raw CUstream handle ``stream``.

    ``args`` holds Tensors (``ptr``, ``rows_cols()``; ``as_numba()`` under the simulator) or
    Numba device arrays; ``x``/``y`` are ``rows x cols`` rows, ``mask`` is
    ``mask_batch * sq`` rows of ``cols`` bytes.
    """
    spec = plan.spec
    kern = compile_forward(spec)
    rows, cols, ne = plan.rows, plan.cols, spec.num_elts
    storage = _NP_STORAGE[spec.config.dtype]
    x, xs = _rows_arg(args.x, rows, cols, storage, ne, "x")
    y, ys = _rows_arg(args.y, rows, cols, storage, ne, "y")
    sq, heads, mask_batch = int(args.sq), int(args.heads), int(args.mask_batch)
    if sq < 1 or heads < 1 or mask_batch < 1:
        raise ValueError(f"sq, heads, mask_batch must be >= 1, got {sq}, {heads}, {mask_batch}")
    if spec.variant == "masked":
        if args.mask is None:
            raise ValueError("the masked variant needs a mask")
        mask, ms = _rows_arg(args.mask, mask_batch * sq, cols, np.dtype(np.uint8), ne, "mask")
    else:
        mask, ms = (_SIM_DUMMY_U8 if ro.SIM else 0), 0
    stats, barrier = _scratch_args(plan, args.scratch, stream)
    kern.launch(
        (x, mask, y, rows, cols, xs, ys, ms, sq, heads, mask_batch, float(args.scale), stats,
         barrier),
        plan,
        stream,
    )  # fmt: skip


def backward(plan: RowPlan, args: SoftmaxBwdArgs, stream: int) -> None:
    """Launch the backward kernel of ``plan.spec`` on the raw CUstream handle ``stream``."""
    spec = plan.spec
    kern = compile_backward(spec)
    rows, cols, ne = plan.rows, plan.cols, spec.num_elts
    storage = _NP_STORAGE[spec.config.dtype]
    dy, dys = _rows_arg(args.dy, rows, cols, storage, ne, "dy")
    y, ys = _rows_arg(args.y, rows, cols, storage, ne, "y")
    dx, dxs = _rows_arg(args.dx, rows, cols, storage, ne, "dx")
    stats, barrier = _scratch_args(plan, args.scratch, stream)
    kern.launch(
        (dy, y, dx, rows, cols, dys, ys, dxs, float(args.scale), stats, barrier),
        plan,
        stream,
    )
