// planted_tensor_cores_unused: an fp16-input GEMM computed with FP32 FFMA on the CUDA cores: the FMA pipe is
// saturated while the tensor cores, which would run this product many times faster, stay idle.
//
// How: C[4096x4096] (fp32) = A x B with fp16 A (stored k-major, At[K][M]) and fp16 B (B[K][N]), fp32 accumulation,
// the classic register-tiled SGEMM: 128x128 block tile, BK = 16, 256 threads each owning an 8x8 micro-tile.
// The fp16 tiles are widened to fp32 when staged into shared memory (conflict-free 16-byte stores and
// broadcast/contiguous 16-byte loads); the next tile is prefetched into registers during the current one.
// 137 GFLOP: about 2.5-4 ms at 35-55 TFLOP/s. Same shapes, layouts and data as healthy_wmma_gemm.cu.
// Sampled outputs are checked against a float64 host reference.
//
// Expected evidence (H200, ncu --set full):
//   sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active    60-90 %; sm__inst_executed_pipe_fma dominant
//   sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active ~0-5 % (HFMA2.MMA moves: noise)
//   sm__inst_executed_pipe_tensor_op_hmma.sum ~0;  SASS: FFMA, no HMMA/HGMMA
//   sm__throughput > 60 %; dram__throughput < 15 %; shared loads conflict-free
//   theoretical occupancy 25 % by registers (an 8x8 micro-tile needs ~128): expected for a tiled GEMM, and not
//   the bottleneck since the FMA pipe is busy
// Must NOT fire: memory_bound, memory_latency_bound, smem_bank_conflicts, uncoalesced_global, register_spills,
//   warp_divergence, low_parallelism, launch_overhead, occupancy_limited (the pipe is busy). compute_bound
//   describes the symptom; the cause to report is FP32 math where tensor cores apply.
// Seen (nvcc 13.0 -O3 -arch=sm_90a -lineinfo, cuobjdump --dump-resource-usage, SASS):
//   REG:127 STACK:0, SHARED:17408 (16 KiB + 1 KiB reserve); per 16-deep k-tile: 1024 FFMA,
//   64 LDS.128, 16 HADD2.F32 (fp16 widening), 4 STS.128, 4 LDG.E.64, 2 BAR; no HMMA (one HFMA2.MMA move).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>
#include <cuda_fp16.h>

#include "common.cuh"  // CUDA_CHECK

constexpr int M = 4096, N = 4096, K = 4096;
constexpr int BM = 128, BN = 128, BK = 16, THREADS = 256;

