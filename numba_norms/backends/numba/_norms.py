"""Numba (``@cuda.jit``) LayerNorm / RMSNorm kernels: factories, primitives and launchers.

The kernels implement the contract of ``docs/design.md`` (same thread mapping, configurations
and reduction structure as the CUDA C kernels). A :class:`~numba_norms.planner.NormSpec` is
turned into kernels by *closure constants* (warps, vector width, vectors per thread, general,
RMS, fused add, storage dtypes): Numba freezes closure variables at compile time, so every loop
over them has a constant trip count that NVVM fully unrolls, and the per-thread row arrays
(``cuda.local.array``) are promoted to registers.

Two execution targets share the kernel bodies:

* the GPU: arrays are passed as raw pointers (``CPointer``), global memory is accessed through
  small LLVM intrinsics that emit 16-byte vector loads/stores (``ld.global.nc.v4.u32``) and bit
  casts; reductions use warp shuffles; multi-CTA rows use an inter-CTA barrier;
* Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``): the same kernel bodies run as Python on
  flat NumPy views, the primitives are NumPy code, and warp reductions go through shared memory
  (the simulator has no shuffles). The planner never gives the simulator several CTAs per row.
"""

from __future__ import annotations

import contextlib
import math
import threading
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
from numba import cuda
from numba.cuda import config as _numba_cuda_config
from numba.cuda import types

from ...planner import NormPlan, NormSpec

__all__ = [
    "SIMULATOR",
    "STORAGE_TYPES",
    "backward",
    "compile_backward",
    "compile_forward",
    "forward",
    "occupancy_backward",
    "occupancy_forward",
]

SIMULATOR = bool(_numba_cuda_config.ENABLE_CUDASIM)
# Aliases visible to kernel bodies as closure/global constants.
_SIM = SIMULATOR
F32 = types.float32
I32 = types.int32
# Storage type of each dtype name inside the kernels (bf16 is carried as its bits).
STORAGE_TYPES = {"fp32": types.float32, "fp16": types.float16, "bf16": types.uint16}
_NP_STORAGE = {"fp32": np.float32, "fp16": np.float16, "bf16": np.uint16}

# uint32 constants keep the bf16 bit arithmetic in 32 bits (a Python int literal would
# promote it to int64 in Numba's typing).
_U16 = np.uint32(16)
_U1 = np.uint32(1)
_ABS_MASK = np.uint32(0x7FFFFFFF)
_F32_INF_BITS = np.uint32(0x7F800000)
_ROUND_BIAS = np.uint32(0x7FFF)
_QUIET_BIT = np.uint32(0x40)
_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)


def _device(fn):
    """A device helper that NVVM always inlines (row arrays stay in registers).

    Module-level helpers are compiled once per signature and shared by every kernel.
    """
    if _SIM:
        return cuda.jit(device=True)(fn)
    return cuda.jit(device=True, forceinline=True)(fn)


# ---------------------------------------------------------------------------------------------
# Memory primitives. GPU: LLVM intrinsics on raw pointers. Simulator: NumPy on flat arrays.
# ---------------------------------------------------------------------------------------------

if _SIM:

    def _vload(src, idx, dst, off, n):
        for j in range(n):
            dst[off + j] = src[idx + j]

    def _vload_g(src, idx, dst, off, n, avail):
        for j in range(n):
            dst[off + j] = src[idx + j] if j < avail else 0

    def _vstore(dst, idx, src, off, n):
        for j in range(n):
            dst[idx + j] = src[off + j]

    def _vstore_g(dst, idx, src, off, n, avail):
        for j in range(min(n, avail)):
            dst[idx + j] = src[off + j]

    def _bits_f32(u):
        return np.uint32(u).view(np.float32)

    def _f32_bits(f):
        return np.float32(f).view(np.uint32)

    _atomic_add_i32 = None  # multi-CTA rows never run in the simulator

