// Timed in session 59 (H100, perf/results/2026-12-08-session59): it lost to the library's
// one-element accesses everywhere but rmsnorm_fwd 12289 on NVRTC, so it stays a probe.
// Prototype (perf only, not a library kernel): norm forwards and backwards for 16-bit rows whose
// starts are not 16-byte aligned (an odd hidden size). Each row is read through the 16-byte vectors that
// cover it, counted from the array's aligned base, so every load is a whole vector; the
// elements of a neighbouring row in the first and last vector are masked out of the sums and
// never written. gamma / beta sit in shared memory, since a row's columns fall on a different
// lane of the vector in each row (row r starts r * cols elements from the base).
#include <cuda_fp16.h>
#include <cuda_bf16.h>

template <typename T> struct Conv;
template <> struct Conv<__half> {
  static __device__ float f(__half v) { return __half2float(v); }
  static __device__ __half t(float v) { return __float2half_rn(v); }
};
template <> struct Conv<__nv_bfloat16> {
  static __device__ float f(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __nv_bfloat16 t(float v) { return __float2bfloat16_rn(v); }
};

template <int THREADS>
__device__ float block_sum(float v, float* red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  constexpr int W = THREADS / 32;
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  __syncthreads();  // red is reused by the next reduction
  if (l == 0) red[w] = v;
  __syncthreads();
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < W; ++i) s += red[i];
  return s;
}

// One vector of a row's cover at column c0 (counted from the row's first element): a whole
// 16-byte load where the vector lies inside the array (avail: the columns left in it, capped),
// else element by element up to the row's end.
template <typename T, int E>
__device__ __forceinline__ void load_cover(const T* row, int c0, int cols, int avail,
                                           float (&v)[E]) {
  if (c0 < cols && c0 + E <= avail) {
    uint4 w = __ldg(reinterpret_cast<const uint4*>(row + c0));
    const T* p = reinterpret_cast<const T*>(&w);
#pragma unroll
    for (int i = 0; i < E; ++i) v[i] = Conv<T>::f(p[i]);
  } else {
#pragma unroll
    for (int i = 0; i < E; ++i) v[i] = (c0 + i < cols) ? Conv<T>::f(row[c0 + i]) : 0.f;
  }
}

// Stores one vector at column c0: whole where the row holds all of it, else only the row's
// elements (the edge vectors share their other columns with the neighbouring rows).
template <typename T, int E>
__device__ __forceinline__ void store_cover(T* row, int c0, int cols, const T (&o)[E]) {
  if (c0 >= 0 && c0 + E <= cols) {
    *reinterpret_cast<uint4*>(row + c0) = *reinterpret_cast<const uint4*>(o);
  } else {
#pragma unroll
    for (int i = 0; i < E; ++i)
      if (c0 + i >= 0 && c0 + i < cols) row[c0 + i] = o[i];
  }
}

// x, y: rows x cols, contiguous, x and y 16-byte aligned at element 0.
template <typename T, int THREADS, int NV, bool LN>
__global__ void __launch_bounds__(THREADS)
norm_fwd_peel(const T* __restrict__ x, const T* __restrict__ gamma, const T* __restrict__ beta,
              T* __restrict__ y, float* __restrict__ mu_out, float* __restrict__ rs_out,
              int rows, int cols, float eps) {
  constexpr int E = 16 / sizeof(T);
  extern __shared__ __align__(16) unsigned char smem[];
  T* sg = reinterpret_cast<T*>(smem);
  T* sb = sg + cols;
  __shared__ float red[THREADS / 32];
  for (int c = threadIdx.x; c < cols; c += THREADS) {
    sg[c] = gamma[c];
    if (LN) sb[c] = beta[c];
  }
  __syncthreads();
  const long long total = (long long)rows * cols;
  const float inv = 1.f / cols;
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const long long start = (long long)r * cols;
    const T* xr = x + start;
    T* yr = y + start;
    // columns are counted from the row's first element: the cover starts lead columns before
    // it (0 to E - 1), and a whole vector may be read up to column avail (the array's end)
    const int lead = (int)(start & (E - 1));
    const long long left = total - start;
    const int avail = left < 2LL * cols + 2 * E ? (int)left : 2 * cols + 2 * E;
    float v[NV][E];
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int c0 = (threadIdx.x + k * THREADS) * E - lead;
      load_cover<T, E>(xr, c0, cols, avail, v[k]);
#pragma unroll
      for (int i = 0; i < E; ++i)
        if (c0 + i < 0 || c0 + i >= cols) v[k][i] = 0.f;
    }
    float mean = 0.f;
    if (LN) {
      float s = 0.f;
#pragma unroll
      for (int k = 0; k < NV; ++k)
#pragma unroll
        for (int i = 0; i < E; ++i) s += v[k][i];
      mean = block_sum<THREADS>(s, red) * inv;
    }
    float q = 0.f;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int c0 = (threadIdx.x + k * THREADS) * E - lead;
