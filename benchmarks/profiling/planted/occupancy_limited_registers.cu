// planted_occupancy_limited_registers: ~200 registers per thread cap residency at 8 warps/SM (12.5 %),
// too few to hide memory latency in a loop with one load in flight per warp.
//
// How: each thread loads a 192-float coefficient tile into registers up front and keeps it live across a
// streaming sum over 256 MiB (one coalesced 4-byte load per iteration, `unroll 1`: exactly one load in flight
// per warp): a data-dependent slow path inside the loop (never taken: the inputs are positive) needs the whole
// tile, so neither the front end nor ptxas can defer the tile loads past the loop; the tile is folded into the
// result at the end. __maxnreg__(208) caps the allocation (ptxas: 204 registers, no spills); 204 registers
// round up to 208: 6656 per warp, 2 warps per scheduler, 2 blocks of 128 per SM.
// With 8 warps/SM, ~1 KB is in flight per SM, so DRAM runs at a small fraction of peak; the same loop at
// 64 warps/SM would move ~8x more. About 1-1.5 ms.
//
// Expected evidence (H200, ncu --set full):
//   launch__registers_per_thread 204; launch__occupancy_limit_registers 2 (the binding limit)
//   sm__maximum_warps_per_active_cycle_pct (theoretical occupancy) 12.5 %; achieved (sm__warps_active) ~11-12.5 %
//   dram__throughput.avg.pct_of_peak_sustained_elapsed  < 15 %;  sm__throughput < 10 %
//   long_scoreboard dominates stalls; smsp__issue_active < 10 %
//   no local memory: l1tex__t_sectors_pipe_lsu_mem_local_op_{ld,st}.sum = 0
// Must NOT fire: register_spills (no spills), memory_bound, compute_bound, low_parallelism (~3.9 waves),
//   uncoalesced_global, smem_bank_conflicts, launch_overhead. memory_latency_bound describes the symptom;
//   the cause to report is the register-limited occupancy.
// Seen (nvcc 13.0 -O3 -arch=sm_90a -lineinfo, cuobjdump --dump-resource-usage, SASS):
//   REG:204 STACK:0, 0 bytes spilled (ptxas -v); 204 regs -> 6656 per warp -> 2 warps per
//   scheduler, 8 warps/SM (without the cap ptxas takes 202: same occupancy; the cap guards against drift).
//   Executed loop: 1 LDG.E.CONSTANT, FADD, FSETP and a branch around the 192-FFMA slow path.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

#include "common.cuh"  // CUDA_CHECK

constexpr size_t N = size_t(64) << 20;  // 256 MiB of floats
constexpr int PER_THREAD = 512;  // 131072 threads: 1024 blocks, ~3.9 waves of 264
constexpr int BLOCK = 128;
constexpr int KEEP = 192;               // floats held live in registers across the loop

__device__ __forceinline__ float hash_unit(unsigned int i) {  // deterministic value in [0.5, 1.5)
  i ^= i >> 16; i *= 0x7feb352dU; i ^= i >> 15; i *= 0x846ca68bU; i ^= i >> 16;
  return 0.5f + float(i >> 8) * (1.0f / 16777216.0f);
}

__global__ void init_data(float* __restrict__ x, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    x[i] = hash_unit(unsigned(i));
}

__global__ void __maxnreg__(208)
planted_occupancy_limited_registers(const float* __restrict__ in, const float4* __restrict__ coef,
                                    float* __restrict__ out, int per_thread) {
  const size_t stride = size_t(gridDim.x) * BLOCK;
  const size_t t = blockIdx.x * size_t(BLOCK) + threadIdx.x;
  float keep[KEEP];
#pragma unroll
  for (int j = 0; j < KEEP / 4; ++j) {
    const float4 c = coef[j];
    keep[4 * j] = c.x; keep[4 * j + 1] = c.y; keep[4 * j + 2] = c.z; keep[4 * j + 3] = c.w;
  }
#pragma unroll
  for (int j = 0; j < KEEP; ++j) asm volatile("" : "+f"(keep[j]) : : "memory");  // materialise the tile here
  float acc = 0.f;
#pragma unroll 1
  for (int k = 0; k < per_thread; ++k) {  // one load in flight per warp
    const float v = in[t + k * stride];
    acc += v;
    if (v < 0.0f) {  // slow path, never taken (inputs are positive), that needs the whole tile: keeps it live
#pragma unroll
      for (int j = 0; j < KEEP; ++j) acc = fmaf(keep[j], v, acc);
    }
  }
  float tail = 0.f;
#pragma unroll
  for (int j = 0; j < KEEP; ++j) tail = fmaf(keep[j], 1.0f / float(j + 1), tail);
  out[t] = acc + tail;
}

int main() {
  CUDA_CHECK(cudaSetDevice(0));
  const size_t threads = N / PER_THREAD;
  const int grid = int(threads / BLOCK);
  int blocks_per_sm = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, planted_occupancy_limited_registers, BLOCK, 0));
  if (blocks_per_sm * BLOCK / 32 > 8) {
    std::fprintf(stderr, "planted_occupancy_limited_registers: %d blocks/SM, registers do not limit occupancy\n", blocks_per_sm);
    return 1;
  }
  float *in, *coef, *out;
  CUDA_CHECK(cudaMalloc(&in, N * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&coef, KEEP * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&out, threads * sizeof(float)));
  init_data<<<4096, 256>>>(in, N);
  CUDA_CHECK(cudaGetLastError());
  init_data<<<1, KEEP>>>(coef, KEEP);
  CUDA_CHECK(cudaGetLastError());

  for (int launch = 0; launch < 2; ++launch) {  // 1 warm-up, 1 measured
    planted_occupancy_limited_registers<<<grid, BLOCK>>>(in, reinterpret_cast<const float4*>(coef), out, PER_THREAD);
    CUDA_CHECK(cudaGetLastError());
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  if (report_float_checksum("planted_occupancy_limited_registers", out, threads) != 0) return 1;
  CUDA_CHECK(cudaFree(in)); CUDA_CHECK(cudaFree(coef)); CUDA_CHECK(cudaFree(out));
  return 0;
}
