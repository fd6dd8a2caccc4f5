// Fused softmax kernels (scaled, scaled-masked, upper-triangular causal, aligned causal; forward
// and backward) with TransformerEngine's semantics, for any row length. Contract and thread
// mapping: docs/design.md ("Norm kernels" and "Softmax kernels").
//
// One row = WARPS_N warps of gridDim.x CTAs; it stays in registers (LDGS vectors of NUM_ELTS
// elements a thread), so x and the mask are read once and y written once. Reductions: warp
// xor-butterfly, then the WARPS_N warps of the row through shared memory in warp order, then
// (gridDim.x > 1) the CTAs of the row through `stats` and one inter-CTA barrier a trip, merged
// in CTA order. Everything is fp32 and runs in a fixed order, so results are bitwise
// reproducible. Storage types, vectors, warp_sum and the barrier come from norms.cuh.
//
// Scores are x * scale rounded to fp32, as TE's. exp(v - max) is ex2(v * log2e - c) with
// ex2.approx.ftz and c = max * log2e rounded (exp_terms: one FFMA and one MUFU a column, the
// same 2^rho on every term), or ex2((v - max) * log2e) where |max| > 2^20. (Until session 40 the
// scores were scaled by scale * log2e on load, which overflowed for |x * scale| > FLT_MAX /
// log2e: a row of finfo(dtype).min padding came out NaN, where TE's is uniform.)
#include "norms.cuh"

// The launcher compiles kernels for plans with one CTA a row with SOFTMAX_MULTI_CTA=0, which
// drops the inter-CTA exchange and makes the CTA count a constant, and for plans of several with
// SOFTMAX_ROW_CTAS=<their count>, which makes the count, and so the column step, a constant too
// (the masked fp32 forward at 131072 keys, 4 CTAs a row: 56 B of spills -> none). The default
// build serves any number of CTAs a row (gridDim.x), as the contract says.
#ifndef SOFTMAX_MULTI_CTA
#define SOFTMAX_MULTI_CTA 1
#endif
#ifndef SOFTMAX_ROW_CTAS
#define SOFTMAX_ROW_CTAS 0
#endif