#pragma unroll
      for (int i = 0; i < E; ++i) {
        const bool in = c0 + i >= 0 && c0 + i < cols;
        const float d = in ? v[k][i] - mean : 0.f;
        q += d * d;
      }
    }
    const float rs = rsqrtf(block_sum<THREADS>(q, red) * inv + eps);
    if (threadIdx.x == 0) {
      rs_out[r] = rs;
      if (LN) mu_out[r] = mean;
    }
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int c0 = (threadIdx.x + k * THREADS) * E - lead;
      if (c0 >= cols) continue;
      __align__(16) T o[E];
#pragma unroll
      for (int i = 0; i < E; ++i) {
        const int c = c0 + i;
        const bool in = c >= 0 && c < cols;
        const float g = in ? Conv<T>::f(sg[c]) : 0.f;
        const float b = (LN && in) ? Conv<T>::f(sb[c]) : 0.f;
        o[i] = Conv<T>::t((v[k][i] - mean) * rs * g + b);
      }
      store_cover<T, E>(yr, c0, cols, o);
    }
  }
}

// The backward of the same rows: dx, and each CTA's dgamma (and dbeta) sums by column in shared
// memory (a row's columns sit on other threads in each row, so registers cannot hold them),
// written to part[blockIdx.x][col] at the end; the caller sums the parts.
template <typename T, int THREADS, int NV, bool LN>
__global__ void __launch_bounds__(THREADS)
norm_bwd_peel(const T* __restrict__ dy, const T* __restrict__ x, const float* __restrict__ mu,
              const float* __restrict__ rsig, const T* __restrict__ gamma, T* __restrict__ dx,
              float* __restrict__ dgamma_part, float* __restrict__ dbeta_part, int rows,
              int cols) {
  constexpr int E = 16 / sizeof(T);
  extern __shared__ __align__(16) unsigned char smem[];
  float* sdg = reinterpret_cast<float*>(smem);
  float* sdb = sdg + cols;
  T* sg = reinterpret_cast<T*>(sdb + (LN ? cols : 0));
  __shared__ float red[THREADS / 32];
  for (int c = threadIdx.x; c < cols; c += THREADS) {
    sg[c] = gamma[c];
    sdg[c] = 0.f;
    if (LN) sdb[c] = 0.f;
  }
  __syncthreads();
  const long long total = (long long)rows * cols;
  const float inv = 1.f / cols;
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const long long start = (long long)r * cols;
    const int lead = (int)(start & (E - 1));
    const long long left = total - start;
    const int avail = left < 2LL * cols + 2 * E ? (int)left : 2 * cols + 2 * E;
    float xv[NV][E], dv[NV][E];
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int c0 = (threadIdx.x + k * THREADS) * E - lead;
      load_cover<T, E>(x + start, c0, cols, avail, xv[k]);
      load_cover<T, E>(dy + start, c0, cols, avail, dv[k]);
    }
    const float m = LN ? mu[r] : 0.f, rs = rsig[r];
    float s1 = 0.f, s2 = 0.f;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int c0 = (threadIdx.x + k * THREADS) * E - lead;
#pragma unroll
      for (int i = 0; i < E; ++i) {
        const int c = c0 + i;
        const bool in = c >= 0 && c < cols;
        const float xh = (xv[k][i] - m) * rs;
        // a column is one thread's in a row; the row's barriers (block_sum) order the rows
        if (in) {
          sdg[c] += dv[k][i] * xh;
          if (LN) sdb[c] += dv[k][i];
        }
        const float dyg = in ? dv[k][i] * Conv<T>::f(sg[c]) : 0.f;
        xv[k][i] = xh;
        dv[k][i] = dyg;
        s1 += dyg;
        s2 += dyg * xh;
      }
    }
    const float mdyg = LN ? block_sum<THREADS>(s1, red) * inv : 0.f;
    const float mdygx = block_sum<THREADS>(s2, red) * inv;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int c0 = (threadIdx.x + k * THREADS) * E - lead;
      if (c0 >= cols) continue;
      __align__(16) T o[E];
#pragma unroll
      for (int i = 0; i < E; ++i) o[i] = Conv<T>::t(rs * (dv[k][i] - mdyg - xv[k][i] * mdygx));
      store_cover<T, E>(dx + start, c0, cols, o);
    }
  }
  __syncthreads();
  for (int c = threadIdx.x; c < cols; c += THREADS) {
    dgamma_part[(long long)blockIdx.x * cols + c] = sdg[c];
    if (LN) dbeta_part[(long long)blockIdx.x * cols + c] = sdb[c];
  }
}