else:
    from llvmlite import ir
    from numba.cuda.extending import intrinsic

    _LL_I64 = ir.IntType(64)

    def _c64(v):
        return ir.Constant(_LL_I64, v)

    def _elem(context, ptr_type):
        elty = context.get_value_type(ptr_type.dtype)
        return elty, context.get_abi_sizeof(elty)

    def _chunks(n, esize):
        """(first element, bytes) of each access: at most 16 bytes, aligned to its size."""
        total, done = n * esize, 0
        while done < total:
            size = min(16, total - done)
            yield done // esize, size
            done += size

    def _word_type(size):
        bits = 32 if size >= 4 else size * 8
        words = size // 4 if size >= 4 else 1
        wty = ir.IntType(bits)
        return wty, (ir.VectorType(wty, words) if words > 1 else wty), words

    def _emit_load(builder, elty, esize, src, dst, n, invariant):
        # Load whole 32-bit words (a <4 x i32> for 16 bytes) and split them into elements:
        # loading <8 x i16> directly would be legalised into two 8-byte loads.
        for first, size in _chunks(n, esize):
            wty, vty, words = _word_type(size)
            ptr = builder.bitcast(builder.gep(src, [_c64(first)]), vty.as_pointer())
            val = builder.load(ptr, align=size)
            if invariant:  # read-only for the kernel: lets NVVM emit ld.global.nc
                val.set_metadata("invariant.load", builder.module.add_metadata([]))
            per = wty.width // (8 * esize)
            for w in range(words):
                word = (
                    builder.extract_element(val, ir.Constant(ir.IntType(32), w))
                    if words > 1
                    else val
                )
                for h in range(per):
                    part = builder.lshr(word, ir.Constant(wty, 8 * esize * h)) if h else word
                    if 8 * esize < wty.width:
                        part = builder.trunc(part, ir.IntType(8 * esize))
                    if not isinstance(elty, ir.IntType):
                        part = builder.bitcast(part, elty)
                    builder.store(part, builder.gep(dst, [_c64(first + w * per + h)]))

    def _emit_store(builder, elty, esize, dst, src, n):
        for first, size in _chunks(n, esize):
            wty, vty, words = _word_type(size)
            per = wty.width // (8 * esize)
            val = ir.Constant(vty, None)
            for w in range(words):
                word = ir.Constant(wty, 0)
                for h in range(per):
                    e = builder.load(builder.gep(src, [_c64(first + w * per + h)]))
                    if not isinstance(elty, ir.IntType):
                        e = builder.bitcast(e, ir.IntType(8 * esize))
                    if 8 * esize < wty.width:
                        e = builder.zext(e, wty)
                    if h:
                        e = builder.shl(e, ir.Constant(wty, 8 * esize * h))
                    word = builder.or_(word, e) if h else e
                val = (
                    builder.insert_element(val, word, ir.Constant(ir.IntType(32), w))
                    if words > 1
                    else word
                )
            ptr = builder.bitcast(builder.gep(dst, [_c64(first)]), vty.as_pointer())
            builder.store(val, ptr, align=size)

    def _local_data(context, builder, arr_type, arr, off, off_type):
        data = context.make_array(arr_type)(context, builder, arr).data
        return builder.gep(data, [context.cast(builder, off, off_type, types.int64)])

    def _check(ptr, arr, n):
        if not isinstance(n, types.IntegerLiteral):
            return False
        if not isinstance(ptr, types.CPointer) or not isinstance(arr, types.Array):
            raise TypeError(f"vector access needs (pointer, local array), got {ptr}, {arr}")
        if ptr.dtype != arr.dtype:
            raise TypeError(f"vector access dtype mismatch: {ptr.dtype} vs {arr.dtype}")
        return True

    @intrinsic
    def _vload(typingctx, src, idx, dst, off, n):
        """dst[off:off+n] = src[idx:idx+n] with one aligned vector access per 16 bytes."""
        if not _check(src, dst, n):
            return None

        def codegen(context, builder, sig, args):
            elty, esize = _elem(context, sig.args[0])
            s = builder.gep(args[0], [context.cast(builder, args[1], sig.args[1], types.int64)])
            d = _local_data(context, builder, sig.args[2], args[2], args[3], sig.args[3])
            _emit_load(builder, elty, esize, s, d, n.literal_value, True)
            return context.get_dummy_value()

        return types.void(src, idx, dst, off, n), codegen

    @intrinsic
    def _vload_g(typingctx, src, idx, dst, off, n, avail):
        """Bounds-checked :func:`_vload`: elements ``j >= avail`` read as zero."""
        if not _check(src, dst, n):
            return None
        count = n.literal_value

        def codegen(context, builder, sig, args):
            elty, esize = _elem(context, sig.args[0])
            s = builder.gep(args[0], [context.cast(builder, args[1], sig.args[1], types.int64)])
            d = _local_data(context, builder, sig.args[2], args[2], args[3], sig.args[3])
            avail_v = context.cast(builder, args[5], sig.args[5], types.int64)
            full = builder.icmp_signed(">=", avail_v, _c64(count))
            with builder.if_else(full, likely=True) as (then, otherwise):
                with then:
                    _emit_load(builder, elty, esize, s, d, count, True)
                with otherwise:
                    for j in range(count):
                        sj, dj = builder.gep(s, [_c64(j)]), builder.gep(d, [_c64(j)])
                        inside = builder.icmp_signed(">", avail_v, _c64(j))
                        with builder.if_else(inside) as (t2, o2):
                            with t2:
                                _emit_load(builder, elty, esize, sj, dj, 1, True)
                            with o2:
                                builder.store(ir.Constant(elty, None), dj)
            return context.get_dummy_value()

        return types.void(src, idx, dst, off, n, avail), codegen

    @intrinsic
    def _vstore(typingctx, dst, idx, src, off, n):
        """dst[idx:idx+n] = src[off:off+n] with one aligned vector access per 16 bytes."""
        if not _check(dst, src, n):
            return None

        def codegen(context, builder, sig, args):
            elty, esize = _elem(context, sig.args[0])
            d = builder.gep(args[0], [context.cast(builder, args[1], sig.args[1], types.int64)])
            s = _local_data(context, builder, sig.args[2], args[2], args[3], sig.args[3])
            _emit_store(builder, elty, esize, d, s, n.literal_value)
            return context.get_dummy_value()

        return types.void(dst, idx, src, off, n), codegen

    @intrinsic
    def _vstore_g(typingctx, dst, idx, src, off, n, avail):
        """Bounds-checked :func:`_vstore`: only elements ``j < avail`` are written."""
        if not _check(dst, src, n):
            return None
        count = n.literal_value

        def codegen(context, builder, sig, args):
            elty, esize = _elem(context, sig.args[0])
            d = builder.gep(args[0], [context.cast(builder, args[1], sig.args[1], types.int64)])
            s = _local_data(context, builder, sig.args[2], args[2], args[3], sig.args[3])
            avail_v = context.cast(builder, args[5], sig.args[5], types.int64)
            full = builder.icmp_signed(">=", avail_v, _c64(count))
            with builder.if_else(full, likely=True) as (then, otherwise):
                with then:
                    _emit_store(builder, elty, esize, d, s, count)
                with otherwise:
                    for j in range(count):
                        inside = builder.icmp_signed(">", avail_v, _c64(j))
                        with builder.if_then(inside):
                            dj, sj = builder.gep(d, [_c64(j)]), builder.gep(s, [_c64(j)])
                            _emit_store(builder, elty, esize, dj, sj, 1)
            return context.get_dummy_value()

        return types.void(dst, idx, src, off, n, avail), codegen

    @intrinsic
    def _bits_f32(typingctx, u):
        """Reinterpret the low 32 bits of an integer as float32."""

        def codegen(context, builder, sig, args):
            v = context.cast(builder, args[0], sig.args[0], types.uint32)
            return builder.bitcast(v, ir.FloatType())

        return types.float32(u), codegen

    @intrinsic
    def _f32_bits(typingctx, f):
        """The bits of a float32 as uint32."""

        def codegen(context, builder, sig, args):
            v = context.cast(builder, args[0], sig.args[0], types.float32)
            return builder.bitcast(v, ir.IntType(32))

        return types.uint32(f), codegen

    @intrinsic
    def _atomic_add_i32(typingctx, ptr, idx, val):
        """atomicAdd on ``ptr[idx]`` (int32*); ``cuda.atomic`` only takes arrays."""

        def codegen(context, builder, sig, args):
            p = builder.gep(args[0], [context.cast(builder, args[1], sig.args[1], types.int64)])
            v = context.cast(builder, args[2], sig.args[2], types.int32)
            return builder.atomic_rmw("add", p, v, "monotonic")

        return types.int32(ptr, idx, val), codegen