namespace nnsm {

// CTAs sharing a row: 1 in a one-CTA build, SOFTMAX_ROW_CTAS where the build fixes it (a grid
// of another width traps), else the grid's x.
__device__ __forceinline__ int row_ctas() {
  if (!SOFTMAX_MULTI_CTA) return 1;
  if (SOFTMAX_ROW_CTAS > 0) {
    if (gridDim.x != SOFTMAX_ROW_CTAS) __trap();
    return SOFTMAX_ROW_CTAS;
  }
  return gridDim.x;
}

__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

// 1/x to 1 ulp (one MUFU.RCP instead of an IEEE division's slow path).
__device__ __forceinline__ float rcp(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// 2^x; ex2.approx(-inf) is +0, which is what excluded columns rely on.
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// log2(x) to about 2^-22 absolute (one MUFU.LG2).
__device__ __forceinline__ float lg2(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

constexpr float kLog2e = 1.4426950408889634f;

// exp(a - b) for a <= b (or b = 0 where nothing is kept). A difference beyond fp32's range
// (-3e38 - 3e38) is -inf, and ex2.approx(-inf) = +0, as for columns that are excluded.
__device__ __forceinline__ float exp_diff(float a, float b) { return ex2((a - b) * kLog2e); }

// Row maxima up to this magnitude take the one-FFMA exponent (exp_terms); beyond it (scores
// near the fp32 limit, +inf) the difference is taken first, one FMUL a column more (H100
// session 40: 0.89-0.94x at 32768 and 131072 keys where every column took it).
constexpr float kFastBase = 1048576.0f;  // 2^20: c below 2^21, |rho| <= 2^-4
// The streaming second pass's one-FFMA output (vector_probs) holds its error, about
// |score| * 2^-23 + ulp(base * log2e + lse2), within fp32's tolerance up to this maximum.
constexpr float kDirectBase = 64.0f;

// v <- exp(v - base) * 2^rho and their sum in order, with `unit` = 2^-rho (the factor that
// makes a sum one of exp(v - base) terms; 1 on the exact path). Where |base| <= kFastBase the
// exponent is one FFMA, v * log2e - c with c = base * log2e rounded: the product is exact
// inside it, so every term carries the same 2^rho (rho = base * log2e - c, exact by FFMA) and
// ratios of terms are as exact as exp_diff's. Beyond that, exp_diff.
template <int A, int N>
__device__ __forceinline__ float exp_terms(float (&v)[A][N], float base, float& unit) {
  float s = 0.f;
  if (fabsf(base) <= kFastBase) {
    const float c = __fmul_rn(base, kLog2e);
    unit = ex2(-fmaf(base, kLog2e, -c));
#pragma unroll
    for (int it = 0; it < A; ++it) {
#pragma unroll
      for (int j = 0; j < N; ++j) {
        v[it][j] = ex2(fmaf(v[it][j], kLog2e, -c));
        s += v[it][j];
      }
    }
  } else {
    unit = 1.f;
#pragma unroll
    for (int it = 0; it < A; ++it) {
#pragma unroll
      for (int j = 0; j < N; ++j) {
        v[it][j] = exp_diff(v[it][j], base);
        s += v[it][j];
      }
    }
  }
  return s;
}

// x * scale rounded to fp32 (TE's score). Never contracted into an FFMA with the maximum's
// subtraction: the exact product minus its rounded maximum is not 0 (up to 2^103 near FLT_MAX).
__device__ __forceinline__ float scaled(float x, float scale) { return __fmul_rn(x, scale); }

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// N mask bytes as 32-bit words (one N-byte load; the planner sizes vectors from every array's
// alignment, the mask's included).
template <int N>
struct MaskBytes {
  static constexpr int WORDS = (N + 3) / 4;
  unsigned w[WORDS];

  __device__ __forceinline__ void load(const unsigned char* p) {
    if constexpr (N >= 16) {
#pragma unroll
      for (int i = 0; i < N / 16; ++i) {
        const uint4 q = reinterpret_cast<const uint4*>(p)[i];
        w[4 * i] = q.x; w[4 * i + 1] = q.y; w[4 * i + 2] = q.z; w[4 * i + 3] = q.w;
      }
    } else if constexpr (N == 8) {
      const uint2 q = *reinterpret_cast<const uint2*>(p);
      w[0] = q.x; w[1] = q.y;
    } else if constexpr (N == 4) {
      w[0] = *reinterpret_cast<const unsigned*>(p);
    } else if constexpr (N == 2) {
      w[0] = *reinterpret_cast<const unsigned short*>(p);
    } else {
      w[0] = *p;
    }
  }

  // Nonzero means masked (bool or uint8 masks).
  __device__ __forceinline__ bool masked(int j) const {
    return ((w[j / 4] >> (8 * (j % 4))) & 0xffu) != 0u;
  }

  // The staged copy of a masked row (SoftmaxConfig.stage): the words at p, aligned to their
  // size (WORDS consecutive words a vector).
  __device__ __forceinline__ void store_words(unsigned* p) const {
    if constexpr (WORDS == 4) {
      *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
    } else if constexpr (WORDS == 2) {
      *reinterpret_cast<uint2*>(p) = make_uint2(w[0], w[1]);
    } else {
#pragma unroll
      for (int i = 0; i < WORDS; ++i) p[i] = w[i];
    }
  }
  __device__ __forceinline__ void load_words(const unsigned* p) {
    if constexpr (WORDS == 4) {
      const uint4 q = *reinterpret_cast<const uint4*>(p);
      w[0] = q.x; w[1] = q.y; w[2] = q.z; w[3] = q.w;
    } else if constexpr (WORDS == 2) {
      const uint2 q = *reinterpret_cast<const uint2*>(p);
      w[0] = q.x; w[1] = q.y;
    } else {
#pragma unroll
      for (int i = 0; i < WORDS; ++i) w[i] = p[i];
    }
  }

  // Columns outside the row read as masked (bytes 0x01): bytes j >= n (0 <= n < N).
  __device__ __forceinline__ void mask_from(int n) {
#pragma unroll
    for (int i = 0; i < WORDS; ++i) {
      const int k = n - 4 * i;  // this word's bytes inside the row
      if (k <= 0) w[i] |= 0x01010101u;
      if (k > 0 && k < 4) w[i] |= 0x01010101u << (8 * k);
    }
  }

  // OR into z a nonzero value iff one of the N bytes is zero (an unmasked column): per word
  // (w - 0x01..) & ~w & 0x80.., exact for "some byte is zero"; a borrow only runs upwards, so
  // for N < 4 the bytes above N (zeros) are cut off afterwards.
  __device__ __forceinline__ void any_unmasked(unsigned& z) const {
    constexpr unsigned kLow = N >= 4 ? 0xffffffffu : (1u << (8 * N)) - 1u;
#pragma unroll
    for (int i = 0; i < WORDS; ++i) z |= (w[i] - 0x01010101u) & ~w[i] & (0x80808080u & kLow);
  }
};

template <int W>
__device__ __forceinline__ void clear(unsigned (&w)[W]) {
#pragma unroll
  for (int i = 0; i < W; ++i) w[i] = 0u;
}

// The first n (0 < n < N) elements of BYTES bytes at src into w, zeros after: the partial last
// vector of a row (predicated element accesses, no branches).
template <int BYTES, int N, int W>
__device__ __forceinline__ void load_partial(unsigned (&w)[W], const void* src, int n) {
  clear(w);
#pragma unroll
  for (int j = 0; j < N - 1; ++j) {
    if (j < n) {
      constexpr int PER = 4 / BYTES;  // elements per word
      const int shift = 8 * BYTES * (j % PER);
      if constexpr (BYTES == 4) {
        w[j] = static_cast<const unsigned*>(src)[j];
      } else if constexpr (BYTES == 2) {
        w[j / PER] |= (unsigned)static_cast<const unsigned short*>(src)[j] << shift;
      } else {
        w[j / PER] |= (unsigned)static_cast<const unsigned char*>(src)[j] << shift;
      }
    }
  }
}

template <int BYTES, int N, int W>
__device__ __forceinline__ void store_partial(const unsigned (&w)[W], void* dst, int n) {
#pragma unroll
  for (int j = 0; j < N - 1; ++j) {
    if (j < n) {
      if constexpr (BYTES == 4) {
        static_cast<unsigned*>(dst)[j] = w[j];
      } else {
        static_cast<unsigned short*>(dst)[j] = (unsigned short)(w[j / 2] >> (16 * (j % 2)));
      }
    }
  }
}

// Where the row's partial last vector is. Only one vector of a row can be partial, and it is
// handled once, outside the unrolled loops: that keeps the unrolled code to one vector access
// per step (compile time), and the tail costs nothing when cols % N == 0.
struct Tail {
  int col;   // first column of the partial vector (== cols when there is none)
  int n;     // its valid elements (0 when there is none)
  bool mine; // this thread's columns include it

  __device__ __forceinline__ Tail(int cols, int n_elts, int col0, int col_step) {
    n = cols % n_elts;
    col = cols - n;
    mine = n != 0 && col >= col0 && (col - col0) % col_step == 0;
  }
};

__device__ __forceinline__ int ld_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// The contract's inter-CTA arrival barrier (docs/design.md): thread 0 releases (fence + add)
// and polls with acquire loads; the poll loop is a CTA-wide vote, so it is uniform control flow
// (thread 0 spinning alone is a divergent loop, for which ptxas spills a convergence-barrier
// register to the stack in some instantiations). All threads must call it.
__device__ __forceinline__ void arrive_and_wait(int* counter, int target) {
  __syncthreads();  // this CTA's stats stores happen before thread 0's release
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(counter, 1);
  }
  while (!__syncthreads_and(threadIdx.x != 0 || ld_acquire(counter) >= target)) {
  }
}

// Stats slot of (CTA c, this row) in buffer (trip & 1): [2][ctas_per_col][WARPS_M][ctas][2].
template <int WARPS_M>
__device__ __forceinline__ float* stats_row(float* stats, int trip, int warp_m) {
  return stats + ((((trip & 1) * gridDim.y + blockIdx.y) * WARPS_M + warp_m) * gridDim.x) * 2;
}

// The parts of one row (one float2 per CTA, trip parity double-buffered) and their exchange:
// in a cluster (RowPlan.cluster) lane k of warp_n 0 writes this CTA's part into CTA k's shared
// slots (distributed shared memory) and the CTAs meet at the cluster barrier; otherwise lane 0
// writes it to `stats` through L2 and the CTAs meet at the counter. The merges below read the
// parts through SharedPart / L2Part, instantiated once per path (a per-part branch slowed the
// 16-CTA counter kernels, run 77).
template <int WARPS_M>
struct RowParts {
  float* buf;       // counter path: this row's slots in `stats`
  float2* slots;    // cluster path: this row's slots in shared memory
  bool cluster;

  __device__ __forceinline__ RowParts(float* stats, int trip, int warp_m) {
    __shared__ float2 cl[2][WARPS_M][nn::kMaxCluster];
    cluster = nn::cluster_ctas() > 1;
    buf = stats_row<WARPS_M>(stats, trip, warp_m);
    slots = cl[trip & 1][warp_m];
  }
  // Every thread of the CTA calls it; `writer`: this thread's warp holds a real row's part.
  __device__ __forceinline__ void exchange(float2 v, bool writer, int lane, int ctas, int* barrier,
                                           int trip) const {
    if (cluster) {
      if (writer && lane < ctas) nn::st_cluster(slots + blockIdx.x, lane, v);
      nn::cluster_sync();
    } else {
      if (writer && lane == 0) nn::st_cg(buf + 2 * blockIdx.x, v);
      arrive_and_wait(barrier + blockIdx.y, (trip + 1) * ctas);
    }
  }
};

// Readers of the parts for RowParts' two paths.
struct SharedPart {
  const float2* p;
  __device__ __forceinline__ float2 operator()(int c) const { return p[c]; }
};
struct L2Part {
  const float* p;
  __device__ __forceinline__ float2 operator()(int c) const { return nn::ld_cg(p + 2 * c); }
};

// The forward's merge of the (max, signed sum) parts in CTA order: gm = max m_c,
// gs = sum |s_c| * exp(m_c - gm); any: some CTA keeps a column (a sum not below 0: a CTA that
// keeps nothing sends -s with s >= 1, one that keeps only -inf scores +0, a NaN row NaN).
template <typename Part>
__device__ __forceinline__ void merge_max_sum(Part part, int ctas, float& gm, float& gs,
                                              bool& any) {
  gm = neg_inf();
#pragma unroll 1
  for (int c = 0; c < ctas; ++c) gm = fmaxf(gm, part(c).x);
  gs = 0.f;
  any = false;
#pragma unroll 1
  for (int c = 0; c < ctas; ++c) {
    const float2 p = part(c);
    gs += fabsf(p.y) * exp_diff(p.x, gm);
    any |= !(p.y < 0.f);
  }
}

// The backward's sum of the parts' x in CTA order.
template <typename Part>
__device__ __forceinline__ float sum_x(Part part, int ctas) {
  float d = 0.f;
#pragma unroll 1
  for (int c = 0; c < ctas; ++c) d += part(c).x;
  return d;
}

// Columns [0, lim) of a row of query qi are kept (`lim` enters as cols, or 0 for a row past the
// end); later ones are excluded (causal variants: j <= qi, aligned j <= qi + cols - sq).
template <int VARIANT>
__device__ __forceinline__ int row_limit(int qi, int lim, int cols, int sq) {
  if constexpr (VARIANT == 2) lim = min(lim, qi + 1);
  if constexpr (VARIANT == 3) lim = min(lim, max(qi + (cols - sq) + 1, 0));
  return lim;
}

// The masked variant's mask row of row `row` (query qi): (mask_batch == 1 ? 0 : batch) * sq + qi.
__device__ __forceinline__ const unsigned char* mask_row(const unsigned char* mask, int row, int qi,
                                                         int sq, int heads, int mask_batch,
                                                         long long mask_stride) {
  const int b = row / (heads * sq);
  return mask + ((long long)(mask_batch == 1 ? 0 : b) * sq + qi) * mask_stride;
}

// One thread's slice of a forward row as loaded (storage type, mask bytes), and the row's
// column limit: columns [0, lim) are read, later ones are excluded (causal) or past the end.
template <typename T, int N, int LDGS, int VARIANT>
struct FwdSlice {
  nn::Pack<T, N> p[LDGS];
  MaskBytes<N> mb[LDGS];
  int lim;

  __device__ __forceinline__ void load(const T* x, const unsigned char* mask, int row, int rows,
                                       int cols, long long x_stride, long long mask_stride,
                                       int sq, int heads, int mask_batch, int col0, int col_step,
                                       const Tail& tail) {
    constexpr bool MASKED = VARIANT == 1;
    // row_limit's and mask_row's rules, kept inline here: routed through them, 269 of the 360
    // held forward kernels of the registry compiled to other SASS (NVRTC 13.5, sm_90; untimed)
    lim = row < rows ? cols : 0;
    const int qi = VARIANT == 0 ? 0 : row % sq;
    if constexpr (VARIANT == 2) lim = min(lim, qi + 1);
    if constexpr (VARIANT == 3) lim = min(lim, max(qi + (cols - sq) + 1, 0));
    const T* xr = x + row * x_stride;
    const unsigned char* mr = mask;
    if constexpr (MASKED) {
      const int b = row / (heads * sq);
      mr = mask + ((long long)(mask_batch == 1 ? 0 : b) * sq + qi) * mask_stride;
    }
    // The partial last vector, or zeros (mask: every column outside the row masked, so that
    // "an unmasked column" can be read off the mask words alone).
    nn::Pack<T, N> xt;
    MaskBytes<N> mt;
    clear(xt.w);
    clear(mt.w);
    if (tail.mine && tail.col < lim) {
      load_partial<sizeof(T), N>(xt.w, xr + tail.col, tail.n);
      if constexpr (MASKED) {
        load_partial<1, N>(mt.w, mr + tail.col, tail.n);
        mt.mask_from(tail.n);
      }
    } else if constexpr (MASKED) {
      mt.mask_from(0);
    }
#pragma unroll
    for (int it = 0; it < LDGS; ++it) {
      const int c = col0 + it * col_step;
      p[it] = xt;
      mb[it] = mt;
      if (c < lim && c + N <= cols) {
        p[it].load(xr + c);
        if constexpr (MASKED) mb[it].load(mr + c);
      }
    }
  }
};

// TE gives masked positions the score -10000 (after scaling).
constexpr float kMaskedScore = -10000.0f;

// The scaled and masked forward's first pass over a slice: v = the scaled scores
// (masked positions kMaskedScore; with CHECKED, columns at or past lim -inf), m = their maximum,
// `unmasked` as in MaskBytes::any_unmasked.
template <bool CHECKED, typename T, int N, int LDGS, int VARIANT>
__device__ __forceinline__ void fwd_scores(const FwdSlice<T, N, LDGS, VARIANT>& now, int col0,
                                           int col_step, int lim, float scale, float (&v)[LDGS][N],
                                           float& m, unsigned& unmasked) {
#pragma unroll
  for (int it = 0; it < LDGS; ++it) {
    const int c = col0 + it * col_step;
    float f[N];
    now.p[it].to_float(f);
#pragma unroll
    for (int j = 0; j < N; ++j) {
      float t = scaled(f[j], scale);
      if constexpr (VARIANT == 1) t = now.mb[it].masked(j) ? kMaskedScore : t;
      if constexpr (CHECKED) t = c + j < lim ? t : neg_inf();
      v[it][j] = t;
      m = fmaxf(m, t);
    }
    if constexpr (VARIANT == 1) now.mb[it].any_unmasked(unmasked);
  }
}

}  // namespace nnsm

// y = softmax(x * scale) over each row's kept columns; VARIANT 0 scaled, 1 masked,
// 2 upper_triang, 3 aligned_causal. PREFETCH: the next row's loads are issued before this
// row's reductions (software pipeline; the row waiting is kept as loaded).
template <typename T, int WARPS_M, int WARPS_N, int NUM_ELTS, int LDGS, int VARIANT, int MIN_CTAS,
          bool PREFETCH>
__global__ void __launch_bounds__(WARPS_M * WARPS_N * 32, MIN_CTAS)
    softmax_fwd(const T* x, const unsigned char* mask, T* y, int rows, int cols,
                long long x_stride, long long y_stride, long long mask_stride, int sq, int heads,
                int mask_batch, float scale, float* stats, int* barrier) {
  using namespace nnsm;
  nn::kernel_prologue();
  constexpr int N = NUM_ELTS;
  constexpr bool MASKED = VARIANT == 1;
  constexpr bool CAUSAL = VARIANT >= 2;
  static_assert(VARIANT >= 0 && VARIANT <= 3, "unknown variant");

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int warp_m = warp / WARPS_N;
  const int warp_n = warp % WARPS_N;
  // CTAs sharing a row. One-CTA and fixed-count builds have the count, and so the column step,
  // as constants: each vector's address is then the row's plus an immediate, not recomputed from
  // gridDim (H200 run 132, one CTA: aligned_causal 32768 keys 1.13x, the rest within spread).
  const int ctas = nnsm::row_ctas();
  if (!SOFTMAX_MULTI_CTA && gridDim.x > 1) __trap();  // a single-CTA build launched wrongly
  const int col0 = ((blockIdx.x * WARPS_N + warp_n) * 32 + lane) * N;
  const int col_step = ctas * WARPS_N * 32 * N;
  const int rows_step = gridDim.y * WARPS_M;
  const int trips = (rows - 1) / rows_step + 1;  // rows >= 1; no overflow near INT_MAX
  const Tail tail(cols, N, col0, col_step);
  const auto row_of = [&](int trip) {
    return (trip * gridDim.y + blockIdx.y) * WARPS_M + warp_m;
  };

  // Two exchanges a trip through separate arrays: a warp can only rewrite one after every warp
  // has passed the other's barrier, i.e. has finished reading it.
  __shared__ float s_max[WARPS_M][WARPS_N];
  __shared__ float s_sum[WARPS_M][WARPS_N];
  __shared__ int s_keep[WARPS_M][WARPS_N];

  FwdSlice<T, N, LDGS, VARIANT> cur;
  const auto load = [&](int row) {
    cur.load(x, mask, row, rows, cols, x_stride, mask_stride, sq, heads, mask_batch, col0,
             col_step, tail);
  };
  if constexpr (PREFETCH) load(row_of(0));
  for (int trip = 0; trip < trips; ++trip) {
    const int row = row_of(trip);
    const bool valid = row < rows;
    if constexpr (!PREFETCH) load(row);
    const FwdSlice<T, N, LDGS, VARIANT> now = cur;  // with PREFETCH `cur` takes the next row
    if constexpr (PREFETCH) {
      if (trip + 1 < trips) load(row_of(trip + 1));
    }
    const int lim = now.lim;

    // Scale, apply the mask; the row maximum along the way. Masked variant: whether this
    // thread has an unmasked column comes from the mask words (columns outside the row read as
    // masked); tested per column, it kept two predicates a column alive, which ptxas packed
    // into register bits.
    float v[LDGS][N];
    float m = neg_inf();
    unsigned unmasked = 0u;
    if constexpr (CAUSAL) {
#pragma unroll
      for (int it = 0; it < LDGS; ++it) {
        const int c = col0 + it * col_step;
        const int n_in = lim - c;  // columns of this vector inside the row: j < n_in
        float f[N];
        now.p[it].to_float(f);
#pragma unroll
        for (int j = 0; j < N; ++j) {
          float t = scaled(f[j], scale);
          // j < n_in saves an add a column against c + j < lim and ran 1-3% faster in the
          // causal kernels, but 3-4% slower in the scaled one at 4096 keys (run 38 A/B).
          const bool in = j < n_in;
          v[it][j] = in ? t : neg_inf();
          m = fmaxf(m, v[it][j]);
        }
      }
    } else {
      // Scaled and masked rows: a thread whose every vector lies inside the row (every thread
      // on rows of the entry's length) takes a copy of this pass without the per-column test,
      // three instructions a column (the column, a compare, a select): run 110, NVRTC
      // 1.01-1.05x (masked bf16, fp32) but 0.93-0.97x at bf16 4096 / 131072 keys, where the
      // second copy cost registers. (The maximum as a tree of per-position maxima instead of one
      // chain ran 0.70-1.00x there.)
      if (lim >= col0 + (LDGS - 1) * col_step + N) {
        fwd_scores<false>(now, col0, col_step, lim, scale, v, m, unmasked);
      } else {
        fwd_scores<true>(now, col0, col_step, lim, scale, v, m, unmasked);
      }
    }
    bool keep = unmasked != 0u;

    m = warp_max(m);
    if constexpr (MASKED) keep = __any_sync(0xffffffffu, keep);
    if constexpr (WARPS_N > 1) {
      if (lane == 0) {
        s_max[warp_m][warp_n] = m;
        if constexpr (MASKED) s_keep[warp_m][warp_n] = keep;
      }
      __syncthreads();
      m = s_max[warp_m][0];
#pragma unroll
      for (int w = 1; w < WARPS_N; ++w) m = fmaxf(m, s_max[warp_m][w]);
      if constexpr (MASKED) {
        int any = 0;
#pragma unroll
        for (int w = 0; w < WARPS_N; ++w) any |= s_keep[warp_m][w];
        keep = any != 0;
      }
    }

    // A CTA part with nothing kept has m = -inf: exponentiate against 0 so its terms are 0.
    // One CTA a row: y = v / s whatever the terms' common 2^rho; rows of several exchange and
    // scale natural sums (times `unit`).
    const float base = m == neg_inf() ? 0.f : m;
    float unit;
    float s = exp_terms(v, base, unit);
    s = nn::warp_sum(s);
    if constexpr (WARPS_N > 1) {
      if (lane == 0) s_sum[warp_m][warp_n] = s;
      __syncthreads();
      s = s_sum[warp_m][0];
#pragma unroll
      for (int w = 1; w < WARPS_N; ++w) s += s_sum[warp_m][w];
    }

    // Whether the row keeps anything: masked rows need the reduction (across CTAs below),
    // causal ones know it from lim (the same in every CTA of the row).
    bool row_keep = MASKED ? keep : (CAUSAL ? lim > 0 : true);
    float factor;
    if (SOFTMAX_MULTI_CTA && ctas > 1) {
      // One (max, sum) pair per CTA; for the masked variant a negative sum carries "this CTA
      // keeps nothing" (every CTA owns a column: masked, its term is 1 at the maximum, so the
      // sum is >= 1; one keeping only -inf scores sends +0).
      const RowParts<WARPS_M> parts(stats, trip, warp_m);
      const float sn = s * unit;
      parts.exchange(make_float2(m, MASKED && !keep ? -sn : sn), valid && warp_n == 0, lane, ctas,
                     barrier, trip);
      // Every CTA merges all pairs in CTA order, so all agree bitwise. (Rows past the end read
      // unwritten slots and store nothing.)
      float gm, gs;
      bool any;
      if (parts.cluster) {
        merge_max_sum(SharedPart{parts.slots}, ctas, gm, gs, any);
      } else {
        merge_max_sum(L2Part{parts.buf}, ctas, gm, gs, any);
      }
      if constexpr (MASKED) row_keep = any;
      // A CTA whose columns are all excluded holds only zeros (not to be scaled by inf); a row
      // kept whose every score is -inf is NaN (exp_diff(-inf, -inf)), as on one CTA (0 / 0).
      factor = row_keep && (m != neg_inf() || gm == neg_inf())
                   ? exp_diff(m, gm) * rcp(gs) * unit
                   : 0.f;
    } else {
      factor = row_keep ? rcp(s) : 0.f;
    }

    // Excluded columns hold ex2(-inf) = 0, so they store exact zeros; vectors wholly past the
    // causal limit are zeroed outright (also when the row holds NaN or inf). The vector at the
    // limit is not: a per-column test there cost 8-40 B more spills in the tuned shapes, and
    // only a row holding NaN or inf (factor NaN) shows the difference (TE writes 0).
    T* yr = y + row * y_stride;
    nn::Pack<T, N> yt;
    clear(yt.w);
#pragma unroll
    for (int it = 0; it < LDGS; ++it) {
      const int c = col0 + it * col_step;
      float f[N];
#pragma unroll
      for (int j = 0; j < N; ++j) f[j] = v[it][j] * factor;
      nn::Pack<T, N> p;
      p.from_float(f);
      if (CAUSAL && c >= lim) clear(p.w);
      if (valid && c + N <= cols) p.store(yr + c);
      if (c == tail.col) yt = p;
    }
    if (valid && tail.mine) store_partial<sizeof(T), N>(yt.w, yr + tail.col, tail.n);
  }
}

namespace nnsm {

// Evict-first (.cs) accesses: the streaming forward's second read of x and its stores of y are
// not read again, so they should not push the lines its first pass left in L2 out of it.
template <typename T, int N>
__device__ __forceinline__ void load_cs(nn::Pack<T, N>& p, const T* src) {
  constexpr int B = nn::Pack<T, N>::BYTES;
  if constexpr (B % 16 == 0) {
#pragma unroll
    for (int i = 0; i < B / 16; ++i) {
      const uint4* q = reinterpret_cast<const uint4*>(src) + i;
      asm volatile("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(p.w[4 * i]), "=r"(p.w[4 * i + 1]), "=r"(p.w[4 * i + 2]),
                     "=r"(p.w[4 * i + 3])
                   : "l"(q));
    }
  } else if constexpr (B == 8) {
    asm volatile("ld.global.cs.v2.u32 {%0, %1}, [%2];" : "=r"(p.w[0]), "=r"(p.w[1]) : "l"(src));
  } else if constexpr (B == 4) {
    asm volatile("ld.global.cs.u32 %0, [%1];" : "=r"(p.w[0]) : "l"(src));
  } else {
    p.load(src);
  }
}

template <typename T, int N>
__device__ __forceinline__ void store_cs(const nn::Pack<T, N>& p, T* dst) {
  constexpr int B = nn::Pack<T, N>::BYTES;
  if constexpr (B % 16 == 0) {
#pragma unroll
    for (int i = 0; i < B / 16; ++i) {
      uint4* q = reinterpret_cast<uint4*>(dst) + i;
      asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(q), "r"(p.w[4 * i]),
                   "r"(p.w[4 * i + 1]), "r"(p.w[4 * i + 2]), "r"(p.w[4 * i + 3])
                   : "memory");
    }
  } else if constexpr (B == 8) {
    asm volatile("st.global.cs.v2.u32 [%0], {%1, %2};" ::"l"(dst), "r"(p.w[0]), "r"(p.w[1])
                 : "memory");
  } else if constexpr (B == 4) {
    asm volatile("st.global.cs.u32 [%0], %1;" ::"l"(dst), "r"(p.w[0]) : "memory");
  } else {
    p.store(dst);
  }
}

// One vector of a streaming forward row: columns [c, c + N) as loaded, zeros (mask: masked)
// where the row has nothing to read; the partial last vector element by element.
template <bool CS, typename T, int N, bool MASKED>
__device__ __forceinline__ void load_vector(nn::Pack<T, N>& p, MaskBytes<N>& mb, const T* xr,
                                            const unsigned char* mr, int c, int lim, int cols) {
  clear(p.w);
  if constexpr (MASKED) clear(mb.w);
  if (c < lim) {
    if (c + N <= cols) {
      if constexpr (CS) {
        load_cs(p, xr + c);
      } else {
        p.load(xr + c);
      }
      if constexpr (MASKED) mb.load(mr + c);
    } else {
      load_partial<sizeof(T), N>(p.w, xr + c, cols - c);
      if constexpr (MASKED) {
        load_partial<1, N>(mb.w, mr + c, cols - c);
        mb.mask_from(cols - c);
      }
    }
  } else if constexpr (MASKED) {
    mb.mask_from(0);
  }
}

// Scaled scores of one vector (fwd_scores' rules): masked positions kMaskedScore;
// with CHECKED, columns at or past lim (j >= n_in) -inf.
template <bool CHECKED, typename T, int N, bool MASKED>
__device__ __forceinline__ void vector_scores(const nn::Pack<T, N>& p, const MaskBytes<N>& mb,
                                              int n_in, float scale, float (&v)[N]) {
  float f[N];
  p.to_float(f);
#pragma unroll
  for (int j = 0; j < N; ++j) {
    float t = scaled(f[j], scale);
    if constexpr (MASKED) t = mb.masked(j) ? kMaskedScore : t;
    if constexpr (CHECKED) t = j < n_in ? t : neg_inf();
    v[j] = t;
  }
}

// A chunk's scores (vector it at column c0 + it * STEP; lim - c0 = n_in) and their maximum.
// The streaming forward takes the unchecked copy where the whole chunk lies inside the row
// (every chunk but the last of a scaled or masked row): two instructions a column less.
template <bool CHECKED, typename T, int N, int CHUNK, int STEP, bool MASKED>
__device__ __forceinline__ float chunk_scores(const nn::Pack<T, N> (&p)[CHUNK],
                                              const MaskBytes<N> (&mb)[CHUNK], int n_in,
                                              float scale, float (&v)[CHUNK][N],
                                              unsigned& unmasked) {
  float cm = neg_inf();
#pragma unroll
  for (int it = 0; it < CHUNK; ++it) {
    vector_scores<CHECKED, T, N, MASKED>(p[it], mb[it], n_in - it * STEP, scale, v[it]);
    if constexpr (MASKED) mb[it].any_unmasked(unmasked);
#pragma unroll
    for (int j = 0; j < N; ++j) cm = fmaxf(cm, v[it][j]);
  }
  return cm;
}

// The streaming second pass's exponent for one row, y = exp(score - base) / sum =
// 2^((score - base) * log2e - lse2) (lse2: log2 of the row's sum; +inf where nothing is kept),
// so the division is in the exponent. `direct` rows (|base| <= kDirectBase) take it as one
// FFMA, x * k - off; the others round the score as the first pass did and subtract the maximum
// first (FMUL, FADD, FFMA).
struct RowExp {
  float scale, base, lse2, k, off, masked;
  bool direct;

