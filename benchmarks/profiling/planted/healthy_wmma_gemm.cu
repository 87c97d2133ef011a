// planted_healthy_wmma_gemm: control for tensor_cores_unused: the same fp16-input, fp32-accumulate GEMM on the
// tensor cores through nvcuda::wmma (HMMA in SASS).
//
// How: C[4096x4096] (fp32) = A x B, fp16 At[K][M] (A k-major, loaded as a col_major matrix_a) and B[K][N]
// (row_major matrix_b), same data as tensor_cores_unused.cu. 128x128 block tile, BK = 32, 8 warps each owning a
// 64x32 warp tile (4x2 16x16 accumulators). Tiles are copied with 16-byte cp.async into two shared-memory stages
// (the next tile lands while the current one is multiplied), rows padded by 8 halves (conflict-free LDSM).
// Not a cuBLAS-class kernel (no wgmma, no TMA), but the work runs on the tensor pipe.
// 137 GFLOP: expect ~0.3-0.8 ms (roughly 5-10x the CUDA-core version). Sampled outputs are checked against a
// float64 host reference.
//
// Expected evidence (H200, ncu --set full):
//   sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active  20-60 %, far above the ~0-5 % noise
//   sm__inst_executed_pipe_tensor_op_hmma.sum > 0 (HMMA.16816.F32 in SASS); FFMA count small
//   sm__pipe_fma_cycles_active low (< 15 %); dram__throughput < 40 %
//   l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum ~ 0 (padded rows)
//   theoretical occupancy 25 % (128 registers, 2 blocks of 8 warps per SM), usual for a tiled GEMM
// Must NOT fire: tensor_cores_unused, smem_bank_conflicts, uncoalesced_global, register_spills, warp_divergence,
//   low_parallelism, launch_overhead, memory_bound, memory_latency_bound.
// Seen (nvcc 13.0 -O3 -arch=sm_90a -lineinfo, cuobjdump --dump-resource-usage, SASS):
//   REG:128 (the __launch_bounds__(256, 2) cap) STACK:0, 0 spills, SHARED:35840 (2 stages,
//   34816 + 1 KiB reserve); main loop (unrolled x2): 64 HMMA.16816.F32, 24 LDSM.16.MT88.4, 8 LDGSTS.E.BYPASS.128.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <mma.h>

#include "common.cuh"  // CUDA_CHECK

using namespace nvcuda;

constexpr int M = 4096, N = 4096, K = 4096;
constexpr int BM = 128, BN = 128, BK = 32, PAD = 8, THREADS = 256;
constexpr int LDA = BM + PAD, LDB = BN + PAD;  // shared row strides in halves (272 bytes)

__device__ __forceinline__ float hash_signed(unsigned int i) {  // deterministic value in [-1, 1)
  i ^= i >> 16; i *= 0x7feb352dU; i ^= i >> 15; i *= 0x846ca68bU; i ^= i >> 16;
  return float(i >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

__global__ void init_half(__half* __restrict__ x, size_t n, unsigned salt) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    x[i] = __float2half(hash_signed(unsigned(i) ^ salt));
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {  // 16 bytes global -> shared
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" : : "r"(dst), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" : : : "memory"); }
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" : : "n"(PENDING) : "memory"); }

__global__ void __launch_bounds__(THREADS, 2)  // <= 128 registers: 2 blocks (16 warps) per SM
planted_healthy_wmma_gemm(const __half* __restrict__ At, const __half* __restrict__ B, float* __restrict__ C) {
  __shared__ alignas(128) __half As[2][BK][LDA];  // As[stage][k][m]
  __shared__ alignas(128) __half Bs[2][BK][LDB];  // Bs[stage][k][n]
  const int tid = threadIdx.x, warp = tid >> 5, wm = warp >> 2, wn = warp & 3;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  // Staging: thread copies 8 halves at column lc of k-rows lr and lr + 16 of each operand.
  const int lr = tid >> 4, lc = (tid & 15) * 8;
  const __half* a_src = At + size_t(lr) * M + m0 + lc;
  const __half* b_src = B + size_t(lr) * N + n0 + lc;
  auto stage = [&](int buf, int k0) {
    cp_async16(&As[buf][lr][lc], a_src + size_t(k0) * M);
    cp_async16(&As[buf][lr + 16][lc], a_src + size_t(k0 + 16) * M);
    cp_async16(&Bs[buf][lr][lc], b_src + size_t(k0) * N);
    cp_async16(&Bs[buf][lr + 16][lc], b_src + size_t(k0 + 16) * N);
    cp_async_commit();
  };

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  constexpr int TILES = K / BK;
  stage(0, 0);
  for (int t = 0; t < TILES; ++t) {
    const int buf = t & 1;
    if (t + 1 < TILES) {  // copy the next tile while this one is multiplied
      stage(buf ^ 1, (t + 1) * BK);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> bf[2];
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(bf[j], &Bs[buf][kk][wn * 32 + j * 16], LDB);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::col_major> af;
        wmma::load_matrix_sync(af, &As[buf][kk][wm * 64 + i * 16], LDA);
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], af, bf[j], acc[i][j]);
      }
    }
    __syncthreads();  // everyone is done with buf before it is refilled
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(C + size_t(m0 + wm * 64 + i * 16) * N + n0 + wn * 32 + j * 16, acc[i][j], N,
                              wmma::mem_row_major);
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
    planted_healthy_wmma_gemm<<<grid, THREADS>>>(At, B, C);
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
      std::fprintf(stderr, "planted_healthy_wmma_gemm: C[%d][%d] = %.7g, expected %.7g\n", m, n, hC[size_t(m) * N + n], ref);
      return 1;
    }
  }
  double sum = 0.0;
  for (float v : hC) sum += v;
  std::printf("planted_healthy_wmma_gemm ok %.6e\n", sum);
  CUDA_CHECK(cudaFree(At)); CUDA_CHECK(cudaFree(B)); CUDA_CHECK(cudaFree(C));
  return 0;
}
