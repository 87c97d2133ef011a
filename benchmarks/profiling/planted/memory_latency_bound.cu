// planted_memory_latency_bound: every load waits a full DRAM round trip; neither bandwidth nor issue is busy.
//
// How: a dependent pointer chase (idx = next[idx]) through a 512 MiB table (~8.5x the 60 MiB L2) arranged as
// one pseudo-random cycle (next[i] = (A*i + C) mod 2^27, a full-period LCG, so consecutive hops land on
// unrelated lines). One chain per warp, 4096 hops: all 32 lanes follow the same chain (one broadcast sector
// per request, so nothing is uncoalesced and nothing diverges). The grid is one full wave (SMs x 8 blocks x 256
// threads, 100 % occupancy), so the latency stays exposed with every warp slot filled: each warp has exactly one
// load in flight and nothing to do until it returns. Only ~8.4k sectors are in flight GPU-wide, far below
// what saturates HBM. Expect a few ms (4096 hops x ~0.6-1.5 us).
//
// Expected evidence (H200, ncu --set full):
//   dram__throughput.avg.pct_of_peak_sustained_elapsed   < 25 %
//   sm__throughput.avg.pct_of_peak_sustained_elapsed     < 5 %;  smsp__issue_active.avg.pct_of_peak_sustained_active < 5 %
//   long_scoreboard dominates stalls: smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
//     in the hundreds, > 80 % of smsp__pcsamp_warps_issue_stalled_* samples
//   lts__t_sector_hit_rate.pct < 25 %;  l1tex__t_sectors_pipe_lsu_mem_global_op_ld / requests = 1
//   achieved occupancy > 85 % (theoretical 100 %): the latency is not an occupancy problem
// Must NOT fire: memory_bound (bandwidth mostly idle), compute_bound, occupancy_limited, low_parallelism,
//   uncoalesced_global, warp_divergence, register_spills, launch_overhead, atomic_contention.
// Seen (nvcc 13.0 -O3 -arch=sm_90a -lineinfo, cuobjdump --dump-resource-usage, SASS):
//   REG:18 STACK:0; hot loop 12 instructions with 4 back-to-back dependent LDG.E.CONSTANT
//   (unroll 4 of idx = next[idx]), no LDL/STL.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "common.cuh"  // CUDA_CHECK

constexpr unsigned LOG2_N = 27;                  // 2^27 x 4 bytes = 512 MiB
constexpr unsigned N = 1u << LOG2_N;
constexpr unsigned LCG_A = 0x9e3779b5u;          // A = 1 (mod 4) and C odd: full period mod 2^k (Hull-Dobell)
constexpr unsigned LCG_C = 0x7f4a7c15u;
constexpr int BLOCK = 256;
constexpr int BLOCKS_PER_SM = 8;                 // 64 warps per SM: one full wave
constexpr int HOPS = 4096;

__global__ void init_chain(unsigned* __restrict__ next) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += gridDim.x * blockDim.x)
    next[i] = (LCG_A * i + LCG_C) & (N - 1);
}

__global__ void __launch_bounds__(BLOCK, BLOCKS_PER_SM)
planted_memory_latency_bound(const unsigned* __restrict__ next, unsigned* __restrict__ out, int hops) {
  const unsigned gtid = blockIdx.x * BLOCK + threadIdx.x;
  unsigned idx = ((gtid >> 5) * 0x85ebca6bu) & (N - 1);  // one start per warp, uniform across its lanes
#pragma unroll 4
  for (int h = 0; h < hops; ++h) idx = next[idx];       // the next address depends on this load
  out[gtid] = idx;
}

int main() {
  CUDA_CHECK(cudaSetDevice(0));
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int grid = sms * BLOCKS_PER_SM, threads = grid * BLOCK;
  unsigned *next, *out;
  CUDA_CHECK(cudaMalloc(&next, size_t(N) * sizeof(unsigned)));
  CUDA_CHECK(cudaMalloc(&out, threads * sizeof(unsigned)));
  init_chain<<<4096, 256>>>(next);
  CUDA_CHECK(cudaGetLastError());

  for (int launch = 0; launch < 2; ++launch) {  // 1 warm-up, 1 measured
    planted_memory_latency_bound<<<grid, BLOCK>>>(next, out, HOPS);
    CUDA_CHECK(cudaGetLastError());
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  // Check one warp's chain on the host: its end point is HOPS steps of the LCG from its start.
  std::vector<unsigned> h(threads);
  CUDA_CHECK(cudaMemcpy(h.data(), out, threads * sizeof(unsigned), cudaMemcpyDeviceToHost));
  const unsigned warp = 12345u % unsigned(threads / 32);
  unsigned idx = (warp * 0x85ebca6bu) & (N - 1);
  for (int k = 0; k < HOPS; ++k) idx = (LCG_A * idx + LCG_C) & (N - 1);
  if (h[warp * 32] != idx || h[warp * 32 + 31] != idx) {
    std::fprintf(stderr, "planted_memory_latency_bound: chain end %u, expected %u\n", h[warp * 32], idx);
    return 1;
  }
  unsigned long long sum = 0;
  for (unsigned v : h) sum += v;
  std::printf("planted_memory_latency_bound ok %llu\n", sum);
  CUDA_CHECK(cudaFree(next)); CUDA_CHECK(cudaFree(out));
  return 0;
}