# ---------------------------------------------------------------------------------------------
# Scalar helpers (module level: compiled once per signature, shared by all kernels).
# ---------------------------------------------------------------------------------------------


@_device
def _bf16_to_f32(u):
    # bf16 is the upper half of a float32
    return _bits_f32(types.uint32(u) << _U16)


@_device
def _f32_to_bf16(f):
    # round to nearest even; NaN stays a (quiet) NaN instead of rounding to infinity
    u = _f32_bits(f)
    if (u & _ABS_MASK) > _F32_INF_BITS:
        return types.uint16((u >> _U16) | _QUIET_BIT)
    return types.uint16((u + _ROUND_BIAS + ((u >> _U16) & _U1)) >> _U16)


@_device
def _f16_to_f32(h):
    return types.float32(h)


@_device
def _f32_to_f16(f):
    return types.float16(f)


@_device
def _f32_to_f32(f):
    return types.float32(f)


_TO_F32 = {"fp32": _f32_to_f32, "fp16": _f16_to_f32, "bf16": _bf16_to_f32}
_FROM_F32 = {"fp32": _f32_to_f32, "fp16": _f32_to_f16, "bf16": _f32_to_bf16}


if _SIM:

    @_device
    def _warp_sum(v, red, tid, lane):
        # No shuffles in the simulator: exchange through shared memory (all threads call this).
        red[tid] = v
        cuda.syncthreads()
        base = tid - lane
        s = F32(0.0)
        for i in range(32):
            s += red[base + i]
        cuda.syncthreads()
        return s

else:

    @_device
    def _warp_sum(v, red, tid, lane):
        # xor butterfly: every lane adds the same pairs (a + b == b + a), so all lanes end with
        # bitwise the same sum.
        v += cuda.shfl_xor_sync(0xFFFFFFFF, v, 16)
        v += cuda.shfl_xor_sync(0xFFFFFFFF, v, 8)
        v += cuda.shfl_xor_sync(0xFFFFFFFF, v, 4)
        v += cuda.shfl_xor_sync(0xFFFFFFFF, v, 2)
        v += cuda.shfl_xor_sync(0xFFFFFFFF, v, 1)
        return v


@_device
def _chan(na, ma, m2a, nb, mb, m2b):
    """Combine (count, mean, M2) of two disjoint sets (Chan et al.); empty sets are skipped."""
    if nb == _ZERO:
        return na, ma, m2a
    n = na + nb
    delta = mb - ma
    r = nb / n
    return n, ma + delta * r, m2a + m2b + delta * delta * na * r


@_device
def _warp_count(cols, cta, warp_n, cpr, warps_n, ne, ldgs):
    """Columns (< cols) that warp ``warp_n`` of CTA ``cta`` covers, as float32."""
    n = 0
    span = 32 * ne
    for it in range(ldgs):
        start = ((it * cpr + cta) * warps_n + warp_n) * span
        n += min(max(cols - start, 0), span)
    return F32(n)


