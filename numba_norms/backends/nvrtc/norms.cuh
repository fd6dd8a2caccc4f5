// Device helpers of the norm kernels (norms.cu): storage types, conversions, vector access,
// reductions and the inter-CTA barrier.
//
// No CUDA header is included: NVRTC's built-ins (uint4, float2, __shfl_xor_sync, atomicAdd,
// __threadfence, __uint_as_float, ...) are enough, and cuda_bf16.h alone would cost ~55 ms of
// every cold compile. Conversions are inline PTX (sm_80+) or bit operations.
#pragma once

namespace nn {

// ------------------------------------------------------------------------------------------------
// Storage types. fp16 and bf16 share a 16-bit layout; distinct structs keep them distinct
// template arguments (the launcher passes raw device pointers, so the layout is all that counts).
// ------------------------------------------------------------------------------------------------

struct __align__(2) fp16 { unsigned short bits; };
struct __align__(2) bf16 { unsigned short bits; };
// FP8 outputs (forward only): one byte each, written with a saturating RNE conversion.
struct fp8e4m3 { unsigned char bits; };
struct fp8e5m2 { unsigned char bits; };

template <typename A, typename B> struct same_type { static constexpr bool value = false; };
template <typename A> struct same_type<A, A> { static constexpr bool value = true; };

template <typename T>
struct is_half16 {
  static constexpr bool value = same_type<T, fp16>::value || same_type<T, bf16>::value;
};

template <typename T>
struct is_fp8 {
  static constexpr bool value = same_type<T, fp8e4m3>::value || same_type<T, fp8e5m2>::value;
};

// ------------------------------------------------------------------------------------------------
// Scalar conversions on 16-bit payloads.
// ------------------------------------------------------------------------------------------------

__device__ __forceinline__ float lo16_to_float(unsigned w, fp16) {
  float f;
  asm("{ .reg .b16 l, h; mov.b32 {l, h}, %1; cvt.f32.f16 %0, l; }" : "=f"(f) : "r"(w));
  return f;
}
__device__ __forceinline__ float hi16_to_float(unsigned w, fp16) {
  float f;
  asm("{ .reg .b16 l, h; mov.b32 {l, h}, %1; cvt.f32.f16 %0, h; }" : "=f"(f) : "r"(w));
  return f;
}
// Remat: the widening of a value that is widened more than once, where registers run short.
// fp16: from a 16-bit operand: ptxas then widens again from the packed word, as it does bf16's
// shift, instead of keeping both halves unpacked. The backward (all its widening) holds packed
// words across a row (gamma, the pipeline's next row, the lean form's row): with the {l, h}
// unpacking layernorm_bwd fp16 16384 / 32768 (8 CTAs of 1 / 2 warps, the pipeline) spilled
// 140 / 124 B where bf16 spilled 0 / 12, with this none (ptxas, sm_90). The forwards keep the
// unpacking: this form gave them up to 9% more SASS and ran 0.90-0.97x at layernorm_fwd fp16
// 1024-16384 (H200, run 122). bf16 has a Remat form for Pack::get_again only (a byte permute):
// as the backward's widening it changed 115 bf16 backward kernels and spilled more in 5 of them
// (rmsnorm_bwd 65536: 0 -> 152 B; NVRTC 13.0, sm_90).
struct Remat {};
__device__ __forceinline__ float lo16_to_float(unsigned w, fp16, Remat) {
  const unsigned short h = (unsigned short)(w & 0xffffu);
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ float hi16_to_float(unsigned w, fp16, Remat) {
  const unsigned short h = (unsigned short)(w >> 16);
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
// bf16 is the upper half of an fp32: widening is a shift (or a mask for the high element).
__device__ __forceinline__ float lo16_to_float(unsigned w, bf16) {
  return __uint_as_float(w << 16);
}
__device__ __forceinline__ float hi16_to_float(unsigned w, bf16) {
  return __uint_as_float(w & 0xffff0000u);
}
__device__ __forceinline__ float lo16_to_float(unsigned w, bf16, Remat) {
  unsigned r;
  asm("prmt.b32 %0, %1, 0, 0x1044;" : "=r"(r) : "r"(w));  // bytes (0, 0, w0, w1): w << 16
  return __uint_as_float(r);
}
__device__ __forceinline__ float hi16_to_float(unsigned w, bf16, Remat) {
  unsigned r;
  asm("prmt.b32 %0, %1, 0, 0x3244;" : "=r"(r) : "r"(w));  // bytes (0, 0, w2, w3)
  return __uint_as_float(r);
}

// Two floats -> one 32-bit word {hi:lo}, round to nearest even.
__device__ __forceinline__ unsigned pack2(float lo, float hi, fp16) {
  unsigned w;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
  return w;
}
__device__ __forceinline__ unsigned pack2(float lo, float hi, bf16) {
  unsigned w;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
  return w;
}
// One float -> 16-bit payload in the low half of a word.
__device__ __forceinline__ unsigned pack1(float f, fp16) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ unsigned pack1(float f, bf16) {
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

// ------------------------------------------------------------------------------------------------
// fp32 -> FP8, saturating (|f| > max finite, infinities included, gives the max finite value),
// round to nearest even, NaN -> 0x7F. sm_89+: cvt.rn.satfinite; before: the same result by bit
// arithmetic (the Numba backend's f32_to_fp8_bits, operation for operation).
// ------------------------------------------------------------------------------------------------

template <typename T> struct fp8_format;
template <> struct fp8_format<fp8e4m3> {
  static constexpr int BIAS = 7, MANT = 3;
  static constexpr unsigned MAXCODE = 0x7Eu, MAXBITS = 0x43E00000u;  // 448
  static constexpr float SUB_MAGIC = 16384.f;                         // 2^(24 - BIAS - MANT)
};
template <> struct fp8_format<fp8e5m2> {
  static constexpr int BIAS = 15, MANT = 2;
  static constexpr unsigned MAXCODE = 0x7Bu, MAXBITS = 0x47600000u;  // 57344
  static constexpr float SUB_MAGIC = 128.f;
};

template <typename T>
__device__ __forceinline__ unsigned fp8_soft(float f) {
  using F = fp8_format<T>;
  constexpr int SHIFT = 23 - F::MANT;
  // half an FP8 ulp less one, minus the exponent rebias (mod 2^32; used in the normal range only)
  constexpr unsigned ROUND_ADD =
      ((1u << (22 - F::MANT)) - 1u) - ((unsigned)(127 - F::BIAS) << 23);
  const unsigned u = __float_as_uint(f);
  const unsigned a = u & 0x7fffffffu;
  const unsigned sign = (u >> 24) & 0x80u;
  // normal range: round the fp32 bits at the FP8 mantissa; a carry moves the exponent
  const unsigned normal = (a + ((a >> SHIFT) & 1u) + ROUND_ADD) >> SHIFT;
  // subnormal range: |f| + C rounds |f| to a multiple of the smallest FP8 subnormal (C's ulp)
  const float fsum = __fadd_rn(__uint_as_float(a), F::SUB_MAGIC);
  const unsigned sub = __float_as_uint(fsum) - __float_as_uint(F::SUB_MAGIC);
  unsigned code = a >= ((unsigned)(128 - F::BIAS) << 23) ? normal : sub;
  code = (a > F::MAXBITS ? F::MAXCODE : code) | sign;
  return a > 0x7f800000u ? 0x7Fu : code;
}

// Two floats -> 16 bits {hi:lo} (PTX: the first source operand goes to the upper byte).
__device__ __forceinline__ unsigned fp8x2(float lo, float hi, fp8e4m3) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  unsigned short h;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(h) : "f"(hi), "f"(lo));
  return h;
#else
  return fp8_soft<fp8e4m3>(lo) | (fp8_soft<fp8e4m3>(hi) << 8);
#endif
}
__device__ __forceinline__ unsigned fp8x2(float lo, float hi, fp8e5m2) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  unsigned short h;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(h) : "f"(hi), "f"(lo));
  return h;
#else
  return fp8_soft<fp8e5m2>(lo) | (fp8_soft<fp8e5m2>(hi) << 8);
#endif
}

