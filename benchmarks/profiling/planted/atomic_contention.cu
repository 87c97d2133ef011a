// planted_atomic_contention: every thread of the grid adds into the same 8 counters (one 32-byte sector),
// so all atomic traffic queues on one L2 slice and serialises there.
//
// How: 16M atomicAdd(1u) with the return value unused (RED.ADD in SASS, as in a histogram), issued by a full
// grid (4096 blocks x 256 threads, 16 per thread, grid-stride). Lane k of each warp targets counter k % 8, so
// each warp request carries 4 updates per address and nothing else touches memory. The counts are checked
// exactly. Expect roughly 0.2-10 ms depending on how fast one slice retires same-address reductions.
//
// Expected evidence (H200, ncu --set full):
//   l1tex__t_requests_pipe_lsu_mem_global_op_red.sum = 512K (16M / 32); lts__t_requests_srcunit_tex_op_red.sum
//     of the same order, all to one slice (lts__t_sectors_op_red.sum concentrated: ncu's L2 load-imbalance view)
//   gpu__time_duration far above what 64 MiB of reduction payload needs; dram__throughput ~0 %
//   stalls: lg_throttle (LSU queue full of pending reductions) and/or drain dominate
//   sm__throughput and lts__throughput.avg low (one slice of many is busy)
// Must NOT fire: memory_bound, compute_bound, uncoalesced_global, occupancy_limited, low_parallelism,
//   register_spills, warp_divergence, barrier_stalls, smem_bank_conflicts.
// Seen (nvcc 13.0 -O3 -arch=sm_90a -lineinfo, cuobjdump --dump-resource-usage, SASS):
//   REG:12 STACK:0; REDG.E.ADD.STRONG.GPU (fire-and-forget, 4 per unrolled iteration),
//   no ATOMG and no compiler warp aggregation (no VOTE/MATCH/REDUX).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#include "common.cuh"  // CUDA_CHECK

constexpr int BINS = 8;            // 8 x 4 bytes: one 32-byte sector
constexpr int BLOCK = 256;
constexpr int GRID = 4096;
constexpr int PER_THREAD = 16;     // 4096 x 256 x 16 = 16M updates per launch

__global__ void __launch_bounds__(BLOCK) planted_atomic_contention(unsigned* __restrict__ bins, int per_thread) {
  const unsigned stride = gridDim.x * BLOCK;
  unsigned i = blockIdx.x * BLOCK + threadIdx.x;
  for (int k = 0; k < per_thread; ++k, i += stride) atomicAdd(&bins[i & (BINS - 1)], 1u);
}

int main() {
  CUDA_CHECK(cudaSetDevice(0));
  unsigned* bins;
  CUDA_CHECK(cudaMalloc(&bins, BINS * sizeof(unsigned)));
  CUDA_CHECK(cudaMemset(bins, 0, BINS * sizeof(unsigned)));

  for (int launch = 0; launch < 2; ++launch) {  // 1 warm-up, 1 measured
    planted_atomic_contention<<<GRID, BLOCK>>>(bins, PER_THREAD);
    CUDA_CHECK(cudaGetLastError());
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  unsigned h[BINS];
  CUDA_CHECK(cudaMemcpy(h, bins, sizeof(h), cudaMemcpyDeviceToHost));
  const unsigned long long expect = 2ull * GRID * BLOCK * PER_THREAD / BINS;  // two launches
  unsigned long long total = 0;
  for (int b = 0; b < BINS; ++b) {
    if (h[b] != expect) {
      std::fprintf(stderr, "planted_atomic_contention: bin %d = %u, expected %llu\n", b, h[b], expect);
      return 1;
    }
    total += h[b];
  }
  std::printf("planted_atomic_contention ok %llu\n", total);
  CUDA_CHECK(cudaFree(bins));
  return 0;
}
