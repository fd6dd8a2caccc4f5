// LayerNorm / RMSNorm kernels of the NVRTC backend: forward, backward and the dgamma/dbeta
// finalize. The thread mapping, reduction order and scratch layout are the contract of
// docs/design.md ("Norm kernels"); the Numba backend implements the same algorithm.
//
// Row statistics are reduced per warp (xor butterfly), then across the WARPS_N warps of a row in
// warp order through shared memory, then across the CTAs of a row in CTA order through the
// scratch `stats` region. LayerNorm merges (mean, M2) pairs with Chan's formula and the exact
// element count of every part, so the general kernel's partial warps/CTAs weigh correctly.
#include "norms.cuh"

namespace nn {

// Elements of `cols` covered by LDGS vectors of WIDTH columns starting at `first`, `step` apart.
template <int LDGS, int WIDTH>
__device__ __forceinline__ int covered(int first, int step, int cols) {
  int n = 0;
#pragma unroll
  for (int it = 0; it < LDGS; ++it) {
    const int r = cols - (first + it * step);
    n += r <= 0 ? 0 : (r < WIDTH ? r : WIDTH);
  }
  return n;
}

// Where a thread sits (design.md "Thread mapping") and what it needs for row reductions.
// EXCHANGE: the kernel may run with several CTAs a row (gridDim.x > 1) and holds the inter-CTA
// exchange of row_reduce. Without it the CTA count is the constant 1, and so is the column step
// (see norm_fwd).
template <int WARPS_M, int WARPS_N, int NUM_ELTS, bool EXCHANGE = true>
struct Geometry {
  static constexpr int WARP_COLS = 32 * NUM_ELTS;
  static constexpr int CTA_COLS = WARPS_N * WARP_COLS;
  int lane, warp_m, warp_n, cta_n, ctas;
  int col0;      // first column of vector 0
  int col_step;  // vector it starts at col0 + it * col_step

  __device__ __forceinline__ Geometry() {
    lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    warp_m = warp / WARPS_N;
    warp_n = warp % WARPS_N;
    cta_n = EXCHANGE ? (int)blockIdx.x : 0;
    ctas = EXCHANGE ? (int)gridDim.x : 1;
    col0 = (cta_n * WARPS_N + warp_n) * WARP_COLS + lane * NUM_ELTS;
    col_step = ctas * CTA_COLS;
  }
  // Row of trip `trip` for this warp.
  __device__ __forceinline__ int row(int trip) const {
    return (trip * (int)gridDim.y + (int)blockIdx.y) * WARPS_M + warp_m;
  }
  // Every CTA of a row group runs this many trips (inter-CTA barriers need all of them).
  __device__ __forceinline__ int trips(int rows) const {
    const int step = gridDim.y * WARPS_M;
    return (rows + step - 1) / step;
  }
};

// Where the vectors of a thread's slice of a row start: vector `it` at p + first + it * col_step,
// `left` columns from p to the row end. FOLD (LayerNorm): the thread's first column is folded
// into p once, so the vectors sit at fixed offsets from one address (immediates where the column
// step is a constant) instead of each getting its own 64-bit address (ncu, run 126); with the
// one-CTA forwards (norm_fwd) LayerNorm ran 0.991-1.314x (H200, run 130). RMSNorm adds each
// vector's column to the row start: folded it ran 0.92-0.98x on several shapes (rmsnorm_bwd
// fp32 16384 0.917x in runs 128 and 129), except its one-CTA forwards of entries with `fold`
// (no exchange, so immediates; run 139).
template <bool FOLD, typename T>
struct Slice {
  T* p;
  int first, left;
  __device__ __forceinline__ Slice(T* row, int col0, int cols)
      : p(FOLD ? row + col0 : row), first(FOLD ? 0 : col0), left(FOLD ? cols - col0 : cols) {}
};

// Completes a row reduction of `v` (already reduced over the lanes of each warp): across the
// WARPS_N warps of the row in warp order, then across the CTAs of the row in CTA order. `fold`
// provides start(i) (reset for the first part, index i) and operator()(acc, part, i). Every
// thread of the CTA must call it, on every trip.
template <int WARPS_M, int WARPS_N, int NUM_ELTS, bool EXCHANGE, typename WarpFold,
          typename CtaFold>
__device__ __forceinline__ float2 row_reduce(
    float2 v, int trip, const Geometry<WARPS_M, WARPS_N, NUM_ELTS, EXCHANGE>& geo,
    float2 (&red)[2][WARPS_M][WARPS_N], float* stats, int* barrier, WarpFold& wfold,
    CtaFold& cfold) {
  const int parity = trip & 1;  // double buffers: one barrier per exchange suffices
  if constexpr (WARPS_N > 1) {
    if (geo.lane == 0) red[parity][geo.warp_m][geo.warp_n] = v;
    __syncthreads();
    v = red[parity][geo.warp_m][0];
    wfold.start(0);
#pragma unroll
    for (int w = 1; w < WARPS_N; ++w) wfold(v, red[parity][geo.warp_m][w], w);
  }
  if (geo.ctas > 1 && cluster_ctas() > 1) {
    // A cluster (RowPlan.cluster): lane k of warp_n 0 writes this CTA's part into CTA k's
    // shared slots (distributed shared memory), then every thread folds the parts from its
    // own CTA's slots in CTA order, as the counter path does from `stats`: no L2 round trip.
    __shared__ float2 parts[2][WARPS_M][kMaxCluster];
    if (geo.warp_n == 0 && geo.lane < geo.ctas) {
      st_cluster(&parts[parity][geo.warp_m][geo.cta_n], geo.lane, v);
    }
    cluster_sync();
    v = parts[parity][geo.warp_m][0];
    cfold.start(0);
#pragma unroll 1
    for (int k = 1; k < geo.ctas; ++k) cfold(v, parts[parity][geo.warp_m][k], k);
  } else if (geo.ctas > 1) {
    // stats: [2][ctas_per_col][WARPS_M][ctas_per_row][2] fp32
    float* slot =
        stats + ((long long)(parity * (int)gridDim.y + (int)blockIdx.y) * WARPS_M + geo.warp_m) *
                    geo.ctas * 2;
    if (geo.warp_n == 0 && geo.lane == 0) st_cg(slot + 2 * geo.cta_n, v);
    inter_cta_barrier(barrier + blockIdx.y, (trip + 1) * geo.ctas);
    // Lane k loads part base + k, so a whole batch costs one L2 round trip; the parts are then
    // broadcast and folded in CTA order by every lane.
#pragma unroll 1
    for (int base = 0; base < geo.ctas; base += 32) {
      const float2 mine =
          base + geo.lane < geo.ctas ? ld_cg(slot + 2 * (base + geo.lane)) : make_float2(0.f, 0.f);
      const int n = geo.ctas - base < 32 ? geo.ctas - base : 32;
#pragma unroll 1
      for (int k = 0; k < n; ++k) {
        const float2 part = make_float2(__shfl_sync(0xffffffffu, mine.x, k),
                                        __shfl_sync(0xffffffffu, mine.y, k));
        if (base + k == 0) {
          v = part;
          cfold.start(0);
        } else {
          cfold(v, part, base + k);
        }
      }
    }
  }
  return v;
}

struct SumFolder {
  __device__ __forceinline__ void start(int) {}
  __device__ __forceinline__ void operator()(float2& acc, float2 v, int) const {
    acc.x += v.x;
    acc.y += v.y;
  }
};

// Chan merge of (mean, M2) parts whose element counts come from `Counts::count(i)`.
template <typename Counts>
struct ChanFolder {
  Counts counts;
  float n;
  __device__ __forceinline__ void start(int i) { n = counts.count(i); }
  __device__ __forceinline__ void operator()(float2& acc, float2 v, int i) {
    counts.merge(n, acc, v, i);
  }
};

// Element counts of the warps of this CTA's row slice (index: warp_n): general kernels of
// several warps a row read them, and Chan's ratios, from shared memory (norm_fwd).
template <int WARPS_N, int NUM_ELTS, int LDGS, bool GENERAL>
struct WarpCounts {
  const float* c;  // [WARPS_N], shared (GENERAL)
  const float* r;  // [WARPS_N], shared (GENERAL): ratio of warp w in the fold from warp 0
  __device__ __forceinline__ float count(int w) const {
    return GENERAL ? c[w] : (float)(LDGS * 32 * NUM_ELTS);
  }
  __device__ __forceinline__ void merge(float& n, float2& acc, float2 v, int w) const {
    if constexpr (GENERAL) {
      chan_merge_ratio(n, acc, c[w], r[w], v);
    } else {
      chan_merge(n, acc, count(w), v);  // constant counts: the division folds
    }
  }
};

// Element counts of the CTAs of a row (index: cta_n).
template <int WARPS_N, int NUM_ELTS, int LDGS, bool GENERAL>
struct CtaCounts {
  int col_step, cols;
  __device__ __forceinline__ float count(int j) const {
    constexpr int CTA_COLS = WARPS_N * 32 * NUM_ELTS;
    return GENERAL ? (float)covered<LDGS, CTA_COLS>(j * CTA_COLS, col_step, cols)
                   : (float)(LDGS * CTA_COLS);
  }
  __device__ __forceinline__ void merge(float& n, float2& acc, float2 v, int j) const {
    chan_merge(n, acc, count(j), v);
  }
};

// gamma or beta slice of this thread. HOLD: loaded once per CTA and kept in registers; 16-bit
// weights stay packed (half the registers; the row slice of x needs most of them) and are
// widened at each use; fp32 weights have the zero-centered shift folded in at load.
// !HOLD: read again at each use (scalar slices through the read-only path); the CTA's rows all
// read the same slice, so it stays in L1. Scalar slices of many elements cannot hold their
// weights: at one 32-bit register an element they spilled (ptxas, layernorm_fwd 12289 columns,
// 49 elements a thread: 340 B of spill stores).
template <typename Tw, int LDGS, int NUM_ELTS, bool GENERAL, bool HOLD = true, bool FOLD = false>
struct Weights {
  static constexpr bool PACKED = !same_type<Tw, float>::value;
  using P = Pack<Tw, NUM_ELTS>;
  P p[HOLD ? LDGS : 1];
  const Tw* w;            // as Slice: vector it at w + col0 + it * col_step,
  int col0, col_step, cols;  // cols columns from w to the row end
  float shift;