// ------------------------------------------------------------------------------------------------
// Pack<T, N>: N elements of T as raw 32-bit words, moved with the widest aligned accesses
// (16 bytes where possible). The caller guarantees alignment to min(16, N * sizeof(T)).
// ------------------------------------------------------------------------------------------------

template <typename T, int N>
struct Pack {
  static constexpr int BYTES = N * (int)sizeof(T);
  static constexpr int WORDS = BYTES < 4 ? 1 : BYTES / 4;
  static_assert(BYTES == 2 || BYTES % 4 == 0 || (BYTES == 1 && sizeof(T) == 1),
                "vector of an odd byte count");
  unsigned w[WORDS];

  __device__ __forceinline__ void load(const T* p) {
    if constexpr (BYTES % 16 == 0) {
#pragma unroll
      for (int i = 0; i < BYTES / 16; ++i) {
        const uint4 q = reinterpret_cast<const uint4*>(p)[i];
        w[4 * i] = q.x; w[4 * i + 1] = q.y; w[4 * i + 2] = q.z; w[4 * i + 3] = q.w;
      }
    } else if constexpr (BYTES == 8) {
      const uint2 q = *reinterpret_cast<const uint2*>(p);
      w[0] = q.x; w[1] = q.y;
    } else if constexpr (BYTES == 4) {
      w[0] = *reinterpret_cast<const unsigned*>(p);
    } else if constexpr (BYTES == 2) {
      w[0] = *reinterpret_cast<const unsigned short*>(p);
    } else {
      w[0] = *reinterpret_cast<const unsigned char*>(p);
    }
  }