@_device
def _cta_count(cols, cta, cpr, chunk, ldgs):
    """Columns (< cols) that CTA ``cta`` covers: chunk ``it * cpr + cta`` of ``chunk`` columns."""
    full = cols // chunk
    n = 0
    if full > cta:
        n = min((full - cta + cpr - 1) // cpr, ldgs) * chunk
    rem = cols - full * chunk
    if rem > 0 and full % cpr == cta and full // cpr < ldgs:
        n += rem
    return F32(n)


@_device
def _cta_barrier(barrier, group, target):
    """Inter-CTA barrier of one row group: arrive, wait for ``target`` arrivals."""
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        cuda.threadfence()
        _atomic_add_i32(barrier, group, 1)
        # an atomic read is never hoisted out of the loop or served from a stale cache line
        while _atomic_add_i32(barrier, group, 0) < target:
            pass
        cuda.threadfence()
    cuda.syncthreads()


# ---------------------------------------------------------------------------------------------
# Kernel factories
# ---------------------------------------------------------------------------------------------


def _shape(spec: NormSpec):
    cfg = spec.config
    return cfg.warps_m, cfg.warps_n, spec.num_elts, spec.ldgs, spec.general


def _make_forward(spec: NormSpec, multi: bool):
    cfg = spec.config
    WM, WN, NE, LDGS, GENERAL = _shape(spec)
    RMS = cfg.is_rms
    MULTI = multi
    NV = NE * LDGS
    LANES = WN * 32
    TI, TW, TO = STORAGE_TYPES[cfg.input], STORAGE_TYPES[cfg.weight], STORAGE_TYPES[cfg.output]
    in_f32, w_f32, out_cvt = _TO_F32[cfg.input], _TO_F32[cfg.weight], _FROM_F32[cfg.output]
    NW_TUNED = np.float32(32 * NV)  # elements of one warp in a tuned kernel
    NC_TUNED = np.float32(LANES * NV)  # elements of one CTA in a tuned kernel
    SM = max(1, 2 * WM * WN * 2)  # [trip parity][warp_m][warp_n][2]
    RED = WM * WN * 32 if _SIM else 1
    CHUNK = LANES * NE  # columns of one CTA per vector step

    def norm_fwd(
        x, gamma, beta, y, mu, rsigma, rows, cols, x_stride, y_stride, eps, zero_centered,
        stats, barrier,
    ):  # fmt: skip
        tid = cuda.threadIdx.x
        lane = tid % 32
        warp = tid // 32
        warp_m = warp // WN
        warp_n = warp % WN
        if MULTI:
            cta_n = cuda.blockIdx.x
            cpr = cuda.gridDim.x
        else:
            cta_n = 0
            cpr = 1
        group = cuda.blockIdx.y
        ngroups = cuda.gridDim.y
        col0 = ((cta_n * WN + warp_n) * 32 + lane) * NE
        step = cpr * CHUNK
        sm = cuda.shared.array(SM, F32)
        red = cuda.shared.array(RED, F32)
        xs = cuda.local.array(NV, F32)
        gs = cuda.local.array(NV, F32)
        bs = cuda.local.array(NV, F32)
        xt = cuda.local.array(NE, TI)
        wt = cuda.local.array(NE, TW)
        yt = cuda.local.array(NE, TO)
        fcols = F32(cols)

        # gamma (+1 when zero-centred) and beta: once per CTA
        gadd = _ONE if zero_centered != 0 else _ZERO
        for it in range(LDGS):
            c = col0 + it * step
            if GENERAL:
                _vload_g(gamma, c, wt, 0, NE, cols - c)
            else:
                _vload(gamma, c, wt, 0, NE)
            for k in range(NE):
                gs[it * NE + k] = w_f32(wt[k]) + gadd
            if not RMS:
                if GENERAL:
                    _vload_g(beta, c, wt, 0, NE, cols - c)
                else:
                    _vload(beta, c, wt, 0, NE)
                for k in range(NE):
                    bs[it * NE + k] = w_f32(wt[k])

        # element counts for the mean / M2 combination
        if GENERAL:
            nw = _warp_count(cols, cta_n, warp_n, cpr, WN, NE, LDGS)
        else:
            nw = NW_TUNED

        trips = (rows + ngroups * WM - 1) // (ngroups * WM)
        for t in range(trips):
            row = (t * ngroups + group) * WM + warp_m
            valid = row < rows
            # warps past the last row load a real row (no garbage) but store nothing
            lrow = min(row, rows - 1)
            xoff = lrow * x_stride
            par = t & 1
            s = _ZERO
            for it in range(LDGS):
                c = col0 + it * step
                if GENERAL:
                    _vload_g(x, xoff + c, xt, 0, NE, cols - c)
                else:
                    _vload(x, xoff + c, xt, 0, NE)
                for k in range(NE):
                    v = in_f32(xt[k])
                    xs[it * NE + k] = v
                    if RMS:
                        s += v * v
                    else:
                        s += v

            s = _warp_sum(s, red, tid, lane)
            if RMS:
                # sum of squares: warps of the row, then CTAs of the row, in index order
                if WN > 1:
                    if lane == 0:
                        sm[((par * WM + warp_m) * WN + warp_n) * 2] = s
                    cuda.syncthreads()
                    s = _ZERO
                    for w in range(WN):
                        s += sm[((par * WM + warp_m) * WN + w) * 2]
                if MULTI:
                    sbase = ((par * ngroups + group) * WM + warp_m) * cpr
                    if warp_n == 0 and lane == 0:
                        stats[(sbase + cta_n) * 2] = s
                    _cta_barrier(barrier, group, (t + 1) * cpr)
                    s = _ZERO
                    for cc in range(cpr):
                        s += stats[(sbase + cc) * 2]
                mean = _ZERO
                rs = _ONE / F32(math.sqrt(s / fcols + eps))
            else:
                # two-step statistics inside the warp, Chan's combination across warps/CTAs
                m = s / max(nw, _ONE)
                d = _ZERO
                for it in range(LDGS):
                    c = col0 + it * step
                    for k in range(NE):
                        dv = xs[it * NE + k] - m
                        if GENERAL:
                            if c + k < cols:
                                d += dv * dv
                        else:
                            d += dv * dv
                d = _warp_sum(d, red, tid, lane)
                n = nw
                if WN > 1:
                    if lane == 0:
                        sm[((par * WM + warp_m) * WN + warp_n) * 2] = m
                        sm[((par * WM + warp_m) * WN + warp_n) * 2 + 1] = d
                    cuda.syncthreads()
                    n = _ZERO
                    m = _ZERO
                    d = _ZERO
                    for w in range(WN):
                        if GENERAL:
                            nb = _warp_count(cols, cta_n, w, cpr, WN, NE, LDGS)
                        else:
                            nb = NW_TUNED
                        i = ((par * WM + warp_m) * WN + w) * 2
                        n, m, d = _chan(n, m, d, nb, sm[i], sm[i + 1])
                if MULTI:
                    sbase = ((par * ngroups + group) * WM + warp_m) * cpr
                    if warp_n == 0 and lane == 0:
                        stats[(sbase + cta_n) * 2] = m
                        stats[(sbase + cta_n) * 2 + 1] = d
                    _cta_barrier(barrier, group, (t + 1) * cpr)
                    n = _ZERO
                    m = _ZERO
                    d = _ZERO
                    for cc in range(cpr):
                        if GENERAL:
                            nb = _cta_count(cols, cc, cpr, CHUNK, LDGS)
                        else:
                            nb = NC_TUNED
                        n, m, d = _chan(n, m, d, nb, stats[(sbase + cc) * 2],
                                        stats[(sbase + cc) * 2 + 1])  # fmt: skip
                mean = m
                rs = _ONE / F32(math.sqrt(d / fcols + eps))

            if valid:
                if cta_n == 0 and warp_n == 0 and lane == 0:
                    if not RMS:
                        mu[row] = mean
                    rsigma[row] = rs
                yoff = row * y_stride
                for it in range(LDGS):
                    c = col0 + it * step
                    for k in range(NE):
                        j = it * NE + k
                        if RMS:
                            yt[k] = out_cvt(xs[j] * rs * gs[j])
                        else:
                            yt[k] = out_cvt((xs[j] - mean) * rs * gs[j] + bs[j])
                    if GENERAL:
                        _vstore_g(y, yoff + c, yt, 0, NE, cols - c)
                    else:
                        _vstore(y, yoff + c, yt, 0, NE)

        if MULTI:
            _require_cooperative_launch(rows)

    sig = None
    if not _SIM:
        P = types.CPointer
        sig = types.void(
            P(TI), P(TW), P(TW), P(TO), P(F32), P(F32), I32, I32, types.int64, types.int64,
            F32, I32, P(F32), P(types.int32),
        )  # fmt: skip
    return norm_fwd, sig


def _make_backward(spec: NormSpec, multi: bool):
    cfg = spec.config
    WM, WN, NE, LDGS, GENERAL = _shape(spec)
    RMS = cfg.is_rms
    ADD = cfg.fused_add
    MULTI = multi
    NV = NE * LDGS
    LANES = WN * 32
    TI, TW, TO = STORAGE_TYPES[cfg.input], STORAGE_TYPES[cfg.weight], STORAGE_TYPES[cfg.output]
    in_f32, w_f32, dy_f32 = _TO_F32[cfg.input], _TO_F32[cfg.weight], _TO_F32[cfg.output]
    dx_cvt = _FROM_F32[cfg.input]
    SM = max(1, 2 * WM * WN * 2)
    RED = WM * WN * 32 if _SIM else 1
    CHUNK = LANES * NE

    # partial rows are written as fp32 vectors; in the general kernel only when the row pitch
    # (cols) keeps them aligned
    def norm_bwd(
        dy, x, mu, rsigma, gamma, dx, add, dgamma_part, dbeta_part, rows, cols, dy_stride,
        x_stride, dx_stride, add_stride, zero_centered, stats, barrier,
    ):  # fmt: skip
        tid = cuda.threadIdx.x
        lane = tid % 32
        warp = tid // 32
        warp_m = warp // WN
        warp_n = warp % WN
        if MULTI:
            cta_n = cuda.blockIdx.x
            cpr = cuda.gridDim.x
        else:
            cta_n = 0
            cpr = 1
        group = cuda.blockIdx.y
        ngroups = cuda.gridDim.y
        col0 = ((cta_n * WN + warp_n) * 32 + lane) * NE
        step = cpr * CHUNK
        sm = cuda.shared.array(SM, F32)
        red = cuda.shared.array(RED, F32)
        xs = cuda.local.array(NV, F32)
        dys = cuda.local.array(NV, F32)
        gs = cuda.local.array(NV, F32)
        dga = cuda.local.array(NV, F32)
        dba = cuda.local.array(NV, F32)
        xt = cuda.local.array(NE, TI)
        dyt = cuda.local.array(NE, TO)
        wt = cuda.local.array(NE, TW)
        pt = cuda.local.array(NE, F32)
        rn = _ONE / F32(cols)

        gadd = _ONE if zero_centered != 0 else _ZERO
        for it in range(LDGS):
            c = col0 + it * step
            if GENERAL:
                _vload_g(gamma, c, wt, 0, NE, cols - c)
            else:
                _vload(gamma, c, wt, 0, NE)
            for k in range(NE):
                gs[it * NE + k] = w_f32(wt[k]) + gadd
                dga[it * NE + k] = _ZERO
                dba[it * NE + k] = _ZERO

        trips = (rows + ngroups * WM - 1) // (ngroups * WM)
        for t in range(trips):
            row = (t * ngroups + group) * WM + warp_m
            valid = row < rows
            lrow = min(row, rows - 1)
            xoff = lrow * x_stride
            dyoff = lrow * dy_stride
            par = t & 1
            r = rsigma[lrow]
            if RMS:
                m = _ZERO
            else:
                m = mu[lrow]
            sdy = _ZERO
            sdyy = _ZERO
            for it in range(LDGS):
                c = col0 + it * step
                if GENERAL:
                    _vload_g(x, xoff + c, xt, 0, NE, cols - c)
                    _vload_g(dy, dyoff + c, dyt, 0, NE, cols - c)
                else:
                    _vload(x, xoff + c, xt, 0, NE)
                    _vload(dy, dyoff + c, dyt, 0, NE)
                for k in range(NE):
                    j = it * NE + k
                    xv = in_f32(xt[k])
                    dv = dy_f32(dyt[k])
                    xs[j] = xv
                    dys[j] = dv
                    xh = (xv - m) * r
                    dyg = dv * gs[j]
                    sdy += dyg
                    sdyy += dyg * xh
            if valid:
                for j in range(NV):
                    dga[j] += dys[j] * ((xs[j] - m) * r)
                    if not RMS:
                        dba[j] += dys[j]

            sdyy = _warp_sum(sdyy, red, tid, lane)
            if not RMS:
                sdy = _warp_sum(sdy, red, tid, lane)
            if WN > 1:
                if lane == 0:
                    sm[((par * WM + warp_m) * WN + warp_n) * 2] = sdyy
                    sm[((par * WM + warp_m) * WN + warp_n) * 2 + 1] = sdy
                cuda.syncthreads()
                sdyy = _ZERO
                sdy = _ZERO
                for w in range(WN):
                    sdyy += sm[((par * WM + warp_m) * WN + w) * 2]
                    sdy += sm[((par * WM + warp_m) * WN + w) * 2 + 1]
            if MULTI:
                sbase = ((par * ngroups + group) * WM + warp_m) * cpr
                if warp_n == 0 and lane == 0:
                    stats[(sbase + cta_n) * 2] = sdyy
                    stats[(sbase + cta_n) * 2 + 1] = sdy
                _cta_barrier(barrier, group, (t + 1) * cpr)
                sdyy = _ZERO
                sdy = _ZERO
                for cc in range(cpr):
                    sdyy += stats[(sbase + cc) * 2]
                    sdy += stats[(sbase + cc) * 2 + 1]
            mdyy = sdyy * rn
            mdy = sdy * rn

            if valid:
                dxoff = row * dx_stride
                addoff = row * add_stride
                for it in range(LDGS):
                    c = col0 + it * step
                    if ADD:
                        if GENERAL:
                            _vload_g(add, addoff + c, xt, 0, NE, cols - c)
                        else:
                            _vload(add, addoff + c, xt, 0, NE)
                    for k in range(NE):
                        j = it * NE + k
                        xh = (xs[j] - m) * r
                        dyg = dys[j] * gs[j]
                        if RMS:
                            dxv = r * (dyg - mdyy * xh)
                        else:
                            dxv = r * (dyg - (mdyy * xh + mdy))
                        if ADD:
                            dxv += in_f32(xt[k])
                        xt[k] = dx_cvt(dxv)
                    if GENERAL:
                        _vstore_g(dx, dxoff + c, xt, 0, NE, cols - c)
                    else:
                        _vstore(dx, dxoff + c, xt, 0, NE)

        # per-warp-row partial dgamma / dbeta (summed in order by the finalize kernel)
        poff = (group * WM + warp_m) * cols
        aligned = (not GENERAL) or cols % NE == 0
        for it in range(LDGS):
            c = col0 + it * step
            for k in range(NE):
                pt[k] = dga[it * NE + k]
            if GENERAL:
                if aligned:
                    _vstore_g(dgamma_part, poff + c, pt, 0, NE, cols - c)
                else:
                    for k in range(NE):
                        _vstore_g(dgamma_part, poff + c + k, pt, k, 1, cols - c - k)
            else:
                _vstore(dgamma_part, poff + c, pt, 0, NE)
            if not RMS:
                for k in range(NE):
                    pt[k] = dba[it * NE + k]
                if GENERAL:
                    if aligned:
                        _vstore_g(dbeta_part, poff + c, pt, 0, NE, cols - c)
                    else:
                        for k in range(NE):
                            _vstore_g(dbeta_part, poff + c + k, pt, k, 1, cols - c - k)
                else:
                    _vstore(dbeta_part, poff + c, pt, 0, NE)

        if MULTI:
            _require_cooperative_launch(rows)

    sig = None
    if not _SIM:
        P = types.CPointer
        sig = types.void(
            P(TO), P(TI), P(F32), P(F32), P(TW), P(TI), P(TI), P(F32), P(F32), I32, I32,
            types.int64, types.int64, types.int64, types.int64, I32, P(F32), P(types.int32),
        )  # fmt: skip
    return norm_bwd, sig


def _make_finalize(weight: str, has_beta: bool):
    TW = STORAGE_TYPES[weight]
    w_cvt = _FROM_F32[weight]
    HAS_BETA = has_beta

    def norm_bwd_finalize(dgamma_part, dbeta_part, dgamma, dbeta, partial_rows, cols):
        c = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        if c < cols:
            # one thread per column, rows summed strictly in order (bitwise reproducible)
            sg = _ZERO
            sb = _ZERO
            for p in range(partial_rows):
                sg += dgamma_part[p * cols + c]
                if HAS_BETA:
                    sb += dbeta_part[p * cols + c]
            dgamma[c] = w_cvt(sg)
            if HAS_BETA:
                dbeta[c] = w_cvt(sb)

    sig = None
    if not _SIM:
        P = types.CPointer
        sig = types.void(P(F32), P(F32), P(TW), P(TW), I32, I32)
    return norm_bwd_finalize, sig


# Cooperative launch. numba-cuda launches a kernel cooperatively exactly when its code library
# uses a grid group (``cuda.cg.this_grid()``); the flag is set while the call is lowered, so a
# grid sync in a branch that never runs is enough. ``rows >= 1`` always (the planner rejects
# empty problems), so no CTA ever executes the sync: the kernel keeps its own workspace barrier
# (which only needs co-residency, guaranteed by the cooperative launch) and pays nothing at run
# time. A grid sync that did run would be a hazard: a grid barrier must be reached by every CTA
# the same number of times. Only multi-CTA kernels call this; ``ctas_per_row == 1`` kernels are
# compiled without it and launched normally.
if _SIM:

    def _require_cooperative_launch(rows):
        pass

else:

    @_device
    def _require_cooperative_launch(rows):
        if rows < 0:
            cuda.cg.this_grid().sync()


# ---------------------------------------------------------------------------------------------
# Compilation cache
# ---------------------------------------------------------------------------------------------


@dataclass
class _Compiled:
    """One compiled kernel: the Numba dispatcher and (GPU) its compiled kernel object."""

    dispatcher: Any
    kernel: Any  # numba-cuda _Kernel (GPU) or the simulator's kernel
    cooperative: bool


_LOCK = threading.RLock()
_CACHE: dict[tuple, _Compiled] = {}


def _build(key: tuple, factory) -> _Compiled:
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            return hit
        pyfunc, sig = factory()
        if _SIM:
            disp = cuda.jit(pyfunc)
            compiled = _Compiled(disp, disp, False)
        else:
            # eager compilation with the explicit signature: the cost is paid once, here
            disp = cuda.jit(sig, lineinfo=False)(pyfunc)
            kernel = disp.overloads[sig.args]
            kernel.bind()  # load the module now (link + occupancy queries need it)
            compiled = _Compiled(disp, kernel, bool(kernel.cooperative))
        _CACHE[key] = compiled
        return compiled


def _cc_of(arch: str) -> tuple[int, int]:
    digits = arch.lower().removeprefix("sm_").removeprefix("compute_").rstrip("a")
    if not digits.isdigit() or len(digits) < 2:
        raise ValueError(f"arch must look like 'sm_90', got {arch!r}")
    return int(digits[:-1]), int(digits[-1])


def _gpu_present() -> bool:
    try:
        return bool(cuda.is_available())
    except Exception:  # no driver at all
        return False


@contextlib.contextmanager
def _assume_device(cc: tuple[int, int]):
    """Let numba-cuda compile device functions without a GPU.

    ``compile_ptx`` takes the target from its ``cc`` argument, but every device function it
    meets on the way (our helpers, and the ``@overload`` implementations behind builtins such as
    ``bool``) is compiled by ``CUDADispatcher.compile_device``, which asks the current device for
    its compute capability. Without a GPU we answer with the requested one.
    """
    from numba.cuda import dispatcher as _dispatcher

    real = _dispatcher.get_current_device
    _dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=cc)
    try:
        yield
    finally:
        _dispatcher.get_current_device = real


