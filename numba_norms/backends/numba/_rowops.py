"""Device building blocks of the Numba row kernels (softmax; meant to be shared with the norms).

Everything here mirrors ``backends/nvrtc/norms.cuh`` so both backends compute the same bits:

* vector access as raw 32-bit words (``ld_words`` / ``st_words``: one 2/4/8/16-byte load or
  store, ``ld.global.v4.u32`` for 16 bytes), single elements as raw bits (``ld_bits`` /
  ``st_bits``);
* conversions on 16-bit payloads: bf16 widening is a shift, fp16 widening ``cvt.f32.f16``,
  narrowing ``cvt.rn.{bf16,f16}x2.f32`` / ``cvt.rn.{bf16,f16}.f32`` (inline PTX, sm_80+);
* ``ex2.approx.ftz.f32``, ``fmaxf`` (``max.f32``);
* warp xor-butterfly reductions, uncached (``.cg``) accesses of the inter-CTA statistics and
  the inter-CTA arrival barrier.

On a GPU these are Numba intrinsics (LLVM IR / inline PTX, inlined where they are used). Under
Numba's CUDA simulator (no warp shuffles, no intrinsics) the same names are Python functions
with the same results; warp shuffles are emulated through a per-thread shared-memory slot
(``xch``, one float32 per thread of the block) and ``syncthreads``, so every thread of the
block must call the reductions, as the kernels do anyway.

Intrinsics taking an array and an offset address element ``arr[off]`` of a 1-D array without
bounds or wraparound handling (offsets are non-negative by construction); vector accesses need
the address aligned to their size, which the planner's vector width guarantees.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from numba import config, cuda

__all__ = [
    "FULL_MASK",
    "SIM",
    "device",
    "ex2",
    "f16_hi",
    "f16_lo",
    "f32_as_u32",
    "fmaxf",
    "inter_cta_barrier",
    "ld_bits",
    "ld_cg2",
    "ld_volatile_i32",
    "ld_words",
    "pack1_bf16",
    "pack1_f16",
    "pack2_bf16",
    "pack2_f16",
    "st_bits",
    "st_cg2",
    "st_words",
    "u32_as_f32",
    "warp_any",
    "warp_max",
    "warp_sum",
]

SIM: bool = bool(config.ENABLE_CUDASIM)
FULL_MASK = 0xFFFFFFFF


def device(fn: Callable) -> Callable:
    """``cuda.jit(device=True)``, force-inlined on a GPU (keeps local arrays in registers)."""
    if SIM:
        return cuda.jit(device=True)(fn)
    return cuda.jit(device=True, forceinline=True)(fn)


if not SIM:
    from llvmlite import ir
    from numba.cuda import libdevice, types
    from numba.cuda.extending import intrinsic

    _I8, _I16, _I32, _I64 = ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
    _F32 = ir.FloatType()
    _INT_OF_BYTES = {1: _I8, 2: _I16, 4: _I32}

    def _elem_ptr(context, builder, arrty, arr, offty, off):
        """Pointer to ``arr[off]`` (1-D, no wraparound)."""
        data = context.make_array(arrty)(context, builder, value=arr).data
        return builder.gep(data, [context.cast(builder, off, offty, types.int64)])

    def _as_u32(context, builder, ty, val):
        return context.cast(builder, val, ty, types.uint32)

    @functools.cache
    def ld_words(nbytes: int):
        """``ld_words(w, i, arr, off)``: ``nbytes`` bytes at ``arr[off]`` -> ``w[i:i+W]``.

        ``W = max(1, nbytes // 4)`` uint32 words (a 1- or 2-byte access fills the low bits of
        one word). One aligned access: 16 bytes give ``ld.global.v4.u32``.
        """
        nwords = max(1, nbytes // 4)

        @intrinsic
        def _ld_words(typingctx, w, i, arr, off):
            sig = types.void(w, i, arr, off)

            def codegen(context, builder, sig, args):
                wty, ity, aty, oty = sig.args
                wv, iv, av, ov = args
                p = _elem_ptr(context, builder, aty, av, oty, ov)
                if nbytes >= 8:
                    vt = ir.VectorType(_I32, nwords)
                    vec = builder.load(builder.bitcast(p, vt.as_pointer()), align=nbytes)
                    words = [
                        builder.extract_element(vec, ir.Constant(_I32, q)) for q in range(nwords)
                    ]
                else:
                    it = _INT_OF_BYTES[nbytes]
                    val = builder.load(builder.bitcast(p, it.as_pointer()), align=nbytes)
                    words = [val if nbytes == 4 else builder.zext(val, _I32)]
                for q, word in enumerate(words):
                    dst = _elem_ptr(context, builder, wty, wv, ity, iv)
                    if q:
                        dst = builder.gep(dst, [ir.Constant(_I64, q)])
                    builder.store(word, dst)
                return context.get_dummy_value()

            return sig, codegen

        return _ld_words

    @functools.cache
    def st_words(nbytes: int):
        """``st_words(arr, off, w, i)``: store ``w[i:i+W]`` as ``nbytes`` bytes at ``arr[off]``."""
        nwords = max(1, nbytes // 4)

        @intrinsic
        def _st_words(typingctx, arr, off, w, i):
            sig = types.void(arr, off, w, i)

            def codegen(context, builder, sig, args):
                aty, oty, wty, ity = sig.args
                av, ov, wv, iv = args
                src = _elem_ptr(context, builder, wty, wv, ity, iv)
                words = [
                    builder.load(builder.gep(src, [ir.Constant(_I64, q)])) for q in range(nwords)
                ]
                p = _elem_ptr(context, builder, aty, av, oty, ov)
                if nbytes >= 8:
                    vt = ir.VectorType(_I32, nwords)
                    vec = ir.Constant(vt, ir.Undefined)
                    for q, word in enumerate(words):
                        vec = builder.insert_element(vec, word, ir.Constant(_I32, q))
                    builder.store(vec, builder.bitcast(p, vt.as_pointer()), align=nbytes)
                else:
                    it = _INT_OF_BYTES[nbytes]
                    val = words[0] if nbytes == 4 else builder.trunc(words[0], it)
                    builder.store(val, builder.bitcast(p, it.as_pointer()), align=nbytes)
                return context.get_dummy_value()

            return sig, codegen

        return _st_words

    @intrinsic
    def ld_bits(typingctx, arr, off):
        """Raw bits of ``arr[off]``, zero-extended to uint32 (1-, 2- or 4-byte elements)."""
        sig = types.uint32(arr, off)

        def codegen(context, builder, sig, args):
            aty, oty = sig.args
            p = _elem_ptr(context, builder, aty, args[0], oty, args[1])
            it = _INT_OF_BYTES[aty.dtype.bitwidth // 8]
            val = builder.load(builder.bitcast(p, it.as_pointer()))
            return val if it is _I32 else builder.zext(val, _I32)

        return sig, codegen

    @intrinsic
    def st_bits(typingctx, arr, off, bits):
        """Store the low bits of ``bits`` as element ``arr[off]``."""
        sig = types.void(arr, off, bits)

        def codegen(context, builder, sig, args):
            aty, oty, bty = sig.args
            p = _elem_ptr(context, builder, aty, args[0], oty, args[1])
            it = _INT_OF_BYTES[aty.dtype.bitwidth // 8]
            val = _as_u32(context, builder, bty, args[2])
            if it is not _I32:
                val = builder.trunc(val, it)
            builder.store(val, builder.bitcast(p, it.as_pointer()))
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def u32_as_f32(typingctx, w):
        """Reinterpret the low 32 bits of an integer as a float32."""
        sig = types.float32(w)

        def codegen(context, builder, sig, args):
            return builder.bitcast(_as_u32(context, builder, sig.args[0], args[0]), _F32)

        return sig, codegen

    @intrinsic
    def f32_as_u32(typingctx, f):
        """The bits of a float32."""
        sig = types.uint32(f)

        def codegen(context, builder, sig, args):
            val = context.cast(builder, args[0], sig.args[0], types.float32)
            return builder.bitcast(val, _I32)

        return sig, codegen

    def _half_to_f32(builder, w16):
        return builder.fpext(builder.bitcast(w16, ir.HalfType()), _F32)  # cvt.f32.f16

    @intrinsic
    def f16_lo(typingctx, w):
        """fp16 in the low half of a word -> float32."""
        sig = types.float32(w)

        def codegen(context, builder, sig, args):
            word = _as_u32(context, builder, sig.args[0], args[0])
            return _half_to_f32(builder, builder.trunc(word, _I16))

        return sig, codegen

    @intrinsic
    def f16_hi(typingctx, w):
        """fp16 in the high half of a word -> float32."""
        sig = types.float32(w)

        def codegen(context, builder, sig, args):
            word = _as_u32(context, builder, sig.args[0], args[0])
            return _half_to_f32(
                builder, builder.trunc(builder.lshr(word, ir.Constant(_I32, 16)), _I16)
            )

        return sig, codegen

    def _pack2(ptx_type: str):
        @intrinsic
        def _impl(typingctx, lo, hi):
            sig = types.uint32(lo, hi)

            def codegen(context, builder, sig, args):
                flo = context.cast(builder, args[0], sig.args[0], types.float32)
                fhi = context.cast(builder, args[1], sig.args[1], types.float32)
                fn = ir.FunctionType(_I32, [_F32, _F32])
                asm = ir.InlineAsm(fn, f"cvt.rn.{ptx_type}x2.f32 $0, $1, $2;", "=r,f,f")
                return builder.call(asm, [fhi, flo])  # first source goes to the upper half

            return sig, codegen

        return _impl

    def _pack1(ptx_type: str):
        @intrinsic
        def _impl(typingctx, f):
            sig = types.uint32(f)

            def codegen(context, builder, sig, args):
                val = context.cast(builder, args[0], sig.args[0], types.float32)
                asm = ir.InlineAsm(
                    ir.FunctionType(_I16, [_F32]), f"cvt.rn.{ptx_type}.f32 $0, $1;", "=h,f"
                )
                return builder.zext(builder.call(asm, [val]), _I32)

            return sig, codegen

        return _impl

    pack2_f16 = _pack2("f16")
    pack2_bf16 = _pack2("bf16")
    pack1_f16 = _pack1("f16")
    pack1_bf16 = _pack1("bf16")

    @intrinsic
    def ex2(typingctx, x):
        """``2**x`` with ``ex2.approx.ftz.f32`` (``ex2(-inf) == +0``)."""
        sig = types.float32(x)

        def codegen(context, builder, sig, args):
            val = context.cast(builder, args[0], sig.args[0], types.float32)
            asm = ir.InlineAsm(ir.FunctionType(_F32, [_F32]), "ex2.approx.ftz.f32 $0, $1;", "=f,f")
            return builder.call(asm, [val])

        return sig, codegen

    @intrinsic
    def ld_cg2(typingctx, arr, idx):
        """``(arr[idx], arr[idx + 1])`` of a float32 array through L2 (``ld.global.cg.v2``).

        Volatile with a memory clobber: it must not move across the inter-CTA barrier.
        """
        ret = types.UniTuple(types.float32, 2)
        sig = ret(arr, idx)

        def codegen(context, builder, sig, args):
            aty, ity = sig.args
            p = _elem_ptr(context, builder, aty, args[0], ity, args[1])
            st = ir.LiteralStructType([_F32, _F32])
            asm = ir.InlineAsm(
                ir.FunctionType(st, [p.type]),
                "ld.global.cg.v2.f32 {$0, $1}, [$2];",
                "=f,=f,l,~{memory}",
                side_effect=True,
            )
            pair = builder.call(asm, [p])
            vals = [builder.extract_value(pair, 0), builder.extract_value(pair, 1)]
            return context.make_tuple(builder, ret, vals)

        return sig, codegen

    @intrinsic
    def st_cg2(typingctx, arr, idx, a, b):
        """``arr[idx], arr[idx + 1] = a, b`` through L2 (``st.global.cg.v2.f32``)."""
        sig = types.void(arr, idx, a, b)

        def codegen(context, builder, sig, args):
            aty, ity, at, bt = sig.args
            p = _elem_ptr(context, builder, aty, args[0], ity, args[1])
            fa = context.cast(builder, args[2], at, types.float32)
            fb = context.cast(builder, args[3], bt, types.float32)
            asm = ir.InlineAsm(
                ir.FunctionType(ir.VoidType(), [p.type, _F32, _F32]),
                "st.global.cg.v2.f32 [$0], {$1, $2};",
                "l,f,f,~{memory}",
                side_effect=True,
            )
            builder.call(asm, [p, fa, fb])
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def ld_volatile_i32(typingctx, arr, idx):
        """``arr[idx]`` of an int32 array, re-read from memory on every call (spin loops)."""
        sig = types.int32(arr, idx)

        def codegen(context, builder, sig, args):
            aty, ity = sig.args
            p = _elem_ptr(context, builder, aty, args[0], ity, args[1])
            asm = ir.InlineAsm(
                ir.FunctionType(_I32, [p.type]),
                "ld.volatile.global.u32 $0, [$1];",
                "=r,l,~{memory}",
                side_effect=True,
            )
            return builder.call(asm, [p])

        return sig, codegen

    fmaxf = libdevice.fmaxf  # max.f32: NaN-ignoring, as CUDA's fmaxf

    @device
    def warp_sum(v, xch, tid):
        """Sum over the warp by xor butterfly; every lane gets the bitwise same value."""
        v += cuda.shfl_xor_sync(FULL_MASK, v, 16)
        v += cuda.shfl_xor_sync(FULL_MASK, v, 8)
        v += cuda.shfl_xor_sync(FULL_MASK, v, 4)
        v += cuda.shfl_xor_sync(FULL_MASK, v, 2)
        v += cuda.shfl_xor_sync(FULL_MASK, v, 1)
        return v

    @device
    def warp_max(v, xch, tid):
        """fmaxf over the warp by xor butterfly."""
        v = fmaxf(v, cuda.shfl_xor_sync(FULL_MASK, v, 16))
        v = fmaxf(v, cuda.shfl_xor_sync(FULL_MASK, v, 8))
        v = fmaxf(v, cuda.shfl_xor_sync(FULL_MASK, v, 4))
        v = fmaxf(v, cuda.shfl_xor_sync(FULL_MASK, v, 2))
        v = fmaxf(v, cuda.shfl_xor_sync(FULL_MASK, v, 1))
        return v

    @device
    def warp_any(p, xch, tid):
        """1 when ``p`` is nonzero in any lane of the warp, else 0."""
        return 1 if cuda.any_sync(FULL_MASK, p != 0) else 0

else:  # Numba's CUDA simulator: the same operations in Python.

    def _bits(x) -> int:
        a = np.asarray(x)
        if a.dtype.kind == "f":
            return int(a.view(np.uint16 if a.itemsize == 2 else np.uint32))
        return int(a)

    def _from_bits(bits: int, dtype: np.dtype):
        if dtype.kind == "f":
            utype = np.uint16 if dtype.itemsize == 2 else np.uint32
            return np.array(bits, dtype=utype).view(dtype)[()]
        return dtype.type(bits)

    @functools.cache
    def ld_words(nbytes: int):
        nwords = max(1, nbytes // 4)

        def _ld_words(w, i, arr, off):
            size = arr.dtype.itemsize
            acc = 0
            for e in range(nbytes // size):
                acc |= _bits(arr[off + e]) << (8 * size * e)
            for q in range(nwords):
                w[i + q] = (acc >> (32 * q)) & 0xFFFFFFFF

        return _ld_words

    @functools.cache
    def st_words(nbytes: int):
        nwords = max(1, nbytes // 4)

        def _st_words(arr, off, w, i):
            dtype = arr.dtype
            size = dtype.itemsize
            acc = 0
            for q in range(nwords):
                acc |= int(w[i + q]) << (32 * q)
            for e in range(nbytes // size):
                arr[off + e] = _from_bits((acc >> (8 * size * e)) & ((1 << (8 * size)) - 1), dtype)

        return _st_words

    def ld_bits(arr, off):
        return np.uint32(_bits(arr[off]))

    def st_bits(arr, off, bits):
        size = arr.dtype.itemsize
        arr[off] = _from_bits(int(bits) & ((1 << (8 * size)) - 1), arr.dtype)

    def u32_as_f32(w):
        return np.array(int(w) & 0xFFFFFFFF, dtype=np.uint32).view(np.float32)[()]

    def f32_as_u32(f):
        return np.uint32(_bits(np.float32(f)))

    def f16_lo(w):
        return np.float32(_from_bits(int(w) & 0xFFFF, np.dtype(np.float16)))

    def f16_hi(w):
        return np.float32(_from_bits((int(w) >> 16) & 0xFFFF, np.dtype(np.float16)))

    def pack1_f16(f):
        return np.uint32(_bits(np.float16(np.float32(f))))

    def pack1_bf16(f):
        u = _bits(np.float32(f))
        if (u & 0x7FFFFFFF) > 0x7F800000:  # NaN: keep it a (quiet) NaN
            return np.uint32(0x7FFF)
        return np.uint32(((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF)

    def pack2_f16(lo, hi):
        return np.uint32(int(pack1_f16(lo)) | (int(pack1_f16(hi)) << 16))

    def pack2_bf16(lo, hi):
        return np.uint32(int(pack1_bf16(lo)) | (int(pack1_bf16(hi)) << 16))

    def ex2(x):
        with np.errstate(over="ignore", invalid="ignore"):
            return np.float32(np.exp2(np.float32(x)))

    def fmaxf(a, b):
        a, b = np.float32(a), np.float32(b)
        if a != a:
            return b
        if b != b:
            return a
        return a if a >= b else b

    def ld_cg2(arr, idx):
        return np.float32(arr[idx]), np.float32(arr[idx + 1])

    def st_cg2(arr, idx, a, b):
        arr[idx] = a
        arr[idx + 1] = b

    def ld_volatile_i32(arr, idx):
        return arr[idx]

    @device
    def _shfl_xor(v, lane_mask, xch, tid):
        cuda.syncthreads()  # the previous exchange has been read by everyone
        xch[tid] = v
        cuda.syncthreads()
        return xch[tid ^ lane_mask]

    @device
    def warp_sum(v, xch, tid):
        for o in (16, 8, 4, 2, 1):
            v = np.float32(v + _shfl_xor(v, o, xch, tid))
        return v

    @device
    def warp_max(v, xch, tid):
        for o in (16, 8, 4, 2, 1):
            v = fmaxf(v, _shfl_xor(v, o, xch, tid))
        return v

    @device
    def warp_any(p, xch, tid):
        f = np.float32(1.0 if p != 0 else 0.0)
        for o in (16, 8, 4, 2, 1):
            f = max(f, _shfl_xor(f, o, xch, tid))
        return 1 if f != 0 else 0


@device
def inter_cta_barrier(counter, idx, target):
    """Arrival barrier of the CTAs sharing a row (docs/design.md); every thread must enter.

    ``counter[idx]`` is zeroed before the launch; at its k-th use each CTA adds 1 and waits for
    ``target = k * ctas_per_row`` arrivals.
    """
    cuda.syncthreads()  # this CTA's stores happen before thread 0's release fence
    if cuda.threadIdx.x == 0:
        cuda.threadfence()
        cuda.atomic.add(counter, idx, 1)
        while ld_volatile_i32(counter, idx) < target:
            pass
        cuda.threadfence()
    cuda.syncthreads()
