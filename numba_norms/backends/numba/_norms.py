"""Numba (``@cuda.jit``) LayerNorm / RMSNorm kernels: factories, primitives and launchers.

The kernels implement the contract of ``docs/design.md`` (thread mapping, configurations and
reduction structure of the CUDA C kernels). A :class:`~numba_norms.planner.NormSpec` becomes
kernels through *closure constants* (warps, vector width, vectors per thread, general, RMS,
fused add, dtypes): Numba freezes closure variables at compile time, so every loop over them
has a constant trip count that NVVM unrolls fully, and the per-thread row arrays
(``cuda.local.array``) live in registers.

Two targets share the kernel bodies:

* the GPU: arrays are raw pointers (``CPointer``); global memory is accessed through small LLVM
  intrinsics that move a whole vector (one ``ld.global.nc.v4.u32`` / ``st.global.v4.u32`` per 16
  bytes) and convert between the storage dtype and fp32 on the way (bf16 widening is a shift,
  narrowing is ``cvt.rn.bf16x2.f32`` from sm_80 on, round-to-nearest-even bit arithmetic
  before); reductions use warp shuffles; multi-CTA rows use an inter-CTA workspace barrier;
* Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``): the same bodies run as Python on flat
  NumPy views, the primitives are NumPy code, and warp reductions go through shared memory
  (the simulator has no shuffles). The planner never gives the simulator several CTAs a row.

FP8 output (forward only; TransformerEngine's semantics): ``y = fp8(v * scale)`` where ``v`` is
the fp32 output the other dtypes would round; the conversion is saturating round-to-nearest-even
(``cvt.rn.satfinite.{e4m3,e5m2}x2.f32`` from sm_89 on, the bit arithmetic of
:func:`f32_to_fp8_bits` before and in the simulator; NaN becomes ``0x7F``). ``amax`` (any output
dtype) becomes ``max(amax, max|v|)`` with ``v`` taken before scaling (FP8) or after rounding to
y's dtype (others): per-thread ``fmaxf`` over the elements it stores, a warp butterfly, the
warps of the CTA in shared memory, then one ``atomicMax`` per CTA on the float's int32 bits
(exact for non-negative floats). ``scale_inv = 1 / scale`` (IEEE fp32 division) is written by
thread 0 of CTA (0, 0). FP8 kernels check ``amax`` / ``scale_inv`` for null at run time; other
kernels are compiled with or without the amax reduction (closure constant).
"""

from __future__ import annotations

import functools
import math
import threading
from typing import Any

import numpy as np
from numba import cuda
from numba.cuda import config as _numba_cuda_config
from numba.cuda import types

import rtc

from ... import registry
from ...planner import (
    CLUSTER_CC,
    DEPENDENT_LAUNCH_CC,
    FINALIZE_MAX_ROWS,
    FINALIZE_ROWS_PER_THREAD,
    MAX_CLUSTER,
    NormPlan,
    NormSpec,
)
from ..common import NORM_BWD_PARAMS, NORM_FINALIZE_PARAMS, NORM_FWD_PARAMS
from . import _cubin
from ._rowops import PAIR_ALIGN, cluster_ops, copy_words, dependent_launch, div32
from ._rowops import st_cluster2 as _st_cluster2

__all__ = [
    "SIMULATOR",
    "STORAGE_TYPES",
    "backward",
    "bf16_bits_to_f32",
    "compile_backward",
    "compile_forward",
    "f32_to_bf16_bits",
    "f32_to_fp8_bits",
    "forward",
    "launchers",
    "active_clusters",
    "occupancy_backward",
    "store_cubins",
    "occupancy_forward",
    "runs_pipeline",
]

SIMULATOR = bool(_numba_cuda_config.ENABLE_CUDASIM)
_SIM = SIMULATOR  # closure constant of the kernels: picks shuffles or shared memory
F32 = types.float32
U32 = types.uint32
I32 = types.int32
I64 = types.int64
# Storage type of each dtype inside the kernels (bf16 and fp8 travel as their bits).
STORAGE_TYPES = {
    "fp32": types.float32,
    "fp16": types.float16,
    "bf16": types.uint16,
    "fp8e4m3": types.uint8,
    "fp8e5m2": types.uint8,
}
FP8_DTYPES = ("fp8e4m3", "fp8e5m2")
# bf16 narrowing in hardware (cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32) needs sm_80.
_HW_CVT_CC = (8, 0)
# fp32 -> fp8 in hardware (cvt.rn.satfinite.{e4m3,e5m2}x2.f32) needs sm_89.
_HW_FP8_CC = (8, 9)
# FP8 formats: (exponent bias, mantissa bits, code of the largest finite magnitude, float32
# bits of that magnitude: 448 and 57344). NaN converts to 0x7F (CUDA's canonical FP8 NaN).
_FP8 = {
    "fp8e4m3": (7, 3, 0x7E, 0x43E00000),
    "fp8e5m2": (15, 2, 0x7B, 0x47600000),
}
_FP8_NAN = 0x7F


def _fp8_round_add(dtype: str) -> int:
    """Added to the fp32 bits (with the RNE odd bit) before ``>> (23 - mant)``: half an FP8 ulp
    less one, minus the exponent rebias ``(127 - bias) << 23`` (normal range only)."""
    bias, mant, _, _ = _FP8[dtype]
    return (1 << (22 - mant)) - 1 - ((127 - bias) << 23)


def _fp8_sub_magic(dtype: str) -> float:
    """``2**(24 - bias - mant)``: its fp32 ulp is the smallest FP8 subnormal."""
    bias, mant, _, _ = _FP8[dtype]
    return float(2.0 ** (24 - bias - mant))


_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)


def _device(fn):
    """A device helper NVVM always inlines; compiled once per signature, shared by all kernels."""
    if _SIM:
        return cuda.jit(device=True)(fn)
    return cuda.jit(device=True, forceinline=True)(fn)


# ---------------------------------------------------------------------------------------------
# bf16 <-> fp32 (the reference bit arithmetic; the GPU emits the same operations in IR)
# ---------------------------------------------------------------------------------------------


def bf16_bits_to_f32(u: Any) -> np.float32:
    """bf16 bits -> float32: bf16 is the upper half of a float32."""
    return (np.uint32(u) << np.uint32(16)).view(np.float32)


def f32_to_bf16_bits(f: Any) -> np.uint16:
    """float32 -> bf16 bits, rounding to nearest even; NaN stays a (quiet) NaN."""
    u = np.float32(f).view(np.uint32)
    hi = u >> np.uint32(16)
    if (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000):
        return np.uint16(hi | np.uint32(0x40))
    return np.uint16((u + np.uint32(0x7FFF) + (hi & np.uint32(1))) >> np.uint32(16))


def f32_to_fp8_bits(f: Any, dtype: str) -> Any:
    """float32 -> FP8 bits, saturating, round-to-nearest-even (the kernels' conversion).

    The bit arithmetic the GPU emits without ``cvt.rn.satfinite`` (and the simulator runs):
    magnitudes above the largest finite value (infinities included) give it, NaN gives
    ``0x7F``, values below the normal range round in units of the smallest subnormal.

    Parameters
    ----------
    f : float or array_like
        Values, taken as float32.
    dtype : str
        ``"fp8e4m3"`` (float8_e4m3fn) or ``"fp8e5m2"``.

    Returns
    -------
    numpy.uint8 or numpy.ndarray
        The FP8 bit patterns (uint8), a scalar for a scalar ``f``.
    """
    bias, mant, maxcode, maxbits = _FP8[dtype]
    shift = 23 - mant
    u = np.asarray(f, np.float32).view(np.uint32).astype(np.int64)
    a = u & 0x7FFFFFFF
    sign = (u >> 24) & 0x80
    # normal range: round the float32 bits at the FP8 mantissa (a carry moves the exponent) and
    # rebias the exponent in the same addition
    normal = (a + ((a >> shift) & 1) + _fp8_round_add(dtype)) >> shift
    # subnormal range: |f| + C rounds |f| to a multiple of C's ulp, the smallest FP8 subnormal
    # (IEEE round-to-nearest-even of the fp32 add); the difference of the bits counts them
    c = np.float32(_fp8_sub_magic(dtype))
    with np.errstate(all="ignore"):
        fsum = a.astype(np.uint32).view(np.float32) + c
    sub = fsum.view(np.uint32).astype(np.int64) - int(c.view(np.uint32))
    code = np.where(a >= (128 - bias) << 23, normal, sub)
    code = np.where(a > maxbits, maxcode, code) | sign
    code = np.where(a > 0x7F800000, _FP8_NAN, code).astype(np.uint8)
    return code[()] if code.ndim == 0 else code


# ---------------------------------------------------------------------------------------------
# Memory primitives: ld*(ptr, idx, dst, off, n[, avail]) and st*(ptr, idx, src, off, n[, avail])
# move n elements between storage at ptr[idx:] and the fp32 array dst/src[off:]; the _g forms
# touch only elements j < avail (loads give 0 for the others). GPU: LLVM intrinsics on raw
# pointers. Simulator: NumPy on flat arrays.
# ---------------------------------------------------------------------------------------------

if _SIM:

    def _widen(v, dt):
        return bf16_bits_to_f32(v) if dt == np.uint16 else np.float32(v)

    def _narrow(f, dt):
        return f32_to_bf16_bits(f) if dt == np.uint16 else dt.type(f)

    def _ld(src, idx, dst, off, n):
        dt = src.dtype
        for j in range(n):
            dst[off + j] = _widen(src[idx + j], dt)

    def _ld_g(src, idx, dst, off, n, avail):
        dt = src.dtype
        for j in range(n):
            dst[off + j] = _widen(src[idx + j], dt) if j < avail else _ZERO

    def _ld2_g(src, src2, idx, dst, dst2, off, n, avail):
        _ld_g(src, idx, dst, off, n, avail)
        _ld_g(src2, idx, dst2, off, n, avail)

    def _ld_t(src, idx, dst, off, n, avail):
        _ld(src, idx, dst, off, n)

    # The lean backward's packed row: the simulator keeps one float per element as a "word"
    # (the kernel sizes its word arrays with _words_per(..., sim=True)).
    _ldw_t = _ldw_again_t = _ld_t
    _ldw_g = _ldw_again_g = _ld_g

    def _unpk(src, words, woff, dst, off, n):
        for j in range(n):
            dst[off + j] = words[woff + j]

    def _opq_i(v):
        return v

    def _opq_w(words, n):
        pass

    def _st_any(dst, idx, src, off, n):
        dt = dst.dtype
        for j in range(n):
            dst[idx + j] = _narrow(src[off + j], dt)

    def _st_g_any(dst, idx, src, off, n, avail):
        dt = dst.dtype
        for j in range(min(n, avail)):
            dst[idx + j] = _narrow(src[off + j], dt)

    def _st_t_any(dst, idx, src, off, n, avail):
        _st_any(dst, idx, src, off, n)

    def _round_any(dst, src, off, n):
        """src[off:off+n] = the values dst's dtype stores (fp16/bf16 rounding; fp32 as is)."""
        dt = dst.dtype
        for j in range(n):
            src[off + j] = _widen(_narrow(src[off + j], dt), dt)

    def _sim_fp8_stores(fmt):
        def _st_fp8(dst, idx, src, off, n):
            for j in range(n):
                dst[idx + j] = f32_to_fp8_bits(src[off + j], fmt)

        def _st_g_fp8(dst, idx, src, off, n, avail):
            for j in range(min(n, avail)):
                dst[idx + j] = f32_to_fp8_bits(src[off + j], fmt)

        def _st_t_fp8(dst, idx, src, off, n, avail):
            _st_fp8(dst, idx, src, off, n)

        return _st_fp8, _st_g_fp8, _st_t_fp8, None

    def _stores(hw: bool, fp8: str | None = None, hw_fp8: bool = False):
        """(store, guarded store, whole store, round-to-y's-dtype) primitives of one output
        dtype."""
        if fp8 is not None:
            return _sim_fp8_stores(fp8)
        return _st_any, _st_g_any, _st_t_any, _round_any

    def _fmaxf(a, b):
        """CUDA's fmaxf: a NaN operand gives the other one."""
        a, b = np.float32(a), np.float32(b)
        if a != a:
            return b
        if b != b:
            return a
        return a if a >= b else b

    def _sel0(r, a, b):
        return a if r == 0 else b

    def _nonnull(ptr):
        return ptr is not None

    def _atomic_max_f32(arr, val):
        cuda.atomic.max(arr, 0, val)

    _atomic_add_i32 = None  # multi-CTA rows never run in the simulator