  __device__ __forceinline__ void load(const Tw* w_, int col0_, int col_step_, int cols_,
                                       float s) {
    shift = s;
    const Slice<FOLD, const Tw> sl(w_, col0_, cols_);
    if constexpr (!HOLD) {
      w = sl.p, col0 = sl.first, col_step = col_step_, cols = sl.left;
    } else {
#pragma unroll
      for (int it = 0; it < LDGS; ++it) {
        p[it].template load_cols<GENERAL>(sl.p, sl.first + it * col_step_, sl.left);
      }
      if constexpr (!PACKED) {
        if (s != 0.f) {
#pragma unroll
          for (int it = 0; it < LDGS; ++it)
#pragma unroll
            for (int j = 0; j < NUM_ELTS; ++j) p[it].w[j] = __float_as_uint(p[it].get(j) + s);
        }
      }
    }
  }
  // Vector `it` of the slice, for at(): the held one, or (vector re-reads) loaded now. A plain
  // load: the stores to dx between two rows keep the compiler from hoisting it out of the row
  // loop back into registers.
  __device__ __forceinline__ P vec(int it) const {
    if constexpr (HOLD) {
      return p[it];
    } else if constexpr (NUM_ELTS == 1) {
      return P{};  // scalar re-reads load in at()
    } else {
      P q;
      q.template load_cols<GENERAL>(w, col0 + it * col_step, cols);
      return q;
    }
  }
  // Held weights become opaque to the compiler (see the lean backward).
  __device__ __forceinline__ void opaque() {
    if constexpr (HOLD) {
#pragma unroll
      for (int it = 0; it < LDGS; ++it) p[it].opaque();
    }
  }
  // Element j of vector `it`, given v = vec(it) (REMAT: see Remat).
  template <bool REMAT = false>
  __device__ __forceinline__ float at(const P& v, int it, int j) const {
    if constexpr (!HOLD && NUM_ELTS == 1) {
      return (*this)(it, j);
    } else if constexpr (!HOLD || PACKED) {
      return v.template get<REMAT>(j) + shift;
    } else {
      return v.template get<REMAT>(j);
    }
  }
  __device__ __forceinline__ float operator()(int it, int j) const { return get<false>(it, j); }
  // The same (REMAT: see Remat).
  template <bool REMAT>
  __device__ __forceinline__ float get(int it, int j) const {
    if constexpr (!HOLD) {
      static_assert(NUM_ELTS == 1, "re-read vectors: use vec() and at()");
      const int col = col0 + it * col_step;
      if (GENERAL && col >= cols) return shift;  // as a zero-filled held weight
      if constexpr (PACKED) {
        const unsigned bits = __ldg(reinterpret_cast<const unsigned short*>(w) + col);
        return lo16_to_float(bits, Tw()) + shift;
      } else {
        return __ldg(w + col) + shift;
      }
    } else if constexpr (PACKED) {
      return p[it].template get<REMAT>(j) + shift;
    } else {
      return p[it].template get<REMAT>(j);
    }
  }
};

// What the forward keeps in registers. Scalar weights: re-reading them pays only for scalar
// slices of many elements, and not in the RMSNorm forward (one weight, few registers). H200,
// bf16 rows of 2053 / 5003 / 12289 columns, the same shapes held (perf/results/
// 2026-11-30-h200-run14) and re-read (run16): LayerNorm forward, 20-49 elements: 1.13-1.63x,
// 17: 0.80x, 64: 0.58-0.63x; RMSNorm forward: 0.72-0.85x.
template <typename Ti, typename Tw, int THREADS, int MIN_CTAS, int NUM_ELTS, int LDGS,
          bool GENERAL, bool RMS, bool PREFETCH>
struct FwdRegisters {
  static constexpr int E = NUM_ELTS * LDGS;
  static constexpr int CAP_RAW = 65536 / (THREADS * MIN_CTAS);
  static constexpr int CAP = (CAP_RAW > 255 ? 255 : CAP_RAW) & ~7;
  static constexpr int ROW = E * (int)sizeof(Ti) / 4;                   // x as loaded
  static constexpr int WEIGHTS = (RMS ? 1 : 2) * E * (int)sizeof(Tw) / 4;  // packed
  // RMSNorm needs fewer temporaries (no mean, no second sum): its wide form fit exactly at
  // 32768 (1024 threads, 64 registers, ptxas) where the lean one spilled 24 B
  static constexpr int SLACK = RMS ? 0 : 16;
  // Wide: x widened to fp32 (E) beside the next row's loads (PREFETCH) and the weights.
  static constexpr int WIDE = E + (PREFETCH ? ROW : 0) + WEIGHTS + SLACK;
  static constexpr int LEAN_REGS = (PREFETCH ? 2 : 1) * ROW + WEIGHTS + SLACK;
  // Lean: x stays packed and is widened at each use (the sums, then y), like the lean
  // backward; for tuned slices whose wide form exceeds the cap (ptxas, bf16 layernorm_fwd
  // 65536 (4 CTAs a row, 64 elements a thread, cap 128): 280 B of spill stores; 32768 (32,
  // cap 64): 88 B).
  static constexpr bool lean = NUM_ELTS > 1 && WIDE > CAP;
  // Weights: see Weights; vectors are re-read where the lean row leaves fewer than 16
  // registers for addresses and sums (ptxas: bf16 rmsnorm_fwd 65536, 1 CTA of 32 warps, cap 64,
  // row and weights 32 + 32: 156 B of spill held, none re-read; run 51: 2864 -> 3875 GB/s).
  static constexpr bool scalar_reread =
      GENERAL && NUM_ELTS == 1 && LDGS >= 20 && LDGS <= 49 && !RMS;
  static constexpr bool hold = !scalar_reread && !(lean && LEAN_REGS + 16 > CAP);
};

// What the backward keeps in registers. Per element of its slice a thread holds the dgamma (and
// dbeta) sums, its weights (packed) and the row: as loaded (packed, twice with PREFETCH: this
// row's copy and the next row's loads) and widened to fp32 (x-hat and dy * gamma). Where that
// exceeds the register cap of the launch bounds (64K registers an SM over MIN_CTAS CTAs) the
// kernel spilled (ptxas, bf16 layernorm_bwd 16384 columns, 64 elements a thread: 420 B), so
//   lean: the row stays packed and x-hat, dy * gamma are recomputed where the output needs
//         them (a few ALU operations an element against spill traffic);
//   hold: weights in registers unless the lean row still does not fit; then vectors are
//         re-read each row (L1). Scalar general slices re-read as measured: 9-49 elements,
//         1.00-1.16x on the fastest shapes of runs 14 / 16.
template <typename Ti, typename Tw, typename To, int THREADS, int MIN_CTAS, int NUM_ELTS,
          int LDGS, bool GENERAL, bool RMS, bool ADD, bool PREFETCH, int WG_SMEM>
struct BwdRegisters {
  static constexpr int E = NUM_ELTS * LDGS;
  static constexpr int CAP_RAW = 65536 / (THREADS * MIN_CTAS);
  static constexpr int CAP = (CAP_RAW > 255 ? 255 : CAP_RAW) & ~7;
  // one row's inputs as loaded (packed): x, dy and the fused add
  static constexpr int ROW = E * (int)(sizeof(Ti) + sizeof(To) + (ADD ? sizeof(Ti) : 0)) / 4;
  static constexpr int ADD_COPY = ADD ? E * (int)sizeof(Ti) / 4 : 0;
  // the dgamma / dbeta sums not kept in shared memory (WG_SMEM of them are)
  static constexpr int SUMS = ((RMS ? 1 : 2) - WG_SMEM) * E;
  static constexpr int WEIGHTS = E * (int)sizeof(Tw) / 4;
  static constexpr int SLACK = 16;  // indices, pointers, row statistics, reduction temporaries
  static constexpr int WIDE = 2 * E + ADD_COPY + (PREFETCH ? ROW : 0) + SUMS + WEIGHTS + SLACK;
  // the lean form loads the fused add only where dx is stored
  static constexpr int LEAN_ROW = E * (int)(sizeof(Ti) + sizeof(To)) / 4;
  static constexpr int LEAN_REGS = (PREFETCH ? 2 : 1) * LEAN_ROW + SUMS + WEIGHTS + SLACK;
  static constexpr bool scalar_reread = GENERAL && NUM_ELTS == 1 && LDGS >= 9 && LDGS <= 49;
  static constexpr bool lean = NUM_ELTS > 1 && WIDE > CAP;
  static constexpr bool hold = !scalar_reread && !(lean && LEAN_REGS > CAP);
};

// The LDGS vectors of one row slice of this thread, as stored (packed). Rows at or past `rows`
// read as zeros; so do the general kernel's columns past the row end.
template <typename T, int LDGS, int NUM_ELTS, bool GENERAL, bool FOLD = false>
struct RowSlice {
  Pack<T, NUM_ELTS> p[LDGS];
  __device__ __forceinline__ void opaque() {
#pragma unroll
    for (int it = 0; it < LDGS; ++it) p[it].opaque();
  }
  __device__ __forceinline__ void load(const T* base, long long stride, int row, int rows,
                                       int col0, int col_step, int cols) {
    const Slice<FOLD, const T> r(base + (long long)row * stride, col0, cols);
#pragma unroll
    for (int it = 0; it < LDGS; ++it) {
      if (row < rows) {
        p[it].template load_cols<GENERAL>(r.p, r.first + it * col_step, r.left);
      } else {
#pragma unroll
        for (int i = 0; i < Pack<T, NUM_ELTS>::WORDS; ++i) p[it].w[i] = 0u;
      }
    }
  }
};


// Backward row sums (sum dy * g, sum dy * g * x-hat) reduced over the row; RMSNorm has only
// the second.
template <bool RMS, int WARPS_M, int WARPS_N, int NUM_ELTS>
__device__ __forceinline__ float2 reduce_dx_sums(float2 s, int trip,
                                                 const Geometry<WARPS_M, WARPS_N, NUM_ELTS>& geo,
                                                 float2 (&red)[2][WARPS_M][WARPS_N], float* stats,
                                                 int* barrier) {
  if constexpr (RMS) {
    s.y = warp_sum(s.y);
  } else {
    s = warp_sum(s);
  }
  SumFolder sum;
  return row_reduce(s, trip, geo, red, stats, barrier, sum, sum);
}

// dx of one element from its x-hat, dy * g and the row means of dy * g (LayerNorm) and of
// dy * g * x-hat.
template <bool RMS>
__device__ __forceinline__ float dx_value(float rs, float dyg, float xhat, float mean_dyg_xhat,
                                          float mean_dyg) {
  if constexpr (RMS) {
    return rs * (dyg - mean_dyg_xhat * xhat);
  } else {
    return rs * (dyg - (mean_dyg_xhat * xhat + mean_dyg));
  }
}

// Per-column partial sums held in shared memory instead of registers: each thread owns
// LDGS * NUM_ELTS slots, interleaved by thread (slot k of thread t at k * THREADS + t; 16-byte
// groups where NUM_ELTS allows), so a warp's accesses do not conflict and no thread reads
// another's slots: no barrier is needed.
template <int THREADS, int NUM_ELTS>
struct Slots {
  float* base;
  __device__ __forceinline__ void load(int it, float (&v)[NUM_ELTS]) const {
    if constexpr (NUM_ELTS % 4 == 0) {
      const float4* b4 = reinterpret_cast<const float4*>(base);
#pragma unroll
      for (int q = 0; q < NUM_ELTS / 4; ++q) {
        const float4 t = b4[(it * (NUM_ELTS / 4) + q) * THREADS + threadIdx.x];
        v[4 * q] = t.x, v[4 * q + 1] = t.y, v[4 * q + 2] = t.z, v[4 * q + 3] = t.w;
      }
    } else {
#pragma unroll
      for (int j = 0; j < NUM_ELTS; ++j) v[j] = base[(it * NUM_ELTS + j) * THREADS + threadIdx.x];
    }
  }
  __device__ __forceinline__ void store(int it, const float (&v)[NUM_ELTS]) const {
    if constexpr (NUM_ELTS % 4 == 0) {
      float4* b4 = reinterpret_cast<float4*>(base);
#pragma unroll
      for (int q = 0; q < NUM_ELTS / 4; ++q) {
        b4[(it * (NUM_ELTS / 4) + q) * THREADS + threadIdx.x] =
            make_float4(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]);
      }
    } else {
#pragma unroll
      for (int j = 0; j < NUM_ELTS; ++j) base[(it * NUM_ELTS + j) * THREADS + threadIdx.x] = v[j];
    }
  }
};

}  // namespace nn

