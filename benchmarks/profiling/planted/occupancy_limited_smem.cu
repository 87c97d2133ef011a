// planted_occupancy_limited_smem: 100 KiB of dynamic shared memory per block caps residency at 2 blocks of
// 128 threads per SM (8 warps, 12.5 %), too few to hide memory latency in a one-load-in-flight loop.
//
// How: each block stages a 100 KiB coefficient table (25600 floats, L2-resident, shared by all blocks) into
// dynamic shared memory (opt-in via cudaFuncAttributeMaxDynamicSharedMemorySize, carveout set to maximum
// shared), then streams 256 MiB: acc += in[i] * table[j], one coalesced 4-byte load per iteration, `unroll 1`,
// table reads conflict-free (consecutive lanes, consecutive words). 2 x (100 + 1 reserved) KiB fit in the
// 228 KiB per SM, 3 do not. Registers (30) and the block count (2 of 32) do not bind. 1024 blocks of 512
// elements per thread keep the table staging (100 MB of L2 hits in all) small next to the stream. ~1-1.5 ms.
//
// Expected evidence (H200, ncu --set full):
//   launch__shared_mem_per_block_dynamic 102400; launch__occupancy_limit_shared_mem 2 (the binding limit)
//   sm__maximum_warps_per_active_cycle_pct 12.5 %; achieved ~11-12.5 %
//   dram__throughput.avg.pct_of_peak_sustained_elapsed < 15 %; sm__throughput < 15 %
//   long_scoreboard dominates stalls; l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum ~ 0
//   lts__t_sector_hit_rate.pct elevated (~25-35 %) by the table staging, not by the stream
// Must NOT fire: smem_bank_conflicts, register_spills, memory_bound, compute_bound, low_parallelism,
//   uncoalesced_global, launch_overhead. memory_latency_bound describes the symptom; the cause to report is the
//   shared-memory-limited occupancy.
// Seen (nvcc 13.0 -O3 -arch=sm_90a -lineinfo, cuobjdump --dump-resource-usage, SASS):
//   REG:30 STACK:0, SHARED:1024 static (the per-block reserve; the 100 KiB is dynamic, at
//   launch). Staging loop 16x (LDG.E.128 + STS.128); main loop 1 LDG.E.CONSTANT + 1 LDS + 1 FFMA.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

#include "common.cuh"  // CUDA_CHECK

constexpr size_t N = size_t(64) << 20;  // 256 MiB of floats
constexpr int PER_THREAD = 512;  // 131072 threads: 1024 blocks, ~3.9 waves of 264
constexpr int BLOCK = 128;
constexpr int TABLE = 25600;            // floats: 100 KiB of dynamic shared memory per block
constexpr size_t SMEM_BYTES = TABLE * sizeof(float);

__device__ __forceinline__ float hash_unit(unsigned int i) {  // deterministic value in [0.5, 1.5)
  i ^= i >> 16; i *= 0x7feb352dU; i ^= i >> 15; i *= 0x846ca68bU; i ^= i >> 16;
  return 0.5f + float(i >> 8) * (1.0f / 16777216.0f);
}

__global__ void init_data(float* __restrict__ x, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    x[i] = hash_unit(unsigned(i));
}

__global__ void __launch_bounds__(BLOCK)
planted_occupancy_limited_smem(const float* __restrict__ in, const float4* __restrict__ table,
                               float* __restrict__ out, int per_thread) {
  extern __shared__ float4 tab4[];
  for (int j = threadIdx.x; j < TABLE / 4; j += BLOCK) tab4[j] = table[j];
  __syncthreads();
  const float* tab = reinterpret_cast<const float*>(tab4);
  const size_t stride = size_t(gridDim.x) * BLOCK;
  const size_t t = blockIdx.x * size_t(BLOCK) + threadIdx.x;
  float acc = 0.f;
  int j = threadIdx.x;
#pragma unroll 1
  for (int k = 0; k < per_thread; ++k) {  // one global load in flight per warp
    acc = fmaf(in[t + k * stride], tab[j], acc);
    j += BLOCK;
    if (j >= TABLE) j -= TABLE;
  }
  out[t] = acc;
}

int main() {
  CUDA_CHECK(cudaSetDevice(0));
  CUDA_CHECK(cudaFuncSetAttribute(planted_occupancy_limited_smem, cudaFuncAttributeMaxDynamicSharedMemorySize, int(SMEM_BYTES)));
  CUDA_CHECK(cudaFuncSetAttribute(planted_occupancy_limited_smem, cudaFuncAttributePreferredSharedMemoryCarveout,
                                  int(cudaSharedmemCarveoutMaxShared)));
  int blocks_per_sm = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, planted_occupancy_limited_smem, BLOCK, SMEM_BYTES));
  if (blocks_per_sm != 2) {
    std::fprintf(stderr, "planted_occupancy_limited_smem: %d blocks/SM, expected 2\n", blocks_per_sm);
    return 1;
  }
  const size_t threads = N / PER_THREAD;
  const int grid = int(threads / BLOCK);
  float *in, *table, *out;
  CUDA_CHECK(cudaMalloc(&in, N * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&table, SMEM_BYTES));
  CUDA_CHECK(cudaMalloc(&out, threads * sizeof(float)));
  init_data<<<4096, 256>>>(in, N);
  CUDA_CHECK(cudaGetLastError());
  init_data<<<100, 256>>>(table, TABLE);
  CUDA_CHECK(cudaGetLastError());

  for (int launch = 0; launch < 2; ++launch) {  // 1 warm-up, 1 measured
    planted_occupancy_limited_smem<<<grid, BLOCK, SMEM_BYTES>>>(in, reinterpret_cast<const float4*>(table), out, PER_THREAD);
    CUDA_CHECK(cudaGetLastError());
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  if (report_float_checksum("planted_occupancy_limited_smem", out, threads) != 0) return 1;
  CUDA_CHECK(cudaFree(in)); CUDA_CHECK(cudaFree(table)); CUDA_CHECK(cudaFree(out));
  return 0;
}
