// planted_barrier_stalls: in every round one warp works while the other 31 warps of its block wait at
// __syncthreads(), so barrier waits dominate the warp states.
//
// How: 1024-thread blocks (2 per SM, 64 warps/SM, 100 % theoretical occupancy), 512 rounds each ending in
// __syncthreads(). In round r only warp r % 32 runs a dependent chain of 128 FFMAs (~512 cycles); the condition
// is warp-uniform, so nothing diverges inside a warp and over 32 rounds every warp does the same work. The SM
// issues ~2 FFMAs every 4 cycles, so neither math nor memory is busy. 4 waves (SMs x 8 blocks). About 0.5-1 ms.
//
// Expected evidence (H200, ncu --set full):
//   stall barrier dominates: smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio the largest
//     stall ratio, > 80 % of smsp__pcsamp_warps_issue_stalled_* samples
//   smsp__inst_executed_op_barrier / barrier count: 512 per warp
//   sm__throughput < 20 %; dram__throughput < 1 %; smsp__issue_active < 20 %
//   smsp__thread_inst_executed_per_inst_executed.ratio ~32 (no divergence); achieved occupancy > 80 %
// Must NOT fire: warp_divergence, compute_bound, memory_bound, memory_latency_bound, occupancy_limited,
//   low_parallelism, register_spills, smem_bank_conflicts, launch_overhead.
// Seen (nvcc 13.0 -O3 -arch=sm_90a -lineinfo, cuobjdump --dump-resource-usage, SASS):
//   REG:12 STACK:0; round loop with one BAR.SYNC.DEFER_BLOCKING, heavy path an 8x-unrolled
//   dependent FFMA chain; one HFMA2.MMA (a register move on the tensor pipe: noise) in the round loop.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

#include "common.cuh"  // CUDA_CHECK

constexpr int BLOCK = 1024;
constexpr int BLOCKS_PER_SM = 2;
constexpr int WAVES = 4;
constexpr int ROUNDS = 512;
constexpr int HEAVY = 128;  // dependent FFMAs for the one busy warp per round

__global__ void init_data(float* __restrict__ x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] = 0.5f + float(i & 255) / 256.0f;
}

__global__ void __launch_bounds__(BLOCK, BLOCKS_PER_SM)
planted_barrier_stalls(const float* __restrict__ seed, float* __restrict__ out, float a, float b, int rounds) {
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  const int warp = threadIdx.x >> 5;
  float v = seed[i];
  for (int r = 0; r < rounds; ++r) {
    if (warp == (r & 31)) {  // warp-uniform: exactly one warp of the block works this round
#pragma unroll 8
      for (int k = 0; k < HEAVY; ++k) v = fmaf(v, a, b);
    }
    __syncthreads();         // the other 31 warps wait here
  }
  out[i] = v;
}

int main() {
  CUDA_CHECK(cudaSetDevice(0));
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int grid = sms * BLOCKS_PER_SM * WAVES, n = grid * BLOCK;
  float *seed, *out;
  CUDA_CHECK(cudaMalloc(&seed, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&out, n * sizeof(float)));
  init_data<<<1024, 256>>>(seed, n);
  CUDA_CHECK(cudaGetLastError());

  for (int launch = 0; launch < 2; ++launch) {  // 1 warm-up, 1 measured
    planted_barrier_stalls<<<grid, BLOCK>>>(seed, out, 0.999f, 0.001f, ROUNDS);
    CUDA_CHECK(cudaGetLastError());
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  if (report_float_checksum("planted_barrier_stalls", out, n) != 0) return 1;
  CUDA_CHECK(cudaFree(seed)); CUDA_CHECK(cudaFree(out));
  return 0;
}