def _compile(key: tuple, factory, arch: str | None):
    if arch is not None and not _SIM and not _gpu_present():
        cc = _cc_of(arch)
        pyfunc, sig = factory()
        with _LOCK, _assume_device(cc):
            ptx, _ = cuda.compile_ptx(pyfunc, sig, cc=cc)
        return ptx
    return _build(key, factory)


def _multi(spec: NormSpec) -> bool:
    return spec.ctas_per_row > 1


def compile_forward(spec: NormSpec, arch: str | None = None) -> Any:
    """Build (cached) the forward kernel of ``spec``.

    Parameters
    ----------
    spec : NormSpec
        What to compile (``layernorm_fwd`` or ``rmsnorm_fwd``).
    arch : str, optional
        ``"sm_90"`` etc. Without a GPU this only compiles to PTX and returns the PTX text.

    Returns
    -------
    object
        The cached compiled kernel, or the PTX string (``arch`` given, no GPU).
    """
    multi = _multi(spec)
    key = ("fwd", spec.kernel_key, multi)
    return _compile(key, lambda: _make_forward(spec, multi), arch)


def compile_backward(spec: NormSpec, arch: str | None = None) -> Any:
    """Build (cached) the backward kernel of ``spec`` and its finalize kernel.

    Returns the compiled backward kernel, or (``arch`` given, no GPU) the PTX of the backward
    kernel followed by the finalize kernel's PTX.
    """
    multi = _multi(spec)
    key = ("bwd", spec.kernel_key, multi)
    cfg = spec.config
    fin_key = ("fin", cfg.weight, not cfg.is_rms)
    main = _compile(key, lambda: _make_backward(spec, multi), arch)
    fin = _compile(fin_key, lambda: _make_finalize(cfg.weight, not cfg.is_rms), arch)
    if isinstance(main, str):
        return main + "\n" + fin
    return main