  __device__ __forceinline__ RowExp(float scale_, float base_, float lse2_)
      : scale(scale_), base(base_), lse2(lse2_) {
    k = scale * kLog2e;
    off = fmaf(base, kLog2e, lse2);
    masked = fmaf(kMaskedScore - base, kLog2e, -lse2);
    direct = fabsf(base) <= kDirectBase && fabsf(scale) <= 1e38f;  // (k finite)
  }
};

// y of one vector of the streaming forward's second pass (RowExp, DIRECT as its `direct`);
// masked positions kMaskedScore, with CHECKED columns j >= n_in exactly 0.
template <bool CHECKED, bool DIRECT, typename T, int N, bool MASKED>
__device__ __forceinline__ void vector_probs(const nn::Pack<T, N>& p, const MaskBytes<N>& mb,
                                             int n_in, const RowExp& e, float (&v)[N]) {
  float f[N];
  p.to_float(f);
#pragma unroll
  for (int j = 0; j < N; ++j) {
    float t = DIRECT ? fmaf(f[j], e.k, -e.off)
                     : fmaf(scaled(f[j], e.scale) - e.base, kLog2e, -e.lse2);
    if constexpr (MASKED) t = mb.masked(j) ? e.masked : t;
    if constexpr (CHECKED) t = j < n_in ? t : neg_inf();
    v[j] = ex2(t);
  }
}

// vector_probs the row's way (a branch the whole CTA takes alike).
template <bool CHECKED, typename T, int N, bool MASKED>
__device__ __forceinline__ void row_probs(const nn::Pack<T, N>& p, const MaskBytes<N>& mb,
                                          int n_in, const RowExp& e, float (&v)[N]) {
  if (e.direct) {
    vector_probs<CHECKED, true, T, N, MASKED>(p, mb, n_in, e, v);
  } else {
    vector_probs<CHECKED, false, T, N, MASKED>(p, mb, n_in, e, v);
  }
}

// Where a thread's walk over its slice in chunks of SPAN columns from col0 ends: the column of
// its last chunk inside the row, or col0 - SPAN if it has none (so a backward walk from there
// to col0 takes no step). The reversed second pass reads the lines the first read last (the
// likeliest still in L2) first.
template <int SPAN>
__device__ __forceinline__ int last_chunk(int col0, int cols) {
  return col0 < cols ? col0 + (cols - 1 - col0) / SPAN * SPAN : col0 - SPAN;
}

// The part of a row one CTA of a streaming kernel takes: columns [lo, lo + len), contiguous and
// starting on a vector, about cols / ctas of them; limit() moves a row's kept limit into it.
// Builds of one CTA a row (SOFTMAX_MULTI_CTA=0) take the whole row.
struct RowPart {
  int lo, len;

