// planted_low_parallelism: the grid is far too small for the GPU; 128 of 132 SMs sit idle.
//
// How: 4 blocks of 256 threads run the same register-only FFMA chains as compute_bound (8 independent chains,
// 24576 steps), so the 4 busy SMs are healthy in themselves and the only problem is the missing blocks.
// About 0.2-0.4 ms.
//
// Expected evidence (H200, ncu --set full):
//   launch__grid_size 4 (< 132 SMs); launch__waves_per_multiprocessor ~0.004
//   sm__cycles_active.avg / sm__cycles_elapsed.avg     ~3 % (4/132); sm__cycles_active.max ~ elapsed
//   sm__throughput.avg.pct_of_peak_sustained_elapsed   < 5 %;  dram__throughput < 1 %
//   ncu's launch-statistics rule: "grid ... only 4 blocks, which is less than the GPU's 132 multiprocessors"
//   caution: *_pct_of_peak_sustained_active metrics (e.g. sm__pipe_fma_cycles_active) average over active
//   cycles only and look busy (~50-90 %): judge by the elapsed-based values.
// Must NOT fire: compute_bound (only 3 % of the machine is used), memory_bound, memory_latency_bound (no memory
//   stalls: the few warps wait on FMA dependencies), occupancy_limited (theoretical 100 %), launch_overhead
//   (long kernel), warp_divergence, register_spills.
// Seen (nvcc 13.0 -O3 -arch=sm_90a -lineinfo, cuobjdump --dump-resource-usage, SASS):
//   REG:25 STACK:0; same hot loop as compute_bound (32 FFMA of 35 instructions).
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

#include "common.cuh"  // CUDA_CHECK

constexpr int BLOCKS = 4;
constexpr int BLOCK = 256;
constexpr int ILP = 8;
constexpr int STEPS = 24576;

__global__ void init_data(float* __restrict__ x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] = 0.5f + float(i & 255) / 256.0f;
}

__global__ void __launch_bounds__(BLOCK)
planted_low_parallelism(const float* __restrict__ seed, float* __restrict__ out, float a, float b, int steps) {
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  const float s = seed[i];
  float v[ILP];
#pragma unroll
  for (int j = 0; j < ILP; ++j) v[j] = s + float(j);
#pragma unroll 4
  for (int it = 0; it < steps; ++it) {
#pragma unroll
    for (int j = 0; j < ILP; ++j) v[j] = fmaf(v[j], a, b);
  }
  float acc = 0.f;
#pragma unroll
  for (int j = 0; j < ILP; ++j) acc += v[j];
  out[i] = acc;
}

int main() {
  CUDA_CHECK(cudaSetDevice(0));
  const int n = BLOCKS * BLOCK;
  float *seed, *out;
  CUDA_CHECK(cudaMalloc(&seed, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&out, n * sizeof(float)));
  init_data<<<4, 256>>>(seed, n);
  CUDA_CHECK(cudaGetLastError());

  for (int launch = 0; launch < 2; ++launch) {  // 1 warm-up, 1 measured
    planted_low_parallelism<<<BLOCKS, BLOCK>>>(seed, out, 0.999f, 0.001f, STEPS);
    CUDA_CHECK(cudaGetLastError());
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  if (report_float_checksum("planted_low_parallelism", out, n) != 0) return 1;
  CUDA_CHECK(cudaFree(seed)); CUDA_CHECK(cudaFree(out));
  return 0;
}
