// planted_compute_bound: the FP32 FMA pipe dominates.
//
// How: one full wave (SMs x 8 blocks x 256 threads, 64 warps/SM); each thread runs 8 independent FFMA chains
// (v = v*a + b) for 16384 steps entirely in registers: 131k FFMA per thread, 4 bytes of global memory in and out.
// 8 chains x 16 warps per scheduler hide the 4-cycle FMA latency, so each scheduler issues an FFMA nearly
// every cycle. About 1 ms (2.1M FFMA warp-instructions per scheduler at ~1.98 GHz).
//
// Expected evidence (H200, ncu --set full):
//   sm__throughput.avg.pct_of_peak_sustained_elapsed               > 85 %
//   sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active    > 80 %  (sm__inst_executed_pipe_fma dominant)
//   smsp__issue_active.avg.pct_of_peak_sustained_active            > 85 %
//   dram__throughput.avg.pct_of_peak_sustained_elapsed             < 2 %
//   smsp__thread_inst_executed_per_inst_executed.ratio             ~32
//   tensor pipe: a few % at most (HMMA-pipe register moves are noise)
// Must NOT fire: memory_bound, memory_latency_bound, occupancy_limited, low_parallelism, warp_divergence,
//   register_spills, tensor_cores_unused (no matrix product here), barrier_stalls, launch_overhead.
// Seen (nvcc 13.0 -O3 -arch=sm_90a -lineinfo, cuobjdump --dump-resource-usage, SASS):
//   REG:25 STACK:0; hot loop 35 instructions, 32 of them FFMA (unroll 4 x 8 chains), no memory ops.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

#include "common.cuh"  // CUDA_CHECK

constexpr int BLOCK = 256;
constexpr int BLOCKS_PER_SM = 8;  // 8 x 256 threads = 64 warps: one full wave
constexpr int ILP = 8;
constexpr int STEPS = 16384;

__device__ __forceinline__ float hash_unit(unsigned int i) {  // deterministic value in [0.5, 1.5)
  i ^= i >> 16; i *= 0x7feb352dU; i ^= i >> 15; i *= 0x846ca68bU; i ^= i >> 16;
  return 0.5f + float(i >> 8) * (1.0f / 16777216.0f);
}

__global__ void init_data(float* __restrict__ x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] = hash_unit(i);
}

__global__ void __launch_bounds__(BLOCK, BLOCKS_PER_SM)
planted_compute_bound(const float* __restrict__ seed, float* __restrict__ out, float a, float b, int steps) {
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  const float s = seed[i];
  float v[ILP];
#pragma unroll
  for (int j = 0; j < ILP; ++j) v[j] = s + float(j);
#pragma unroll 4
  for (int it = 0; it < steps; ++it) {
#pragma unroll
    for (int j = 0; j < ILP; ++j) v[j] = fmaf(v[j], a, b);  // 8 independent chains
  }
  float acc = 0.f;
#pragma unroll
  for (int j = 0; j < ILP; ++j) acc += v[j];
  out[i] = acc;
}

int main() {
  CUDA_CHECK(cudaSetDevice(0));
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int grid = sms * BLOCKS_PER_SM, n = grid * BLOCK;
  float *seed, *out;
  CUDA_CHECK(cudaMalloc(&seed, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&out, n * sizeof(float)));
  init_data<<<256, 256>>>(seed, n);
  CUDA_CHECK(cudaGetLastError());

  for (int launch = 0; launch < 2; ++launch) {  // 1 warm-up, 1 measured
    planted_compute_bound<<<grid, BLOCK>>>(seed, out, 0.999f, 0.001f, STEPS);  // contracts towards 1: stays finite
    CUDA_CHECK(cudaGetLastError());
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  if (report_float_checksum("planted_compute_bound", out, n) != 0) return 1;
  CUDA_CHECK(cudaFree(seed)); CUDA_CHECK(cudaFree(out));
  return 0;
}