  __device__ __forceinline__ void store(T* p) const {
    if constexpr (BYTES % 16 == 0) {
#pragma unroll
      for (int i = 0; i < BYTES / 16; ++i) {
        reinterpret_cast<uint4*>(p)[i] =
            make_uint4(w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]);
      }
    } else if constexpr (BYTES == 8) {
      *reinterpret_cast<uint2*>(p) = make_uint2(w[0], w[1]);
    } else if constexpr (BYTES == 4) {
      *reinterpret_cast<unsigned*>(p) = w[0];
    } else if constexpr (BYTES == 2) {
      *reinterpret_cast<unsigned short*>(p) = (unsigned short)w[0];
    } else {
      *reinterpret_cast<unsigned char*>(p) = (unsigned char)w[0];
    }
  }

  // The words become values the compiler knows nothing about (no instruction): what was
  // computed from them before cannot stand in for what is computed after.
  __device__ __forceinline__ void opaque() {
#pragma unroll
    for (int i = 0; i < WORDS; ++i) asm volatile("" : "+r"(w[i]));
  }

  // Element j (a compile-time index once unrolled) widened to float (REMAT: see Remat).
  template <bool REMAT = false>
  __device__ __forceinline__ float get(int j) const {
    if constexpr (same_type<T, float>::value) {
      return __uint_as_float(w[j]);
    } else if constexpr (REMAT && same_type<T, fp16>::value) {
      return (j & 1) ? hi16_to_float(w[j >> 1], T(), Remat())
                     : lo16_to_float(w[j >> 1], T(), Remat());
    } else {
      static_assert(is_half16<T>::value, "unsupported storage type");
      return (j & 1) ? hi16_to_float(w[j >> 1], T()) : lo16_to_float(w[j >> 1], T());
    }
  }

  // Element j widened once more, where an earlier pass widened it already: in an instruction
  // form NVVM does not take for that pass's (Remat; bf16: prmt), so the value is recomputed from
  // the packed word instead of kept. The lean LayerNorm forward's output pass: without it ptxas
  // kept the sums pass's floats of layernorm_fwd bf16 65536 (1 CTA of 32 warps, no exchange) and
  // spilled 152 B where it spilled 80 with the exchange (NVRTC 13.0, sm_90).
  __device__ __forceinline__ float get_again(int j) const {
    if constexpr (same_type<T, float>::value) {
      return __uint_as_float(w[j]);
    } else {
      static_assert(is_half16<T>::value, "unsupported storage type");
      return (j & 1) ? hi16_to_float(w[j >> 1], T(), Remat())
                     : lo16_to_float(w[j >> 1], T(), Remat());
    }
  }

  // Vector at row[col..col+N); the general kernel zero-fills columns at or past `cols` and reads
  // a partial last vector element by element.
  template <bool GENERAL>
  __device__ __forceinline__ void load_cols(const T* row, int col, int cols) {
    if (!GENERAL || col + N <= cols) {
      load(row + col);
    } else {
#pragma unroll
      for (int i = 0; i < WORDS; ++i) w[i] = 0u;
#pragma unroll
      for (int j = 0; j < N; ++j) {
        if (col + j < cols) {
          if constexpr (sizeof(T) == 4) {
            w[j] = *reinterpret_cast<const unsigned*>(row + col + j);
          } else if constexpr (sizeof(T) == 1) {
            const unsigned bits = *reinterpret_cast<const unsigned char*>(row + col + j);
            w[j >> 2] |= bits << (8 * (j & 3));
          } else {
            const unsigned bits = *reinterpret_cast<const unsigned short*>(row + col + j);
            w[j >> 1] |= bits << (16 * (j & 1));
          }
        }
      }
    }
  }

  template <bool REMAT = false>
  __device__ __forceinline__ void to_float(float (&f)[N]) const {
#pragma unroll
    for (int j = 0; j < N; ++j) f[j] = get<REMAT>(j);
  }

  __device__ __forceinline__ void from_float(const float (&f)[N]) {
    if constexpr (same_type<T, float>::value) {
#pragma unroll
      for (int i = 0; i < N; ++i) w[i] = __float_as_uint(f[i]);
    } else if constexpr (is_fp8<T>::value) {
      if constexpr (N == 1) {
        w[0] = fp8x2(f[0], 0.f, T()) & 0xffu;
      } else if constexpr (N == 2) {
        w[0] = fp8x2(f[0], f[1], T());
      } else {
#pragma unroll
        for (int i = 0; i < N / 4; ++i) {
          w[i] = fp8x2(f[4 * i], f[4 * i + 1], T()) |
                 (fp8x2(f[4 * i + 2], f[4 * i + 3], T()) << 16);
        }
      }
    } else {
      static_assert(is_half16<T>::value, "unsupported storage type");
      if constexpr (N == 1) {
        w[0] = pack1(f[0], T());
      } else {
#pragma unroll
        for (int i = 0; i < N / 2; ++i) w[i] = pack2(f[2 * i], f[2 * i + 1], T());
      }
    }
  }
};