__device__ __forceinline__ float hash_signed(unsigned int i) {  // deterministic value in [-1, 1)
  i ^= i >> 16; i *= 0x7feb352dU; i ^= i >> 15; i *= 0x846ca68bU; i ^= i >> 16;
  return float(i >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

__global__ void init_half(__half* __restrict__ x, size_t n, unsigned salt) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    x[i] = __float2half(hash_signed(unsigned(i) ^ salt));
}

__device__ __forceinline__ float4 widen(uint2 v) {  // 4 halves -> 4 floats
  __half2 lo, hi;
  memcpy(&lo, &v.x, 4);
  memcpy(&hi, &v.y, 4);
  const float2 a = __half22float2(lo), b = __half22float2(hi);
  return make_float4(a.x, a.y, b.x, b.y);
}

__global__ void __launch_bounds__(THREADS)
planted_tensor_cores_unused(const __half* __restrict__ At, const __half* __restrict__ B, float* __restrict__ C) {
  __shared__ __align__(16) float As[BK][BM];  // As[k][m]
  __shared__ __align__(16) float Bs[BK][BN];  // Bs[k][n]
  const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  // Staging: thread stages k-row (tid / 16) of the tile, 4 halves at column lc and 4 at lc + 64.
  const int lr = tid >> 4, lc = (tid & 15) * 4;
  const __half* a_src = At + size_t(lr) * M + m0 + lc;
  const __half* b_src = B + size_t(lr) * N + n0 + lc;
  uint2 a_lo = *reinterpret_cast<const uint2*>(a_src), a_hi = *reinterpret_cast<const uint2*>(a_src + 64);
  uint2 b_lo = *reinterpret_cast<const uint2*>(b_src), b_hi = *reinterpret_cast<const uint2*>(b_src + 64);

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

  for (int k0 = 0; k0 < K; k0 += BK) {
    *reinterpret_cast<float4*>(&As[lr][lc]) = widen(a_lo);
    *reinterpret_cast<float4*>(&As[lr][lc + 64]) = widen(a_hi);
    *reinterpret_cast<float4*>(&Bs[lr][lc]) = widen(b_lo);
    *reinterpret_cast<float4*>(&Bs[lr][lc + 64]) = widen(b_hi);
    __syncthreads();
    if (k0 + BK < K) {  // prefetch the next tile into registers while this one is consumed
      a_src += size_t(BK) * M;
      b_src += size_t(BK) * N;
      a_lo = *reinterpret_cast<const uint2*>(a_src); a_hi = *reinterpret_cast<const uint2*>(a_src + 64);
      b_lo = *reinterpret_cast<const uint2*>(b_src); b_hi = *reinterpret_cast<const uint2*>(b_src + 64);
    }
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      const float4 a0 = *reinterpret_cast<const float4*>(&As[kk][ty * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[kk][64 + ty * 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[kk][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[kk][64 + tx * 4]);
      const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int row = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
    *reinterpret_cast<float4*>(&C[size_t(row) * N + n0 + tx * 4]) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    *reinterpret_cast<float4*>(&C[size_t(row) * N + n0 + 64 + tx * 4]) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
  }
}

int main() {
  CUDA_CHECK(cudaSetDevice(0));
  __half *At, *B;
  float* C;
  CUDA_CHECK(cudaMalloc(&At, size_t(K) * M * sizeof(__half)));
  CUDA_CHECK(cudaMalloc(&B, size_t(K) * N * sizeof(__half)));
  CUDA_CHECK(cudaMalloc(&C, size_t(M) * N * sizeof(float)));
  init_half<<<2048, 256>>>(At, size_t(K) * M, 0x1234567u);
  CUDA_CHECK(cudaGetLastError());
  init_half<<<2048, 256>>>(B, size_t(K) * N, 0x89abcdefu);
  CUDA_CHECK(cudaGetLastError());

  const dim3 grid(N / BN, M / BM);
  for (int launch = 0; launch < 2; ++launch) {  // 1 warm-up, 1 measured
    planted_tensor_cores_unused<<<grid, THREADS>>>(At, B, C);
    CUDA_CHECK(cudaGetLastError());
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<__half> hA(size_t(K) * M), hB(size_t(K) * N);
  std::vector<float> hC(size_t(M) * N);
  CUDA_CHECK(cudaMemcpy(hA.data(), At, hA.size() * sizeof(__half), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hB.data(), B, hB.size() * sizeof(__half), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hC.data(), C, hC.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int s = 0; s < 64; ++s) {  // sampled float64 reference
    const int m = (s * 977 + 13) % M, n = (s * 1571 + 7) % N;
    double ref = 0.0, mag = 0.0;
    for (int k = 0; k < K; ++k) {
      const double p = double(__half2float(hA[size_t(k) * M + m])) * double(__half2float(hB[size_t(k) * N + n]));
      ref += p;
      mag += std::fabs(p);
    }
    if (std::fabs(hC[size_t(m) * N + n] - ref) > 1e-4 * mag + 1e-6) {
      std::fprintf(stderr, "planted_tensor_cores_unused: C[%d][%d] = %.7g, expected %.7g\n", m, n, hC[size_t(m) * N + n], ref);
      return 1;
    }
  }
  double sum = 0.0;
  for (float v : hC) sum += v;
  std::printf("planted_tensor_cores_unused ok %.6e\n", sum);
  CUDA_CHECK(cudaFree(At)); CUDA_CHECK(cudaFree(B)); CUDA_CHECK(cudaFree(C));
  return 0;
}