def _occupancy(compiled: _Compiled, threads: int) -> int:
    if _SIM:
        return 2
    cufunc = compiled.kernel.library.get_cufunc()
    return int(cuda.current_context().get_active_blocks_per_multiprocessor(cufunc, threads, 0))


def occupancy_forward(spec: NormSpec) -> int:
    """Max active CTAs per SM of the forward kernel (2 under the simulator)."""
    return _occupancy(compile_forward(spec), spec.threads)


def occupancy_backward(spec: NormSpec) -> int:
    """Max active CTAs per SM of the backward kernel (2 under the simulator)."""
    return _occupancy(compile_backward(spec), spec.threads)


# ---------------------------------------------------------------------------------------------
# Launch
# ---------------------------------------------------------------------------------------------

_STREAMS: dict[int, Any] = {}


def _stream(handle: Any) -> Any:
    if not isinstance(handle, int):
        return handle  # already a Numba stream (or None)
    s = _STREAMS.get(handle)
    if s is None:
        s = cuda.default_stream() if handle == 0 else cuda.external_stream(handle)
        _STREAMS[handle] = s
    return s


def _ptr(t: Any) -> int:
    if t is None:
        return 0
    p = getattr(t, "ptr", None)
    if isinstance(p, int):
        return p
    return int(t.__cuda_array_interface__["data"][0])