else:
    from llvmlite import ir
    from numba.cuda import cgutils
    from numba.cuda.extending import intrinsic

    _LL_I8 = ir.IntType(8)
    _LL_I16 = ir.IntType(16)
    _LL_I32 = ir.IntType(32)
    _LL_I64 = ir.IntType(64)
    _LL_F32 = ir.FloatType()

    def _c32(v):
        return ir.Constant(_LL_I32, v)

    def _c64(v):
        return ir.Constant(_LL_I64, v)

    def _kind(ptr_type) -> str:
        dt = ptr_type.dtype
        if dt == types.float32:
            return "fp32"
        if dt == types.float16:
            return "fp16"
        if dt == types.uint16:
            return "bf16"
        if dt == types.uint8:
            return "fp8"
        raise TypeError(
            f"norm kernels store fp32, fp16 (float16), bf16 (uint16) or fp8 (uint8), got {dt}"
        )

    def _chunks(n, esize):
        """(first element, bytes) of each access: at most 16 bytes, aligned to its size."""
        total, done = n * esize, 0
        while done < total:
            size = min(16, total - done)
            yield done // esize, size
            done += size

    def _words(size):
        """Word type, access type and word count of an access of ``size`` bytes."""
        bits = 32 if size >= 4 else size * 8
        words = size // 4 if size >= 4 else 1
        wty = ir.IntType(bits)
        return wty, (ir.VectorType(wty, words) if words > 1 else wty), words

    def _to_f32(builder, kind, bits):
        """Storage bits (i32 for fp32, i16 otherwise) -> float."""
        if kind == "fp32":
            return builder.bitcast(bits, _LL_F32)
        if kind == "fp16":
            return builder.fpext(builder.bitcast(bits, ir.HalfType()), _LL_F32)
        return builder.bitcast(builder.shl(builder.zext(bits, _LL_I32), _c32(16)), _LL_F32)

    def _bf16_rne(builder, f):
        """float -> bf16 bits (i16) by round-to-nearest-even bit arithmetic, NaN kept quiet."""
        u = builder.bitcast(f, _LL_I32)
        hi = builder.lshr(u, _c32(16))
        rounded = builder.lshr(
            builder.add(builder.add(u, _c32(0x7FFF)), builder.and_(hi, _c32(1))), _c32(16)
        )
        is_nan = builder.icmp_unsigned(">", builder.and_(u, _c32(0x7FFFFFFF)), _c32(0x7F800000))
        return builder.trunc(builder.select(is_nan, builder.or_(hi, _c32(0x40)), rounded), _LL_I16)

    _ASM_BF16 = ir.InlineAsm(ir.FunctionType(_LL_I16, [_LL_F32]), "cvt.rn.bf16.f32 $0, $1;", "=h,f")
    _ASM_BF16X2 = ir.InlineAsm(
        ir.FunctionType(_LL_I32, [_LL_F32, _LL_F32]), "cvt.rn.bf16x2.f32 $0, $1, $2;", "=r,f,f"
    )
    _ASM_F16X2 = ir.InlineAsm(
        ir.FunctionType(_LL_I32, [_LL_F32, _LL_F32]), "cvt.rn.f16x2.f32 $0, $1, $2;", "=r,f,f"
    )

    _ASM_FP8X2 = {
        fmt: ir.InlineAsm(
            ir.FunctionType(_LL_I16, [_LL_F32, _LL_F32]),
            f"cvt.rn.satfinite.{fmt[3:]}x2.f32 $0, $1, $2;",
            "=h,f,f",
        )
        for fmt in _FP8
    }

    def _fp8_rne(builder, f, fmt):
        """float -> FP8 bits (i8): :func:`f32_to_fp8_bits` as IR (saturating, RNE, NaN 0x7F)."""
        bias, mant, maxcode, maxbits = _FP8[fmt]
        shift = 23 - mant
        u = builder.bitcast(f, _LL_I32)
        a = builder.and_(u, _c32(0x7FFFFFFF))
        sign = builder.and_(builder.lshr(u, _c32(24)), _c32(0x80))
        odd = builder.and_(builder.lshr(a, _c32(shift)), _c32(1))
        add = builder.add(builder.add(a, odd), _c32(_fp8_round_add(fmt) & 0xFFFFFFFF))
        normal = builder.lshr(add, _c32(shift))
        magic = ir.Constant(_LL_F32, _fp8_sub_magic(fmt))
        fsum = builder.fadd(builder.bitcast(a, _LL_F32), magic)
        bits_magic = int(np.float32(_fp8_sub_magic(fmt)).view(np.uint32))
        sub = builder.sub(builder.bitcast(fsum, _LL_I32), _c32(bits_magic))
        is_normal = builder.icmp_unsigned(">=", a, _c32((128 - bias) << 23))
        code = builder.select(is_normal, normal, sub)
        code = builder.select(builder.icmp_unsigned(">", a, _c32(maxbits)), _c32(maxcode), code)
        code = builder.or_(code, sign)
        is_nan = builder.icmp_unsigned(">", a, _c32(0x7F800000))
        code = builder.select(is_nan, _c32(_FP8_NAN), code)
        return builder.trunc(code, _LL_I8)

    def _emit_store_fp8(builder, fmt, dst, src, n, hw):
        """dst[0:n] (u8*) = fp8(src[0:n]) packed into whole words (4 bytes a 32-bit word)."""
        for first, size in _chunks(n, 1):
            wty, vty, words = _words(size)
            per = wty.width // 8
            val = ir.Constant(vty, None)
            for w in range(words):
                fs = [
                    builder.load(builder.gep(src, [_c64(first + w * per + h)])) for h in range(per)
                ]
                if hw:  # one cvt for two elements: the first operand goes to the upper byte
                    if per == 1:
                        pair = builder.call(_ASM_FP8X2[fmt], [ir.Constant(_LL_F32, 0.0), fs[0]])
                        word = builder.trunc(pair, _LL_I8)
                    else:
                        pairs = [
                            builder.call(_ASM_FP8X2[fmt], [fs[h + 1], fs[h]])
                            for h in range(0, per, 2)
                        ]
                        word = pairs[0]
                        if per == 4:
                            lo = builder.zext(pairs[0], _LL_I32)
                            hi = builder.shl(builder.zext(pairs[1], _LL_I32), _c32(16))
                            word = builder.or_(lo, hi)
                else:
                    word = None
                    for h in range(per):
                        b = builder.zext(_fp8_rne(builder, fs[h], fmt), wty)
                        b = builder.shl(b, ir.Constant(wty, 8 * h)) if h else b
                        word = b if word is None else builder.or_(word, b)
                val = builder.insert_element(val, word, _c32(w)) if words > 1 else word
            ptr = builder.bitcast(builder.gep(dst, [_c64(first)]), vty.as_pointer())
            builder.store(val, ptr, align=size)

    def _from_f32(builder, kind, f, hw):
        """float -> storage bits (i32 for fp32, i16 otherwise)."""
        if kind == "fp32":
            return builder.bitcast(f, _LL_I32)
        if kind == "fp16":
            return builder.bitcast(builder.fptrunc(f, ir.HalfType()), _LL_I16)
        return builder.call(_ASM_BF16, [f]) if hw else _bf16_rne(builder, f)

    def _emit_load(builder, kind, src, dst, n):
        """dst[0:n] (float*) = src[0:n] (storage*): whole 32-bit words, split afterwards.

        Loading <8 x i16> directly would be legalised into two 8-byte loads; <4 x i32> stays
        one 16-byte load. ``!invariant.load``: the kernel never writes what it reads this way,
        which lets NVVM use the read-only path (``ld.global.nc``).
        """
        esize = 4 if kind == "fp32" else 2
        for first, size in _chunks(n, esize):
            wty, vty, words = _words(size)
            ptr = builder.bitcast(builder.gep(src, [_c64(first)]), vty.as_pointer())
            val = builder.load(ptr, align=size)
            val.set_metadata("invariant.load", builder.module.add_metadata([]))
            per = wty.width // (8 * esize)
            for w in range(words):
                word = builder.extract_element(val, _c32(w)) if words > 1 else val
                for h in range(per):
                    part = builder.lshr(word, ir.Constant(wty, 16 * h)) if h else word
                    if esize == 2 and wty.width > 16:
                        part = builder.trunc(part, _LL_I16)
                    f = _to_f32(builder, kind, part)
                    builder.store(f, builder.gep(dst, [_c64(first + w * per + h)]))

    def _emit_store(builder, kind, dst, src, n, hw, fp8=None, hw_fp8=False):
        """dst[0:n] (storage*) = src[0:n] (float*), narrowed and packed into whole words.

        ``kind == "fp8"`` stores in the format ``fp8`` (``cvt.rn.satfinite`` when ``hw_fp8``).
        """
        if kind == "fp8":
            if fp8 is None:
                raise TypeError("an fp8 (uint8) store needs its format")
            _emit_store_fp8(builder, fp8, dst, src, n, hw_fp8)
            return
        esize = 4 if kind == "fp32" else 2
        for first, size in _chunks(n, esize):
            wty, vty, words = _words(size)
            per = wty.width // (8 * esize)
            val = ir.Constant(vty, None)
            for w in range(words):
                fs = [
                    builder.load(builder.gep(src, [_c64(first + w * per + h)])) for h in range(per)
                ]
                if per == 2 and hw and kind != "fp32":  # one cvt for two elements
                    asm = _ASM_BF16X2 if kind == "bf16" else _ASM_F16X2
                    word = builder.call(asm, [fs[1], fs[0]])
                else:
                    parts = [_from_f32(builder, kind, f, hw) for f in fs]
                    word = parts[0]
                    if per == 2:
                        lo = builder.zext(parts[0], _LL_I32)
                        hi = builder.shl(builder.zext(parts[1], _LL_I32), _c32(16))
                        word = builder.or_(lo, hi)
                val = builder.insert_element(val, word, _c32(w)) if words > 1 else word
            ptr = builder.bitcast(builder.gep(dst, [_c64(first)]), vty.as_pointer())
            builder.store(val, ptr, align=size)

    def _check(ptr, arr, n):
        if not isinstance(n, types.IntegerLiteral):
            return False  # retried with the literal
        if not isinstance(ptr, types.CPointer) or not isinstance(arr, types.Array):
            raise TypeError(f"vector access needs (pointer, local array), got {ptr}, {arr}")
        if arr.dtype != types.float32:
            raise TypeError(f"vector access goes to / from float32 arrays, got {arr.dtype}")
        return True

    def _operands(context, builder, sig, args, at=(0, 1, 2, 3)):
        """(storage pointer at idx, float pointer at off) of an access intrinsic whose
        (pointer, idx, array, off) arguments are at positions ``at``."""
        p, i, r, o = at
        g = builder.gep(args[p], [context.cast(builder, args[i], sig.args[i], types.int64)])
        data = context.make_array(sig.args[r])(context, builder, args[r]).data
        a = builder.gep(data, [context.cast(builder, args[o], sig.args[o], types.int64)])
        return g, a

    def _guarded(builder, count, avail, full, one, none=None, first=None):
        """``full()`` when all ``count`` elements are available, else ``first()`` (if given)
        and ``one(j)`` per j < avail (``none(j)`` for the others, if given).

        ``avail`` (columns left in the row, which fits int32) is compared in 32 bits: a 64-bit
        compare is two ISETP, and general kernels check every vector of x, the weights and y.
        H100 A/B, session 52 (with the M2 mask of _forward_kernel): general bf16 / fp16
        layernorm_fwd 1.07x at 4104, 1.20x at 8200, 1.16-1.18x at 12296; backwards 1.01-1.07x.
        """
        avail = builder.trunc(avail, _LL_I32)
        with builder.if_else(builder.icmp_signed(">=", avail, _c32(count)), likely=True) as (
            then,
            otherwise,
        ):
            with then:
                full()
            with otherwise:
                if first is not None:
                    first()
                for j in range(count):
                    inside = builder.icmp_signed(">", avail, _c32(j))
                    if none is None:
                        with builder.if_then(inside):
                            one(j)
                    else:
                        with builder.if_else(inside) as (t2, o2):
                            with t2:
                                one(j)
                            with o2:
                                none(j)

    def _checked_moves(builder, emit, kind, pairs, count, avail, zero_fill: bool):
        """``emit`` of ``count`` elements between each (storage, float) pointer pair of
        ``pairs``, all under one bounds check: elements ``j >= avail`` are not moved (with
        ``zero_fill`` their floats become 0)."""

        def full():
            for g, a in pairs:
                emit(builder, kind, g, a, count)

        def one(j):
            for g, a in pairs:
                at = [_c64(j)]
                emit(builder, kind, builder.gep(g, at), builder.gep(a, at), 1)

        def none(j):
            for _, a in pairs:
                builder.store(ir.Constant(_LL_F32, 0.0), builder.gep(a, [_c64(j)]))

        _guarded(builder, count, avail, full, one, none if zero_fill else None)

    def _access_pair(emit, zero_fill: bool):
        """(plain, bounds-checked, whole) vector-access intrinsics ``f(ptr, idx, arr, off, n[,
        avail])`` between ``ptr[idx:idx+n]`` (global storage) and ``arr[off:off+n]`` (local
        float32); ``emit(builder, kind, g, a, count)`` moves the elements (a load or a store).
        The checked form moves only elements ``j < avail``; with ``zero_fill`` the others read
        as 0. The whole form is the plain one taking (and ignoring) ``avail``: see
        :func:`_accessors`."""

        def unchecked(n):
            def codegen(context, builder, sig, args):
                g, a = _operands(context, builder, sig, args)
                emit(builder, _kind(sig.args[0]), g, a, n.literal_value)
                return context.get_dummy_value()

            return codegen

        @intrinsic
        def plain(typingctx, ptr, idx, arr, off, n):
            if not _check(ptr, arr, n):
                return None
            return types.void(ptr, idx, arr, off, n), unchecked(n)

        @intrinsic
        def checked(typingctx, ptr, idx, arr, off, n, avail):
            if not _check(ptr, arr, n):
                return None
            count = n.literal_value

            def codegen(context, builder, sig, args):
                pair = _operands(context, builder, sig, args)
                av = context.cast(builder, args[5], sig.args[5], types.int64)
                _checked_moves(builder, emit, _kind(sig.args[0]), [pair], count, av, zero_fill)
                return context.get_dummy_value()

            return types.void(ptr, idx, arr, off, n, avail), codegen

        @intrinsic
        def whole(typingctx, ptr, idx, arr, off, n, avail):
            if not _check(ptr, arr, n):
                return None
            return types.void(ptr, idx, arr, off, n, avail), unchecked(n)

        return plain, checked, whole

    # dst[off:off+n] = fp32(src[idx:idx+n]), one aligned vector load per 16 bytes; the checked
    # form reads elements j >= avail as 0
    _ld_g, _ld_t = _access_pair(_emit_load, zero_fill=True)[1:]  # (no kernel takes the plain one)

    @intrinsic
    def _ld2_g(typingctx, src, src2, idx, dst, dst2, off, n, avail):
        """``_ld_g`` of two arrays of one dtype at the same index under one bounds check (gamma
        and beta): one branch instead of two keeps the lean forward's y loop small enough for
        NVVM to unroll (fp16 layernorm_fwd 46336: with two checks the loop stayed rolled and
        the row's words went to local memory)."""
        if not (_check(src, dst, n) and _check(src2, dst2, n)) or src != src2:
            return None
        count = n.literal_value

        def codegen(context, builder, sig, args):
            pairs = [
                _operands(context, builder, sig, args, at=(0, 2, 3, 5)),  # src -> dst
                _operands(context, builder, sig, args, at=(1, 2, 4, 5)),  # src2 -> dst2
            ]
            av = context.cast(builder, args[7], sig.args[7], types.int64)
            kind = _kind(sig.args[0])
            _checked_moves(builder, _emit_load, kind, pairs, count, av, zero_fill=True)
            return context.get_dummy_value()

        return types.void(src, src2, idx, dst, dst2, off, n, avail), codegen

    # The lean backward keeps a row as loaded (whole 32-bit words of storage) and widens it
    # where used; its second pass reads the row again at an index made opaque by _opq_i, so the
    # compiler cannot keep the first pass's values instead.
    def _word_arrays(ptr, arr, n, dtype):
        if not isinstance(n, types.IntegerLiteral):
            return False
        if not isinstance(ptr, types.CPointer) or not isinstance(arr, types.Array):
            raise TypeError(f"packed access needs (pointer, local array), got {ptr}, {arr}")
        if arr.dtype != dtype:
            raise TypeError(f"packed words are {dtype}, got {arr.dtype}")
        return True

    def _arr_at(context, builder, aty, arr, off, offty):
        data = context.make_array(aty)(context, builder, arr).data
        return builder.gep(data, [context.cast(builder, off, offty, types.int64)])

    def _load_words(invariant: bool):
        @intrinsic
        def ldw(typingctx, src, idx, words, woff, n, avail):
            """words[woff:] (uint32) = the storage words of src[idx:idx+n], 16 bytes a load
            (``avail`` unused: the whole vector)."""
            if not _word_arrays(src, words, n, types.uint32):
                return None
            sig = types.void(src, idx, words, woff, n, avail)
            return sig, _ldw_codegen(n.literal_value, invariant)

        return ldw

    def _ldw_codegen(count, invariant):
        def codegen(context, builder, sig, args):
            kind = _kind(sig.args[0])
            esize = 4 if kind == "fp32" else 2
            g = builder.gep(args[0], [context.cast(builder, args[1], sig.args[1], types.int64)])
            w = _arr_at(context, builder, sig.args[2], args[2], args[3], sig.args[3])
            for first, size in _chunks(count, esize):
                wty, vty, nw = _words(size)
                if size < 4:
                    raise TypeError("packed rows need whole 32-bit words")
                ptr = builder.bitcast(builder.gep(g, [_c64(first)]), vty.as_pointer())
                val = builder.load(ptr, align=size)
                if invariant:
                    val.set_metadata("invariant.load", builder.module.add_metadata([]))
                base = first * esize // 4
                for k in range(nw):
                    word = builder.extract_element(val, _c32(k)) if nw > 1 else val
                    builder.store(word, builder.gep(w, [_c64(base + k)]))
            return context.get_dummy_value()

        return codegen

    _ldw_t = _load_words(True)
    _ldw_again_t = _load_words(False)  # a second read of the same words (not merged with the first)

    def _load_words_g(invariant: bool):
        @intrinsic
        def ldw_g(typingctx, src, idx, words, woff, n, avail):
            """_ldw_t of the elements j < avail of src[idx:idx+n], the others 0 bits (0.0 once
            unpacked): whole vectors where all are available, else one element at a time."""
            if not _word_arrays(src, words, n, types.uint32):
                return None
            count = n.literal_value
            whole = _ldw_codegen(count, invariant)

            def codegen(context, builder, sig, args):
                esize = 4 if _kind(sig.args[0]) == "fp32" else 2
                ety = ir.IntType(8 * esize)
                g = w = None  # (addresses made in the partial-vector branch, where they are used)

                def zero():  # the words of a partial vector, before its elements are or-ed in
                    nonlocal g, w
                    g = builder.gep(args[0], [context.cast(builder, args[1], sig.args[1], I64)])
                    w = _arr_at(context, builder, sig.args[2], args[2], args[3], sig.args[3])
                    for k in range(count * esize // 4):
                        builder.store(_c32(0), builder.gep(w, [_c64(k)]))

                def one(j):
                    ptr = builder.bitcast(builder.gep(g, [_c64(j)]), ety.as_pointer())
                    val = builder.load(ptr, align=esize)
                    if invariant:
                        val.set_metadata("invariant.load", builder.module.add_metadata([]))
                    bits = builder.zext(val, _LL_I32) if esize == 2 else val
                    if esize == 2 and j % 2:
                        bits = builder.shl(bits, _c32(16))
                    wp = builder.gep(w, [_c64(j * esize // 4)])
                    builder.store(builder.or_(builder.load(wp), bits), wp)

                av = context.cast(builder, args[5], sig.args[5], types.int64)
                _guarded(
                    builder, count, av, lambda: whole(context, builder, sig, args), one,
                    first=zero,
                )  # fmt: skip
                return context.get_dummy_value()

            return types.void(src, idx, words, woff, n, avail), codegen

        return ldw_g

    _ldw_g = _load_words_g(True)
    _ldw_again_g = _load_words_g(False)  # (the lean backward's second read of a general row)

    @intrinsic
    def _unpk(typingctx, src, words, woff, dst, off, n):
        """dst[off:off+n] (fp32) = the elements of src's storage type packed in words[woff:]."""
        if not _word_arrays(src, words, n, types.uint32):
            return None
        count = n.literal_value

        def codegen(context, builder, sig, args):
            kind = _kind(sig.args[0])
            w = _arr_at(context, builder, sig.args[1], args[1], args[2], sig.args[2])
            d = _arr_at(context, builder, sig.args[3], args[3], args[4], sig.args[4])
            for j in range(count):
                if kind == "fp32":
                    bits = builder.load(builder.gep(w, [_c64(j)]))
                else:
                    word = builder.load(builder.gep(w, [_c64(j // 2)]))
                    part = builder.lshr(word, _c32(16)) if j % 2 else word
                    bits = builder.trunc(part, _LL_I16)
                builder.store(_to_f32(builder, kind, bits), builder.gep(d, [_c64(j)]))
            return context.get_dummy_value()

        return types.void(src, words, woff, dst, off, n), codegen

    _ASM_OPAQUE_64 = ir.InlineAsm(ir.FunctionType(_LL_I64, [_LL_I64]), "", "=l,0", side_effect=True)

    @intrinsic
    def _opq_i(typingctx, v):
        """v (an int64) through an empty asm statement."""

        def codegen(context, builder, sig, args):
            x = context.cast(builder, args[0], sig.args[0], types.int64)
            return builder.call(_ASM_OPAQUE_64, [x])

        return types.int64(v), codegen

    _ASM_OPAQUE_32 = ir.InlineAsm(ir.FunctionType(_LL_I32, [_LL_I32]), "", "=r,0", side_effect=True)

    @intrinsic
    def _opq_w(typingctx, words, n):
        """words[:n] (uint32) each through an empty asm statement: the compiler has to keep the
        words themselves, not values it widened from them earlier."""
        if not isinstance(n, types.IntegerLiteral):
            return None
        count = n.literal_value

        def codegen(context, builder, sig, args):
            w = _arr_at(context, builder, sig.args[0], args[0], _c64(0), types.int64)
            for k in range(count):
                ptr = builder.gep(w, [_c64(k)])
                builder.store(builder.call(_ASM_OPAQUE_32, [builder.load(ptr)]), ptr)
            return context.get_dummy_value()

        return types.void(words, n), codegen

    def _store_intrinsics(hw: bool, fp8: str | None, hw_fp8: bool):
        def emit(builder, kind, g, a, count):
            _emit_store(builder, kind, g, a, count, hw, fp8, hw_fp8)

        # dst[idx:idx+n] = storage(src[off:off+n]), one aligned vector store per 16 bytes; the
        # checked form writes only elements j < avail
        _st, _st_g, _st_t = _access_pair(emit, zero_fill=False)

        @intrinsic
        def _rnd(typingctx, dst, src, off, n):
            """src[off:off+n] = the values dst's dtype stores (fp16 / bf16 round trip)."""
            if not _check(dst, src, n):
                return None
            count = n.literal_value

            def codegen(context, builder, sig, args):
                kind = _kind(sig.args[0])
                if kind == "fp32":
                    return context.get_dummy_value()
                if kind == "fp8":  # never called: amax of an fp8 output is taken before scaling
                    return context.get_dummy_value()
                data = context.make_array(sig.args[1])(context, builder, args[1]).data
                a = builder.gep(data, [context.cast(builder, args[2], sig.args[2], types.int64)])
                for j in range(count):
                    p = builder.gep(a, [_c64(j)])
                    bits = _from_f32(builder, kind, builder.load(p), hw)
                    builder.store(_to_f32(builder, kind, bits), p)
                return context.get_dummy_value()

            return types.void(dst, src, off, n), codegen

        return _st, _st_g, _st_t, _rnd

    _STORE_CACHE: dict[tuple, tuple] = {}

    def _stores(hw: bool, fp8: str | None = None, hw_fp8: bool = False):
        """(store, guarded store, whole store, round-to-y's-dtype) intrinsics of one output
        dtype (the stores of :func:`_access_pair`)."""
        key = (hw, fp8, hw_fp8 and fp8 is not None)
        hit = _STORE_CACHE.get(key)
        if hit is None:
            hit = _STORE_CACHE[key] = _store_intrinsics(*key)
        return hit

    @intrinsic
    def _fmaxf(typingctx, a, b):
        """CUDA's fmaxf (``max.f32``: a NaN operand gives the other one)."""

        def codegen(context, builder, sig, args):
            va = context.cast(builder, args[0], sig.args[0], types.float32)
            vb = context.cast(builder, args[1], sig.args[1], types.float32)
            fnty = ir.FunctionType(_LL_F32, [_LL_F32, _LL_F32])
            fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.maxnum.f32")
            return builder.call(fn, [va, vb])

        return types.float32(a, b), codegen

    @intrinsic
    def _sel0(typingctx, r, a, b):
        """``a if r == 0 else b`` (float32) as one select: a branch here kept NVVM from
        unrolling Chan's merge over the warps."""

        def codegen(context, builder, sig, args):
            vr, va, vb = (
                context.cast(builder, v, t, types.float32) for v, t in zip(args, sig.args)
            )
            zero = builder.fcmp_ordered("==", vr, ir.Constant(_LL_F32, 0.0))
            return builder.select(zero, va, vb)

        return types.float32(r, a, b), codegen

    @intrinsic
    def _nonnull(typingctx, ptr):
        """``ptr != nullptr`` of a raw pointer (FP8 kernels: amax / scale_inv are optional)."""
        if not isinstance(ptr, types.CPointer):
            return None

        def codegen(context, builder, sig, args):
            return builder.icmp_unsigned("!=", builder.ptrtoint(args[0], _LL_I64), _c64(0))

        return types.boolean(ptr), codegen

    @intrinsic
    def _atomic_max_f32(typingctx, ptr, val):
        """``atomicMax((int*)ptr, __float_as_int(val))``, the float max for ``val >= 0``.

        Non-negative floats order like their int32 bit patterns; a negative float in ``*ptr``
        (-0.0 included) is a negative int, so any ``val >= 0`` replaces it.
        """

        def codegen(context, builder, sig, args):
            v = context.cast(builder, args[1], sig.args[1], types.float32)
            p = builder.bitcast(args[0], _LL_I32.as_pointer())
            builder.atomic_rmw("max", p, builder.bitcast(v, _LL_I32), "monotonic")
            return context.get_dummy_value()

        return types.void(ptr, val), codegen

    @intrinsic
    def _atomic_add_i32(typingctx, ptr, idx, val):
        """atomicAdd on ``ptr[idx]`` (int32*); ``cuda.atomic`` only takes arrays."""

        def codegen(context, builder, sig, args):
            p = builder.gep(args[0], [context.cast(builder, args[1], sig.args[1], types.int64)])
            v = context.cast(builder, args[2], sig.args[2], types.int32)
            return builder.atomic_rmw("add", p, v, "monotonic")

        return types.int32(ptr, idx, val), codegen


# ---------------------------------------------------------------------------------------------
# Scalar helpers (module level: compiled once per signature, shared by all kernels)
# ---------------------------------------------------------------------------------------------

if _SIM:

    @_device
    def _warp_sum(v, red, tid, lane):
        # No shuffles in the simulator: exchange through shared memory (all threads call this).
        red[tid] = v
        cuda.syncthreads()
        base = tid - lane
        s = _ZERO
        for i in range(32):
            s += red[base + i]
        cuda.syncthreads()
        return s

    @_device
    def _warp_max(v, red, tid, lane):
        # fmaxf over the warp through shared memory (all threads call this)
        red[tid] = v
        cuda.syncthreads()
        base = tid - lane
        m = _ZERO
        for i in range(32):
            m = _fmaxf(m, red[base + i])
        cuda.syncthreads()
        return m

else:

    @_device
    def _warp_max(v, red, tid, lane):
        # xor butterfly of fmaxf (v >= 0 here); max is exact, so all lanes agree
        v = _fmaxf(v, cuda.shfl_xor_sync(0xFFFFFFFF, v, 16))
        v = _fmaxf(v, cuda.shfl_xor_sync(0xFFFFFFFF, v, 8))
        v = _fmaxf(v, cuda.shfl_xor_sync(0xFFFFFFFF, v, 4))
        v = _fmaxf(v, cuda.shfl_xor_sync(0xFFFFFFFF, v, 2))
        v = _fmaxf(v, cuda.shfl_xor_sync(0xFFFFFFFF, v, 1))
        return v

    @_device
    def _warp_sum(v, red, tid, lane):
        # xor butterfly: each lane adds the same pairs (a + b == b + a), so all lanes end with
        # bitwise the same sum.
        v += cuda.shfl_xor_sync(0xFFFFFFFF, v, 16)
        v += cuda.shfl_xor_sync(0xFFFFFFFF, v, 8)
        v += cuda.shfl_xor_sync(0xFFFFFFFF, v, 4)
        v += cuda.shfl_xor_sync(0xFFFFFFFF, v, 2)
        v += cuda.shfl_xor_sync(0xFFFFFFFF, v, 1)
        return v


@_device
def _chan(na, ma, m2a, nb, mb, m2b):
    """Combine (count, mean, M2) of two disjoint sets (Chan et al.); an empty b is skipped."""
    if nb == _ZERO:
        return na, ma, m2a
    n = na + nb
    delta = mb - ma
    r = nb / n
    return n, ma + delta * r, m2a + m2b + delta * delta * na * r


@_device
def _chan_ratio(na, ma, m2a, r, mb, m2b):
    """(mean, M2) of :func:`_chan` with its ratio ``r = nb / (na + nb)`` given (0: b is empty):
    the same bits, for counts that are the same on every row (worked out once, out of the row
    loop)."""
    delta = mb - ma
    return _sel0(r, ma, ma + delta * r), _sel0(r, m2a, m2a + m2b + delta * delta * na * r)


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
    """Columns (< cols) CTA ``cta`` covers: chunks ``it * cpr + cta`` of ``chunk`` columns."""
    full = cols // chunk
    n = 0
    if full > cta:
        n = min((full - cta + cpr - 1) // cpr, ldgs) * chunk
    rem = cols - full * chunk
    if rem > 0 and full % cpr == cta and full // cpr < ldgs:
        n += rem
    return F32(n)


@_device
def _counter_barrier(barrier, group, target):
    """Inter-CTA barrier of one row group: arrive, then wait for ``target`` arrivals."""
    cuda.syncthreads()  # this CTA's stats writes are done
    if cuda.threadIdx.x == 0:
        cuda.threadfence()  # ... and visible device-wide before the arrival
        _atomic_add_i32(barrier, group, 1)
        # an atomic read is never hoisted out of the loop nor served from a stale L1 line
        while _atomic_add_i32(barrier, group, 0) < target:
            pass
        cuda.threadfence()
    cuda.syncthreads()


# Shared slots of the cluster exchange: [trip parity][warp_m][cluster rank][2] fp32.
_CL_SLOTS = 2 * MAX_CLUSTER


@functools.cache
def _exchange_for(clusters: bool):
    """``put`` of the row group's exchange (NVRTC's ``row_reduce``): in a cluster of several
    CTAs (compiled in only where ``clusters``: without it ``cluster_ctas()`` is the constant 1
    and the branch folds away) lane k of warp_n 0 writes this CTA's pair into CTA k's shared
    slots ``cl[cb:]`` and the CTAs meet at the cluster barrier; otherwise lane 0 writes it to
    ``stats[sb:]`` and the CTAs meet at the counter. Returns whether the cluster path ran
    (:func:`_part` then reads the pairs from the same place). Every thread calls it."""
    cluster_ctas, cluster_sync = cluster_ops(clusters)

    @_device
    def put(stats, cl, sb, cb, lead, lane, cta_n, cpr, counter, group, target, a, b):
        if cluster_ctas() > 1:
            if lead and lane < cpr:
                _st_cluster2(cl, cb + cta_n * 2, lane, a, b)
            cluster_sync()
            return True
        if lead and lane == 0:
            stats[sb + cta_n * 2] = a
            stats[sb + cta_n * 2 + 1] = b
        _counter_barrier(counter, group, target)
        return False

    return put


@_device
def _sum_parts(parts, base, cpr):
    """Sums of the CTAs' pairs at ``parts[base:]`` in CTA order, after the exchange: called
    with the shared slots or with ``stats`` (one specialisation each, not a branch a part:
    that cost NVVM registers, run 78)."""
    a = _ZERO
    b = _ZERO
    for cc in range(cpr):
        a += parts[base + cc * 2]
        b += parts[base + cc * 2 + 1]
    return a, b


# Cooperative launch. numba-cuda launches a kernel cooperatively exactly when its code uses a
# grid group (``cuda.cg.this_grid()``): the flag is set while the call is lowered, so a grid
# sync in a branch that never runs is enough. ``rows >= 1`` always (the planner rejects empty
# problems), so no CTA executes it, and the kernel pays nothing at run time; the workspace
# barrier above only needs the co-residency that a cooperative launch guarantees (the driver
# refuses a cooperative grid that cannot be resident at once). A grid sync that did run would
# be a hazard: every CTA would have to reach it equally often. Only multi-CTA kernels call this;
# kernels for ``ctas_per_row == 1`` are compiled without it and launched normally.
if _SIM:

    def _require_cooperative_launch(rows):
        pass

else:

    @_device
    def _require_cooperative_launch(rows):
        if rows < 0:
            cuda.cg.this_grid().sync()


# ---------------------------------------------------------------------------------------------
# Kernel factories
# ---------------------------------------------------------------------------------------------


def _hw_flags(cc: tuple[int, int] | None) -> tuple[bool, bool]:
    """(bf16/fp16 narrowing, fp8 narrowing) in hardware for compute capability ``cc``."""
    if cc is None:  # simulator
        return False, False
    return cc >= _HW_CVT_CC, cc >= _HW_FP8_CC


def _clusters(cc: tuple[int, int] | None) -> bool:
    """Whether kernels for ``cc`` can run in thread-block clusters (the row barrier then has
    the cluster branch; the plan launches multi-CTA row groups as clusters there)."""
    return cc is not None and cc >= CLUSTER_CC


def _dependent_launch(cc: tuple[int, int] | None) -> bool:
    """Whether kernels for ``cc`` start with the griddepcontrol prologue (NVRTC's
    ``nn::kernel_prologue``): the plan may launch them as programmatic dependents."""
    return cc is not None and cc >= DEPENDENT_LAUNCH_CC


def _forward_held(spec: NormSpec) -> tuple[int, int]:
    """(x elements, fp32 weights) a forward thread holds: slices of 32+ elements hold no
    weights (they re-read them, see _forward_form)."""
    nv = spec.num_elts * spec.ldgs
    return nv, 0 if nv >= 32 else nv * (1 if spec.config.is_rms else 2)


def _forward_form(spec: NormSpec) -> tuple[bool, bool]:
    """(re-read weights, software pipeline) of the forward kernel.

    Held weights are fp32 here (NV registers each for gamma and beta): slices of 32+ elements
    re-read them at each row from L1, as the backward re-reads gamma. The pipeline (the next
    row's x loaded, as stored, before this row's sums; the entry's ``prefetch``) runs where
    the next row's words fit beside x in fp32, the held weights and ~32 registers for
    addresses and sums; in general kernels only where a vector is whole 32-bit words.
    """
    cfg = spec.config
    nv, weights = _forward_held(spec)
    reread = weights == 0
    held = nv + weights + _words_per(cfg.input, nv, False) + 32
    words = spec.num_elts * registry.itemsize(cfg.input) % 4 == 0
    prefetch = cfg.prefetch and words and held <= _register_cap(spec)
    return reread, prefetch


def _forward_lean(spec: NormSpec) -> bool:
    """Whether the forward kernel keeps x as loaded (16-bit storage words), widening one
    vector at a time where the sums and y use it, as NVRTC's lean norm_fwd: where x in fp32,
    the held weights and ~32 registers exceed the entry's cap. The words pass through an empty
    asm before M2 and before y, so the compiler cannot keep widened values alive instead.

    ptxas, bf16 layernorm_fwd 46336 (TE's entry: 6 CTAs a row of 1 x 4 warps, 64 elements a
    thread), spill stores at 4 / 6 / 8 CTAs an SM: 328 / 984 / 1072 B wide, 20 / 108 / 316 B
    lean. H100, session 49 (same run, two rounds), lean against wide at the cap that was best
    for each: layernorm_fwd 1.72x at 46336 (6 CTAs an SM), 1.62x at 121344; rmsnorm_fwd 46336
    1.86x; bf16 -> e4m3 layernorm_fwd 1.05x at 4 (the lean form lost at 6 and 8 there).
    Tuned entries: LayerNorm only (its M2 pass reads x once more). H100, session 50 (same run,
    two rounds), lean against wide: bf16 layernorm_fwd 65536 (1 x 32 warps, 64 elements a
    thread) 1.09x; rmsnorm_fwd bf16 / fp16 32768 0.98x, 8192 / 12288 / 65536 1.00x.
    """
    cfg = spec.config
    nv, weights = _forward_held(spec)
    _reread, prefetch = _forward_form(spec)
    size = registry.itemsize(cfg.input)
    packed = size < 4 and spec.num_elts * size % 4 == 0
    fits = nv + weights + 32 <= _register_cap(spec)
    return (spec.general or not cfg.is_rms) and packed and not prefetch and not fits


def _accessors(general: bool, stores: tuple) -> tuple:
    """A kernel's row accessors (load, words load, second words load, store; ``stores`` from
    :func:`_stores`), each ``f(ptr, idx, arr, off, n, avail)``: general kernels check bounds
    (elements ``j >= avail`` not moved, loads read them as 0 / 0 bits), tuned ones move whole
    vectors (their slices tile the row; ``avail``, unused, costs no instruction)."""
    if general:
        return _ld_g, _ldw_g, _ldw_again_g, stores[1]
    return _ld_t, _ldw_t, _ldw_again_t, stores[2]


def _forward_kernel(spec: NormSpec, multi: bool, cc: tuple[int, int] | None, amax: bool):
    cfg = spec.config
    WM, WN, NE, LDGS = cfg.warps_m, cfg.warps_n, spec.num_elts, spec.ldgs
    GENERAL, RMS, MULTI = spec.general, cfg.is_rms, multi
    NV = NE * LDGS  # elements of one row a thread keeps in registers
    CHUNK = WN * 32 * NE  # columns of one CTA per vector step
    NW_TUNED = np.float32(32 * NV)  # elements of one warp (tuned kernels)
    NC_TUNED = np.float32(WN * 32 * NV)  # elements of one CTA (tuned kernels)
    SM = 2 * WM * WN * 2  # [trip parity][warp_m][warp_n][2]: no barrier needed before reuse
    RED = WM * WN * 32 if _SIM else 1
    # General kernels of several warps a row: the warps' element counts in shared memory and the
    # warp mean as sum * (1 / count), as NVRTC's norm_fwd (there: fewer spills); not for 16-bit
    # outputs. H100, TE's bf16 LayerNorm entry at the Numba cap (4 CTAs an SM), 46336 / 121344
    # columns: bf16 output 0.95x with it (ptxas: 252 -> 320 B of spill stores), e4m3 1.35-1.40x
    # (608 -> 352 B). fp32 outputs keep the FP8 form: both are checked bit for bit against
    # each other.
    SHARED_COUNTS = GENERAL and WN > 1 and registry.itemsize(cfg.output) != 2
    WCS = WN if SHARED_COUNTS else 1
    # General LayerNorm kernels of several warps a row: Chan's ratios across the warps (one
    # division each, the same on every row) worked out once, in shared memory; in the row loop
    # NVVM kept them (ptx: 15 div.rn.f32 a row at 16 warps, bf16 18944 columns). The same
    # arithmetic; H100 A/B (session 47, one round): 1.03x at 16 warps, 1.00-1.01x at 4 / 8.
    # Beside them the count merged before each warp, so no warp's count is held in registers
    # (ptxas, bf16: spill stores 68 -> 0 B at 18944, 572 -> 328 at 46336; A/B, session 48, at
    # 46336, where no pipeline runs: 1.36x)
    RATIOS = GENERAL and WN > 1 and not RMS
    WRS = WN if RATIOS else 1
    # FP8 output: y = fp8(v * scale); the amax code is always compiled (amax checked for null
    # at run time). Other outputs: the amax reduction only in the kernel compiled for it.
    FP8 = cfg.output in FP8_DTYPES
    AMAX = FP8 or amax
    NWARPS = WM * WN
    AMX = NWARPS if AMAX else 1
    hw_cvt, hw_fp8 = _hw_flags(cc)
    stores = _stores(hw_cvt, cfg.output if FP8 else None, hw_fp8)
    ld, ldw, _, st = _accessors(GENERAL, stores)
    _rnd = stores[3]
    WREREAD, PREFETCH = _forward_form(spec)
    LEAN = _forward_lean(spec)
    NG = 1 if WREREAD else NV  # held weights (fp32)
    XW = _words_per(cfg.input, NE, _SIM)
    NXW = LDGS * XW if PREFETCH or LEAN else 1  # the next row (PREFETCH) / this row (LEAN)
    NXS = NE if LEAN else NV  # x in fp32: one vector (LEAN) or the thread's slice
    WORD = F32 if _SIM else types.uint32
    launch_dependents, wait_primary = dependent_launch(_dependent_launch(cc))
    exchange = _exchange_for(_clusters(cc))
    CL = WM * _CL_SLOTS * 2 if multi else 1

    # y of one vector, computed in the loop that stores it (the weights' vector is used as it
    # arrives: run 25) except where NVVM did not always unroll that loop with y inside and the
    # row went to local memory: FP8 outputs (the conversion and scaling in the loop; bf16
    # layernorm_fwd 10240 -> e4m3, 80 elements a thread; before sm_89 in software) and general
    # kernels re-reading weights (bounds-checked loads; fp16 layernorm_fwd 2048, 64 elements)
    SPLIT_Y = not LEAN and (FP8 or (GENERAL and WREREAD))

    @_device
    def chan_parts(parts, base, cpr, cols):
        """(mean, M2) of the row from the CTAs' pairs at ``parts[base:]``, Chan's merge in CTA
        order (one specialisation for the shared slots, one for ``stats``)."""
        n = _ZERO
        m = _ZERO
        d = _ZERO
        for cc in range(cpr):
            if GENERAL:
                nb = _cta_count(cols, cc, cpr, CHUNK, LDGS)
            else:
                nb = NC_TUNED
            n, m, d = _chan(n, m, d, nb, parts[base + cc * 2], parts[base + cc * 2 + 1])
        return m, d

    @_device
    def load_words(x, row, x_stride, col0, step, cols, xw):
        for it in range(LDGS):
            c = col0 + it * step  # (general: columns past the row end as 0, as ld loads them)
            ldw(x, row * x_stride + c, xw, it * XW, NE, cols - c)

    @_device
    def x_vector(x, xw, xs, it):
        """Offset in xs of vector ``it`` of the row; the lean form first widens it from the
        row's words into xs[:NE]."""
        if LEAN:
            _unpk(x, xw, it * XW, xs, 0, NE)
            return 0
        return it * NE

    @_device
    def y_vector(gamma, beta, c, cols, it, xs, gs, bs, gv, bv, gadd, mean, rs):
        """xs[it * NE:][:NE] = y of vector ``it`` (column ``c``), in place of x."""
        if WREREAD:  # this vector's weights, from L1
            ld(gamma, c, gv, 0, NE, cols - c)
            if not RMS:
                ld(beta, c, bv, 0, NE, cols - c)
        for k in range(NE):
            j = it * NE + k
            g = gv[k] + gadd if WREREAD else gs[j]
            if RMS:
                xs[j] = xs[j] * rs * g
            else:
                xs[j] = (xs[j] - mean) * rs * g + (bv[k] if WREREAD else bs[j])

    def norm_fwd(
        x, gamma, beta, y, mu, rsigma, rows, cols, x_stride, y_stride, eps, zero_centered,
        stats, barrier, scale, amax, scale_inv,
    ):  # fmt: skip
        wait_primary()  # NVRTC's kernel_prologue: before any memory access
        launch_dependents()
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
        cl = cuda.shared.array(CL, F32, alignment=PAIR_ALIGN)  # pair stores (_st_cluster2)
        xs = cuda.local.array(NXS, F32)
        gs = cuda.local.array(NG, F32)
        bs = cuda.local.array(NG, F32)
        gv = cuda.local.array(NE, F32)  # one re-read vector of gamma / beta (WREREAD)
        bv = cuda.local.array(NE, F32)
        xw = cuda.local.array(NXW, WORD)
        amx = cuda.shared.array(AMX, F32)
        fcols = F32(cols)
        am = _ZERO  # this thread's max |v| (AMAX)
        sc = _ONE
        if FP8:
            sc = scale[0]
            if tid == 0 and cuda.blockIdx.x == 0 and group == 0:
                if _nonnull(scale_inv):
                    scale_inv[0] = _ONE / sc

        # gamma (+1 when zero-centred) and beta: once per CTA
        gadd = _ONE if zero_centered != 0 else _ZERO
        for it in range(0 if WREREAD else LDGS):
            c = col0 + it * step
            ld(gamma, c, gs, it * NE, NE, cols - c)
            for k in range(NE):
                gs[it * NE + k] += gadd
        if not RMS and not WREREAD:
            for it in range(LDGS):
                c = col0 + it * step
                ld(beta, c, bs, it * NE, NE, cols - c)

        # element counts of the warps of a row (for the means and Chan's weights)
        wcs = cuda.shared.array(WCS, F32)
        wrs = cuda.shared.array(WRS, F32)
        wna = cuda.shared.array(WRS, F32)
        wc = cuda.local.array(WN, F32)
        if RATIOS:
            if tid == 0:  # as _chan works them out, warp by warp
                n = _ZERO
                for w in range(WN):
                    nb = _warp_count(cols, cta_n, w, cpr, WN, NE, LDGS)
                    wna[w] = n
                    n += nb
                    wrs[w] = nb / n if nb != _ZERO else _ZERO
            if not SHARED_COUNTS:  # (else the counts' barrier below serves)
                cuda.syncthreads()
        if SHARED_COUNTS:
            if tid < WN:
                wcs[tid] = _warp_count(cols, cta_n, tid, cpr, WN, NE, LDGS)
            cuda.syncthreads()
            nw = wcs[warp_n]
        else:
            for w in range(WN):
                if GENERAL:
                    wc[w] = _warp_count(cols, cta_n, w, cpr, WN, NE, LDGS)
                else:
                    wc[w] = NW_TUNED
            if GENERAL:  # not wc[warp_n]: a run-time index would put wc in local memory
                nw = _warp_count(cols, cta_n, warp_n, cpr, WN, NE, LDGS)
            else:
                nw = NW_TUNED
        rnw = _ONE / max(nw, _ONE)

        # 32-bit division (div32), counted in int64: an int32 count kept the R2URs of div32's
        # docstring in the fp32 LayerNorm forward (4100 columns: 516 of 3304 instructions)
        trips = I64(div32(rows + ngroups * WM - 1, ngroups * WM))  # (as the forward's)
        if PREFETCH and trips > 0:
            load_words(x, min(group * WM + warp_m, rows - 1), x_stride, col0, step, cols, xw)
        for t in range(trips):
            row = (t * ngroups + group) * WM + warp_m
            # warps past the last row load a real row (no garbage) but store nothing
            lrow = min(row, rows - 1)
            xoff = lrow * x_stride
            par = t & 1
            if PREFETCH:
                # this row from its words, then the next row's loads go out before the sums
                for it in range(LDGS):
                    _unpk(x, xw, it * XW, xs, it * NE, NE)
                if t + 1 < trips:
                    nrow = min(((t + 1) * ngroups + group) * WM + warp_m, rows - 1)
                    load_words(x, nrow, x_stride, col0, step, cols, xw)
            elif LEAN:
                # the columns (so the addresses) out of an asm each row: held across the row
                # loop they spilled (ptxas, bf16 46336 at 4 CTAs an SM: 192 -> 60 B of spill
                # stores; the opaque words before M2 then 60 -> 20, at 8 CTAs 780 -> 316)
                load_words(x, lrow, x_stride, _opq_i(col0), step, cols, xw)
            else:
                for it in range(LDGS):
                    c = col0 + it * step
                    ld(x, xoff + c, xs, it * NE, NE, cols - c)
            s = _ZERO
            for it in range(LDGS):
                xo = x_vector(x, xw, xs, it)
                for k in range(NE):
                    if RMS:
                        s += xs[xo + k] * xs[xo + k]
                    else:
                        s += xs[xo + k]
            s = _warp_sum(s, red, tid, lane)
            sl = ((par * WM + warp_m) * WN + warp_n) * 2  # this warp's shared slot
            sw = (par * WM + warp_m) * WN * 2  # slot of warp 0 of this row
            if RMS:
                # sum of squares over the warps of the row, then the CTAs, in index order
                if WN > 1:
                    if lane == 0:
                        sm[sl] = s
                    cuda.syncthreads()
                    s = _ZERO
                    for w in range(WN):
                        s += sm[sw + w * 2]
                if MULTI:
                    sb = ((par * ngroups + group) * WM + warp_m) * cpr * 2
                    cb = (par * WM + warp_m) * _CL_SLOTS
                    ok = exchange(
                        stats, cl, sb, cb, warp_n == 0, lane, cta_n, cpr, barrier, group,
                        (t + 1) * cpr, s, _ZERO,
                    )  # fmt: skip
                    if ok:
                        s = _sum_parts(cl, cb, cpr)[0]
                    else:
                        s = _sum_parts(stats, sb, cpr)[0]
                mean = _ZERO
                rs = _ONE / F32(math.sqrt(s / fcols + eps))
            else:
                # mean and M2 of the warp in two steps, Chan's combination across warps / CTAs
                m = s * rnw if SHARED_COUNTS else s / max(nw, _ONE)
                d = _ZERO
                if LEAN:  # M2 widens the words again: not the sum's fp32 values, kept alive
                    _opq_w(xw, NXW)
                for it in range(LDGS):
                    xo = x_vector(x, xw, xs, it)
                    # general: the columns past the row end (x loaded as 0) leave M2, by a
                    # 32-bit compare of the vector's columns left (see _guarded)
                    av = I32(cols - (col0 + it * step))
                    for k in range(NE):
                        dv = xs[xo + k] - m
                        if GENERAL:
                            dv = dv if I32(k) < av else _ZERO
                        d += dv * dv
                d = _warp_sum(d, red, tid, lane)
                if WN > 1:
                    if lane == 0:
                        sm[sl] = m
                        sm[sl + 1] = d
                    cuda.syncthreads()
                    n = _ZERO
                    m = _ZERO
                    d = _ZERO
                    if RATIOS:
                        # unsigned slots (no negative-index wraparound selects) and a select in
                        # _chan_ratio: NVVM unrolls the merge (16 warps: a loop of 4 before).
                        # H200 A/B, session 51: 1.44x at 12296, 1.45x at 18944, 1.07x at 8200.
                        # Not for tuned kernels: bf16 65536 (32 warps) ran 0.96x with it.
                        usw = U32(sw)
                        for w in range(WN):
                            mb = sm[usw + U32(w * 2)]
                            db = sm[usw + U32(w * 2 + 1)]
                            m, d = _chan_ratio(wna[w], m, d, wrs[w], mb, db)
                    else:
                        for w in range(WN):
                            mb = sm[sw + w * 2]
                            nb = wcs[w] if SHARED_COUNTS else wc[w]
                            n, m, d = _chan(n, m, d, nb, mb, sm[sw + w * 2 + 1])
                if MULTI:
                    sb = ((par * ngroups + group) * WM + warp_m) * cpr * 2
                    cb = (par * WM + warp_m) * _CL_SLOTS
                    ok = exchange(
                        stats, cl, sb, cb, warp_n == 0, lane, cta_n, cpr, barrier, group,
                        (t + 1) * cpr, m, d,
                    )  # fmt: skip
                    if ok:
                        m, d = chan_parts(cl, cb, cpr, cols)
                    else:
                        m, d = chan_parts(stats, sb, cpr, cols)
                mean = m
                rs = _ONE / F32(math.sqrt(d / fcols + eps))

            if LEAN:  # y widens the words again (not the sums' fp32 values, kept alive)
                _opq_w(xw, NXW)
            if row < rows:
                if cta_n == 0 and warp_n == 0 and lane == 0:
                    if not RMS:
                        mu[row] = mean
                    rsigma[row] = rs
                if SPLIT_Y:  # y for the whole slice first
                    for it in range(LDGS):
                        y_vector(
                            gamma,
                            beta,
                            col0 + it * step,
                            cols,
                            it,
                            xs,
                            gs,
                            bs,
                            gv,
                            bv,
                            gadd,
                            mean,
                            rs,
                        )
                yoff = row * y_stride
                ycol = _opq_i(col0) if LEAN else col0
                for it in range(LDGS):
                    c = ycol + it * step
                    xo = x_vector(x, xw, xs, it)
                    # (y_vector's body written out: this is the code run 25 timed and tested)
                    if WREREAD and not SPLIT_Y:  # this vector's weights, from L1
                        if GENERAL and not RMS:  # (only the lean form gets here: see SPLIT_Y)
                            _ld2_g(gamma, beta, c, gv, bv, 0, NE, cols - c)
                        else:
                            ld(gamma, c, gv, 0, NE, cols - c)
                            if not RMS:
                                ld(beta, c, bv, 0, NE, cols - c)
                    for k in range(0 if SPLIT_Y else NE):  # y overwrites x in registers
                        j = it * NE + k
                        g = gv[k] + gadd if WREREAD else gs[j]
                        if RMS:
                            xs[xo + k] = xs[xo + k] * rs * g
                        else:
                            xv = xs[xo + k]
                            xs[xo + k] = (xv - mean) * rs * g + (bv[k] if WREREAD else bs[j])
                    if AMAX:
                        if not FP8:  # amax of what y stores
                            _rnd(y, xs, xo, NE)
                        for k in range(NE):
                            a = abs(xs[xo + k])
                            if GENERAL:  # columns past the row end hold -mean*rs (gamma + 1)
                                a = a if c + k < cols else _ZERO
                            am = _fmaxf(am, a)
                    if FP8:
                        for k in range(NE):
                            xs[xo + k] = xs[xo + k] * sc
                    st(y, yoff + c, xs, xo, NE, cols - c)

        if AMAX:
            # CTA max: warp butterfly, the warps through shared memory, one atomic per CTA
            am = _warp_max(am, red, tid, lane)
            if lane == 0:
                amx[warp] = am
            cuda.syncthreads()
            if tid == 0:
                m = amx[0]
                for w in range(1, NWARPS):
                    m = _fmaxf(m, amx[w])
                if FP8:
                    if _nonnull(amax):
                        _atomic_max_f32(amax, m)
                else:
                    _atomic_max_f32(amax, m)

        if MULTI:
            _require_cooperative_launch(rows)

    return norm_fwd


def _register_cap(spec: NormSpec) -> int:
    """Registers a thread may use under the entry's launch bounds (64K an SM over its CTAs)."""
    cfg = spec.config
    return registry._thread_registers(cfg.threads * cfg.min_ctas_per_sm)


def _backward_lean(spec: NormSpec, reread: bool) -> bool:
    """Whether the backward kernel takes its lean form: x and dy are kept as loaded (storage
    words, widened where used) until the row sums are taken, and the dx pass widens the kept
    words again where they fit (:func:`_backward_keeps_words`) or reads them again (from L1 or
    L2; the DRAM traffic is unchanged) instead of holding x-hat and dy * gamma in fp32 across
    the row reduction. (The NVRTC kernel keeps its words across the reduction and hides them
    from the compiler with an empty asm; in Numba's PTX ptxas merged the two passes again at
    layernorm_bwd 16384, 64 elements a thread: 564 B of spills against 144 B with the second
    read.)

    Tuned (vector) slices whose wide form exceeds the entry's register cap: 2 * NV for x-hat
    and dy * gamma, NV (dgamma) or 2 * NV (+ dbeta) partial sums, NV held gamma unless re-read,
    and 32 (+ NV - 32 past 32 elements) for addresses, sums and the unrolled code's temporaries
    (fitted to ptxas through nvJitLink, bf16: the wide form spilled 60 B at layernorm_bwd 12288
    (24 elements a thread, cap 128), 332 B at 16384 (32) and 136 B at rmsnorm_bwd 16384 (64,
    cap 248); it fit at 16 elements with cap 128 and at rmsnorm_bwd 12288 (24, cap 128)).

    General kernels of 16-bit x and dy take it whenever their vectors are whole words: their
    bounds checks cost registers the count above leaves out (the wide form spilled 28-144 B at
    4104-12296, bf16, where the count said it fit), and the words past the row end read as 0,
    which adds nothing to the sums. H100, session 53 (same run, two rounds), lean against wide,
    bf16 / fp16: layernorm_bwd 1.47-1.54x at 4104 / 8200, 1.31-1.36x at 12296 / 18944 (TE's
    4-CTA entry); rmsnorm_bwd 1.42-1.44x at 4104-12296, 2.05x at 18944. fp32 rows keep the
    wide form: lean ran 0.83-0.86x there.
    """
    if not _backward_packs(spec):
        return False
    cfg = spec.config
    if spec.general:
        return all(registry.itemsize(d) < 4 for d in (cfg.input, cfg.output))
    nv = spec.num_elts * spec.ldgs
    wide = 2 * nv + _sums_and_gamma(spec, reread) + 32 + max(0, nv - 32)
    return wide > _register_cap(spec)


def _sums_and_gamma(spec: NormSpec, reread: bool) -> int:
    """Registers a backward thread holds across its row loop besides the row itself: the
    partial sums (dgamma; LayerNorm also dbeta) and gamma unless re-read, NV each."""
    nv = spec.num_elts * spec.ldgs
    return nv * ((1 if spec.config.is_rms else 2) + (0 if reread else 1))


def _row_words(spec: NormSpec) -> int:
    """32-bit words of a thread's x and dy slices as loaded (the lean form's row, the packed
    next row)."""
    cfg, nv = spec.config, spec.num_elts * spec.ldgs
    return _words_per(cfg.input, nv, False) + _words_per(cfg.output, nv, False)


def _backward_packs(spec: NormSpec) -> bool:
    """Whether a vector of x and one of dy are whole 32-bit words (the lean form's rows and
    the pipeline's packed next row): tuned slices of more than one element, general ones of
    16-byte vectors."""
    cfg = spec.config
    if spec.num_elts == 1:
        return False
    if not spec.general:
        return True
    return all(spec.num_elts * registry.itemsize(d) % 4 == 0 for d in (cfg.input, cfg.output))


def _words_per(dtype: str, elements: int, sim: bool) -> int:
    """Storage words (32-bit) of ``elements`` packed elements; one per element in the simulator."""
    return elements if sim else elements * registry.itemsize(dtype) // 4


def _backward_prefetch(spec: NormSpec, reread: bool) -> bool:
    """Whether the (wide) backward kernel runs the entry's software pipeline (the next row's x
    and dy loaded before this row's reductions, as the NVRTC kernel's PREFETCH).

    Only where its registers fit under the entry's cap: the next row's x and dy as loaded
    (storage words, widened when the row comes up; rows of single-element vectors widen at the
    load: 2 * NV),
    beside x, dy, dgamma (+ dbeta) and gamma (unless re-read) in fp32, plus ~32 for addresses
    and sums. With the next row in fp32 every other measured bf16 pipeline spilled (ptxas
    through nvJitLink: layernorm_bwd 1024 / 4096 / 8192 40-120 B, rmsnorm_bwd 4096 80 B, 65536
    1380 B; none without it). The lean form pipelines only from kept words
    (:func:`_lean_prefetch`): with the second read the next row's loads pushed this row out of
    L1 before dx read it again (H200, run 26: rmsnorm_bwd 16384 2750 -> 2390 GB/s; H100,
    session 55, `tune_norms.py --backend numba --general`, lean general rows whose next row's
    words fit: 1.03-1.33x slower, layernorm_bwd bf16 4104 1 x 4 at 1-2 CTAs an SM 191 -> 235 us,
    rmsnorm_bwd 12296 1 x 16 522 -> 550 us).
    """
    cfg = spec.config
    if not cfg.prefetch:
        return False
    nv = spec.num_elts * spec.ldgs
    held = 2 * nv + _sums_and_gamma(spec, reread)  # x and dy in fp32 besides
    nxt = _row_words(spec) if _backward_packs(spec) else 2 * nv
    return held + nxt + 32 <= _register_cap(spec)


def _backward_form(spec: NormSpec) -> tuple[bool, bool, bool]:
    """(re-read gamma, lean form, software pipeline) of the backward kernel.

    Slices of 32+ elements re-read gamma each row (one vector load per NE elements, from L1)
    instead of holding NV more registers: held, rmsnorm_bwd 16384 (32 elements, 512 threads)
    spilled 344 B and layernorm_bwd 16384 (64 elements) 1052 B (ptxas -v through nvJitLink).
    Fewer is slower although it spills less: general backwards re-reading from 16 / 24 elements
    ran layernorm_bwd 0.88-0.94x, rmsnorm_bwd 0.93-1.05x (H100, session 55, bf16 / fp16).
    The lean form and the pipeline follow from it (:func:`_backward_lean`; the wide form's
    pipeline :func:`_backward_prefetch`, the lean form's :func:`_lean_prefetch`).
    """
    reread = spec.num_elts * spec.ldgs >= 32
    lean = _backward_lean(spec, reread)
    if lean:
        return reread, True, _lean_prefetch(spec, reread)
    return reread, False, _backward_prefetch(spec, reread)


def _lean_prefetch(spec: NormSpec, reread: bool) -> bool:
    """Whether the lean backward runs the entry's software pipeline: the next row's words
    loaded after this row's sums, beside this row's kept words (:func:`_backward_keeps_words`),
    where both rows' words, the partial sums, gamma unless re-read and 64 (+ NV - 32 past 32
    elements) fit under the cap. Without kept words it does not: with the second read of this
    row it ran slower, probably as the next row's loads pushed the row out of L1
    (:func:`_backward_prefetch`).

    Served since session 59 by the Numba layernorm_bwd bands on NVRTC's pipelined shapes
    (``registry._WIDE_VECTOR_GENERAL``). H100, bf16, same run: Numba on 1 x 4 / 1 x 8 with it
    1.16x / 1.21x its former 2 x 8 / 1 x 16 entries at 4104 / 8200, 0.94-0.95x NVRTC on the same
    shapes. Its SASS at layernorm_bwd 4104 on 1 x 4 warps issues the next row's loads before the
    row's shuffles, as NVRTC's pipelined kernel on that shape does.

    ptxas through nvJitLink, bf16, one CTA an SM (cap 255): no spills at layernorm_bwd 4104 /
    8200 (40 elements, 254 registers) or rmsnorm_bwd 8200 (40, 242); rmsnorm_bwd 12296 at 56
    elements (112 + 56 + 64 of 255 without the NV - 32) spilled 68 B."""
    if not (spec.config.prefetch and _backward_keeps_words(spec, reread)):
        return False
    nv = spec.num_elts * spec.ldgs
    held = 2 * _row_words(spec) + _sums_and_gamma(spec, reread) + 64 + max(0, nv - 32)
    return held <= _register_cap(spec)


def _backward_keeps_words(spec: NormSpec, reread: bool) -> bool:
    """Whether the lean backward's dx pass widens this row's words again, kept in registers
    across the row reductions (behind an empty asm, as NVRTC's lean kernel), instead of reading
    the row again: where the words (NV for 16-bit x and dy), the partial sums (NV, LayerNorm
    2 * NV), gamma unless re-read (NV) and 64 for addresses, bounds checks and temporaries fit
    under the entry's cap.

    The second read sits in a dx loop NVVM leaves rolled (three checked loads a vector), so a
    row waits for its L1 round trips one vector after another (ncu, H100, session 56:
    rmsnorm_bwd bf16 12296 78 M L1 sectors against NVRTC's 26 M on the same 1 x 16 shape).
    Kept words unroll it; where they do not fit, ptxas spills them and the kernel is slower.
    H100, session 56 (calls 2-3, each two rounds), kept words against the second read, bf16:
    layernorm_bwd 1.11-1.14x at 2056 / 3080 / 6152 (count 96 + 64 of 255, 64 + 64 of 128) and
    1.13x at 46336 (TE's several-CTA entry), rmsnorm_bwd 1.11-1.12x at 2056, 1.04x at 3080,
    1.07x at 4104, 1.03-1.05x at 6152, 1.11x at 46336, 0.98-0.99x at 12296 (64 + 64 of 128);
    fp16 alike. Past the count: layernorm_bwd 0.97 / 0.89 / 0.78 / 0.58x at 4104 / 8200 /
    12296 / 18944 (96-120 + 64 of 128), rmsnorm_bwd 0.78 / 0.73x at 8200 / 18944 (80 + 64),
    the tuned layernorm_bwd 2560 0.84x (64 + 64 of 96); the tuned 12288 (96 + 64 of 128) ran
    1.06x with 184 B of spills, left out by the count.
    """
    return _row_words(spec) + _sums_and_gamma(spec, reread) + 64 <= _register_cap(spec)


def _backward_kernel(
    spec: NormSpec, multi: bool, hw_cvt: bool, dependent: bool, clusters: bool = False
):
    cfg = spec.config
    WM, WN, NE, LDGS = cfg.warps_m, cfg.warps_n, spec.num_elts, spec.ldgs
    GENERAL, RMS, ADD, MULTI = spec.general, cfg.is_rms, cfg.fused_add, multi
    NV = NE * LDGS
    # wgrad_smem: dgamma (SM_DG) / dbeta (SM_DB) sums in shared memory, as the NVRTC kernel's
    # WG_SMEM: each thread's NV slots interleaved by thread (slot j of thread t at j * T + t).
    # The lean / pipeline choices below ignore it: counting the moved sums out chose the wide
    # pipelined form at layernorm_bwd bf16 16384 / 32768 (8 CTAs of 1 / 2 warps), which spilled
    # 492 / 472 B (ptxas through nvJitLink) against 16 / 12 B in the lean form.
    T = WM * WN * 32
    SM_DG, SM_DB = cfg.smem_sums
    WGS = (SM_DG + SM_DB) * NV * T
    DBO = NV * T if SM_DG else 0  # where the dbeta slots start
    CHUNK = WN * 32 * NE
    SM = 2 * WM * WN * 2
    RED = WM * WN * 32 if _SIM else 1
    REREAD, LEAN, PREFETCH = _backward_form(spec)
    KEEP = LEAN and _backward_keeps_words(spec, REREAD)  # dx from this row's words
    PACKED_NEXT = PREFETCH and _backward_packs(spec)  # the next row kept as loaded (words)
    # words a vector of x / dy packs into (the lean form, the packed next row)
    XW = _words_per(cfg.input, NE, _SIM)
    DW = _words_per(cfg.output, NE, _SIM)
    WORD = F32 if _SIM else types.uint32
    NXW = LDGS * XW if LEAN else 1  # word array sizes (constants for cuda.local.array)
    NDW = LDGS * DW if LEAN else 1
    NXWN = LDGS * XW if PACKED_NEXT else 1
    NDWN = LDGS * DW if PACKED_NEXT else 1
    NVN = NV if PREFETCH and not PACKED_NEXT else 1
    XW2 = XW if LEAN and not KEEP else 1  # (scalar bf16 slices have no whole word)
    DW2 = DW if LEAN and not KEEP else 1
    ld, ldw, ldw_again, st = _accessors(GENERAL, _stores(hw_cvt))
    copy_xw, copy_dw = copy_words(NXW), copy_words(NDW)  # the pipelined lean form's next row
    launch_dependents, wait_primary = dependent_launch(dependent)
    exchange = _exchange_for(clusters)
    CL = WM * _CL_SLOTS * 2 if multi else 1

    def row_loader(load, xslots, dyslots):
        """A device function putting x and dy of ``row`` (this thread's slice) into xd and dyd
        through ``load`` (general kernels: columns past the row end as 0), a vector every
        ``xslots`` / ``dyslots`` slots of its array."""

        @_device
        def load_pair(x, dy, row, x_stride, dy_stride, col0, step, cols, xd, dyd):
            for it in range(LDGS):
                c = col0 + it * step
                load(x, row * x_stride + c, xd, it * xslots, NE, cols - c)
                load(dy, row * dy_stride + c, dyd, it * dyslots, NE, cols - c)

        return load_pair

    load_row = row_loader(ld, NE, NE)  # widened to fp32
    load_words = row_loader(ldw, XW, DW)  # as loaded (packed words)

    def norm_bwd(
        dy, x, mu, rsigma, gamma, dx, add, dgamma_part, dbeta_part, rows, cols, dy_stride,
        x_stride, dx_stride, add_stride, zero_centered, stats, barrier,
    ):  # fmt: skip
        wait_primary()  # NVRTC's kernel_prologue: before any memory access
        launch_dependents()
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
        cl = cuda.shared.array(CL, F32, alignment=PAIR_ALIGN)  # pair stores (_st_cluster2)
        xs = cuda.local.array(1 if LEAN else NV, F32)  # x, then xhat, then dx (wide form)
        dys = cuda.local.array(1 if LEAN else NV, F32)  # dy, then dy * gamma
        xn = cuda.local.array(NVN, F32)  # the next row's (PREFETCH, single-element vectors)
        dyn = cuda.local.array(NVN, F32)
        xwn = cuda.local.array(NXWN, WORD)  # the next row's (PREFETCH, whole words)
        dywn = cuda.local.array(NDWN, WORD)
        # lean form: this row as loaded
        xw = cuda.local.array(NXW, WORD)
        dyw = cuda.local.array(NDW, WORD)
        xw2 = cuda.local.array(XW2, WORD)  # one vector read again for dx (lean, not KEEP)
        dyw2 = cuda.local.array(DW2, WORD)
        xt = cuda.local.array(NE, F32)
        dt = cuda.local.array(NE, F32)
        gs = cuda.local.array(1 if REREAD else NV, F32)
        gv = cuda.local.array(NE, F32)  # one re-read gamma vector (REREAD)
        dga = cuda.local.array(NV, F32)
        dba = cuda.local.array(NV, F32)
        if WGS:
            wgs = cuda.shared.array(WGS, F32)
        at = cuda.local.array(NE, F32)
        rn = _ONE / F32(cols)

        gadd = _ONE if zero_centered != 0 else _ZERO
        if not REREAD:
            for it in range(LDGS):
                c = col0 + it * step
                ld(gamma, c, gs, it * NE, NE, cols - c)
            for j in range(NV):
                gs[j] += gadd
        for j in range(NV):
            dga[j] = _ZERO
            dba[j] = _ZERO
            if SM_DG:
                wgs[j * T + tid] = _ZERO
            if SM_DB:
                wgs[DBO + j * T + tid] = _ZERO

        trips = I64(div32(rows + ngroups * WM - 1, ngroups * WM))
        rnext = _ZERO
        mnext = _ZERO
        if PREFETCH and trips > 0:
            # warps past the last row load a real row (no garbage) but store nothing
            lrow = min(group * WM + warp_m, rows - 1)
            if LEAN:
                load_words(x, dy, lrow, x_stride, dy_stride, col0, step, cols, xw, dyw)
            else:
                load_row(x, dy, lrow, x_stride, dy_stride, col0, step, cols, xs, dys)
            rnext = rsigma[lrow]
            mnext = _ZERO if RMS else mu[lrow]
        for t in range(trips):
            row = (t * ngroups + group) * WM + warp_m
            valid = row < rows
            par = t & 1
            if PREFETCH:
                r = rnext
                m = mnext
            else:
                lrow = min(row, rows - 1)
                if LEAN:
                    load_words(x, dy, lrow, x_stride, dy_stride, col0, step, cols, xw, dyw)
                else:
                    load_row(x, dy, lrow, x_stride, dy_stride, col0, step, cols, xs, dys)
                r = rsigma[lrow]
                m = _ZERO if RMS else mu[lrow]
            # xhat and dy * gamma replace x and dy; the partial sums take this row if it is real
            sdy = _ZERO
            sdyy = _ZERO
            for it in range(LDGS):
                if REREAD:
                    c = col0 + it * step
                    ld(gamma, c, gv, 0, NE, cols - c)
                if LEAN:
                    _unpk(x, xw, it * XW, xt, 0, NE)
                    _unpk(dy, dyw, it * DW, dt, 0, NE)
                for k in range(NE):
                    j = it * NE + k
                    g = gv[k] + gadd if REREAD else gs[j]
                    xh = ((xt[k] if LEAN else xs[j]) - m) * r
                    d = dt[k] if LEAN else dys[j]
                    dyg = d * g
                    if valid:
                        if SM_DG:
                            wgs[j * T + tid] += d * xh
                        else:
                            dga[j] += d * xh
                        if SM_DB:
                            wgs[DBO + j * T + tid] += d
                        elif not RMS:
                            dba[j] += d
                    sdy += dyg
                    sdyy += dyg * xh
                    if not LEAN:
                        xs[j] = xh
                        dys[j] = dyg
            if PREFETCH and t + 1 < trips:
                lrow = min(((t + 1) * ngroups + group) * WM + warp_m, rows - 1)
                if PACKED_NEXT:
                    load_words(x, dy, lrow, x_stride, dy_stride, col0, step, cols, xwn, dywn)
                else:
                    load_row(x, dy, lrow, x_stride, dy_stride, col0, step, cols, xn, dyn)
                rnext = rsigma[lrow]
                mnext = _ZERO if RMS else mu[lrow]

            sdyy = _warp_sum(sdyy, red, tid, lane)
            if not RMS:
                sdy = _warp_sum(sdy, red, tid, lane)
            if WN > 1:
                sl = ((par * WM + warp_m) * WN + warp_n) * 2
                sw = (par * WM + warp_m) * WN * 2
                if lane == 0:
                    sm[sl] = sdyy
                    sm[sl + 1] = sdy
                cuda.syncthreads()
                sdyy = _ZERO
                sdy = _ZERO
                for w in range(WN):
                    sdyy += sm[sw + w * 2]
                    sdy += sm[sw + w * 2 + 1]
            if MULTI:
                sb = ((par * ngroups + group) * WM + warp_m) * cpr * 2
                cb = (par * WM + warp_m) * _CL_SLOTS
                ok = exchange(
                    stats, cl, sb, cb, warp_n == 0, lane, cta_n, cpr, barrier, group,
                    (t + 1) * cpr, sdyy, sdy,
                )  # fmt: skip
                if ok:
                    sdyy, sdy = _sum_parts(cl, cb, cpr)
                else:
                    sdyy, sdy = _sum_parts(stats, sb, cpr)
            mdyy = sdyy * rn
            mdy = sdy * rn

            gcol = col0
            if LEAN:
                # the compiler must not keep the first pass's floats alive across the reductions:
                # dx widens the kept words (KEEP, through an empty asm) or reads the row again,
                # and re-reads gamma, at a column it cannot see through
                if KEEP:
                    _opq_w(xw, NXW)
                    _opq_w(dyw, NDW)
                gcol = _opq_i(col0)
            if valid and LEAN:
                dxoff = row * dx_stride
                addoff = row * add_stride
                for it in range(LDGS):
                    c = col0 + it * step
                    gc = gcol + it * step
                    if REREAD:
                        ld(gamma, gc, gv, 0, NE, cols - c)
                    if KEEP:
                        if ADD:
                            ld(add, addoff + c, at, 0, NE, cols - c)
                        _unpk(x, xw, it * XW, xt, 0, NE)
                        _unpk(dy, dyw, it * DW, dt, 0, NE)
                    else:
                        ldw_again(x, row * x_stride + gc, xw2, 0, NE, cols - c)
                        ldw_again(dy, row * dy_stride + gc, dyw2, 0, NE, cols - c)
                        if ADD:
                            ld(add, addoff + c, at, 0, NE, cols - c)
                        _unpk(x, xw2, 0, xt, 0, NE)
                        _unpk(dy, dyw2, 0, dt, 0, NE)
                    for k in range(NE):
                        j = it * NE + k
                        g = gv[k] + gadd if REREAD else gs[j]
                        xh = (xt[k] - m) * r
                        dyg = dt[k] * g
                        if RMS:
                            v = r * (dyg - mdyy * xh)
                        else:
                            v = r * (dyg - (mdyy * xh + mdy))
                        if ADD:
                            v += at[k]
                        xt[k] = v
                    st(dx, dxoff + c, xt, 0, NE, cols - c)
            elif valid:
                dxoff = row * dx_stride
                addoff = row * add_stride
                for it in range(LDGS):
                    c = col0 + it * step
                    if ADD:
                        ld(add, addoff + c, at, 0, NE, cols - c)
                    for k in range(NE):  # dx overwrites xhat in registers
                        j = it * NE + k
                        if RMS:
                            v = r * (dys[j] - mdyy * xs[j])
                        else:
                            v = r * (dys[j] - (mdyy * xs[j] + mdy))
                        if ADD:
                            v += at[k]
                        xs[j] = v
                    st(dx, dxoff + c, xs, it * NE, NE, cols - c)
            if PACKED_NEXT and LEAN:  # the next row's words become this row's
                copy_xw(xw, 0, xwn, 0)
                copy_dw(dyw, 0, dywn, 0)
            elif PACKED_NEXT:
                for it in range(LDGS):
                    _unpk(x, xwn, it * XW, xs, it * NE, NE)
                    _unpk(dy, dywn, it * DW, dys, it * NE, NE)
            elif PREFETCH:
                for j in range(NV):
                    xs[j] = xn[j]
                    dys[j] = dyn[j]

        # this warp row's partial dgamma / dbeta (the finalize kernel sums the rows in order)
        if WGS:
            for j in range(NV):
                if SM_DG:
                    dga[j] = wgs[j * T + tid]
                if SM_DB:
                    dba[j] = wgs[DBO + j * T + tid]
        poff = (group * WM + warp_m) * cols
        for it in range(LDGS):
            c = col0 + it * step
            # fp32 vectors of general partial rows are aligned only when cols is a multiple of NE
            if not GENERAL or cols % NE == 0:
                st(dgamma_part, poff + c, dga, it * NE, NE, cols - c)
                if not RMS:
                    st(dbeta_part, poff + c, dba, it * NE, NE, cols - c)
            else:
                for k in range(NE):
                    st(dgamma_part, poff + c + k, dga, it * NE + k, 1, cols - c - k)
                    if not RMS:
                        st(dbeta_part, poff + c + k, dba, it * NE + k, 1, cols - c - k)

        if MULTI:
            _require_cooperative_launch(rows)

    return norm_bwd


def _finalize_kernel(has_beta: bool, hw_cvt: bool, dependent: bool):
    HAS_BETA = has_beta
    SH_G = FINALIZE_MAX_ROWS * 32  # shared arrays' sizes must be closure constants
    SH_B = SH_G if has_beta else 1
    BATCH = FINALIZE_ROWS_PER_THREAD  # loads in flight per thread; the adds stay in row order
    _st = _stores(hw_cvt)[0]
    launch_dependents, wait_primary = dependent_launch(dependent)

    def norm_bwd_finalize(dgamma_part, dbeta_part, dgamma, dbeta, partial_rows, cols):
        wait_primary()  # the main kernel's partials: launched as its dependent on sm_90+
        launch_dependents()
        # the NVRTC kernel's order: thread (lane, ty) adds rows ty, ty + step, ... in order, then
        # the step sums meet in a fixed tree (the lower half adds the upper half's)
        lane = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        step = cuda.blockDim.y
        c = cuda.blockIdx.x * 32 + lane
        shg = cuda.shared.array(SH_G, F32)
        shb = cuda.shared.array(SH_B, F32)
        tg = cuda.local.array(BATCH, F32)
        tb = cuda.local.array(BATCH, F32)
        sg = _ZERO
        sb = _ZERO
        if c < cols:
            r = ty
            while r + (BATCH - 1) * step < partial_rows:
                for k in range(BATCH):
                    off = (r + k * step) * cols + c
                    tg[k] = dgamma_part[off]
                    if HAS_BETA:
                        tb[k] = dbeta_part[off]
                for k in range(BATCH):
                    sg += tg[k]
                    if HAS_BETA:
                        sb += tb[k]
                r += BATCH * step
            while r < partial_rows:
                sg += dgamma_part[r * cols + c]
                if HAS_BETA:
                    sb += dbeta_part[r * cols + c]
                r += step
        half = step // 2
        while half > 0:
            if ty >= half and ty < 2 * half:
                shg[(ty - half) * 32 + lane] = sg
                if HAS_BETA:
                    shb[(ty - half) * 32 + lane] = sb
            cuda.syncthreads()
            if ty < half:
                sg += shg[ty * 32 + lane]
                if HAS_BETA:
                    sb += shb[ty * 32 + lane]
            cuda.syncthreads()
            half //= 2
        if ty == 0 and c < cols:
            tg[0] = sg
            tg[1] = sb
            _st(dgamma, c, tg, 0, 1)
            if HAS_BETA:
                _st(dbeta, c, tg, 1, 1)

    return norm_bwd_finalize


def _forward_signature(cfg) -> Any:
    ti, tw, to = (STORAGE_TYPES[d] for d in (cfg.input, cfg.weight, cfg.output))
    p = types.CPointer
    return types.void(
        p(ti), p(tw), p(tw), p(to), p(F32), p(F32), I32, I32, I64, I64, F32, I32, p(F32), p(I32),
        p(F32), p(F32), p(F32),
    )  # fmt: skip


def _backward_signature(cfg) -> Any:
    ti, tw, to = (STORAGE_TYPES[d] for d in (cfg.input, cfg.weight, cfg.output))
    p = types.CPointer
    return types.void(
        p(to), p(ti), p(F32), p(F32), p(tw), p(ti), p(ti), p(F32), p(F32), I32, I32,
        I64, I64, I64, I64, I32, p(F32), p(I32),
    )  # fmt: skip


def _finalize_signature(weight: str) -> Any:
    p = types.CPointer
    return types.void(p(F32), p(F32), p(STORAGE_TYPES[weight]), p(STORAGE_TYPES[weight]), I32, I32)


# ---------------------------------------------------------------------------------------------
# Compilation
# ---------------------------------------------------------------------------------------------


class _Compiled:
    """A compiled kernel: the loaded :class:`rtc.Kernel` (GPU; the simulator's dispatcher under
    the simulator) and whether it synchronises several CTAs (a cooperative launch)."""

    __slots__ = ("dispatcher", "kernel", "cooperative")

    def __init__(self, dispatcher: Any, kernel: Any, cooperative: bool) -> None:
        self.dispatcher = dispatcher  # the simulator's dispatcher (None on a GPU)
        self.kernel = kernel
        self.cooperative = cooperative

    def launcher(
        self,
        grid: tuple,
        block: tuple,
        params: str,
        cooperative: bool,
        programmatic: bool = False,
        cluster: int = 1,
    ) -> Any:
        """An :class:`rtc.Launcher` of this kernel (GPU only): pre-packed parameters, no Numba
        argument conversion per call (the kernels take raw pointers and scalars only). A
        multi-CTA kernel is launched cooperatively unless its row groups run as clusters."""
        coop = cooperative or (self.cooperative and cluster == 1)
        dep = programmatic and not coop  # the plan never asks for both; be sure
        return rtc.Launcher(
            self.kernel, grid, block, params, cooperative=coop, cluster=cluster, programmatic=dep
        )


_LOCK = threading.RLock()
_CACHE: dict[tuple, _Compiled] = {}
_PTX_CACHE: dict[tuple, str] = {}  # finalize PTX only: shared by many backward specs


def _cc_of(arch: str) -> tuple[int, int]:
    major, minor, _ = rtc.parse_arch(arch)  # Numba has no arch-specific ('a'/'f') targets
    return major, minor


def _gpu_present() -> bool:
    try:
        return bool(cuda.is_available())
    except Exception:  # no driver at all
        return False


def _kernel_for(
    key: tuple,
    make,
    signature,
    arch: str | None,
    launch_bounds: tuple[int, int] | None = None,
    cooperative: bool = False,
    store: bool = False,
) -> _Compiled | str:
    """Compile (cached) ``make(cc)`` for the current device, or to PTX for ``arch``.

    ``make`` gets the target compute capability (None under the simulator), which decides the
    hardware conversions (:func:`_hw_flags`). ``launch_bounds`` (threads, min CTAs per SM) is the
    registry's register cap (ignored by the simulator). On a GPU the kernel comes from
    :mod:`._cubin` (compiled by Numba once, then a cubin in rtc's caches); ``cooperative``: it
    synchronises several CTAs of a row (launched cooperatively). ``store`` (with ``arch``, GPU
    or not): put the cubin for ``arch`` in rtc's caches under the key a GPU of that arch looks
    up, and return where it came from (:func:`rtc.last_origin`).
    """
    if _SIM:
        hit = _CACHE.get(key)
        if hit is None:
            disp = cuda.jit(make(None))
            hit = _CACHE[key] = _Compiled(disp, disp, False)
        return hit
    if store:
        cc = _cc_of(arch)
        _cubin.module(key, lambda: make(cc), signature, launch_bounds, cc)
        return rtc.last_origin()
    if arch is not None and not _gpu_present():
        cc = _cc_of(arch)
        ptx = _PTX_CACHE.get((key, cc))
        if ptx is None:
            with _LOCK, _cubin.assume_device(cc):
                ptx, _ = cuda.compile_ptx(make(cc), signature, cc=cc, launch_bounds=launch_bounds)
            if key[0] == "fin":
                _PTX_CACHE[(key, cc)] = ptx
        return ptx
    cc, ordinal = _cubin.current_device()
    full_key = key + (cc, ordinal)
    hit = _CACHE.get(full_key)
    if hit is not None:
        return hit
    with _LOCK:
        hit = _CACHE.get(full_key)
        if hit is None:
            kernel = _cubin.load(key, lambda: make(cc), signature, launch_bounds, cc)
            hit = _CACHE[full_key] = _Compiled(None, kernel, cooperative)
    return hit


def _fp8(spec: NormSpec) -> bool:
    return spec.config.output in FP8_DTYPES


def _bounds(spec: NormSpec) -> tuple[int, int]:
    """``launch_bounds`` of the spec's main kernel: the block size (without it NVVM may take
    more registers than a 1024-thread block can have: occupancy 0, seen on the H200 for
    1024-thread entries) and the registry entry's register cap."""
    return (spec.threads, spec.config.min_ctas_per_sm)


def _forward(
    spec: NormSpec, arch: str | None = None, amax: bool = False, store: bool = False
) -> Any:
    """The forward kernel; ``amax``: the variant with the amax reduction (non-FP8 outputs);
    ``store``: see :func:`_kernel_for`."""
    multi = spec.multi_cta
    amax = amax and not _fp8(spec)  # FP8 kernels always carry it
    return _kernel_for(
        ("fwd", spec.kernel_key) + (("amax",) if amax else ()),
        lambda cc: _forward_kernel(spec, multi, cc, amax),
        None if _SIM else _forward_signature(spec.config),
        arch,
        _bounds(spec),
        multi,
        store,
    )


def _backward(spec: NormSpec, arch: str | None = None, store: bool = False) -> tuple[Any, Any]:
    multi = spec.multi_cta
    cfg = spec.config
    has_beta = not cfg.is_rms
    main = _kernel_for(
        ("bwd", spec.kernel_key),
        lambda cc: _backward_kernel(
            spec, multi, _hw_flags(cc)[0], _dependent_launch(cc), _clusters(cc)
        ),
        None if _SIM else _backward_signature(cfg),
        arch,
        _bounds(spec),
        multi,
        store,
    )
    fin = _kernel_for(
        ("fin", cfg.weight, has_beta),
        lambda cc: _finalize_kernel(has_beta, _hw_flags(cc)[0], _dependent_launch(cc)),
        None if _SIM else _finalize_signature(cfg.weight),
        arch,
        (32 * FINALIZE_MAX_ROWS, 1),  # the largest block the planner gives it
        store=store,
    )
    return main, fin


def _check_op(spec: NormSpec, backward: bool) -> None:
    cfg = spec.config
    if cfg.is_backward != backward:
        raise ValueError(f"{spec.op} is not a {'backward' if backward else 'forward'} op")
    for dt in (cfg.input, cfg.weight, cfg.output):
        if dt not in STORAGE_TYPES:
            raise NotImplementedError(f"Numba norm kernels: dtype {dt!r} is not supported")
    fp8 = [dt for dt in (cfg.input, cfg.weight) if dt in FP8_DTYPES]
    if fp8 or (backward and cfg.output in FP8_DTYPES):
        raise NotImplementedError(
            f"Numba norm kernels: FP8 is supported only as the forward output, got {spec.op} "
            f"with weight={cfg.weight}, input={cfg.input}, output={cfg.output}"
        )


def runs_pipeline(spec: NormSpec) -> bool:
    """Whether the kernel of ``spec`` runs its software pipeline (the next row loaded before
    this row's reductions). An entry's ``prefetch`` asks for it; the kernel takes it only where the
    registers fit (:func:`_forward_form`, :func:`_backward_form`), so an entry asking for it
    elsewhere compiles the same kernel as one that does not (sweeps need time only one)."""
    if spec.config.is_backward:
        return _backward_form(spec)[2]
    return _forward_form(spec)[1]


def compile_forward(spec: NormSpec, arch: str | None = None, *, amax: bool = False) -> Any:
    """Build (cached) the forward kernel of ``spec``.

    Parameters
    ----------
    spec : NormSpec
        A ``layernorm_fwd`` or ``rmsnorm_fwd`` spec.
    arch : str, optional
        ``"sm_90"`` etc. Without a GPU this only compiles and returns the PTX text.
    amax : bool
        The variant that also reduces amax, for non-FP8 outputs (FP8 kernels always do; the
        launcher picks the variant from ``args.amax``).

    Returns
    -------
    object
        The compiled kernel (cached per ``spec.kernel_key``, the amax variant and the
        device compute capability), or the PTX string.
    """
    _check_op(spec, False)
    return _forward(spec, arch, amax)


def compile_backward(spec: NormSpec, arch: str | None = None) -> Any:
    """Build (cached) the backward kernel of ``spec`` and its dgamma/dbeta finalize kernel.

    Returns the compiled backward kernel, or (``arch`` given, no GPU) the PTX of the backward
    kernel followed by the finalize kernel's PTX.
    """
    _check_op(spec, True)
    main, fin = _backward(spec, arch)
    if isinstance(main, str):
        return main + "\n" + fin
    return main


def store_cubins(spec: NormSpec, arch: str) -> list[str]:
    """Put the cubins of ``spec`` (forward with its amax variant for non-FP8 outputs, or
    backward and its finalize) for ``arch`` in rtc's caches, where a GPU of that arch finds
    them; no GPU needed.

    Returns where each came from: ``"compiled"`` (built now), ``"disk"`` or ``"memory"``.
    """
    _check_op(spec, spec.config.is_backward)
    if _SIM:
        raise RuntimeError("store_cubins is not available under Numba's CUDA simulator")
    if spec.config.is_backward:
        return list(_backward(spec, arch, store=True))
    origins = [_forward(spec, arch, store=True)]
    if not _fp8(spec):  # a call asking for amax launches the variant that reduces it
        origins.append(_forward(spec, arch, amax=True, store=True))
    return origins


def _occupancy(compiled: _Compiled, threads: int) -> int:
    if _SIM:
        return 2  # blocks run one after another; a small fixed grid keeps tests quick
    return compiled.kernel.occupancy(threads, 0)


def occupancy_forward(spec: NormSpec) -> int:
    """Max active CTAs per SM of the forward kernel (2 under the simulator)."""
    _check_op(spec, False)
    return _occupancy(_forward(spec), spec.threads)


def occupancy_backward(spec: NormSpec) -> int:
    """Max active CTAs per SM of the backward kernel (2 under the simulator)."""
    _check_op(spec, True)
    return _occupancy(_backward(spec)[0], spec.threads)


def active_clusters(spec: NormSpec, cluster: int) -> int:
    """Clusters of ``cluster`` CTAs of the main kernel the current device holds (GPU only)."""
    main = _backward(spec)[0] if spec.config.is_backward else _forward(spec)
    return main.kernel.max_active_clusters(cluster, spec.threads, 0)


# ---------------------------------------------------------------------------------------------
# Launch
# ---------------------------------------------------------------------------------------------


def _handle(stream: Any) -> int:
    if isinstance(stream, int):
        return stream
    return int(getattr(stream, "handle", 0) or 0)


def _ptr(t: Any) -> int:
    if t is None:
        return 0
    p = getattr(t, "ptr", None)
    if isinstance(p, int):
        return p
    return int(t.__cuda_array_interface__["data"][0])


def _row_stride(t: Any) -> int:
    """Row pitch in elements."""
    if t is None:
        return 0
    s = getattr(t, "strides", None)
    if s is not None and len(s) == 2 and getattr(t, "shape", (0, 0))[0] > 1:
        return int(s[0])  # Tensor: strides in elements
    return int(t.rows_cols()[2])


def _memset_barrier(ptr: int, count: int, stream: Any) -> None:
    """Zero ``count`` barrier counters at ``ptr`` on ``stream`` before a multi-CTA launch
    (none for a cluster launch: its CTAs meet at the cluster barrier)."""
    if count:
        rtc.memset_d32_async(ptr, 0, count, _handle(stream))


class _Launch:
    """What launching one plan needs that does not change between calls."""

    __slots__ = (
        "plan", "main", "fin", "grid", "block", "multi", "fgrid", "fblock", "fp8", "_amax_main",
        "_launchers",
    )  # fmt: skip

    def __init__(self, plan: NormPlan) -> None:
        spec = plan.spec
        self.plan = plan  # keeps id(plan) from being reused while cached
        _check_op(spec, spec.config.is_backward)
        if spec.config.is_backward:
            self.main, self.fin = _backward(spec)
        else:
            self.main, self.fin = _forward(spec), None
        self.grid = tuple(plan.grid)
        self.block = tuple(plan.block)
        self.multi = plan.ctas_per_row > 1
        self.fgrid = tuple(plan.finalize_grid)
        self.fblock = tuple(plan.finalize_block)
        self.fp8 = _fp8(spec)
        self._amax_main = None
        self._launchers: dict[int, Any] = {}

    def launcher(self, compiled: _Compiled) -> Any:
        """The :class:`rtc.Launcher` of ``compiled`` (main, amax variant or finalize)."""
        hit = self._launchers.get(id(compiled))
        if hit is None:
            if compiled is self.fin:
                hit = compiled.launcher(
                    self.fgrid, self.fblock, NORM_FINALIZE_PARAMS, False,
                    self.plan.finalize_dependent,
                )  # fmt: skip
            else:
                params = NORM_BWD_PARAMS if self.plan.spec.config.is_backward else NORM_FWD_PARAMS
                plan = self.plan
                hit = compiled.launcher(
                    self.grid, self.block, params, plan.cooperative, plan.dependent, plan.cluster
                )
            self._launchers[id(compiled)] = hit
        return hit

    def forward_kernel(self, amax: bool) -> _Compiled:
        """The forward kernel for a call with (``amax``) or without an amax array."""
        if not amax or self.fp8:
            return self.main
        k = self._amax_main
        if k is None:
            k = _forward(self.plan.spec, amax=True)
            if self.multi and self.plan.cluster == 1 and not _SIM:
                # the plan sized the cooperative grid with the plain kernel's occupancy
                # (a cluster grid needs no co-residency)
                sms = rtc.device_info(_cubin.current_device()[1]).sm_count
                resident = _occupancy(k, self.plan.spec.threads) * sms
                if resident < self.grid[0] * self.grid[1]:
                    raise RuntimeError(
                        f"the amax variant of this multi-CTA norm kernel keeps {resident} CTAs "
                        f"resident, fewer than the plan's {self.grid[0] * self.grid[1]}"
                    )
            self._amax_main = k
        return k


_LAUNCHES: dict[int, _Launch] = {}
_LAUNCH_CACHE_LIMIT = 4096


def _launch_record(plan: NormPlan) -> _Launch:
    rec = _LAUNCHES.get(id(plan))
    if rec is not None and rec.plan is plan:
        return rec
    rec = _Launch(plan)
    if len(_LAUNCHES) >= _LAUNCH_CACHE_LIMIT:
        _LAUNCHES.clear()
    _LAUNCHES[id(plan)] = rec
    return rec


def _scratch_base(args: Any, plan: NormPlan) -> int:
    if args.scratch is None:
        raise ValueError(f"this launch needs a scratch buffer of {plan.scratch_bytes} bytes")
    return _ptr(args.scratch)


def launchers(plan: NormPlan, device: int | None = None) -> tuple[Any, Any]:
    """(main, finalize or None) :class:`rtc.Launcher` objects of ``plan`` (GPU only; the
    forward without the amax reduction) on ``device`` (None: the current one): a record
    rebuilt here, after dispatch's device guard, loads its kernels there."""
    with rtc.on_device(device):
        rec = _launch_record(plan)
        if plan.spec.config.is_backward:
            return rec.launcher(rec.main), rec.launcher(rec.fin)
        return rec.launcher(rec.forward_kernel(False)), None


def forward(plan: NormPlan, args: Any, stream: Any = 0) -> None:
    """Launch the forward kernel of ``plan``.

    Parameters
    ----------
    plan : NormPlan
        From :func:`numba_norms.planner.norm_plan` (grid, block, scratch layout).
    args : NormFwdArgs
        Tensors (``ptr``, ``strides``/``rows_cols()``; ``as_numba()`` under the simulator) and
        scalars; ``scratch`` holds ``plan.scratch_bytes`` bytes when several CTAs share a row.
        ``scale`` (required for an FP8 output), ``amax`` and ``scale_inv``: one-element fp32
        tensors or None (``scale`` / ``scale_inv`` are ignored for other outputs).
    stream : int
        Raw ``CUstream`` handle (0: the default stream).
    """
    rec = _launch_record(plan)
    if args.beta is None and not plan.spec.config.is_rms:
        raise ValueError("layernorm forward needs beta")
    scale = getattr(args, "scale", None)
    amax = getattr(args, "amax", None)
    scale_inv = getattr(args, "scale_inv", None)
    if rec.fp8:
        if scale is None:
            raise ValueError(f"scale: required with an FP8 output ({plan.spec.config.output})")
    else:
        scale = scale_inv = None  # used only with an FP8 output
    kern = rec.forward_kernel(amax is not None)
    zc = 1 if args.zero_centered else 0
    if _SIM:
        kern.kernel[rec.grid, rec.block](
            _sim_flat(args.x), _sim_flat(args.gamma), _sim_flat(args.beta), _sim_flat(args.y),
            _sim_flat(args.mu), _sim_flat(args.rsigma), plan.rows, plan.cols,
            _row_stride(args.x), _row_stride(args.y), np.float32(args.eps), zc, None, None,
            _sim_flat(scale), _sim_flat(amax), _sim_flat(scale_inv),
        )  # fmt: skip
        return
    stats = barrier = 0
    if rec.multi:
        base = _scratch_base(args, plan)
        stats, barrier = base + plan.stats_offset, base + plan.barrier_offset
        _memset_barrier(barrier, plan.barrier_bytes // 4, stream)
    rec.launcher(kern)(
        _handle(stream),
        _ptr(args.x), _ptr(args.gamma), _ptr(args.beta), _ptr(args.y), _ptr(args.mu),
        _ptr(args.rsigma), plan.rows, plan.cols, _row_stride(args.x), _row_stride(args.y),
        args.eps, zc, stats, barrier, _ptr(scale), _ptr(amax), _ptr(scale_inv),
    )  # fmt: skip


def backward(plan: NormPlan, args: Any, stream: Any = 0) -> None:
    """Launch the backward kernel of ``plan`` and its dgamma/dbeta finalize kernel.

    Parameters
    ----------
    plan : NormPlan
        Launch plan; ``plan.partial_*`` locate the dgamma/dbeta partials in the scratch.
    args : NormBwdArgs
        Tensors and flags; ``scratch`` holds ``plan.scratch_bytes`` bytes.
    stream : int
        Raw ``CUstream`` handle (0: the default stream).
    """
    rec = _launch_record(plan)
    cfg = plan.spec.config
    has_beta = not cfg.is_rms
    if has_beta and (args.mu is None or args.dbeta is None):
        raise ValueError("layernorm backward needs mu and dbeta")
    add = args.add if cfg.fused_add else None
    if cfg.fused_add and add is None:
        raise ValueError("this kernel fuses an add: args.add is required")
    zc = 1 if args.zero_centered else 0
    rows, cols = plan.rows, plan.cols
    if _SIM:
        nbytes = plan.partial_rows * cols * 4
        dgp = _sim_scratch(args.scratch, plan.partial_offset, nbytes)
        dbp = _sim_scratch(args.scratch, plan.dbeta_partial_offset, nbytes) if has_beta else None
        rec.main.kernel[rec.grid, rec.block](
            _sim_flat(args.dy), _sim_flat(args.x), _sim_flat(args.mu), _sim_flat(args.rsigma),
            _sim_flat(args.gamma), _sim_flat(args.dx), _sim_flat(add), dgp, dbp, rows, cols,
            _row_stride(args.dy), _row_stride(args.x), _row_stride(args.dx), _row_stride(add),
            zc, None, None,
        )  # fmt: skip
        rec.fin.kernel[rec.fgrid, rec.fblock](
            dgp, dbp, _sim_flat(args.dgamma), _sim_flat(args.dbeta), plan.partial_rows, cols
        )
        return
    base = _scratch_base(args, plan)
    st = _handle(stream)
    stats = barrier = 0
    if rec.multi:
        stats, barrier = base + plan.stats_offset, base + plan.barrier_offset
        _memset_barrier(barrier, plan.barrier_bytes // 4, stream)
    dgp = base + plan.partial_offset
    dbp = base + plan.dbeta_partial_offset if has_beta else 0
    rec.launcher(rec.main)(
        st,
        _ptr(args.dy), _ptr(args.x), _ptr(args.mu), _ptr(args.rsigma), _ptr(args.gamma),
        _ptr(args.dx), _ptr(add), dgp, dbp, rows, cols, _row_stride(args.dy),
        _row_stride(args.x), _row_stride(args.dx), _row_stride(add), zc, stats, barrier,
    )  # fmt: skip
    rec.launcher(rec.fin)(
        st, dgp, dbp, _ptr(args.dgamma), _ptr(args.dbeta), plan.partial_rows, cols
    )


# --- simulator views: flat NumPy arrays over the tensors' memory ------------------------------


def _sim_array(t: Any) -> np.ndarray:
    a = t.as_numba() if hasattr(t, "as_numba") else t
    return a._ary if hasattr(a, "_ary") else np.asarray(a)


def _sim_flat(t: Any) -> Any:
    """A flat simulator array over ``t``: row r starts at ``r * row_stride`` as on the GPU."""
    if t is None:
        return None
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    nd = _sim_array(t)
    if nd.ndim <= 1:
        flat = nd.reshape(-1)
    else:
        rows, cols, stride = t.rows_cols()
        span = (rows - 1) * stride + cols if rows else 0
        # a view, not a copy: the kernel writes through it
        flat = np.lib.stride_tricks.as_strided(nd, shape=(span,), strides=(nd.itemsize,))
    return FakeCUDAArray(flat)


def _sim_scratch(scratch: Any, offset: int, nbytes: int) -> Any:
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    if scratch is None:
        raise ValueError("norm backward needs a scratch buffer for the dgamma/dbeta partials")
    nd = _sim_array(scratch).reshape(-1).view(np.uint8)
    return FakeCUDAArray(nd[offset : offset + nbytes].view(np.float32))
