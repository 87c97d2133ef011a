// planted_occupancy_limited_blocksize: 32-thread blocks hit the 32-blocks-per-SM limit at 32 warps (50 %),
// with registers and shared memory far from binding, in a loop that needs more warps to hide latency.
//
// How: the same streaming sum as the other occupancy variants (256 MiB, one coalesced 4-byte load in flight per
// warp, `unroll 1`), launched as 16384 blocks of one warp each (~3.9 waves of 32 blocks x 132 SMs). At 32 warps
// per SM about 4 KB is in flight per SM: DRAM stays well below peak. About 0.3-0.5 ms.
//
// Expected evidence (H200, ncu --set full):
//   launch__block_size 32; launch__occupancy_limit_blocks 32 (the binding limit; registers and smem allow more)
//   sm__maximum_warps_per_active_cycle_pct 50 %; achieved ~40-50 %
//   dram__throughput.avg.pct_of_peak_sustained_elapsed ~10-30 %; sm__throughput < 15 %
//   long_scoreboard dominates stalls
// Must NOT fire: memory_bound, compute_bound, low_parallelism (16384 blocks), register_spills,
//   uncoalesced_global, launch_overhead. memory_latency_bound describes the symptom; the cause to report is the
//   block size. Note: 50 % is the mildest of the three occupancy plants.
// Seen (nvcc 13.0 -O3 -arch=sm_90a -lineinfo, cuobjdump --dump-resource-usage, SASS):
//   REG:14 STACK:0; loop 1 LDG.E.CONSTANT + 1 FADD per iteration.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

#include "common.cuh"  // CUDA_CHECK

constexpr size_t N = size_t(64) << 20;  // 256 MiB of floats
constexpr int PER_THREAD = 128;
constexpr int BLOCK = 32;               // one warp per block

__device__ __forceinline__ float hash_unit(unsigned int i) {  // deterministic value in [0.5, 1.5)
  i ^= i >> 16; i *= 0x7feb352dU; i ^= i >> 15; i *= 0x846ca68bU; i ^= i >> 16;
  return 0.5f + float(i >> 8) * (1.0f / 16777216.0f);
}

__global__ void init_data(float* __restrict__ x, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    x[i] = hash_unit(unsigned(i));
}

__global__ void __launch_bounds__(BLOCK)
planted_occupancy_limited_blocksize(const float* __restrict__ in, float* __restrict__ out, int per_thread) {
  const size_t stride = size_t(gridDim.x) * BLOCK;
  const size_t t = blockIdx.x * size_t(BLOCK) + threadIdx.x;
  float acc = 0.f;
#pragma unroll 1
  for (int k = 0; k < per_thread; ++k) acc += in[t + k * stride];  // one load in flight per warp
  out[t] = acc;
}

int main() {
  CUDA_CHECK(cudaSetDevice(0));
  int blocks_per_sm = 0, max_blocks = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, planted_occupancy_limited_blocksize, BLOCK, 0));
  CUDA_CHECK(cudaDeviceGetAttribute(&max_blocks, cudaDevAttrMaxBlocksPerMultiprocessor, 0));
  if (blocks_per_sm != max_blocks) {
    std::fprintf(stderr, "planted_occupancy_limited_blocksize: %d blocks/SM, expected the limit %d\n", blocks_per_sm, max_blocks);
    return 1;
  }
  const size_t threads = N / PER_THREAD;
  const int grid = int(threads / BLOCK);
  float *in, *out;
  CUDA_CHECK(cudaMalloc(&in, N * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&out, threads * sizeof(float)));
  init_data<<<4096, 256>>>(in, N);
  CUDA_CHECK(cudaGetLastError());

  for (int launch = 0; launch < 2; ++launch) {  // 1 warm-up, 1 measured
    planted_occupancy_limited_blocksize<<<grid, BLOCK>>>(in, out, PER_THREAD);
    CUDA_CHECK(cudaGetLastError());
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  if (report_float_checksum("planted_occupancy_limited_blocksize", out, threads) != 0) return 1;
  CUDA_CHECK(cudaFree(in)); CUDA_CHECK(cudaFree(out));
  return 0;
}
