"""Device building blocks of the Numba row kernels (softmax; meant to be shared with the norms).

Everything here mirrors ``backends/nvrtc/norms.cuh`` so both backends compute the same bits:

* vectors move as raw 32-bit words: ``ld_words(nbytes)`` / ``st_words(nbytes)`` are one aligned
  2/4/8/16-byte access (16 bytes: ``ld.global.v4.u32``); a row's partial last vector moves
  element by element (``ld_partial`` / ``st_partial``);
* ``unpack(dtype, ne)`` / ``pack(dtype, ne)`` convert a vector between words and fp32: bf16
  widening is a shift or a mask, fp16 widening ``cvt.f32.f16``, narrowing
  ``cvt.rn.{bf16,f16}x2.f32`` / ``cvt.rn.{bf16,f16}.f32`` (inline PTX, sm_80+);
* ``ex2`` (``ex2.approx.ftz.f32``), ``rcp`` (``rcp.approx.ftz.f32``), ``fmaxf`` (``max.f32``);
* warp xor-butterfly reductions, uncached (``.cg``) accesses of the inter-CTA statistics and
  the inter-CTA arrival barrier.

On a GPU every name is a Numba ``@intrinsic``: its LLVM IR / inline PTX is emitted straight into
the caller, so the kernels' local arrays stay in registers and compiling costs Numba one typing
step per call site (Numba device functions would be typed, inlined and lowered again at every
call, and without a GPU they cannot be compiled at all). Under Numba's CUDA simulator (no warp
shuffles, no intrinsics) the same names are Python functions giving the same results; warp
shuffles are emulated with a per-thread shared-memory slot (``xch``: one float32 per thread of
the block, unused on a GPU) and ``syncthreads``, so every thread of a block must call the
reductions, as the row kernels do anyway.

Memory arguments are raw pointers (``CPointer``, how the kernels take global memory) or 1-D
arrays (local and shared arrays; everything under the simulator); ``arr, off`` addresses
``arr[off]`` without bounds or wraparound handling (offsets are non-negative by construction).
Vector accesses need the address aligned to their size, which the planner's vector width
guarantees.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import config, cuda

__all__ = [
    "MASKED_SCORE",
    "SIM",
    "PAIR_ALIGN",
    "cluster_ops",
    "st_cluster2",
    "copy_words",
    "cta_merge",
    "cta_sum",
    "dependent_launch",
    "div32",
    "dot_acc",
    "ex2",
    "exp_diff",
    "exp_sum",
    "fmaxf",
    "inter_cta_barrier",
    "ld_cg2",
    "ld_partial",
    "ld_volatile_i32",
    "ld_words",
    "lg2",
    "mask_from",
    "pack",
    "rcp",
    "rem32",
    "row_barrier",
    "row_ptr",
    "softmax_dx",
    "softmax_out",
    "softmax_prep",
    "softmax_probs",
    "st_cg2",
    "st_partial",
    "st_words",
    "unpack",
    "warp_any",
    "warp_max",
    "warp_sum",
    "words_per_vector",
]

SIM: bool = bool(config.ENABLE_CUDASIM)
# Alignment of the float32 shared arrays that take st_cluster2's pair stores: Numba aligns them
# to 4 bytes otherwise. The simulator rejects any alignment (and stores one float at a time).
PAIR_ALIGN: int | None = None if SIM else 8

_SIZES = {"fp32": 4, "fp16": 2, "bf16": 2, "uint8": 1}
_LOG2E = np.float32(1.4426950408889634)
_ONES = 0x01010101  # four mask bytes, each masked
_HIGH = 0x80808080
# TE gives masked positions the score -10000 after scaling (softmax.cu's kMaskedScore).
MASKED_SCORE = np.float32(-10000.0)
# softmax.cu's kFastBase / kDirectBase: row maxima up to these magnitudes take the one-FFMA
# exponent (exp_sum) and the streaming second pass's one-FFMA output (softmax_probs); a scale
# above _DIRECT_SCALE keeps the latter off (scale * log2e must stay finite).
_FAST_BASE = np.float32(2.0**20)
_DIRECT_BASE = np.float32(64.0)
_DIRECT_SCALE = np.float32(1e38)


def words_per_vector(dtype: str, ne: int) -> int:
    """uint32 words holding ``ne`` elements of ``dtype`` (a 1- or 2-byte vector takes one)."""
    return max(1, ne * _SIZES[dtype] // 4)


if not SIM:
    from llvmlite import ir
    from numba.cuda import cgutils, types
    from numba.cuda.extending import intrinsic

    _I8, _I16, _I32, _I64 = ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
    _F32 = ir.FloatType()
    _VOID = ir.VoidType()
    _INT_OF_BYTES = {1: _I8, 2: _I16, 4: _I32}
    _ZERO64 = ir.Constant(_I64, 0)

    def _c32(v: int):
        return ir.Constant(_I32, v)

    def _ptr(context, builder, arrty, arr, offty, off, extra: int = 0):
        """Pointer to ``arr[off + extra]`` (a raw pointer or a 1-D array; no wraparound)."""
        if isinstance(arrty, types.CPointer):
            data = arr
        else:
            data = context.make_array(arrty)(context, builder, value=arr).data
        p = builder.gep(data, [context.cast(builder, off, offty, types.int64)])
        return builder.gep(p, [ir.Constant(_I64, extra)]) if extra else p

    def _u32(context, builder, ty, val):
        return context.cast(builder, val, ty, types.uint32)

    def _f32(context, builder, ty, val):
        return context.cast(builder, val, ty, types.float32)

    def _asm(builder, ret, args, text: str, constraints: str, side_effect: bool = False):
        fnty = ir.FunctionType(ret, [a.type for a in args])
        return builder.call(ir.InlineAsm(fnty, text, constraints, side_effect=side_effect), args)

    def _llvm_fn(builder, name: str, ret, argtys):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ret, argtys), name)
        return fn

    def _ex2(builder, x):
        """``ex2.approx.ftz.f32`` (``2**x``; ``ex2(-inf) == +0``), visible to NVVM's optimizer."""
        return builder.call(_llvm_fn(builder, "llvm.nvvm.ex2.approx.ftz.f", _F32, [_F32]), [x])

    def _exp_diff(builder, a, b):
        """``exp(a - b)`` as ``ex2((a - b) * log2e)`` (softmax.cu's ``exp_diff``)."""
        d = builder.fmul(builder.fsub(a, b), ir.Constant(_F32, float(_LOG2E)))
        return _ex2(builder, d)

    def _mul_rn(builder, a, b):
        """``a * b`` rounded to fp32 (``mul.rn.f32``): never contracted into an FFMA with a later
        subtraction of the rounded maximum (softmax.cu's ``scaled``)."""
        return _asm(builder, _F32, [a, b], "mul.rn.f32 $0, $1, $2;", "=f,f,f")

    def _counted_loop(builder, n, body, unroll: int = 4):
        """``for i in range(n): body(i)`` (i64), unrolled at most ``unroll`` times.

        Without the hint NVVM unrolls short runtime loops 16 times and ptxas then holds the
        in-flight loads in registers; 4 keeps four L2 round trips overlapped at a small cost
        (the CUDA C kernels use 1: same results, only the overlap differs).
        """
        pre = builder.block
        header = builder.append_basic_block("loop.header")
        body_bb = builder.append_basic_block("loop.body")
        exit_bb = builder.append_basic_block("loop.exit")
        builder.branch(header)
        builder.position_at_end(header)
        i = builder.phi(_I64)
        i.add_incoming(ir.Constant(_I64, 0), pre)
        builder.cbranch(builder.icmp_signed("<", i, n), body_bb, exit_bb)
        builder.position_at_end(body_bb)
        body(i)
        i.add_incoming(builder.add(i, ir.Constant(_I64, 1)), builder.block)
        latch = builder.branch(header)
        module = builder.module
        count = module.add_metadata(
            [ir.MetaDataString(module, "llvm.loop.unroll.count"), _c32(unroll)]
        )
        loop_id = module.add_metadata([ir.MetaDataString(module, f"loop.{id(latch)}"), count])
        loop_id.operands = (loop_id, count)  # a loop ID refers to itself
        latch.set_metadata("llvm.loop", loop_id)
        builder.position_at_end(exit_bb)

    def _fmax(builder, a, b):
        """CUDA's fmaxf (``max.f32``; NaN-ignoring), visible to NVVM's optimizer."""
        return builder.call(_llvm_fn(builder, "llvm.maxnum.f32", _F32, [_F32, _F32]), [a, b])

    # ---- vector and element access --------------------------------------------------------

    @intrinsic
    def row_ptr(typingctx, ptr, off):
        """``ptr + off`` for a raw pointer, opaque to NVVM's loop optimizer.

        Rows advance by a run-time stride each trip of the row loop; left visible, the address
        of every vector access becomes its own 64-bit induction variable (strength reduction)
        and a dozen of them stay live across the loop. One opaque row pointer a trip is what
        the CUDA C kernels compute (``x + row * x_stride``).
        """
        if not isinstance(ptr, types.CPointer):
            return None

        def codegen(context, builder, sig, args):
            p = _ptr(context, builder, sig.args[0], args[0], sig.args[1], args[1])
            text = "cvta.to.global.u64 $0, $1;"
            addr = _asm(builder, _I64, [builder.ptrtoint(p, _I64)], text, "=l,l")
            # a global-space pointer cast back to generic: NVVM still emits ld/st.global
            gp = builder.inttoptr(addr, p.type.pointee.as_pointer(1))
            return builder.addrspacecast(gp, p.type)

        return ptr(ptr, off), codegen

    @functools.cache
    def ld_words(nbytes: int, cs: bool = False):
        """``ld_words(w, i, arr, off)``: ``nbytes`` bytes at ``arr[off]`` -> words ``w[i:]``.

        ``cs``: an evict-first load (``ld.global.cs``, 4-16 bytes; NVRTC's ``load_cs``)."""
        nwords = max(1, nbytes // 4)

        @intrinsic
        def _ld_words(typingctx, w, i, arr, off):
            def codegen(context, builder, sig, args):
                wty, ity, aty, oty = sig.args
                p = _ptr(context, builder, aty, args[2], oty, args[3])
                if cs and nbytes >= 4:
                    regs = ", ".join(f"${q}" for q in range(nwords))
                    vec = f".v{nwords}" if nwords > 1 else ""
                    text = f"ld.global.cs{vec}.u32 {{{regs}}}, [${nwords}];"
                    if nwords == 1:
                        text = "ld.global.cs.u32 $0, [$1];"
                    ret = ir.LiteralStructType([_I32] * nwords) if nwords > 1 else _I32
                    cons = ",".join(["=r"] * nwords + ["l"])
                    val = _asm(builder, ret, [builder.ptrtoint(p, _I64)], text, cons, True)
                    words = [val]  # one word: the asm's value is the word itself
                    if nwords > 1:
                        words = [builder.extract_value(val, q) for q in range(nwords)]
                elif nbytes >= 8:
                    vt = ir.VectorType(_I32, nwords)
                    vec = builder.load(builder.bitcast(p, vt.as_pointer()), align=nbytes)
                    words = [builder.extract_element(vec, _c32(q)) for q in range(nwords)]
                else:
                    it = _INT_OF_BYTES[nbytes]
                    val = builder.load(builder.bitcast(p, it.as_pointer()), align=nbytes)
                    words = [val if nbytes == 4 else builder.zext(val, _I32)]
                for q, word in enumerate(words):
                    builder.store(word, _ptr(context, builder, wty, args[0], ity, args[1], q))
                return context.get_dummy_value()

            return types.void(w, i, arr, off), codegen

        return _ld_words

    @functools.cache
    def st_words(nbytes: int, cs: bool = False):
        """``st_words(arr, off, w, i)``: words ``w[i:]`` -> ``nbytes`` bytes at ``arr[off]``.

        ``cs``: an evict-first store (``st.global.cs``, 4-16 bytes; NVRTC's ``store_cs``)."""
        nwords = max(1, nbytes // 4)

        @intrinsic
        def _st_words(typingctx, arr, off, w, i):
            def codegen(context, builder, sig, args):
                aty, oty, wty, ity = sig.args
                words = [
                    builder.load(_ptr(context, builder, wty, args[2], ity, args[3], q))
                    for q in range(nwords)
                ]
                p = _ptr(context, builder, aty, args[0], oty, args[1])
                if cs and nbytes >= 4:
                    regs = ", ".join(f"${q + 1}" for q in range(nwords))
                    vec = f".v{nwords}" if nwords > 1 else ""
                    body = f"{{{regs}}}" if nwords > 1 else "$1"
                    text = f"st.global.cs{vec}.u32 [$0], {body};"
                    cons = ",".join(["l"] + ["r"] * nwords + ["~{memory}"])
                    _asm(builder, _VOID, [builder.ptrtoint(p, _I64)] + words, text, cons, True)
                elif nbytes >= 8:
                    vt = ir.VectorType(_I32, nwords)
                    vec = ir.Constant(vt, ir.Undefined)
                    for q, word in enumerate(words):
                        vec = builder.insert_element(vec, word, _c32(q))
                    builder.store(vec, builder.bitcast(p, vt.as_pointer()), align=nbytes)
                else:
                    it = _INT_OF_BYTES[nbytes]
                    val = words[0] if nbytes == 4 else builder.trunc(words[0], it)
                    builder.store(val, builder.bitcast(p, it.as_pointer()), align=nbytes)
                return context.get_dummy_value()

            return types.void(arr, off, w, i), codegen

        return _st_words

    @functools.cache
    def ld_partial(ne: int):
        """``ld_partial(w, arr, off, n)``: the first ``n < ne`` elements at ``arr[off]``, one by
        one, into words ``w[0:]`` (zeros after; NVRTC's ``load_partial``)."""

        @intrinsic
        def _ld_partial(typingctx, w, arr, off, n):
            def codegen(context, builder, sig, args):
                wty, aty, oty, nty = sig.args
                size = aty.dtype.bitwidth // 8
                per_word = 4 // size
                nwords = max(1, ne * size // 4)
                wp = [
                    _ptr(context, builder, wty, args[0], types.int64, ir.Constant(_I64, q))
                    for q in range(nwords)
                ]
                for q in range(nwords):
                    builder.store(_c32(0), wp[q])
                nv = context.cast(builder, args[3], nty, types.int64)
                it = _INT_OF_BYTES[size]
                for j in range(ne - 1):
                    with builder.if_then(builder.icmp_signed("<", ir.Constant(_I64, j), nv)):
                        p = _ptr(context, builder, aty, args[1], oty, args[2], j)
                        bits = builder.load(builder.bitcast(p, it.as_pointer()))
                        bits = bits if size == 4 else builder.zext(bits, _I32)
                        shift = (j % per_word) * 8 * size
                        if shift:
                            bits = builder.shl(bits, _c32(shift))
                        dst = wp[j // per_word]
                        builder.store(builder.or_(builder.load(dst), bits), dst)
                return context.get_dummy_value()

            return types.void(w, arr, off, n), codegen

        return _ld_partial

    @functools.cache
    def st_partial(ne: int):
        """``st_partial(arr, off, w, n)``: the first ``n < ne`` elements of words ``w[0:]``."""

        @intrinsic
        def _st_partial(typingctx, arr, off, w, n):
            def codegen(context, builder, sig, args):
                aty, oty, wty, nty = sig.args
                size = aty.dtype.bitwidth // 8
                per_word = 4 // size
                nv = context.cast(builder, args[3], nty, types.int64)
                it = _INT_OF_BYTES[size]
                for j in range(ne - 1):
                    with builder.if_then(builder.icmp_signed("<", ir.Constant(_I64, j), nv)):
                        q = ir.Constant(_I64, j // per_word)
                        src = _ptr(context, builder, wty, args[2], types.int64, q)
                        bits = builder.load(src)
                        shift = (j % per_word) * 8 * size
                        if shift:
                            bits = builder.lshr(bits, _c32(shift))
                        if size != 4:
                            bits = builder.trunc(bits, it)
                        p = _ptr(context, builder, aty, args[0], oty, args[1], j)
                        builder.store(bits, builder.bitcast(p, it.as_pointer()))
                return context.get_dummy_value()

            return types.void(arr, off, w, n), codegen

        return _st_partial

    # ---- conversions ------------------------------------------------------------------------

    def _lo_to_f32(builder, dtype: str, word):
        if dtype == "bf16":  # bf16 is the upper half of an fp32: widening is a shift
            return builder.bitcast(builder.shl(word, _c32(16)), _F32)
        half = builder.bitcast(builder.trunc(word, _I16), ir.HalfType())
        return builder.fpext(half, _F32)  # cvt.f32.f16

    def _hi_to_f32(builder, dtype: str, word):
        if dtype == "bf16":
            return builder.bitcast(builder.and_(word, _c32(0xFFFF0000)), _F32)
        return _lo_to_f32(builder, dtype, builder.lshr(word, _c32(16)))

    @functools.cache
    def unpack(dtype: str, ne: int, again: bool = False):
        """``unpack(f, k, w, i)``: ``f[k:k+ne]`` = the ``ne`` elements held in words ``w[i:]``.

        ``again=True`` is for converting the same words a second time, ``unpack(f, k, w, i,
        zero)`` with ``zero`` a value that is always 0 but that no compiler can know (e.g.
        ``cols >> 31``): the words are XORed with it, so neither NVVM nor ptxas can reuse the
        first conversion, which would keep the fp32 values live in between instead of the raw
        words (twice the registers: an empty ``mov`` stopped NVVM but ptxas merged the two
        conversions, 229 registers against NVRTC's 120 at the fp16 16384-key backward).
        """

        def _codegen(context, builder, sig, args):
            fty, kty, wty, ity = sig.args[:4]
            zero = context.cast(builder, args[4], sig.args[4], types.int32) if again else None

            def word(q):
                val = builder.load(_ptr(context, builder, wty, args[2], ity, args[3], q))
                return builder.xor(val, zero) if again else val

            for j in range(ne):
                if dtype == "fp32":
                    val = builder.bitcast(word(j), _F32)
                elif j % 2 == 0:
                    val = _lo_to_f32(builder, dtype, word(j // 2))
                else:
                    val = _hi_to_f32(builder, dtype, word(j // 2))
                builder.store(val, _ptr(context, builder, fty, args[0], kty, args[1], j))
            return context.get_dummy_value()

        if again:

            @intrinsic
            def _unpack(typingctx, f, k, w, i, zero):
                return types.void(f, k, w, i, zero), _codegen

        else:

            @intrinsic
            def _unpack(typingctx, f, k, w, i):
                return types.void(f, k, w, i), _codegen

        return _unpack

    @functools.cache
    def pack(dtype: str, ne: int):
        """``pack(w, i, f, k)``: words ``w[i:]`` = ``f[k:k+ne]`` rounded to nearest even."""
        ptx = {"fp16": "f16", "bf16": "bf16"}.get(dtype)

        @intrinsic
        def _pack(typingctx, w, i, f, k):
            def codegen(context, builder, sig, args):
                wty, ity, fty, kty = sig.args

                def val(j):
                    return builder.load(_ptr(context, builder, fty, args[2], kty, args[3], j))

                def put(q, word):
                    builder.store(word, _ptr(context, builder, wty, args[0], ity, args[1], q))

                if dtype == "fp32":
                    for j in range(ne):
                        put(j, builder.bitcast(val(j), _I32))
                elif ne == 1:
                    h = _asm(builder, _I16, [val(0)], f"cvt.rn.{ptx}.f32 $0, $1;", "=h,f")
                    put(0, builder.zext(h, _I32))
                else:
                    for q in range(ne // 2):  # the first source goes to the upper half
                        text = f"cvt.rn.{ptx}x2.f32 $0, $1, $2;"
                        put(q, _asm(builder, _I32, [val(2 * q + 1), val(2 * q)], text, "=r,f,f"))
                return context.get_dummy_value()

            return types.void(w, i, f, k), codegen

        return _pack

    @functools.cache
    def copy_words(n: int):
        """``copy_words(dst, i, src, j)``: ``dst[i:i+n] = src[j:j+n]`` (small local arrays)."""

        @intrinsic
        def _copy_words(typingctx, dst, i, src, j):
            def codegen(context, builder, sig, args):
                dty, ity, sty, jty = sig.args
                for q in range(n):
                    val = builder.load(_ptr(context, builder, sty, args[2], jty, args[3], q))
                    builder.store(val, _ptr(context, builder, dty, args[0], ity, args[1], q))
                return context.get_dummy_value()

            return types.void(dst, i, src, j), codegen

        return _copy_words

    # ---- softmax element steps (one vector or one row part per call) ----------------------

    @functools.cache
    def mask_from(ne: int):
        """``mask_from(w, n)``: bytes ``j >= n`` (``0 <= n < ne``) of the ``ne`` mask bytes in words
        ``w`` set to 1 (masked): columns outside the row (NVRTC's ``MaskBytes::mask_from``)."""
        nwords = words_per_vector("uint8", ne)

        @intrinsic
        def _mask_from(typingctx, w, n):
            def codegen(context, builder, sig, args):
                wty, nty = sig.args
                nv = context.cast(builder, args[1], nty, types.int32)
                for q in range(nwords):
                    k = builder.sub(nv, _c32(4 * q))  # this word's bytes inside the row
                    part = builder.shl(_c32(_ONES), builder.and_(builder.shl(k, _c32(3)), _c32(31)))
                    low = builder.icmp_signed("<", k, _c32(4))
                    fill = builder.select(
                        builder.icmp_signed("<=", k, _c32(0)),
                        _c32(_ONES),
                        builder.select(low, part, _c32(0)),
                    )
                    p = _ptr(context, builder, wty, args[0], types.int64, _ZERO64, q)
                    builder.store(builder.or_(builder.load(p), fill), p)
                return context.get_dummy_value()

            return types.void(w, n), codegen

        return _mask_from

    @functools.cache
    def softmax_prep(ne: int, masked: bool):
        """``softmax_prep(v, k, mb, n_in, scale, m, keep) -> (m, keep)``: one vector of scores.

        For ``j < ne``: ``t = v[k+j] * scale`` (rounded, never contracted); masked variant: a
        nonzero mask byte ``j`` of words ``mb`` gives ``t = MASKED_SCORE``; columns ``j >= n_in``
        get ``-inf``; ``m = fmaxf(m, t)`` in order. ``keep`` becomes 1 if a byte of ``mb`` is
        zero (columns outside the row must read as masked, see ``mask_from``): tested a word at a
        time, as a per-column test took two predicates a column that ptxas packed into register
        bits.
        """
        ret = types.Tuple((types.float32, types.int32))
        nwords = words_per_vector("uint8", ne)
        # (w - 0x01..) & ~w & 0x80.. is nonzero iff a byte of w is zero; borrows run upwards
        # only, so for ne < 4 the (zero) bytes above ne are cut off afterwards
        high = _HIGH & ((1 << (8 * ne)) - 1 if ne < 4 else 0xFFFFFFFF)

        @intrinsic
        def _prep(typingctx, v, k, mb, n_in, scale, m, keep):
            def codegen(context, builder, sig, args):
                vty, kty, mty, nty, sty, mmty, kpty = sig.args
                # n_in = lim - c lies well inside int32 (both are column indices)
                n = context.cast(builder, args[3], nty, types.int32)
                ks = _f32(context, builder, sty, args[4])
                mx = _f32(context, builder, mmty, args[5])
                kp = context.cast(builder, args[6], kpty, types.int32)
                neg_inf = ir.Constant(_F32, float("-inf"))
                score = ir.Constant(_F32, float(MASKED_SCORE))
                words = []
                if masked:
                    words = [
                        builder.load(_ptr(context, builder, mty, args[2], types.int64, _ZERO64, q))
                        for q in range(nwords)
                    ]
                for j in range(ne):
                    p = _ptr(context, builder, vty, args[0], kty, args[1], j)
                    t = _mul_rn(builder, builder.load(p), ks)
                    inside = builder.icmp_signed(">", n, _c32(j))
                    if masked:
                        byte = builder.and_(
                            builder.lshr(words[j // 4], _c32(8 * (j % 4))), _c32(0xFF)
                        )
                        t = builder.select(builder.icmp_unsigned("!=", byte, _c32(0)), score, t)
                    t = builder.select(inside, t, neg_inf)
                    builder.store(t, p)
                    mx = _fmax(builder, mx, t)
                if masked:
                    z = _c32(0)
                    for w in words:
                        zw = builder.and_(builder.sub(w, _c32(_ONES)), builder.not_(w))
                        z = builder.or_(z, builder.and_(zw, _c32(high)))
                    kp = builder.or_(
                        kp, builder.zext(builder.icmp_unsigned("!=", z, _c32(0)), _I32)
                    )
                return context.make_tuple(builder, ret, [mx, kp])

            return ret(v, k, mb, n_in, scale, m, keep), codegen

        return _prep

    @functools.cache
    def exp_sum(n: int):
        """``exp_sum(v, base) -> (s, unit)``: ``v[k] = exp(v[k] - base) * 2**rho`` for ``k < n``
        and their sum in order; ``unit = 2**-rho`` makes the sum one of ``exp(v - base)`` terms
        (softmax.cu's ``exp_terms``: one FFMA a column, ``v * log2e - c`` with ``c = base *
        log2e`` rounded, where ``|base| <= 2**20``; ``rho`` = 0 and ``exp_diff`` beyond)."""
        ret = types.Tuple((types.float32, types.float32))

        @intrinsic
        def _exp_sum(typingctx, v, base):
            def codegen(context, builder, sig, args):
                vty, bty = sig.args
                b = _f32(context, builder, bty, args[1])
                log2e = ir.Constant(_F32, float(_LOG2E))
                fabs = builder.call(_llvm_fn(builder, "llvm.nvvm.fabs.f", _F32, [_F32]), [b])
                fast = builder.fcmp_ordered("<=", fabs, ir.Constant(_F32, float(_FAST_BASE)))

                def terms(exp_of):
                    s = ir.Constant(_F32, 0.0)
                    for k in range(n):
                        p = _ptr(context, builder, vty, args[0], types.int64, _ZERO64, k)
                        e = exp_of(builder.load(p))
                        builder.store(e, p)
                        s = builder.fadd(s, e)
                    return s

                with builder.if_else(fast) as (then, otherwise):
                    with then:
                        c = _mul_rn(builder, b, log2e)
                        neg_c = builder.fsub(ir.Constant(_F32, -0.0), c)
                        rho = builder.fma(b, log2e, neg_c)
                        unit_f = _ex2(builder, builder.fsub(ir.Constant(_F32, -0.0), rho))
                        s_f = terms(lambda x: _ex2(builder, builder.fma(x, log2e, neg_c)))
                        bb_f = builder.basic_block
                    with otherwise:
                        s_x = terms(lambda x: _exp_diff(builder, x, b))
                        bb_x = builder.basic_block
                s = builder.phi(_F32)
                s.add_incoming(s_f, bb_f)
                s.add_incoming(s_x, bb_x)
                unit = builder.phi(_F32)
                unit.add_incoming(unit_f, bb_f)
                unit.add_incoming(ir.Constant(_F32, 1.0), bb_x)
                return context.make_tuple(builder, ret, [s, unit])

            return ret(v, base), codegen

        return _exp_sum

    @functools.cache
    def softmax_probs(ne: int, masked: bool):
        """``softmax_probs(v, k, mb, n_in, scale, base, lse2)``: one vector of the streaming
        forward's output, ``v[k+j] = exp(v[k+j] * scale - base) / 2**lse2`` (``base`` the row's
        maximum, ``lse2`` log2 of its sum: the division in the exponent); masked variant: a
        nonzero mask byte ``j`` gives ``MASKED_SCORE`` for the score; columns ``j >= n_in``
        exactly 0. softmax.cu's ``RowExp`` and ``vector_probs``: where ``|base| <= 64`` one FFMA
        a column (``x * (scale * log2e) - (base * log2e + lse2)``), else the score rounded as
        in ``softmax_prep`` and the maximum subtracted first."""
        nwords = words_per_vector("uint8", ne)

        @intrinsic
        def _probs(typingctx, v, k, mb, n_in, scale, base, lse2):
            def codegen(context, builder, sig, args):
                vty, kty, mty, nty, sty, bty, lty = sig.args
                n = context.cast(builder, args[3], nty, types.int32)
                ks = _f32(context, builder, sty, args[4])
                b = _f32(context, builder, bty, args[5])
                lse2 = _f32(context, builder, lty, args[6])
                neg_lse2 = builder.fsub(ir.Constant(_F32, -0.0), lse2)
                log2e = ir.Constant(_F32, float(_LOG2E))
                neg_inf = ir.Constant(_F32, float("-inf"))
                kd = builder.fmul(ks, log2e)
                neg_off = builder.fsub(ir.Constant(_F32, -0.0), builder.fma(b, log2e, lse2))
                score = builder.fma(
                    builder.fsub(ir.Constant(_F32, float(MASKED_SCORE)), b), log2e, neg_lse2
                )
                fabs = _llvm_fn(builder, "llvm.nvvm.fabs.f", _F32, [_F32])
                direct = builder.and_(
                    builder.fcmp_ordered(
                        "<=", builder.call(fabs, [b]), ir.Constant(_F32, float(_DIRECT_BASE))
                    ),
                    builder.fcmp_ordered(
                        "<=", builder.call(fabs, [ks]), ir.Constant(_F32, float(_DIRECT_SCALE))
                    ),
                )
                words = []
                if masked:
                    words = [
                        builder.load(_ptr(context, builder, mty, args[2], types.int64, _ZERO64, q))
                        for q in range(nwords)
                    ]

                def outputs(exponent):
                    for j in range(ne):
                        p = _ptr(context, builder, vty, args[0], kty, args[1], j)
                        t = exponent(builder.load(p))
                        if masked:
                            byte = builder.and_(
                                builder.lshr(words[j // 4], _c32(8 * (j % 4))), _c32(0xFF)
                            )
                            nz = builder.icmp_unsigned("!=", byte, _c32(0))
                            t = builder.select(nz, score, t)
                        t = builder.select(builder.icmp_signed(">", n, _c32(j)), t, neg_inf)
                        builder.store(_ex2(builder, t), p)

                with builder.if_else(direct) as (then, otherwise):
                    with then:
                        outputs(lambda x: builder.fma(x, kd, neg_off))
                    with otherwise:
                        outputs(
                            lambda x: builder.fma(
                                builder.fsub(_mul_rn(builder, x, ks), b), log2e, neg_lse2
                            )
                        )
                return context.get_dummy_value()

            return types.void(v, k, mb, n_in, scale, base, lse2), codegen

        return _probs

    @functools.cache
    def softmax_out(ne: int, causal: bool):
        """``softmax_out(v, k, factor, n_in)``: ``v[k+j] *= factor``; causal: a vector wholly
        past the limit (``n_in <= 0``) is 0 even where the factor is NaN (NVRTC's rule: a
        per-column test here reused prep's ``j < n_in`` predicates, which ptxas then kept
        across the reductions packed into register bits, two instructions a column)."""

        @intrinsic
        def _out(typingctx, v, k, factor, n_in):
            def codegen(context, builder, sig, args):
                vty, kty, fty, nty = sig.args
                fac = _f32(context, builder, fty, args[2])
                n = context.cast(builder, args[3], nty, types.int32)
                past = builder.icmp_signed("<=", n, _c32(0))
                for j in range(ne):
                    p = _ptr(context, builder, vty, args[0], kty, args[1], j)
                    f = builder.fmul(builder.load(p), fac)
                    if causal:
                        f = builder.select(past, ir.Constant(_F32, 0.0), f)
                    builder.store(f, p)
                return context.get_dummy_value()

            return types.void(v, k, factor, n_in), codegen

        return _out

    @functools.cache
    def dot_acc(ne: int):
        """``dot_acc(a, b, acc) -> acc + sum_j a[j] * b[j]`` (in order, one FMA each)."""

        @intrinsic
        def _dot(typingctx, a, b, acc):
            def codegen(context, builder, sig, args):
                aty, bty, cty = sig.args
                acc = _f32(context, builder, cty, args[2])
                zero = ir.Constant(_I64, 0)
                for j in range(ne):
                    va = builder.load(_ptr(context, builder, aty, args[0], types.int64, zero, j))
                    vb = builder.load(_ptr(context, builder, bty, args[1], types.int64, zero, j))
                    acc = builder.fadd(acc, builder.fmul(va, vb))  # NVVM contracts to fma
                return acc

            return types.float32(a, b, acc), codegen

        return _dot

    @functools.cache
    def softmax_dx(ne: int):
        """``softmax_dx(d, yv, scale, dot)``: ``d[j] = scale * yv[j] * (d[j] - dot)``."""

        @intrinsic
        def _dx(typingctx, d, yv, scale, dot):
            def codegen(context, builder, sig, args):
                dty, yty, sty, oty = sig.args
                sc = _f32(context, builder, sty, args[2])
                dt = _f32(context, builder, oty, args[3])
                zero = ir.Constant(_I64, 0)
                for j in range(ne):
                    pd = _ptr(context, builder, dty, args[0], types.int64, zero, j)
                    vy = builder.load(_ptr(context, builder, yty, args[1], types.int64, zero, j))
                    val = builder.fmul(builder.fmul(sc, vy), builder.fsub(builder.load(pd), dt))
                    builder.store(val, pd)
                return context.get_dummy_value()

            return types.void(d, yv, scale, dot), codegen

        return _dx

    @intrinsic
    def cta_merge(typingctx, stats, sb, ctas):
        """Merge the (max, signed sum) pairs of ``ctas`` CTAs at ``stats[sb:]``, in CTA order.

        Returns ``(gm, gs, any)``: ``gm = max m_c``, ``gs = sum |s_c| * exp(m_c - gm)``, ``any``
        = 1 when some ``s_c`` is not below 0 (the masked variant's "this CTA keeps something":
        +0 where its kept scores are all -inf, NaN in a NaN row). ``stats``
        a raw pointer (the scratch region: ``.cg`` loads through L2) or a shared array (the
        cluster's slots: plain loads).
        """
        ret = types.Tuple((types.float32, types.float32, types.int32))

        def codegen(context, builder, sig, args):
            aty, bty, cty = sig.args
            base = context.cast(builder, args[1], bty, types.int64)
            n = context.cast(builder, args[2], cty, types.int64)
            gm = cgutils.alloca_once_value(builder, ir.Constant(_F32, float("-inf")))
            gs = cgutils.alloca_once_value(builder, ir.Constant(_F32, 0.0))
            anyp = cgutils.alloca_once_value(builder, _c32(0))

            def pair(c):
                idx = builder.add(base, builder.mul(c, ir.Constant(_I64, 2)))
                p = _ptr(context, builder, aty, args[0], types.int64, idx)
                if not isinstance(aty, types.CPointer):  # this CTA's shared slots
                    q = builder.gep(p, [ir.Constant(_I64, 1)])
                    return builder.load(p), builder.load(q)
                st = ir.LiteralStructType([_F32, _F32])
                v = _asm(
                    builder,
                    st,
                    [p],
                    "{ .reg .u64 g; cvta.to.global.u64 g, $2; ld.global.cg.v2.f32 {$0, $1}, [g]; }",
                    "=f,=f,l,~{memory}",
                    side_effect=True,
                )
                return builder.extract_value(v, 0), builder.extract_value(v, 1)

            def max_step(c):
                pm, _ = pair(c)
                builder.store(_fmax(builder, builder.load(gm), pm), gm)

            _counted_loop(builder, n, max_step)
            g = builder.load(gm)

            def sum_step(c):
                pm, ps = pair(c)
                fabs = builder.call(_llvm_fn(builder, "llvm.nvvm.fabs.f", _F32, [_F32]), [ps])
                e = _exp_diff(builder, pm, g)
                builder.store(builder.fadd(builder.load(gs), builder.fmul(fabs, e)), gs)
                # not below 0 (softmax.cu's merge_max_sum: +0 and NaN keep)
                neg = builder.fcmp_ordered("<", ps, ir.Constant(_F32, 0.0))
                pos = builder.zext(builder.not_(neg), _I32)
                builder.store(builder.or_(builder.load(anyp), pos), anyp)

            _counted_loop(builder, n, sum_step)
            vals = [g, builder.load(gs), builder.load(anyp)]
            return context.make_tuple(builder, ret, vals)

        return ret(stats, sb, ctas), codegen

    @intrinsic
    def cta_sum(typingctx, stats, sb, ctas):
        """``sum_c stats[sb + 2c]`` over ``ctas`` CTAs, in CTA order (through L2)."""

        def codegen(context, builder, sig, args):
            aty, bty, cty = sig.args
            base = context.cast(builder, args[1], bty, types.int64)
            n = context.cast(builder, args[2], cty, types.int64)
            acc = cgutils.alloca_once_value(builder, ir.Constant(_F32, 0.0))

            def step(c):
                idx = builder.add(base, builder.mul(c, ir.Constant(_I64, 2)))
                p = _ptr(context, builder, aty, args[0], types.int64, idx)
                v = _asm(
                    builder,
                    _F32,
                    [p],
                    "{ .reg .u64 g; cvta.to.global.u64 g, $1; ld.global.cg.f32 $0, [g]; }",
                    "=f,l,~{memory}",
                    side_effect=True,
                )
                builder.store(builder.fadd(builder.load(acc), v), acc)

            _counted_loop(builder, n, step)
            return builder.load(acc)

        return types.float32(stats, sb, ctas), codegen

    # ---- arithmetic ---------------------------------------------------------------------------

    @intrinsic
    def ex2(typingctx, x):
        """``2**x`` with ``ex2.approx.ftz.f32`` (``ex2(-inf) == +0``)."""

        def codegen(context, builder, sig, args):
            v = _f32(context, builder, sig.args[0], args[0])
            return _ex2(builder, v)

        return types.float32(x), codegen

    def _binary(emit):
        """An fp32 intrinsic of two operands, ``emit(builder, a, b)``."""

        @intrinsic
        def _op(typingctx, a, b):
            def codegen(context, builder, sig, args):
                va = _f32(context, builder, sig.args[0], args[0])
                vb = _f32(context, builder, sig.args[1], args[1])
                return emit(builder, va, vb)

            return types.float32(a, b), codegen

        return _op

    exp_diff = _binary(_exp_diff)  # exp(a - b) as ex2((a - b) * log2e), softmax.cu's exp_diff
    # CUDA's fmaxf (max.f32: a NaN operand yields the other one)
    fmaxf = _binary(_fmax)

    def _mufu(instr: str):
        """An fp32 intrinsic of one PTX instruction ``instr $0, $1`` (one MUFU, as NVRTC's)."""

        @intrinsic
        def _op(typingctx, x):
            def codegen(context, builder, sig, args):
                v = _f32(context, builder, sig.args[0], args[0])
                return _asm(builder, _F32, [v], f"{instr} $0, $1;", "=f,f")

            return types.float32(x), codegen

        return _op

    lg2 = _mufu("lg2.approx.ftz.f32")  # log2(x), about 2^-22 absolute
    rcp = _mufu("rcp.approx.ftz.f32")  # 1/x to 1 ulp

    @intrinsic
    def div32(typingctx, a, b):
        """``a // b`` of non-negative ``a``, positive ``b`` in 32 bits (Numba widens int32
        arithmetic to 64 bits, and a 64-bit division is a ~70-instruction software routine,
        called: with that call in a kernel ptxas kept the global memory descriptor in regular
        registers and moved it into uniform ones, two R2UR, before each load; layernorm_bwd
        bf16 12296: 528 R2UR of 2600 instructions, none of 1920 with the row trips by div32;
        the time did not change: H100, session 54, 0.99-1.01x)."""

        def codegen(context, builder, sig, args):
            va = context.cast(builder, args[0], sig.args[0], types.int32)
            vb = context.cast(builder, args[1], sig.args[1], types.int32)
            return builder.sdiv(va, vb)

        return types.int32(a, b), codegen

    @intrinsic
    def rem32(typingctx, a, b):
        """``a % b`` of non-negative ``a``, positive ``b`` in 32 bits (see :func:`div32`)."""

        def codegen(context, builder, sig, args):
            va = context.cast(builder, args[0], sig.args[0], types.int32)
            vb = context.cast(builder, args[1], sig.args[1], types.int32)
            return builder.srem(va, vb)

        return types.int32(a, b), codegen

    # ---- warp reductions (xor butterfly: every lane ends with the bitwise same value) -------

    def _shfl_bfly(builder, v, lane_mask: int):
        text = f"shfl.sync.bfly.b32 $0, $1, {lane_mask}, 0x1f, 0xffffffff;"
        return _asm(builder, _F32, [v], text, "=f,f", side_effect=True)

    @intrinsic
    def warp_sum(typingctx, v, xch, tid):
        """Sum of a float32 over the warp (``xch``, ``tid``: simulator only)."""

        def codegen(context, builder, sig, args):
            x = _f32(context, builder, sig.args[0], args[0])
            for o in (16, 8, 4, 2, 1):
                x = builder.fadd(x, _shfl_bfly(builder, x, o))
            return x

        return types.float32(v, xch, tid), codegen

    @intrinsic
    def warp_max(typingctx, v, xch, tid):
        """fmaxf of a float32 over the warp."""

        def codegen(context, builder, sig, args):
            x = _f32(context, builder, sig.args[0], args[0])
            for o in (16, 8, 4, 2, 1):
                y = _shfl_bfly(builder, x, o)
                x = _fmax(builder, x, y)
            return x

        return types.float32(v, xch, tid), codegen

    @intrinsic
    def warp_any(typingctx, p, xch, tid):
        """1 when ``p`` is nonzero in any lane of the warp, else 0 (``vote.any``)."""

        def codegen(context, builder, sig, args):
            x = context.cast(builder, args[0], sig.args[0], types.int32)
            text = (
                "{ .reg .pred p, q; setp.ne.s32 p, $1, 0; "
                "vote.sync.any.pred q, p, 0xffffffff; selp.s32 $0, 1, 0, q; }"
            )
            return _asm(builder, _I32, [x], text, "=r,r", side_effect=True)

        return types.int32(p, xch, tid), codegen

    # ---- inter-CTA exchange ---------------------------------------------------------------

    @intrinsic
    def ld_cg2(typingctx, arr, idx):
        """``(arr[idx], arr[idx + 1])`` of a float32 array through L2 (``ld.global.cg.v2``).

        Volatile with a memory clobber: it must not move across the inter-CTA barrier.
        """
        ret = types.UniTuple(types.float32, 2)

        def codegen(context, builder, sig, args):
            aty, ity = sig.args
            p = _ptr(context, builder, aty, args[0], ity, args[1])
            st = ir.LiteralStructType([_F32, _F32])
            pair = _asm(
                builder,
                st,
                [p],
                "{ .reg .u64 g; cvta.to.global.u64 g, $2; ld.global.cg.v2.f32 {$0, $1}, [g]; }",
                "=f,=f,l,~{memory}",
                side_effect=True,
            )
            vals = [builder.extract_value(pair, 0), builder.extract_value(pair, 1)]
            return context.make_tuple(builder, ret, vals)

        return ret(arr, idx), codegen

    @intrinsic
    def st_cg2(typingctx, arr, idx, a, b):
        """``arr[idx], arr[idx + 1] = a, b`` through L2 (``st.global.cg.v2.f32``)."""

        def codegen(context, builder, sig, args):
            aty, ity, at, bt = sig.args
            p = _ptr(context, builder, aty, args[0], ity, args[1])
            va = _f32(context, builder, at, args[2])
            vb = _f32(context, builder, bt, args[3])
            _asm(
                builder,
                _VOID,
                [p, va, vb],
                "{ .reg .u64 g; cvta.to.global.u64 g, $0; st.global.cg.v2.f32 [g], {$1, $2}; }",
                "l,f,f,~{memory}",
                side_effect=True,
            )
            return context.get_dummy_value()

        return types.void(arr, idx, a, b), codegen

    def _ld_volatile(builder, p):
        return _asm(
            builder,
            _I32,
            [p],
            "{ .reg .u64 g; cvta.to.global.u64 g, $1; ld.volatile.global.u32 $0, [g]; }",
            "=r,l,~{memory}",
            side_effect=True,
        )

    @intrinsic
    def ld_volatile_i32(typingctx, arr, idx):
        """``arr[idx]`` of an int32 array, re-read from memory at every call (spin loops)."""

        def codegen(context, builder, sig, args):
            p = _ptr(context, builder, sig.args[0], args[0], sig.args[1], args[1])
            return _ld_volatile(builder, p)

        return types.int32(arr, idx), codegen

    def _counter_barrier(context, builder, sig, args):
        """Emits the counter barrier of :func:`inter_cta_barrier` (args: counter, idx, target)."""
        cty, ity, tty = sig.args
        sync = _llvm_fn(builder, "llvm.nvvm.barrier0", _VOID, [])
        fence = _llvm_fn(builder, "llvm.nvvm.membar.gl", _VOID, [])
        tid_x = _llvm_fn(builder, "llvm.nvvm.read.ptx.sreg.tid.x", _I32, [])
        p = _ptr(context, builder, cty, args[0], ity, args[1])
        target_v = context.cast(builder, args[2], tty, types.int32)
        builder.call(sync, [])
        is0 = builder.icmp_unsigned("==", builder.call(tid_x, []), _c32(0))
        with builder.if_then(is0):
            builder.call(fence, [])
            builder.atomic_rmw("add", p, _c32(1), "monotonic")
            spin = builder.append_basic_block("cta_barrier_spin")
            done = builder.append_basic_block("cta_barrier_done")
            builder.branch(spin)
            builder.position_at_end(spin)
            arrived = _ld_volatile(builder, p)
            builder.cbranch(builder.icmp_signed("<", arrived, target_v), spin, done)
            builder.position_at_end(done)
            builder.call(fence, [])
        builder.call(sync, [])

    @intrinsic
    def inter_cta_barrier(typingctx, counter, idx, target):
        """Arrival barrier of the CTAs sharing a row (docs/design.md); every thread enters.

        ``counter[idx]`` (int32) is zeroed before the launch; at its k-th use every CTA adds 1
        and waits for ``target = k * ctas_per_row`` arrivals. As NVRTC's
        ``nn::inter_cta_barrier``: ``__syncthreads``; thread 0: ``__threadfence``, atomic add,
        volatile spin, ``__threadfence``; ``__syncthreads``.
        """

        def codegen(context, builder, sig, args):
            _counter_barrier(context, builder, sig, args)
            return context.get_dummy_value()

        return types.void(counter, idx, target), codegen

    _NCTARANK = "mov.u32 $0, %cluster_nctarank;"
    _CLUSTER_SYNC = (
        "barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;"
    )

    @functools.cache
    def cluster_ops(enabled: bool):
        """``(cluster_ctas, cluster_sync)`` as NVRTC's ``nn::cluster_ctas`` /
        ``nn::cluster_sync`` (sm_90+): CTAs in this CTA's cluster (``%cluster_nctarank``), and
        the cluster barrier (arrive with release, wait with acquire). Unless ``enabled`` (the
        kernel's target has clusters) ``cluster_ctas`` is the constant 1 and ``cluster_sync``
        emits nothing."""

        @intrinsic
        def cluster_ctas(typingctx):
            def codegen(context, builder, sig, args):
                return _asm(builder, _I32, [], _NCTARANK, "=r") if enabled else _c32(1)

            return types.int32(), codegen

        @intrinsic
        def cluster_sync(typingctx):
            def codegen(context, builder, sig, args):
                if enabled:
                    _asm(builder, _VOID, [], _CLUSTER_SYNC, "~{memory}", side_effect=True)
                return context.get_dummy_value()

            return types.void(), codegen

        return cluster_ctas, cluster_sync

    @functools.cache
    def row_barrier(clusters: bool):
        """The barrier of the CTAs sharing a row, as NVRTC's ``arrive_and_wait``: the cluster
        barrier where the kernel runs in a cluster of several CTAs (``RowPlan.cluster``; only
        compiled in where ``clusters``), else :func:`inter_cta_barrier` on ``counter[idx]``."""

        @intrinsic
        def _barrier(typingctx, counter, idx, target):
            def codegen(context, builder, sig, args):
                if not clusters:
                    _counter_barrier(context, builder, sig, args)
                    return context.get_dummy_value()
                n = _asm(builder, _I32, [], _NCTARANK, "=r")
                in_cluster = builder.icmp_unsigned(">", n, _c32(1))
                with builder.if_else(in_cluster) as (then, otherwise):
                    with then:
                        _asm(builder, _VOID, [], _CLUSTER_SYNC, "~{memory}", side_effect=True)
                    with otherwise:
                        _counter_barrier(context, builder, sig, args)
                return context.get_dummy_value()

            return types.void(counter, idx, target), codegen

        return _barrier

    @intrinsic
    def st_cluster2(typingctx, arr, idx, rank, a, b):
        """``arr[idx], arr[idx + 1] = a, b`` in the shared memory of the CTA of cluster rank
        ``rank`` (``arr`` a float32 shared array declared with ``alignment=PAIR_ALIGN``, ``idx``
        even: a v2 store, which faults with a misaligned address at an odd word; distributed
        shared memory, sm_90+): NVRTC's
        ``nn::st_cluster``. Visible there after the next cluster barrier."""

        def codegen(context, builder, sig, args):
            aty, ity, rty, at, bt = sig.args
            p = _ptr(context, builder, aty, args[0], ity, args[1])
            r = _u32(context, builder, rty, args[2])
            va, vb = _f32(context, builder, at, args[3]), _f32(context, builder, bt, args[4])
            _asm(
                builder,
                _VOID,
                [builder.ptrtoint(p, _I64), r, va, vb],
                "{ .reg .u64 g; .reg .u32 s, d; cvta.to.shared.u64 g, $0; cvt.u32.u64 s, g; "
                "mapa.shared::cluster.u32 d, s, $1; st.shared::cluster.v2.f32 [d], {$2, $3}; }",
                "l,r,f,f,~{memory}",
                side_effect=True,
            )
            return context.get_dummy_value()

        return types.void(arr, idx, rank, a, b), codegen

    @functools.cache
    def dependent_launch(enabled: bool):
        """``(launch_dependents, wait_primary)`` of programmatic dependent launch, as NVRTC's
        ``nn::launch_dependents`` / ``nn::wait_primary`` (``griddepcontrol``, sm_90+): both
        emit nothing unless ``enabled`` (the kernel's target has them)."""

        def op(text: str):
            @intrinsic
            def _op(typingctx):
                def codegen(context, builder, sig, args):
                    if enabled:
                        _asm(builder, _VOID, [], text, "~{memory}", side_effect=True)
                    return context.get_dummy_value()

                return types.void(), codegen

            return _op

        return op("griddepcontrol.launch_dependents;"), op("griddepcontrol.wait;")

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

    def _u32_as_f32(w: int) -> np.float32:
        return np.array(w & 0xFFFFFFFF, dtype=np.uint32).view(np.float32)[()]

    def _f16_bits_to_f32(h: int) -> np.float32:
        return np.float32(np.array(h & 0xFFFF, dtype=np.uint16).view(np.float16)[()])

    def _f32_to_16(f, dtype: str) -> int:
        f = np.float32(f)
        if dtype == "fp16":
            return _bits(np.float16(f))
        u = _bits(f)
        if (u & 0x7FFFFFFF) > 0x7F800000:  # NaN stays a (quiet) NaN
            return 0x7FFF
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF  # round to nearest even

    def row_ptr(arr, off):
        return arr[off:]

    @functools.cache
    def ld_words(nbytes: int, cs: bool = False):
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
    def st_words(nbytes: int, cs: bool = False):
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

    @functools.cache
    def ld_partial(ne: int):
        def _ld_partial(w, arr, off, n):
            size = arr.dtype.itemsize
            per_word = 4 // size
            for q in range(max(1, ne * size // 4)):
                w[q] = 0
            for j in range(min(int(n), ne - 1)):
                bits = _bits(arr[off + j]) << ((j % per_word) * 8 * size)
                w[j // per_word] = int(w[j // per_word]) | bits

        return _ld_partial

    @functools.cache
    def st_partial(ne: int):
        def _st_partial(arr, off, w, n):
            dtype = arr.dtype
            size = dtype.itemsize
            per_word = 4 // size
            for j in range(min(int(n), ne - 1)):
                bits = (int(w[j // per_word]) >> ((j % per_word) * 8 * size)) & (
                    (1 << (8 * size)) - 1
                )
                arr[off + j] = _from_bits(bits, dtype)

        return _st_partial

    @functools.cache
    def unpack(dtype: str, ne: int, again: bool = False):
        def _unpack(f, k, w, i, zero=0):
            for j in range(ne):
                if dtype == "fp32":
                    f[k + j] = _u32_as_f32(int(w[i + j]))
                    continue
                word = int(w[i + j // 2]) >> (16 * (j % 2))
                if dtype == "bf16":
                    f[k + j] = _u32_as_f32((word & 0xFFFF) << 16)
                else:
                    f[k + j] = _f16_bits_to_f32(word)

        return _unpack

    @functools.cache
    def pack(dtype: str, ne: int):
        def _pack(w, i, f, k):
            if dtype == "fp32":
                for j in range(ne):
                    w[i + j] = _bits(np.float32(f[k + j]))
            elif ne == 1:
                w[i] = _f32_to_16(f[k], dtype)
            else:
                for q in range(ne // 2):
                    lo = _f32_to_16(f[k + 2 * q], dtype)
                    w[i + q] = lo | (_f32_to_16(f[k + 2 * q + 1], dtype) << 16)

        return _pack

    @functools.cache
    def copy_words(n: int):
        def _copy_words(dst, i, src, j):
            for q in range(n):
                dst[i + q] = src[j + q]

        return _copy_words

    @functools.cache
    def mask_from(ne: int):
        nwords = words_per_vector("uint8", ne)

        def _mask_from(w, n):
            for q in range(nwords):
                k = n - 4 * q
                if k <= 0:
                    w[q] = int(w[q]) | _ONES
                elif k < 4:
                    w[q] = int(w[q]) | ((_ONES << (8 * k)) & 0xFFFFFFFF)

        return _mask_from

    @functools.cache
    def softmax_prep(ne: int, masked: bool):
        nwords = words_per_vector("uint8", ne)
        high = _HIGH & ((1 << (8 * ne)) - 1 if ne < 4 else 0xFFFFFFFF)

        def _prep(v, k, mb, n_in, scale, m, keep):
            for j in range(ne):
                with np.errstate(over="ignore", invalid="ignore"):
                    t = np.float32(np.float32(v[k + j]) * np.float32(scale))
                if masked and (int(mb[j // 4]) >> (8 * (j % 4))) & 0xFF:
                    t = MASKED_SCORE
                t = t if j < n_in else np.float32(-np.inf)
                v[k + j] = t
                m = fmaxf(m, t)
            if masked:
                for q in range(nwords):
                    w = int(mb[q])
                    if ((w - _ONES) & ~w & high) != 0:
                        keep = 1
            return m, keep

        return _prep

    @functools.cache
    def exp_sum(n: int):
        def _exp_sum(v, base):
            base = np.float32(base)
            s = np.float32(0.0)
            fast = abs(base) <= _FAST_BASE
            c = np.float32(base * _LOG2E) if fast else np.float32(0.0)
            unit = np.float32(1.0)
            if fast:  # fma: float64 products of two fp32 numbers are exact
                unit = ex2(-np.float32(np.float64(base) * np.float64(_LOG2E) - np.float64(c)))
            for k in range(n):
                if fast:
                    with np.errstate(over="ignore", invalid="ignore"):
                        e = ex2(np.float32(np.float64(v[k]) * np.float64(_LOG2E) - np.float64(c)))
                else:
                    e = exp_diff(v[k], base)
                v[k] = e
                s = np.float32(s + e)
            return s, unit

        return _exp_sum

    @functools.cache
    def softmax_probs(ne: int, masked: bool):
        def _probs(v, k, mb, n_in, scale, base, lse2):
            scale, base, lse2 = np.float32(scale), np.float32(base), np.float32(lse2)
            direct = abs(base) <= _DIRECT_BASE and abs(scale) <= _DIRECT_SCALE
            log2e = np.float64(_LOG2E)
            with np.errstate(invalid="ignore", over="ignore"):
                kd = np.float64(np.float32(scale * _LOG2E))
                off = np.float64(np.float32(np.float64(base) * log2e + np.float64(lse2)))
                for j in range(ne):
                    # fma: the product is exact in float64, the sum rounded (near enough)
                    if masked and (int(mb[j // 4]) >> (8 * (j % 4))) & 0xFF:
                        d = np.float32(MASKED_SCORE - base)
                        t = np.float32(np.float64(d) * log2e - np.float64(lse2))
                    elif direct:
                        t = np.float32(np.float64(v[k + j]) * kd - off)
                    else:
                        d = np.float32(np.float32(np.float32(v[k + j]) * scale) - base)
                        t = np.float32(np.float64(d) * log2e - np.float64(lse2))
                    v[k + j] = ex2(t) if j < n_in else np.float32(0.0)

        return _probs

    @functools.cache
    def softmax_out(ne: int, causal: bool):
        def _out(v, k, factor, n_in):
            for j in range(ne):
                with np.errstate(invalid="ignore"):  # 0 * inf: a NaN row's, as on a GPU
                    f = np.float32(np.float32(v[k + j]) * np.float32(factor))
                v[k + j] = np.float32(0.0) if causal and n_in <= 0 else f

        return _out

    @functools.cache
    def dot_acc(ne: int):
        def _dot(a, b, acc):
            acc = np.float32(acc)
            for j in range(ne):
                acc = np.float32(acc + np.float32(a[j]) * np.float32(b[j]))
            return acc

        return _dot

    @functools.cache
    def softmax_dx(ne: int):
        def _dx(d, yv, scale, dot):
            for j in range(ne):
                d[j] = np.float32(scale * np.float32(yv[j])) * np.float32(d[j] - dot)

        return _dx

    def cta_merge(stats, sb, ctas):
        gm = np.float32(-np.inf)
        for c in range(ctas):
            gm = fmaxf(gm, stats[sb + 2 * c])
        gs = np.float32(0.0)
        anyp = 0
        for c in range(ctas):
            pm, ps = np.float32(stats[sb + 2 * c]), np.float32(stats[sb + 2 * c + 1])
            gs = np.float32(gs + abs(ps) * exp_diff(pm, gm))
            anyp |= int(not ps < 0)
        return gm, gs, anyp

    def cta_sum(stats, sb, ctas):
        acc = np.float32(0.0)
        for c in range(ctas):
            acc = np.float32(acc + stats[sb + 2 * c])
        return acc

    def ex2(x):
        with np.errstate(over="ignore", invalid="ignore"):
            return np.float32(np.exp2(np.float32(x)))

    def exp_diff(a, b):
        with np.errstate(over="ignore", invalid="ignore"):
            d = np.float32(np.float32(np.float32(a) - np.float32(b)) * _LOG2E)
        return ex2(d)

    def lg2(x):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.float32(np.log2(np.float32(x)))

    def rcp(x):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.float32(np.float32(1.0) / np.float32(x))

    def div32(a, b):
        return np.int32(int(a) // int(b))

    def rem32(a, b):
        return np.int32(int(a) % int(b))

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

    @cuda.jit(device=True)
    def _shfl_xor(v, lane_mask, xch, tid):
        cuda.syncthreads()  # everyone has read the previous exchange
        xch[tid] = v
        cuda.syncthreads()
        return xch[tid ^ lane_mask]

    @cuda.jit(device=True)
    def warp_sum(v, xch, tid):
        v = np.float32(v)
        for o in (16, 8, 4, 2, 1):
            v = np.float32(v + _shfl_xor(v, o, xch, tid))
        return v

    @cuda.jit(device=True)
    def warp_max(v, xch, tid):
        for o in (16, 8, 4, 2, 1):
            v = fmaxf(v, _shfl_xor(v, o, xch, tid))
        return v

    @cuda.jit(device=True)
    def warp_any(p, xch, tid):
        f = np.float32(1.0 if p != 0 else 0.0)
        for o in (16, 8, 4, 2, 1):
            f = max(f, _shfl_xor(f, o, xch, tid))
        return 1 if f != 0 else 0

    @cuda.jit(device=True)
    def _no_op():
        pass

    def dependent_launch(enabled: bool):
        """The simulator runs kernels one after another: nothing to signal or wait for."""
        return _no_op, _no_op

    @cuda.jit(device=True)
    def _one_cta():
        return 1

    def cluster_ops(enabled: bool):
        """No clusters in the simulator: one CTA, nothing to wait for."""
        return _one_cta, _no_op

    def row_barrier(clusters: bool):
        """No clusters in the simulator: the counter barrier (never reached: one CTA a row)."""
        return inter_cta_barrier

    def st_cluster2(arr, idx, rank, a, b):
        """One CTA a cluster: rank 0 is this CTA."""
        arr[idx] = a
        arr[idx + 1] = b

    @cuda.jit(device=True)
    def inter_cta_barrier(counter, idx, target):
        cuda.syncthreads()
        if cuda.threadIdx.x == 0:
            cuda.threadfence()
            cuda.atomic.add(counter, idx, 1)
            while ld_volatile_i32(counter, idx) < target:
                pass
            cuda.threadfence()
        cuda.syncthreads()