// ------------------------------------------------------------------------------------------------
// Forward
// ------------------------------------------------------------------------------------------------

template <typename Ti, typename Tw, typename To, int WARPS_M, int WARPS_N, int NUM_ELTS,
          int LDGS, bool GENERAL, bool RMS, int MIN_CTAS, bool PREFETCH, bool EXCHANGE>
// MIN_CTAS: resident CTAs per SM ptxas must allow (a register cap; registry data, measured).
// PREFETCH: the next row's loads are issued before this row's reductions (software pipeline).
// EXCHANGE: see Geometry; the launcher leaves it out of LayerNorm's one-CTA rows (_norms.py).
__global__ void __launch_bounds__(WARPS_M * WARPS_N * 32, MIN_CTAS)
    norm_fwd(const Ti* x, const Tw* gamma, const Tw* beta, To* y, float* mu, float* rsigma,
             int rows, int cols, long long x_stride, long long y_stride, float eps,
             int zero_centered, float* stats, int* barrier, const float* scale, float* amax,
             float* scale_inv) {
  using namespace nn;
  kernel_prologue();
  constexpr bool FP8 = is_fp8<To>::value;
  static_assert(same_type<To, float>::value || is_half16<To>::value || FP8, "output type");
  __shared__ float2 red[2][WARPS_M][WARPS_N];
  __shared__ float amax_red[WARPS_M * WARPS_N];

  const Geometry<WARPS_M, WARPS_N, NUM_ELTS, EXCHANGE> geo;
  // One address a row (Slice): LayerNorm always, RMSNorm without the exchange (_norms.exchange).
  constexpr bool FOLD = !RMS || !EXCHANGE;

  // FP8 output: y = fp8(v * scale) (scale required). amax (optional, any output): max |v| with v
  // taken before scaling (FP8) or as stored (after rounding to To); a uniform null check keeps
  // the kernels without amax on their fast path.
  const bool want_amax = amax != nullptr;
  float sc = 1.f;
  if constexpr (FP8) {
    sc = scale[0];
    if (scale_inv != nullptr && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) {
      *scale_inv = __fdiv_rn(1.f, sc);
    }
  } else {
    (void)scale, (void)scale_inv;
  }
  float am = 0.f;

  // Weights: once per CTA, outside the row loop (unless re-read).
  using Regs = FwdRegisters<Ti, Tw, WARPS_M * WARPS_N * 32, MIN_CTAS, NUM_ELTS, LDGS, GENERAL, RMS,
                            PREFETCH>;
  constexpr bool LEAN = Regs::lean;
  using W = Weights<Tw, LDGS, NUM_ELTS, GENERAL, Regs::hold, FOLD>;
  W g, b;
  g.load(gamma, geo.col0, geo.col_step, cols, zero_centered ? 1.f : 0.f);
  if constexpr (!RMS) b.load(beta, geo.col0, geo.col_step, cols, 0.f);

  const float rn = 1.f / (float)cols;
  // Element counts of the warps' slices. General kernels of several warps a row keep them in
  // shared memory (written once) and take a warp's mean as sum * (1 / count). Held in registers
  // the counts, and the per-vector terms of the count computed in place, stayed live through
  // the row loop, and the division's slow-path call made ptxas spill more (bf16 layernorm_fwd
  // at the 64-register cap, 1 CTA of 32 warps: 59648 columns 348 -> 76 B of spill stores,
  // 40704 204 -> 44 B; 5 CTAs of 4 warps at 168 registers: 64 -> 20 B). Not with one warp a
  // row (fp32 1000 columns, 4 x 1 warps: 130 registers against 128, a CTA an SM fewer).
  constexpr bool SHARED_COUNTS = GENERAL && WARPS_N > 1;
  __shared__ float wcount[SHARED_COUNTS ? WARPS_N : 1];
  // Chan's ratios of the warps' fold (ChanFolder from warp 0), the same on every row: worked
  // out once (in the row loop they cost a division each a row and spilled; H100 A/B, session
  // 48, bf16 at 8200 / 18944 / 20472, 8-16 warps a row: 1.12-1.23x, FP8 outputs 1.13-1.23x)
  __shared__ float wratio[SHARED_COUNTS ? WARPS_N : 1];
  if constexpr (SHARED_COUNTS) {
    if (threadIdx.x < WARPS_N) {
      wcount[threadIdx.x] = (float)covered<LDGS, 32 * NUM_ELTS>(
          (geo.cta_n * WARPS_N + (int)threadIdx.x) * 32 * NUM_ELTS, geo.col_step, cols);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      float n = wcount[0];
      wratio[0] = 1.f;
      for (int w = 1; w < WARPS_N; ++w) {
        const float nb = wcount[w];
        if (nb > 0.f) n += nb;
        wratio[w] = nb > 0.f ? nb / n : 0.f;
      }
    }
    __syncthreads();
  }
  const float n_warp =
      SHARED_COUNTS ? wcount[geo.warp_n]
      : GENERAL     ? (float)covered<LDGS, 32 * NUM_ELTS>(geo.col0 - geo.lane * NUM_ELTS,
                                                          geo.col_step, cols)
                    : (float)(LDGS * 32 * NUM_ELTS);
  const float rn_warp = 1.f / (n_warp > 0.f ? n_warp : 1.f);  // an empty warp's mean is 0
  const WarpCounts<WARPS_N, NUM_ELTS, LDGS, GENERAL> wcounts{wcount, wratio};
  ChanFolder<WarpCounts<WARPS_N, NUM_ELTS, LDGS, GENERAL>> wchan{wcounts, 0.f};
  ChanFolder<CtaCounts<WARPS_N, NUM_ELTS, LDGS, GENERAL>> cchan{{geo.col_step, cols}, 0.f};
  SumFolder sum;

  // Without cross-warp communication a warp can stop at the end of the rows.
  const bool lockstep = WARPS_N > 1 || geo.ctas > 1;
  const int trips = geo.trips(rows);
  RowSlice<Ti, LDGS, NUM_ELTS, GENERAL, FOLD> cur;
  if (PREFETCH && trips > 0) cur.load(x, x_stride, geo.row(0), rows, geo.col0, geo.col_step, cols);
  for (int trip = 0; trip < trips; ++trip) {
    const int row = geo.row(trip);
    const bool valid = row < rows;
    if (!valid && !lockstep) break;
    // FOLD: held weights are widened at each use, not hoisted out of the row loop as floats
    // (ptxas, NVRTC 13.0: with folded addresses in every LayerNorm kernel, 7 of the 342 bf16
    // kernels of the tables spilled more than before with this, 17 without; RMSNorm's folded
    // bf16 -> e4m3 32768: 148 B without, 108 with).
    if constexpr (FOLD) {
      g.opaque();
      b.opaque();
    }

    if constexpr (!PREFETCH) cur.load(x, x_stride, row, rows, geo.col0, geo.col_step, cols);
    // Wide: x widened once; lean: x kept as loaded (a copy: with PREFETCH `cur` takes the next
    // row) and widened at each use.
    float v[LEAN ? 1 : LDGS][NUM_ELTS];
    RowSlice<Ti, LDGS, NUM_ELTS, GENERAL, FOLD> rx;
    if constexpr (LEAN) {
      rx = cur;
    } else {
#pragma unroll
      for (int it = 0; it < LDGS; ++it) cur.p[it].to_float(v[it]);
    }
    const auto val = [&](int it, int j) {
      if constexpr (LEAN) {
        return rx.p[it].get(j);
      } else {
        return v[it][j];
      }
    };
    // The output pass. Folded lean kernels widen again in another form (Pack::get_again): with
    // plain get() ptxas kept the sums pass's floats (RMSNorm bf16 -> e4m3 65536, folded: 140 B
    // of spills, none with get_again).
    const auto yval = [&](int it, int j) {
      if constexpr (LEAN && FOLD) {
        return rx.p[it].get_again(j);
      } else if constexpr (LEAN) {
        return rx.p[it].get(j);
      } else {
        return v[it][j];
      }
    };
    // weight j of vector it; wv = w.vec(it) in the lean form (re-read weights load there)
    const auto wt = [&](const W& w, const typename W::P& wv, int it, int j) {
      if constexpr (LEAN) {
        return w.at(wv, it, j);
      } else {
        return w(it, j);
      }
    };
    if constexpr (PREFETCH) {
      if (trip + 1 < trips) {
        cur.load(x, x_stride, geo.row(trip + 1), rows, geo.col0, geo.col_step, cols);
      }
    }

    float mean = 0.f;
    float rs;
    if constexpr (RMS) {
      float s = 0.f;
#pragma unroll
      for (int it = 0; it < LDGS; ++it)
#pragma unroll
        for (int j = 0; j < NUM_ELTS; ++j) s += val(it, j) * val(it, j);
      float2 t = make_float2(warp_sum(s), 0.f);
      t = row_reduce(t, trip, geo, red, stats, barrier, sum, sum);
      rs = rsqrtf(t.x * rn + eps);
    } else {
      // Warp-local two-pass (mean, then M2 about it); zero-filled columns add nothing to the
      // sum and are masked out of M2.
      float s = 0.f;
#pragma unroll
      for (int it = 0; it < LDGS; ++it)
#pragma unroll
        for (int j = 0; j < NUM_ELTS; ++j) s += val(it, j);
      const float m_w = SHARED_COUNTS ? warp_sum(s) * rn_warp
                                      : warp_sum(s) / (n_warp > 0.f ? n_warp : 1.f);
      float m2 = 0.f;
#pragma unroll
      for (int it = 0; it < LDGS; ++it) {
        const int left = cols - (geo.col0 + it * geo.col_step);
#pragma unroll
        for (int j = 0; j < NUM_ELTS; ++j) {
          const float d = val(it, j) - m_w;
          if (!GENERAL || j < left) m2 += d * d;
        }
      }
      float2 t = make_float2(m_w, warp_sum(m2));
      t = row_reduce(t, trip, geo, red, stats, barrier, wchan, cchan);
      mean = t.x;
      rs = rsqrtf(t.y * rn + eps);
    }

    if constexpr (LEAN) {
      // widen again for y, not keep the sums' fp32 values (see the lean backward)
      rx.opaque();
      g.opaque();
      b.opaque();
    }
    if (valid) {
      if (geo.cta_n == 0 && geo.warp_n == 0 && geo.lane == 0) {
        if constexpr (!RMS) mu[row] = mean;
        rsigma[row] = rs;
      }
      const Slice<FOLD, To> yr(y + (long long)row * y_stride, geo.col0, cols);
#pragma unroll
      for (int it = 0; it < LDGS; ++it) {
        float o[NUM_ELTS];
        typename W::P gv{}, bv{};
        if constexpr (LEAN) {
          gv = g.vec(it);
          if constexpr (!RMS) bv = b.vec(it);
        }
#pragma unroll
        for (int j = 0; j < NUM_ELTS; ++j) {
          if constexpr (RMS) {
            o[j] = yval(it, j) * rs * wt(g, gv, it, j);
          } else {
            o[j] = (yval(it, j) - mean) * rs * wt(g, gv, it, j) + wt(b, bv, it, j);
          }
        }
        const int col = geo.col0 + it * geo.col_step;
        if (want_amax) {
          float r[NUM_ELTS];
          if constexpr (FP8 || same_type<To, float>::value) {
#pragma unroll
            for (int j = 0; j < NUM_ELTS; ++j) r[j] = o[j];
          } else {  // the value y stores
            Pack<To, NUM_ELTS> p;
            p.from_float(o);
            p.to_float(r);
          }
#pragma unroll
          for (int j = 0; j < NUM_ELTS; ++j) {
            // columns past the row end hold -mean * rsigma (gamma + 1) in the general kernel
            if (!GENERAL || col + j < cols) am = fmaxf(am, fabsf(r[j]));
          }
        }
        if constexpr (FP8) {
#pragma unroll
          for (int j = 0; j < NUM_ELTS; ++j) o[j] = __fmul_rn(o[j], sc);
        }
        store_vec<To, NUM_ELTS, GENERAL>(yr.p, yr.first + it * geo.col_step, yr.left, o);
      }
    }
  }

  if (want_amax) {
    // CTA max: warp butterfly, the warps through shared memory, one atomic per CTA (the int
    // order of non-negative floats is theirs: exact and independent of the arrival order)
    am = warp_max(am);
    if (geo.lane == 0) amax_red[threadIdx.x / 32] = am;
    __syncthreads();
    if (threadIdx.x == 0) {
      float m = amax_red[0];
#pragma unroll
      for (int w = 1; w < WARPS_M * WARPS_N; ++w) m = fmaxf(m, amax_red[w]);
      atomicMax(reinterpret_cast<int*>(amax), __float_as_int(m));
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Backward
// ------------------------------------------------------------------------------------------------

template <typename Ti, typename Tw, typename To, int WARPS_M, int WARPS_N, int NUM_ELTS,
          int LDGS, bool GENERAL, bool RMS, bool ADD, int MIN_CTAS, bool PREFETCH, int WG_SMEM>
// WG_SMEM: how many of the per-column partial sums live in shared memory rather than registers
// (0; LayerNorm 1: dbeta, 2: dgamma and dbeta; RMSNorm 1: dgamma).
__global__ void __launch_bounds__(WARPS_M * WARPS_N * 32, MIN_CTAS)
    norm_bwd(const To* dy, const Ti* x, const float* mu, const float* rsigma, const Tw* gamma,
             Ti* dx, const Ti* add, float* dgamma_part, float* dbeta_part, int rows, int cols,
             long long dy_stride, long long x_stride, long long dx_stride, long long add_stride,
             int zero_centered, float* stats, int* barrier) {
  using namespace nn;
  kernel_prologue();
  static_assert(!ADD || RMS, "the fused add exists for RMSNorm only");
  __shared__ float2 red[2][WARPS_M][WARPS_N];

  const Geometry<WARPS_M, WARPS_N, NUM_ELTS> geo;

  constexpr int THREADS = WARPS_M * WARPS_N * 32;
  using Regs = BwdRegisters<Ti, Tw, To, THREADS, MIN_CTAS, NUM_ELTS, LDGS, GENERAL, RMS, ADD,
                            PREFETCH, WG_SMEM>;
  constexpr bool LEAN = Regs::lean;
  Weights<Tw, LDGS, NUM_ELTS, GENERAL, Regs::hold, !RMS> g;
  g.load(gamma, geo.col0, geo.col_step, cols, zero_centered ? 1.f : 0.f);

  // Per-column dgamma/dbeta partial sums over this thread's rows: in registers, or (SM_DG /
  // SM_DB) in shared-memory slots, where dg[it] / db[it] hold vector it only while it is updated.
  static_assert(WG_SMEM >= 0 && WG_SMEM <= (RMS ? 1 : 2), "WG_SMEM");
  // (registry.NormConfig.smem_sums makes the same choice for the Numba kernel)
  constexpr bool SM_DB = !RMS && WG_SMEM >= 1;
  constexpr bool SM_DG = RMS ? WG_SMEM == 1 : WG_SMEM == 2;
  constexpr int SLOT_FLOATS = LDGS * NUM_ELTS * THREADS;
  // registry.WGRAD_SMEM_BYTES (the registry refuses larger entries; this is the backstop)
  static_assert(WG_SMEM * SLOT_FLOATS * 4 <= 47 * 1024, "WG_SMEM: slots exceed 47 KiB");
  __shared__ float4 wg_slots[WG_SMEM > 0 ? WG_SMEM * SLOT_FLOATS / 4 : 1];
  const Slots<THREADS, NUM_ELTS> sg{reinterpret_cast<float*>(wg_slots)};
  const Slots<THREADS, NUM_ELTS> sb{reinterpret_cast<float*>(wg_slots) + (SM_DG ? SLOT_FLOATS : 0)};
  float dg[LDGS][NUM_ELTS];
  float db[LDGS][NUM_ELTS];
#pragma unroll
  for (int it = 0; it < LDGS; ++it) {
#pragma unroll
    for (int j = 0; j < NUM_ELTS; ++j) dg[it][j] = db[it][j] = 0.f;
    if constexpr (SM_DG) sg.store(it, dg[it]);
    if constexpr (SM_DB) sb.store(it, db[it]);
  }
  // Vector it's sums from / back to their slots around its update.
  const auto take = [&](int it) {
    if constexpr (SM_DG) sg.load(it, dg[it]);
    if constexpr (SM_DB) sb.load(it, db[it]);
  };
  const auto put = [&](int it) {
    if constexpr (SM_DG) sg.store(it, dg[it]);
    if constexpr (SM_DB) sb.store(it, db[it]);
  };

  const float rn = 1.f / (float)cols;
  const bool lockstep = WARPS_N > 1 || geo.ctas > 1;
  const int trips = geo.trips(rows);
  // One row's inputs as stored; out-of-range rows and columns read as zeros, which add nothing
  // to any sum below.
  struct In {
    RowSlice<Ti, LDGS, NUM_ELTS, GENERAL, !RMS> x;
    RowSlice<To, LDGS, NUM_ELTS, GENERAL, !RMS> dy;
    RowSlice<Ti, LDGS, NUM_ELTS, GENERAL> add;  // the fused add (ADD only), widened when used
    float m, rs;
  };
  const auto load_in = [&](In& in, int r) {
    in.x.load(x, x_stride, r, rows, geo.col0, geo.col_step, cols);
    in.dy.load(dy, dy_stride, r, rows, geo.col0, geo.col_step, cols);
    if constexpr (ADD && !LEAN) {
      in.add.load(add, add_stride, r, rows, geo.col0, geo.col_step, cols);
    }
    in.m = (!RMS && r < rows) ? mu[r] : 0.f;
    in.rs = r < rows ? rsigma[r] : 0.f;
  };
  In cur;
  if (PREFETCH && trips > 0) load_in(cur, geo.row(0));
  for (int trip = 0; trip < trips; ++trip) {
    const int row = geo.row(trip);
    const bool valid = row < rows;
    if (!valid && !lockstep) break;
    if constexpr (!RMS) g.opaque();  // as in the forward

    if constexpr (!PREFETCH) load_in(cur, row);
    // the compiler must not promote the slots to registers across trips
    if constexpr (WG_SMEM > 0) asm volatile("" ::: "memory");
    if constexpr (LEAN) {
      const float m = cur.m;
      const float rs = cur.rs;
      // This row stays packed (a copy: with PREFETCH `cur` takes the next row); x-hat and
      // dy * g are computed in both passes.
      RowSlice<Ti, LDGS, NUM_ELTS, GENERAL, !RMS> rx = cur.x;
      RowSlice<To, LDGS, NUM_ELTS, GENERAL, !RMS> rdy = cur.dy;
      if constexpr (PREFETCH) {
        if (trip + 1 < trips) load_in(cur, geo.row(trip + 1));
      }
      float2 s = make_float2(0.f, 0.f);
#pragma unroll
      for (int it = 0; it < LDGS; ++it) {
        const auto gv = g.vec(it);
        take(it);
#pragma unroll
        for (int j = 0; j < NUM_ELTS; ++j) {
          const float xx = rx.p[it].template get<true>(j);
          const float xhat = RMS ? xx * rs : (xx - m) * rs;
          const float d = rdy.p[it].template get<true>(j);
          const float dyg = d * g.template at<true>(gv, it, j);
          dg[it][j] += d * xhat;
          if constexpr (!RMS) {
            db[it][j] += d;
            s.x += dyg;
          }
          s.y += dyg * xhat;
        }
        put(it);
      }
      s = reduce_dx_sums<RMS>(s, trip, geo, red, stats, barrier);
      // Opaque to the compiler: otherwise it keeps the first pass's fp32 values live (common
      // subexpressions) instead of recomputing them from the packed words.
      rx.opaque();
      rdy.opaque();
      g.opaque();
      const float mean_dyg = s.x * rn;
      const float mean_dyg_xhat = s.y * rn;
      if (valid) {
        const Slice<!RMS, Ti> dxr(dx + (long long)row * dx_stride, geo.col0, cols);
#pragma unroll
        for (int it = 0; it < LDGS; ++it) {
          const auto gv = g.vec(it);
          float o[NUM_ELTS];
#pragma unroll
          for (int j = 0; j < NUM_ELTS; ++j) {
            const float xx = rx.p[it].template get<true>(j);
            const float xhat = RMS ? xx * rs : (xx - m) * rs;
            const float dyg = rdy.p[it].template get<true>(j) * g.template at<true>(gv, it, j);
            o[j] = dx_value<RMS>(rs, dyg, xhat, mean_dyg_xhat, mean_dyg);
          }
          if constexpr (ADD) {
            Pack<Ti, NUM_ELTS> a;
            a.template load_cols<GENERAL>(add + (long long)row * add_stride,
                                          geo.col0 + it * geo.col_step, cols);
#pragma unroll
            for (int j = 0; j < NUM_ELTS; ++j) o[j] += a.template get<true>(j);
          }
          store_vec<Ti, NUM_ELTS, GENERAL>(dxr.p, dxr.first + it * geo.col_step, dxr.left, o);
        }
      }
    } else {
      float xv[LDGS][NUM_ELTS];
      float dyv[LDGS][NUM_ELTS];
#pragma unroll
      for (int it = 0; it < LDGS; ++it) {
        cur.x.p[it].template to_float<true>(xv[it]);
        cur.dy.p[it].template to_float<true>(dyv[it]);
      }
      const float m = cur.m;
      const float rs = cur.rs;
      Pack<Ti, NUM_ELTS> ap[ADD ? LDGS : 1];
      if constexpr (ADD) {
#pragma unroll
        for (int it = 0; it < LDGS; ++it) ap[it] = cur.add.p[it];
      }
      if constexpr (PREFETCH) {
        if (trip + 1 < trips) load_in(cur, geo.row(trip + 1));
      }

      // xhat and dy * g replace x and dy in registers.
      float2 s = make_float2(0.f, 0.f);
#pragma unroll
      for (int it = 0; it < LDGS; ++it) {
        take(it);
#pragma unroll
        for (int j = 0; j < NUM_ELTS; ++j) {
          const float xhat = RMS ? xv[it][j] * rs : (xv[it][j] - m) * rs;
          const float d = dyv[it][j];
          const float dyg = d * g.template get<true>(it, j);
          dg[it][j] += d * xhat;
          if constexpr (!RMS) {
            db[it][j] += d;
            s.x += dyg;
          }
          s.y += dyg * xhat;
          xv[it][j] = xhat;
          dyv[it][j] = dyg;
        }
        put(it);
      }
      s = reduce_dx_sums<RMS>(s, trip, geo, red, stats, barrier);
      const float mean_dyg = s.x * rn;
      const float mean_dyg_xhat = s.y * rn;
      if (valid) {
        const Slice<!RMS, Ti> dxr(dx + (long long)row * dx_stride, geo.col0, cols);
#pragma unroll
        for (int it = 0; it < LDGS; ++it) {
          float o[NUM_ELTS];
#pragma unroll
          for (int j = 0; j < NUM_ELTS; ++j) {
            o[j] = dx_value<RMS>(rs, dyv[it][j], xv[it][j], mean_dyg_xhat, mean_dyg);
            if constexpr (ADD) o[j] += ap[it].template get<true>(j);
          }
          store_vec<Ti, NUM_ELTS, GENERAL>(dxr.p, dxr.first + it * geo.col_step, dxr.left, o);
        }
      }
    }
  }

  // Partial row blockIdx.y * WARPS_M + warp_m; lanes of warp_n > 0 hold other columns of it.
  const long long prow = (long long)blockIdx.y * WARPS_M + geo.warp_m;
  float* pg = dgamma_part + prow * cols;
  float* pb = RMS ? pg : dbeta_part + prow * cols;
  // fp32 vectors need 4 * NUM_ELTS-aligned partial rows: cols % NUM_ELTS == 0.
  const bool vec_ok = !GENERAL || cols % NUM_ELTS == 0;
#pragma unroll
  for (int it = 0; it < LDGS; ++it) {
    take(it);
    const int col = geo.col0 + it * geo.col_step;
    if (vec_ok) {
      store_vec<float, NUM_ELTS, GENERAL>(pg, col, cols, dg[it]);
      if constexpr (!RMS) store_vec<float, NUM_ELTS, GENERAL>(pb, col, cols, db[it]);
    } else {
#pragma unroll
      for (int j = 0; j < NUM_ELTS; ++j) {
        if (col + j < cols) {
          pg[col + j] = dg[it][j];
          if constexpr (!RMS) pb[col + j] = db[it][j];
        }
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Finalize: a CTA of 32 x blockDim.y threads sums the partial rows of 32 columns. Thread (lane, ty)
// adds rows ty, ty + blockDim.y, ... in order, then the blockDim.y sums (a power of two) meet in a
// fixed tree through shared memory. No atomics: the order depends on partial_rows and the block
// only, so results are reproducible. One thread per column summing every row serially left the
// loads of a 4096-column finalize on 16 CTAs (planner.finalize_shape says why this shape).
// ------------------------------------------------------------------------------------------------

constexpr int FIN_MAX_ROWS = 32;  // planner.FINALIZE_MAX_ROWS

template <typename Tw, bool HAS_BETA>
__global__ void __launch_bounds__(32 * FIN_MAX_ROWS)
    norm_bwd_finalize(const float* dgamma_part, const float* dbeta_part, Tw* dgamma, Tw* dbeta,
                      int partial_rows, int cols) {
  __shared__ float shg[FIN_MAX_ROWS][32];
  __shared__ float shb[HAS_BETA ? FIN_MAX_ROWS : 1][32];
  nn::kernel_prologue();  // the main kernel's partials: launched as its dependent on sm_90+
  const int lane = threadIdx.x, ty = threadIdx.y, step = blockDim.y;
  const int c = blockIdx.x * 32 + lane;
  float sg = 0.f, sb = 0.f;
  if (c < cols) {
    constexpr int BATCH = 8;  // loads in flight per thread; the adds stay in row order
    const float* pg = dgamma_part + c;
    const float* pb = HAS_BETA ? dbeta_part + c : pg;
    int r = ty;
#pragma unroll 1
    for (; r + (BATCH - 1) * step < partial_rows; r += BATCH * step) {
      float tg[BATCH], tb[BATCH];
#pragma unroll
      for (int k = 0; k < BATCH; ++k) {
        const long long off = (long long)(r + k * step) * cols;
        tg[k] = pg[off];
        if (HAS_BETA) tb[k] = pb[off];
      }
#pragma unroll
      for (int k = 0; k < BATCH; ++k) {
        sg += tg[k];
        if (HAS_BETA) sb += tb[k];
      }
    }
#pragma unroll 1
    for (; r < partial_rows; r += step) {
      sg += pg[(long long)r * cols];
      if (HAS_BETA) sb += pb[(long long)r * cols];
    }
  }
  // tree over ty: at each level the lower half adds the upper half's sums
#pragma unroll 1
  for (int half = step / 2; half > 0; half /= 2) {
    if (ty >= half && ty < 2 * half) {
      shg[ty - half][lane] = sg;
      if (HAS_BETA) shb[ty - half][lane] = sb;
    }
    __syncthreads();
    if (ty < half) {
      sg += shg[ty][lane];
      if (HAS_BETA) sb += shb[ty][lane];
    }
    __syncthreads();
  }
  if (ty == 0 && c < cols) {
    nn::store_elem(dgamma + c, sg);
    if (HAS_BETA) nn::store_elem(dbeta + c, sb);
  }
}
