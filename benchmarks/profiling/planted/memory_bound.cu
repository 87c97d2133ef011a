// planted_memory_bound: DRAM bandwidth dominates (the healthy state of a streaming kernel).
//
// How: a STREAM-triad z = a*x + y over three 256 MiB float arrays (768 MiB moved, ~13x the 60 MiB L2),
// one 16-byte load/store per thread per array, fully coalesced, 2 FLOP per 12 bytes, full occupancy.
//
// Expected evidence (H200, ncu --set full):
//   dram__throughput.avg.pct_of_peak_sustained_elapsed        75-95 %
//   gpu__time_duration.sum                                    ~170-230 us (805 MB at ~3.6-4.3 TB/s)
//   sm__throughput.avg.pct_of_peak_sustained_elapsed          < 30 %
//   l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum / l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum = 16
//     (ideal for 16-byte loads), lts__t_sector_hit_rate.pct low (streaming)
//   achieved occupancy (sm__warps_active.avg.pct_of_peak_sustained_active) > 70 %, theoretical 100 %
//   stalls: long_scoreboard dominant (normal when the memory system is saturated)
// Must NOT fire: compute_bound, memory_latency_bound (bandwidth is saturated), uncoalesced_global,
//   occupancy_limited, low_parallelism, launch_overhead, register_spills, smem_bank_conflicts,
//   warp_divergence, barrier_stalls, atomic_contention, tensor_cores_unused.
// Seen (nvcc 13.0 -O3 -arch=sm_90a -lineinfo, cuobjdump --dump-resource-usage, SASS):
//   REG:18 STACK:0, no spills; SASS: 2x LDG.E.128.CONSTANT + 1x STG.E.128 per thread, no LDL/STL.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "common.cuh"  // CUDA_CHECK

constexpr size_t N = size_t(64) << 20;  // floats per array: 256 MiB each
constexpr int BLOCK = 256;

__device__ __forceinline__ float hash_unit(unsigned int i) {  // deterministic value in [0.5, 1.5)
  i ^= i >> 16; i *= 0x7feb352dU; i ^= i >> 15; i *= 0x846ca68bU; i ^= i >> 16;
  return 0.5f + float(i >> 8) * (1.0f / 16777216.0f);
}

__global__ void init_data(float* __restrict__ x, float* __restrict__ y, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    x[i] = hash_unit(unsigned(i));
    y[i] = hash_unit(unsigned(i) ^ 0x9e3779b9U);
  }
}

__global__ void __launch_bounds__(BLOCK) planted_memory_bound(const float4* __restrict__ x, const float4* __restrict__ y,
                                                              float4* __restrict__ z, float a, size_t n4) {
  const size_t i = blockIdx.x * size_t(BLOCK) + threadIdx.x;
  if (i < n4) {
    const float4 xv = x[i], yv = y[i];
    z[i] = make_float4(fmaf(a, xv.x, yv.x), fmaf(a, xv.y, yv.y), fmaf(a, xv.z, yv.z), fmaf(a, xv.w, yv.w));
  }
}

int main() {
  CUDA_CHECK(cudaSetDevice(0));
  float *x, *y, *z;
  CUDA_CHECK(cudaMalloc(&x, N * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&y, N * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&z, N * sizeof(float)));
  init_data<<<4096, 256>>>(x, y, N);
  CUDA_CHECK(cudaGetLastError());

  const size_t n4 = N / 4;
  const unsigned grid = unsigned((n4 + BLOCK - 1) / BLOCK);
  for (int launch = 0; launch < 2; ++launch) {  // 1 warm-up, 1 measured
    planted_memory_bound<<<grid, BLOCK>>>(reinterpret_cast<const float4*>(x), reinterpret_cast<const float4*>(y),
                                          reinterpret_cast<float4*>(z), 2.0f, n4);
    CUDA_CHECK(cudaGetLastError());
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> h(N);
  CUDA_CHECK(cudaMemcpy(h.data(), z, N * sizeof(float), cudaMemcpyDeviceToHost));
  double sum = 0.0;
  for (float v : h) sum += v;
  std::printf("planted_memory_bound ok %.6e\n", sum);
  CUDA_CHECK(cudaFree(x)); CUDA_CHECK(cudaFree(y)); CUDA_CHECK(cudaFree(z));
  return 0;
}