template <typename T>
__device__ __forceinline__ void store_elem(T* p, float x) {
  const float f[1] = {x};
  Pack<T, 1> v;
  v.from_float(f);
  v.store(p);
}

// Vector of N elements at row[col..col+N) as floats (see Pack::load_cols).
template <typename T, int N, bool GENERAL>
__device__ __forceinline__ void load_vec(float (&f)[N], const T* row, int col, int cols) {
  Pack<T, N> v;
  v.template load_cols<GENERAL>(row, col, cols);
  v.to_float(f);
}

template <typename T, int N, bool GENERAL>
__device__ __forceinline__ void store_vec(T* row, int col, int cols, const float (&f)[N]) {
  if (!GENERAL || col + N <= cols) {
    Pack<T, N> v;
    v.from_float(f);
    v.store(row + col);
  } else {
#pragma unroll
    for (int j = 0; j < N; ++j) {
      if (col + j < cols) store_elem(row + col + j, f[j]);
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Reductions. The xor butterfly leaves the bitwise same sum in every lane (each step adds the
// same two operands, only commuted), so all lanes agree without a broadcast.
// ------------------------------------------------------------------------------------------------

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float2 warp_sum(float2 v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    v.x += __shfl_xor_sync(0xffffffffu, v.x, o);
    v.y += __shfl_xor_sync(0xffffffffu, v.y, o);
  }
  return v;
}

// Max of non-negative values over a warp (exact: every lane ends with the same value).
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Merges partial statistics b = (mean, M2) over nb elements into a over na (Chan et al.). A part
// with no elements changes nothing; na == 0 takes b exactly.
__device__ __forceinline__ void chan_merge(float& na, float2& a, float nb, float2 b) {
  if (nb > 0.f) {
    const float n = na + nb;
    const float delta = b.x - a.x;
    const float fb = nb / n;
    a.x = a.x + delta * fb;
    a.y = a.y + b.y + delta * delta * na * fb;
    na = n;
  }
}

// chan_merge with its ratio fb = nb / (na + nb) given: the same bits, for counts that are the
// same on every row (the ratios worked out once, out of the row loop).
__device__ __forceinline__ void chan_merge_ratio(float& na, float2& a, float nb, float fb,
                                                 float2 b) {
  if (nb > 0.f) {
    const float delta = b.x - a.x;
    a.x = a.x + delta * fb;
    a.y = a.y + b.y + delta * delta * na * fb;
    na = na + nb;
  }
}

// ------------------------------------------------------------------------------------------------
// Uncached (L2) accesses of the inter-CTA statistics: another CTA wrote them, and an L1 line
// from the previous use of this buffer must not be read.
// ------------------------------------------------------------------------------------------------

__device__ __forceinline__ void st_cg(float* p, float2 v) {
  asm volatile("st.global.cg.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(v.x), "f"(v.y) : "memory");
}
__device__ __forceinline__ float2 ld_cg(const float* p) {
  float2 v;
  asm volatile("ld.global.cg.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "l"(p) : "memory");
  return v;
}

// CTAs in this CTA's thread-block cluster (1 without one, and before sm_90). The plan launches
// a multi-CTA row group as one cluster where the device has them (RowPlan.cluster); the kernels
// then meet at the cluster barrier instead of the counter.
__device__ __forceinline__ unsigned cluster_ctas() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned n;
  asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return n;
#else
  return 1;
#endif
}

// Every thread of the cluster arrives (releasing its earlier writes, global ones included) and
// waits for all the others (acquiring theirs): the hardware barrier of a GPC, no memory round
// trip. Also a barrier of this CTA's threads.
__device__ __forceinline__ void cluster_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "barrier.cluster.arrive.release.aligned;\n\t"
      "barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

// Largest cluster the plan launches (planner.MAX_CLUSTER, the portable cluster size).
constexpr int kMaxCluster = 8;

// Stores v into the CTA of cluster rank `rank`, at the same shared-memory offset as `local`
// (distributed shared memory; visible to that CTA after the next cluster_sync()).
__device__ __forceinline__ void st_cluster(float2* local, unsigned rank, float2 v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(local));
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(a), "r"(rank));
  asm volatile("st.shared::cluster.v2.f32 [%0], {%1, %2};" ::"r"(remote), "f"(v.x), "f"(v.y)
               : "memory");
#endif
}

// Arrival barrier of the CTAs sharing a row (contract: counter zeroed before the launch; at its
// k-th use every CTA adds 1 and waits for k * ctas_per_row arrivals). All threads must enter.
// (A row group launched as a cluster never comes here: row_reduce exchanges through
// distributed shared memory and meets at cluster_sync().)
__device__ __forceinline__ void inter_cta_barrier(int* counter, int target) {
  __syncthreads();  // this CTA's stores happen before thread 0's release fence
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(counter, 1);
    const volatile int* c = counter;
    while (*c < target) {
    }
    __threadfence();
  }
  __syncthreads();
}

// Programmatic dependent launch (sm_90+; no-ops below, and when the launch was a plain one).
// launch_dependents: the next kernel of the stream may be scheduled once every CTA of this one
// has executed it or exited; wait_primary: block until the previous kernel has finished and its
// writes are visible. Every kernel here starts with kernel_prologue(), before any memory access:
// launched as a dependent (the plan's `dependent`), its CTAs take SMs the previous kernel leaves
// and start the moment it completes, instead of a launch gap (~1.5 us on the H200, run 65) later.
__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void wait_primary() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void kernel_prologue() {
  wait_primary();
  launch_dependents();
}

}  // namespace nn
