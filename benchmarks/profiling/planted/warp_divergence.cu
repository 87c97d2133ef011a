// planted_warp_divergence: every warp splits into two half-warps that run different FMA loops one after the
// other, so each warp instruction does half a warp's work.
//
// How: compute_bound's register-only FFMA chains (8 independent chains, one full wave of SMs x 8 x 256
// threads), but lanes 0-15 and lanes 16-31 take different branches (v = v*a + b versus v = b - v*a) of equal
// length. The branch condition depends only on the lane, so the split is exactly half/half in every warp and
// the scheduler issues both paths serially. About 1 ms (twice compute_bound's per-thread work time).
//
// Expected evidence (H200, ncu --set full):
//   smsp__thread_inst_executed_per_inst_executed.ratio ~16 (the key signal; 32 when converged)
//   smsp__thread_inst_executed_pred_on_per_inst_executed ~16 as well
//   issue slots remain busy: sm__throughput / smsp__issue_active > 80 %, so FMA-pipe *instruction* utilisation
//   looks compute-bound while only half the lanes do useful work
//   dram__throughput < 2 %
//   (branch-uniformity percentages do NOT show this split; do not rely on them)
// Must NOT fire: memory_bound, memory_latency_bound, occupancy_limited, low_parallelism, register_spills,
//   barrier_stalls, tensor_cores_unused. compute_bound describes the symptom; the cause is the divergence.
// Seen (nvcc 13.0 -O3 -arch=sm_90a -lineinfo, cuobjdump --dump-resource-usage, SASS):
//   REG:27 STACK:0; two separate FFMA loops (32 FFMA of 35 instructions each), one per
//   half-warp: the compiler did not merge the branches.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

#include "common.cuh"  // CUDA_CHECK

constexpr int BLOCK = 256;
constexpr int BLOCKS_PER_SM = 8;
constexpr int ILP = 8;
constexpr int STEPS = 8192;  // per branch: each warp executes 2 x 8192 x 8 FFMA instructions

__global__ void init_data(float* __restrict__ x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] = 0.5f + float(i & 255) / 256.0f;
}

__global__ void __launch_bounds__(BLOCK, BLOCKS_PER_SM)
planted_warp_divergence(const float* __restrict__ seed, float* __restrict__ out, float a, float b, int steps) {
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  const float s = seed[i];
  float v[ILP];
#pragma unroll
  for (int j = 0; j < ILP; ++j) v[j] = s + float(j);
  if (threadIdx.x & 16) {  // lanes 16-31
#pragma unroll 4
    for (int it = 0; it < steps; ++it) {
#pragma unroll
      for (int j = 0; j < ILP; ++j) v[j] = fmaf(v[j], a, b);
    }
  } else {                 // lanes 0-15
#pragma unroll 4
    for (int it = 0; it < steps; ++it) {
#pragma unroll
      for (int j = 0; j < ILP; ++j) v[j] = fmaf(-v[j], a, b);
    }
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
    planted_warp_divergence<<<grid, BLOCK>>>(seed, out, 0.999f, 0.001f, STEPS);
    CUDA_CHECK(cudaGetLastError());
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  if (report_float_checksum("planted_warp_divergence", out, n) != 0) return 1;
  CUDA_CHECK(cudaFree(seed)); CUDA_CHECK(cudaFree(out));
  return 0;
}