  __device__ __forceinline__ RowPart(int cols, int ctas, int n) {
    if (SOFTMAX_MULTI_CTA) {
      const int per = (cols + ctas * n - 1) / (ctas * n) * n;
      lo = min(static_cast<int>(blockIdx.x) * per, cols);
      len = min(per, cols - lo);
    } else {
      lo = 0;
      len = cols;
    }
  }
  __device__ __forceinline__ int limit(int lim) const {
    return SOFTMAX_MULTI_CTA ? min(max(lim - lo, 0), len) : lim;
  }
};

// The launch's dynamic shared memory, where a STAGE build keeps its row (nullptr otherwise: the
// declaration is only made, and needed, where it is used).
template <typename T, bool STAGE>
__device__ __forceinline__ T* staged_row() {
  if constexpr (STAGE) {
    extern __shared__ __align__(16) unsigned char nnsm_staged_row[];
    return reinterpret_cast<T*>(nnsm_staged_row);
  } else {
    return nullptr;
  }
}

// Where a staged masked build keeps its mask words: after the part's elements (``len``
// columns, whole vectors), on a 16-byte boundary, MaskBytes<N>::WORDS words a vector (nullptr
// otherwise). Each CTA lays out its own shared memory, so its own part length is the one.
template <typename T, int N, bool STAGE, bool MASKED>
__device__ __forceinline__ unsigned* staged_mask(T* staged, int len) {
  if constexpr (STAGE && MASKED) {
    const int bytes = (len + N - 1) / N * N * static_cast<int>(sizeof(T));
    return reinterpret_cast<unsigned*>(reinterpret_cast<unsigned char*>(staged) +
                                       (bytes + 15) / 16 * 16);
  } else {
    return nullptr;
  }
}

}  // namespace nnsm