def _row_stride(t: Any, cols: int) -> int:
    rc = getattr(t, "rows_cols", None)
    if rc is not None:
        return int(rc()[2])
    cai = t.__cuda_array_interface__
    strides = cai.get("strides")
    if not strides:
        return cols
    return int(strides[-2]) // np.dtype(cai["typestr"]).itemsize if len(strides) > 1 else cols


def _memset_barrier(ptr: int, count: int, handle: int) -> None:
    try:
        import rtc

        fn = getattr(rtc, "memset_d32_async", None)
    except ImportError:  # pragma: no cover - rtc is part of this project
        fn = None
    if fn is not None:
        fn(ptr, 0, count, handle)
        return
    from cuda.bindings import driver

    (err,) = driver.cuMemsetD32Async(ptr, 0, count, handle)
    if int(err) != 0:
        raise RuntimeError(f"cuMemsetD32Async failed: {err}")


def _handle(stream: Any) -> int:
    if isinstance(stream, int):
        return stream
    return int(getattr(stream, "handle", 0) or 0)


# --- simulator views: flat NumPy arrays over the tensors' memory ------------------------------


def _sim_flat(t: Any, np_dtype: Any | None = None) -> Any:
    """A flat (1-D) simulator array over ``t``: rows at ``row * row_stride`` like the GPU."""
    if t is None:
        return None
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    a = t.as_numba() if hasattr(t, "as_numba") else t
    nd = a._ary if hasattr(a, "_ary") else np.asarray(a)
    if np_dtype is not None and nd.dtype != np_dtype:
        nd = nd.view(np_dtype)
    if nd.ndim <= 1 and (nd.ndim == 0 or nd.strides[0] == nd.itemsize):
        flat = nd.reshape(-1)
    else:
        if hasattr(t, "rows_cols"):
            rows, cols, stride = t.rows_cols()
        else:
            cols = nd.shape[-1]
            rows = nd.size // max(cols, 1)
            stride = nd.strides[-2] // nd.itemsize
        span = (rows - 1) * stride + cols
        flat = np.lib.stride_tricks.as_strided(nd, shape=(span,), strides=(nd.itemsize,))
    return FakeCUDAArray(flat)


def _sim_scratch(scratch: Any, offset: int, nbytes: int) -> Any:
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    a = scratch.as_numba() if hasattr(scratch, "as_numba") else scratch
    nd = (a._ary if hasattr(a, "_ary") else np.asarray(a)).reshape(-1).view(np.uint8)
    return FakeCUDAArray(nd[offset : offset + nbytes].view(np.float32))