// softmax_fwd's result for rows of any length (SoftmaxConfig.chunk), holding CHUNK vectors a
// thread at a time instead of the row: the first pass keeps an online (max, sum) per thread,
// merged over the CTA; the second reads the slice again (from L2: few rows are in flight) and
// writes y, from the last chunk back with REVERSE (SoftmaxConfig.reverse). Same parameters as
// softmax_fwd. A row of several CTAs (SOFTMAX_MULTI_CTA builds) is cut into gridDim.x
// contiguous parts, each streamed as a row of its own; the CTAs merge their (max, sum) pairs
// through RowParts as softmax_fwd does, so each SM keeps a part of a row, not a row, in L2.
// STAGE (SoftmaxConfig.stage; one CTA or one cluster a row): the first pass also stores each
// vector it loads (and its mask bytes) into dynamic shared memory at its column, and the second
// reads it back from there; a thread reads only the vectors it stored, so no barrier is needed.
template <typename T, int WARPS_N, int NUM_ELTS, int CHUNK, int VARIANT, int MIN_CTAS,
          bool REVERSE, bool STAGE>
__global__ void __launch_bounds__(WARPS_N * 32, MIN_CTAS)
    softmax_fwd_stream(const T* x, const unsigned char* mask, T* y, int rows, int cols,
                       long long x_stride, long long y_stride, long long mask_stride, int sq,
                       int heads, int mask_batch, float scale, float* stats, int* barrier) {
  using namespace nnsm;
  nn::kernel_prologue();
  constexpr int N = NUM_ELTS;
  constexpr int STEP = WARPS_N * 32 * N;  // columns from one of a thread's vectors to the next
  constexpr bool MASKED = VARIANT == 1;
  constexpr bool CAUSAL = VARIANT >= 2;
  static_assert(VARIANT >= 0 && VARIANT <= 3, "unknown variant");
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int col0 = threadIdx.x * N;
  const int ctas = nnsm::row_ctas();  // (a one-CTA build: every CTA the row)
  const RowPart part(cols, ctas, N);
  __shared__ float s_max[WARPS_N];
  __shared__ float s_sum[WARPS_N];
  __shared__ int s_keep[WARPS_N];
  T* const staged = staged_row<T, STAGE>();
  [[maybe_unused]] unsigned* const smask = staged_mask<T, N, STAGE, MASKED>(staged, part.len);
  [[maybe_unused]] constexpr int MW = MaskBytes<N>::WORDS;

  int trip = 0;
  for (int row = blockIdx.y; row < rows; row += gridDim.y, ++trip) {
    const int qi = VARIANT == 0 ? 0 : row % sq;
    const int row_lim = row_limit<VARIANT>(qi, cols, cols, sq);
    const int lim = part.limit(row_lim);
    const int len = part.len;
    const T* xr = x + row * x_stride + part.lo;
    const unsigned char* mr = mask;
    if constexpr (MASKED) {
      mr = mask_row(mask, row, qi, sq, heads, mask_batch, mask_stride) + part.lo;
    }

    // First pass: a chunk's scores, its maximum, then the thread's running sum rescaled to the
    // new maximum (exponents against 0 while nothing is kept, so no inf - inf).
    float m = neg_inf();
    float s = 0.f;
    unsigned unmasked = 0u;
    for (int c0 = col0; c0 < lim; c0 += CHUNK * STEP) {
      nn::Pack<T, N> p[CHUNK];
      MaskBytes<N> mb[CHUNK];
#pragma unroll
      for (int it = 0; it < CHUNK; ++it) {
        load_vector<false, T, N, MASKED>(p[it], mb[it], xr, mr, c0 + it * STEP, lim, len);
      }
      if constexpr (STAGE) {
#pragma unroll
        for (int it = 0; it < CHUNK; ++it) {
          const int c = c0 + it * STEP;
          if (c < lim) {
            p[it].store(staged + c);
            if constexpr (MASKED) mb[it].store_words(smask + c / N * MW);
          }
        }
      }
      float v[CHUNK][N];
      const float cm =
          c0 + CHUNK * STEP - STEP + N <= lim
              ? chunk_scores<false, T, N, CHUNK, STEP, MASKED>(p, mb, lim - c0, scale, v, unmasked)
              : chunk_scores<true, T, N, CHUNK, STEP, MASKED>(p, mb, lim - c0, scale, v, unmasked);
      const float mm = fmaxf(m, cm);
      const float base = mm == neg_inf() ? 0.f : mm;
      float unit;
      const float acc = exp_terms(v, base, unit);
      s = s * exp_diff(m, base) + acc * unit;
      m = mm;
    }

    // The row's maximum, then the threads' sums rescaled to it, in warp order.
    float gm = warp_max(m);
    bool keep = unmasked != 0u;
    if constexpr (MASKED) keep = __any_sync(0xffffffffu, keep);
    if constexpr (WARPS_N > 1) {
      if (lane == 0) {
        s_max[warp] = gm;
        if constexpr (MASKED) s_keep[warp] = keep;
      }
      __syncthreads();
      gm = s_max[0];
#pragma unroll
      for (int w = 1; w < WARPS_N; ++w) gm = fmaxf(gm, s_max[w]);
      if constexpr (MASKED) {
        int any = 0;
#pragma unroll
        for (int w = 0; w < WARPS_N; ++w) any |= s_keep[w];
        keep = any != 0;
      }
    }
    float base = gm == neg_inf() ? 0.f : gm;
    float gs = nn::warp_sum(s * exp_diff(m, base));
    if constexpr (WARPS_N > 1) {
      if (lane == 0) s_sum[warp] = gs;
      __syncthreads();
      gs = s_sum[0];
#pragma unroll
      for (int w = 1; w < WARPS_N; ++w) gs += s_sum[w];
    }
    bool row_keep = MASKED ? keep : (CAUSAL ? row_lim > 0 : true);
    if (SOFTMAX_MULTI_CTA && ctas > 1) {
      // One (max, sum) pair per CTA, the masked variant's "keeps nothing" in a negative sum
      // (merge_max_sum); every CTA merges them in CTA order (softmax_fwd's).
      const RowParts<1> parts(stats, trip, 0);
      parts.exchange(make_float2(gm, MASKED && !keep ? -gs : gs), warp == 0, lane, ctas, barrier,
                     trip);
      float rm, rs;
      bool any;
      if (parts.cluster) {
        merge_max_sum(SharedPart{parts.slots}, ctas, rm, rs, any);
      } else {
        merge_max_sum(L2Part{parts.buf}, ctas, rm, rs, any);
      }
      if constexpr (MASKED) row_keep = any;
      base = rm == neg_inf() ? 0.f : rm;
      gs = rs;
    }
    const RowExp ex(scale, base, row_keep ? lg2(gs) : __int_as_float(0x7f800000));

    // Second pass: every column of the part is written (zeros past the causal limit, also
    // where the row holds NaN or inf, as softmax_fwd).
    T* yr = y + row * y_stride + part.lo;
    constexpr int WALK = REVERSE ? -CHUNK * STEP : CHUNK * STEP;
    for (int c0 = REVERSE ? last_chunk<CHUNK * STEP>(col0, len) : col0;
         REVERSE ? c0 >= col0 : c0 < len; c0 += WALK) {
      // Per-vector loads (a branch each) keep ptxas from moving a chunk's later loads behind
      // the earlier vectors' arithmetic where registers are short (one tested load block did:
      // run 180, masked 131072 keys 0.84x).
      nn::Pack<T, N> p[CHUNK];
      MaskBytes<N> mb[CHUNK];
#pragma unroll
      for (int it = 0; it < CHUNK; ++it) {
        if constexpr (STAGE) {  // the vectors the first pass kept (zeros past the limit)
          const int c = c0 + it * STEP;
          clear(p[it].w);
          if (c < lim) p[it].load(staged + c);
          if constexpr (MASKED) {  // (the masked variant's limit is the part's end)
            if (c < lim) {
              mb[it].load_words(smask + c / N * MW);
            } else {
              clear(mb[it].w);
              mb[it].mask_from(0);
            }
          }
        } else {
          load_vector<true, T, N, MASKED>(p[it], mb[it], xr, mr, c0 + it * STEP, lim, len);
        }
      }
      if (c0 + CHUNK * STEP - STEP + N <= lim) {  // the chunk lies inside the kept columns
#pragma unroll
        for (int it = 0; it < CHUNK; ++it) {
          float v[N];
          row_probs<false, T, N, MASKED>(p[it], mb[it], N, ex, v);
          nn::Pack<T, N> out;
          out.from_float(v);
          store_cs(out, yr + c0 + it * STEP);
        }
        continue;
      }
#pragma unroll
      for (int it = 0; it < CHUNK; ++it) {
        const int c = c0 + it * STEP;
        float v[N];
        row_probs<true, T, N, MASKED>(p[it], mb[it], lim - c, ex, v);
        nn::Pack<T, N> out;
        out.from_float(v);
        if (c + N <= len) {
          store_cs(out, yr + c);
        } else if (c < len) {
          store_partial<sizeof(T), N>(out.w, yr + c, len - c);
        }
      }
    }
  }
}

namespace nnsm {

// One thread's slice of a backward row as loaded: dy and y as raw packs (half the registers of
// fp32 for 16-bit types; converting twice is cheaper than the occupancy it would cost), the
// partial last vector substituted, zeros past the row's end (they must not count twice).
template <typename T, int N, int LDGS>
struct BwdSlice {
  nn::Pack<T, N> pd[LDGS], py[LDGS];

  __device__ __forceinline__ void load(const T* dy, const T* y, int row, int rows, int cols,
                                       long long dy_stride, long long y_stride, int col0,
                                       int col_step, const Tail& tail) {
    const bool valid = row < rows;
    const int lim = valid ? cols : 0;
    const T* dyr = dy + row * dy_stride;
    const T* yr = y + row * y_stride;
    nn::Pack<T, N> dt, yt;  // the partial last vectors, or zeros
    clear(dt.w);
    clear(yt.w);
    if (tail.mine && valid) {
      load_partial<sizeof(T), N>(dt.w, dyr + tail.col, tail.n);
      load_partial<sizeof(T), N>(yt.w, yr + tail.col, tail.n);
    }
#pragma unroll
    for (int it = 0; it < LDGS; ++it) {
      const int c = col0 + it * col_step;
      if (c + N <= lim) {
        pd[it].load(dyr + c);
        py[it].load(yr + c);
      } else {
        const bool t = c == tail.col;
#pragma unroll
        for (int i = 0; i < nn::Pack<T, N>::WORDS; ++i) {
          pd[it].w[i] = t ? dt.w[i] : 0u;
          py[it].w[i] = t ? yt.w[i] : 0u;
        }
      }
    }
  }
};

}  // namespace nnsm