def _scratch(args: Any, plan: NormPlan) -> Any:
    if args.scratch is not None or plan.scratch_bytes == 0:
        return args.scratch
    return cuda.device_array(plan.scratch_bytes, dtype=np.uint8)


def forward(plan: NormPlan, args: Any, stream: Any = 0) -> None:
    """Launch the forward kernel of ``plan`` on ``args`` (a ``NormFwdArgs``).

    Parameters
    ----------
    plan : NormPlan
        Launch plan (grid, block, scratch layout) from :func:`numba_norms.planner.norm_plan`.
    args : NormFwdArgs
        Tensors (``ptr``, ``rows_cols()``, ``as_numba()``) and scalars.
    stream : int
        Raw ``CUstream`` handle (0: the default stream).
    """
    spec = plan.spec
    cfg = spec.config
    multi = plan.ctas_per_row > 1
    compiled = _CACHE.get(("fwd", spec.kernel_key, multi)) or compile_forward(spec)
    rows, cols = plan.rows, plan.cols
    if not cfg.is_rms and (args.beta is None or args.mu is None):
        raise ValueError("layernorm forward needs beta and mu")
    zc = 1 if args.zero_centered else 0
    if _SIM:
        k = compiled.kernel
        k[plan.grid, plan.block](
            _sim_flat(args.x), _sim_flat(args.gamma), _sim_flat(args.beta), _sim_flat(args.y),
            _sim_flat(args.mu), _sim_flat(args.rsigma), rows, cols,
            _row_stride(args.x, cols), _row_stride(args.y, cols), np.float32(args.eps), zc,
            None, None,
        )  # fmt: skip
        return
    stats = barrier = 0
    if multi:
        base = _ptr(_scratch(args, plan))
        stats, barrier = base + plan.stats_offset, base + plan.barrier_offset
        _memset_barrier(barrier, plan.ctas_per_col, _handle(stream))
    compiled.kernel.launch(
        (
            _ptr(args.x), _ptr(args.gamma), _ptr(args.beta), _ptr(args.y), _ptr(args.mu),
            _ptr(args.rsigma), rows, cols, _row_stride(args.x, cols), _row_stride(args.y, cols),
            float(args.eps), zc, stats, barrier,
        ),
        plan.grid, plan.block, _stream(stream), 0,
    )  # fmt: skip


def backward(plan: NormPlan, args: Any, stream: Any = 0) -> None:
    """Launch the backward kernel and the dgamma/dbeta finalize kernel of ``plan``.

    Parameters
    ----------
    plan : NormPlan
        Launch plan; ``plan.partial_*`` locate the dgamma/dbeta partials in the scratch.
    args : NormBwdArgs
        Tensors and flags; ``scratch`` holds ``plan.scratch_bytes`` bytes.
    stream : int
        Raw ``CUstream`` handle (0: the default stream).
    """
    spec = plan.spec
    cfg = spec.config
    multi = plan.ctas_per_row > 1
    compiled = _CACHE.get(("bwd", spec.kernel_key, multi)) or compile_backward(spec)
    has_beta = not cfg.is_rms
    fin = _CACHE.get(("fin", cfg.weight, has_beta))
    if fin is None:
        compile_backward(spec)
        fin = _CACHE[("fin", cfg.weight, has_beta)]
    rows, cols = plan.rows, plan.cols
    if has_beta and (args.mu is None or args.dbeta is None):
        raise ValueError("layernorm backward needs mu and dbeta")
    if cfg.fused_add and args.add is None:
        raise ValueError("this kernel fuses an add: args.add is required")
    zc = 1 if args.zero_centered else 0
    scratch = _scratch(args, plan)
    add = args.add if cfg.fused_add else None
    add_stride = _row_stride(add, cols) if add is not None else 0
    fgrid, fblock = plan.finalize_grid, plan.finalize_block
    if _SIM:
        dgp = _sim_scratch(scratch, plan.partial_offset, plan.partial_rows * cols * 4)
        dbp = None
        if has_beta:
            dbp = _sim_scratch(scratch, plan.dbeta_partial_offset, plan.partial_rows * cols * 4)
        compiled.kernel[plan.grid, plan.block](
            _sim_flat(args.dy), _sim_flat(args.x), _sim_flat(args.mu), _sim_flat(args.rsigma),
            _sim_flat(args.gamma), _sim_flat(args.dx), _sim_flat(add), dgp, dbp, rows, cols,
            _row_stride(args.dy, cols), _row_stride(args.x, cols), _row_stride(args.dx, cols),
            add_stride, zc, None, None,
        )  # fmt: skip
        fin.kernel[fgrid, fblock](
            dgp, dbp, _sim_flat(args.dgamma), _sim_flat(args.dbeta), plan.partial_rows, cols
        )
        return
    base = _ptr(scratch)
    st = _stream(stream)
    stats = barrier = 0
    if multi:
        stats, barrier = base + plan.stats_offset, base + plan.barrier_offset
        _memset_barrier(barrier, plan.ctas_per_col, _handle(stream))
    dgp = base + plan.partial_offset
    dbp = base + plan.dbeta_partial_offset if has_beta else 0
    compiled.kernel.launch(
        (
            _ptr(args.dy), _ptr(args.x), _ptr(args.mu), _ptr(args.rsigma), _ptr(args.gamma),
            _ptr(args.dx), _ptr(add), dgp, dbp, rows, cols, _row_stride(args.dy, cols),
            _row_stride(args.x, cols), _row_stride(args.dx, cols), add_stride, zc, stats,
            barrier,
        ),
        plan.grid, plan.block, st, 0,
    )  # fmt: skip
    fin.kernel.launch(
        (dgp, dbp, _ptr(args.dgamma), _ptr(args.dbeta), plan.partial_rows, cols),
        fgrid, fblock, st, 0,
    )  # fmt: skip