// dx = scale * y * (dy - sum_j dy_j * y_j); the same kernel serves every variant (excluded and
// masked positions have y == 0). PREFETCH: the next row's dy and y are loaded before this row's
// reduction (software pipeline, as the forward's).
template <typename T, int WARPS_M, int WARPS_N, int NUM_ELTS, int LDGS, int MIN_CTAS,
          bool PREFETCH>
__global__ void __launch_bounds__(WARPS_M * WARPS_N * 32, MIN_CTAS)
    softmax_bwd(const T* dy, const T* y, T* dx, int rows, int cols, long long dy_stride,
                long long y_stride, long long dx_stride, float scale, float* stats,
                int* barrier) {
  using namespace nnsm;
  nn::kernel_prologue();
  constexpr int N = NUM_ELTS;

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int warp_m = warp / WARPS_N;
  const int warp_n = warp % WARPS_N;
  const int ctas = nnsm::row_ctas();  // as in softmax_fwd
  if (!SOFTMAX_MULTI_CTA && gridDim.x > 1) __trap();
  const int col0 = ((blockIdx.x * WARPS_N + warp_n) * 32 + lane) * N;
  const int col_step = ctas * WARPS_N * 32 * N;
  const int rows_step = gridDim.y * WARPS_M;
  const int trips = (rows - 1) / rows_step + 1;  // rows >= 1; no overflow near INT_MAX
  const Tail tail(cols, N, col0, col_step);
  const auto row_of = [&](int trip) {
    return (trip * gridDim.y + blockIdx.y) * WARPS_M + warp_m;
  };

  // Double-buffered by trip parity: one barrier a trip, and a warp that runs ahead into the
  // next trip must not overwrite partials that slower warps are still reading.
  __shared__ float s_sum[2][WARPS_M][WARPS_N];

  BwdSlice<T, N, LDGS> cur;
  const auto load = [&](int row) {
    cur.load(dy, y, row, rows, cols, dy_stride, y_stride, col0, col_step, tail);
  };
  if constexpr (PREFETCH) load(row_of(0));
  for (int trip = 0; trip < trips; ++trip) {
    const int row = row_of(trip);
    const bool valid = row < rows;
    if constexpr (!PREFETCH) load(row);
    const BwdSlice<T, N, LDGS> now = cur;  // with PREFETCH `cur` takes the next row
    if constexpr (PREFETCH) {
      if (trip + 1 < trips) load(row_of(trip + 1));
    }

    float dot = 0.f;
#pragma unroll
    for (int it = 0; it < LDGS; ++it) {
      float fd[N], fy[N];
      now.pd[it].to_float(fd);
      now.py[it].to_float(fy);
#pragma unroll
      for (int j = 0; j < N; ++j) dot += fd[j] * fy[j];
    }
    dot = nn::warp_sum(dot);
    if constexpr (WARPS_N > 1) {
      float(&part)[WARPS_N] = s_sum[trip & 1][warp_m];
      if (lane == 0) part[warp_n] = dot;
      __syncthreads();
      dot = part[0];
#pragma unroll
      for (int w = 1; w < WARPS_N; ++w) dot += part[w];
    }
    if (SOFTMAX_MULTI_CTA && ctas > 1) {
      const RowParts<WARPS_M> parts(stats, trip, warp_m);
      parts.exchange(make_float2(dot, 0.f), valid && warp_n == 0, lane, ctas, barrier, trip);
      dot = parts.cluster ? sum_x(SharedPart{parts.slots}, ctas) : sum_x(L2Part{parts.buf}, ctas);
    }

    T* dxr = dx + row * dx_stride;
    nn::Pack<T, N> xt;
    clear(xt.w);
#pragma unroll
    for (int it = 0; it < LDGS; ++it) {
      const int c = col0 + it * col_step;
      float fd[N], fy[N], f[N];
      now.pd[it].to_float(fd);
      now.py[it].to_float(fy);
#pragma unroll
      for (int j = 0; j < N; ++j) f[j] = scale * fy[j] * (fd[j] - dot);
      nn::Pack<T, N> p;
      p.from_float(f);
      if (valid && c + N <= cols) p.store(dxr + c);
      if (c == tail.col) xt = p;
    }
    if (valid && tail.mine) store_partial<sizeof(T), N>(xt.w, dxr + tail.col, tail.n);
  }
}

namespace nnsm {

// One vector of a streaming backward row: dy and y at columns [c, c + N) as loaded (evict-first
// with CS), the partial last vector element by element, zeros past the row's end (they add
// nothing to the dot product).
template <bool CS, typename T, int N>
__device__ __forceinline__ void load_bwd_vector(nn::Pack<T, N>& pd, nn::Pack<T, N>& py,
                                                const T* dyr, const T* yr, int c, int cols) {
  if (c + N <= cols) {
    if constexpr (CS) {
      load_cs(pd, dyr + c);
      load_cs(py, yr + c);
    } else {
      pd.load(dyr + c);
      py.load(yr + c);
    }
  } else {
    clear(pd.w);
    clear(py.w);
    if (c < cols) {
      load_partial<sizeof(T), N>(pd.w, dyr + c, cols - c);
      load_partial<sizeof(T), N>(py.w, yr + c, cols - c);
    }
  }
}

}  // namespace nnsm

// softmax_bwd's result for rows of any length (SoftmaxConfig.chunk), as softmax_fwd_stream: the
// first pass takes sum(dy * y) CHUNK vectors a thread at a time, the second reads dy and y
// again (evict-first, from L2) and writes dx, from the last chunk back with REVERSE. Same
// parameters as softmax_bwd. Rows of several CTAs: contiguous parts (RowPart) whose sums the
// CTAs exchange through RowParts, added in CTA order.
template <typename T, int WARPS_N, int NUM_ELTS, int CHUNK, int MIN_CTAS, bool REVERSE>
__global__ void __launch_bounds__(WARPS_N * 32, MIN_CTAS)
    softmax_bwd_stream(const T* dy, const T* y, T* dx, int rows, int cols, long long dy_stride,
                       long long y_stride, long long dx_stride, float scale, float* stats,
                       int* barrier) {
  using namespace nnsm;
  nn::kernel_prologue();
  constexpr int N = NUM_ELTS;
  constexpr int SPAN = CHUNK * WARPS_N * 32 * N;  // columns of one chunk of the CTA
  constexpr int STEP = WARPS_N * 32 * N;          // from one of a thread's vectors to the next
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int col0 = threadIdx.x * N;
  const int ctas = nnsm::row_ctas();  // (a one-CTA build: every CTA the row)
  const RowPart part(cols, ctas, N);
  const int len = part.len;
  // Double-buffered by row parity: one barrier a row, and a warp running ahead into the next
  // row must not overwrite partials slower warps are still reading.
  __shared__ float s_dot[2][WARPS_N];

  int trip = 0;
  for (int row = blockIdx.y; row < rows; row += gridDim.y, ++trip) {
    const int parity = trip & 1;
    const T* dyr = dy + row * dy_stride + part.lo;
    const T* yr = y + row * y_stride + part.lo;
    float dot = 0.f;
    for (int c0 = col0; c0 < len; c0 += SPAN) {
      nn::Pack<T, N> pd[CHUNK], py[CHUNK];
#pragma unroll
      for (int it = 0; it < CHUNK; ++it) {
        load_bwd_vector<false, T, N>(pd[it], py[it], dyr, yr, c0 + it * STEP, len);
      }
#pragma unroll
      for (int it = 0; it < CHUNK; ++it) {
        float fd[N], fy[N];
        pd[it].to_float(fd);
        py[it].to_float(fy);
#pragma unroll
        for (int j = 0; j < N; ++j) dot += fd[j] * fy[j];
      }
    }
    dot = nn::warp_sum(dot);
    if constexpr (WARPS_N > 1) {
      if (lane == 0) s_dot[parity][warp] = dot;
      __syncthreads();
      dot = s_dot[parity][0];
#pragma unroll
      for (int w = 1; w < WARPS_N; ++w) dot += s_dot[parity][w];
    }
    if (SOFTMAX_MULTI_CTA && ctas > 1) {
      const RowParts<1> parts(stats, trip, 0);
      parts.exchange(make_float2(dot, 0.f), warp == 0, lane, ctas, barrier, trip);
      dot = parts.cluster ? sum_x(SharedPart{parts.slots}, ctas) : sum_x(L2Part{parts.buf}, ctas);
    }

    T* dxr = dx + row * dx_stride + part.lo;
    constexpr int WALK = REVERSE ? -SPAN : SPAN;
    for (int c0 = REVERSE ? last_chunk<SPAN>(col0, len) : col0;
         REVERSE ? c0 >= col0 : c0 < len; c0 += WALK) {
      nn::Pack<T, N> pd[CHUNK], py[CHUNK];
#pragma unroll
      for (int it = 0; it < CHUNK; ++it) {
        load_bwd_vector<true, T, N>(pd[it], py[it], dyr, yr, c0 + it * STEP, len);
      }
#pragma unroll
      for (int it = 0; it < CHUNK; ++it) {
        const int c = c0 + it * STEP;
        float fd[N], fy[N], f[N];
        pd[it].to_float(fd);
        py[it].to_float(fy);
#pragma unroll
        for (int j = 0; j < N; ++j) f[j] = scale * fy[j] * (fd[j] - dot);
        nn::Pack<T, N> out;
        out.from_float(f);
        if (c + N <= len) {
          store_cs(out, dxr + c);
        } else if (c < len) {
          store_partial<sizeof(T), N>(out.w, dxr + c, len - c);
        }
      }
    }
  }
}
