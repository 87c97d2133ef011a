// nvcc-flags: -maxrregcount=32
// planted_register_spills: a register cap of 32 forces a 48-value working set into local memory, so the hot
// loop is dominated by spill loads and stores.
//
// How: each thread updates 48 accumulators in a fully unrolled loop (acc[j] += w * acc[j+1], indices known at
// compile time, so without the cap all 48 would live in registers), with every value live across the loop's
// back edge. Compiled with -maxrregcount=32 (and no __launch_bounds__, which would override it), ptxas spills
// 40 of the 48 values (160-byte frame): every iteration re-loads (LDL) and re-stores (STL) 38 of them.
// One full wave (SMs x 8 x 256 threads; 32 registers allow 64 warps/SM); the carveout prefers L1, but 160 B x
// 2048 threads = 320 KiB per SM exceeds it, so part of the spill traffic goes on to L2 (43 MB GPU-wide fits the
// 60 MiB L2). The result is compared with a host reference for a few threads. About 1-4 ms.
//
// Expected evidence (H200, ncu --set full):
//   l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum and ..._op_st.sum >> global sectors (global is ~8 B/thread)
//   smsp__inst_executed_op_local_ld.sum / _st.sum: 38 per warp per iteration each (~330M in total)
//   launch__registers_per_thread 32; theoretical occupancy 100 %; l1tex local hit rate partial (L2 behind it)
//   stalls: lg_throttle / long_scoreboard (waiting on LDL) dominant
//   dram__throughput < 20 % (spills mostly stay on chip); sm__pipe_fma_cycles_active well below compute_bound's
// Must NOT fire: memory_bound (DRAM idle), compute_bound, occupancy_limited, uncoalesced_global (local accesses
//   are per-thread interleaved: 4 sectors per request), low_parallelism, warp_divergence, launch_overhead.
// Seen (nvcc 13.0 -O3 -arch=sm_90a -lineinfo, cuobjdump --dump-resource-usage, SASS):
//   REG:32 STACK:160, ptxas -v: 324 bytes spill stores, 324 bytes spill loads. Hot loop
//   128 instructions per iteration: 48 FFMA, 38 LDL.LU, 38 STL. (ptxas also prints a misleading 'Too big
//   maxrregcount value specified 32, will be ignored' warning, yet applies the cap: 'Overriding ... with 32'.)
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

#include "common.cuh"  // CUDA_CHECK

constexpr int BLOCK = 256;
constexpr int BLOCKS_PER_SM = 8;
constexpr int NACC = 48;
constexpr int ITERS = 1024;
constexpr float W = 1.0f / 1024.0f;  // growth per iteration <= (1 + 1/1024): the values stay finite

__global__ void init_data(float* __restrict__ x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] = 0.5f + float(i & 1023) / 1024.0f;
}

__global__ void planted_register_spills(const float* __restrict__ seed, float* __restrict__ out, int iters) {
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  const float s = seed[i];
  float acc[NACC];
#pragma unroll
  for (int j = 0; j < NACC; ++j) acc[j] = s * float(j + 1);
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int j = 0; j < NACC; ++j) acc[j] = fmaf(acc[(j + 1) % NACC], W, acc[j]);  // all 48 stay live
  }
  float sum = 0.f;
#pragma unroll
  for (int j = 0; j < NACC; ++j) sum += acc[j];
  out[i] = sum;
}

static float reference(float s, int iters) {  // the same arithmetic on the host, in the same order
  float acc[NACC];
  for (int j = 0; j < NACC; ++j) acc[j] = s * float(j + 1);
  for (int it = 0; it < iters; ++it)
    for (int j = 0; j < NACC; ++j) acc[j] = std::fmaf(acc[(j + 1) % NACC], W, acc[j]);
  float sum = 0.f;
  for (int j = 0; j < NACC; ++j) sum += acc[j];
  return sum;
}

int main() {
  CUDA_CHECK(cudaSetDevice(0));
  CUDA_CHECK(cudaFuncSetAttribute(planted_register_spills, cudaFuncAttributePreferredSharedMemoryCarveout, 0));  // max L1
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int grid = sms * BLOCKS_PER_SM, n = grid * BLOCK;
  float *seed, *out;
  CUDA_CHECK(cudaMalloc(&seed, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&out, n * sizeof(float)));
  init_data<<<256, 256>>>(seed, n);
  CUDA_CHECK(cudaGetLastError());

  for (int launch = 0; launch < 2; ++launch) {  // 1 warm-up, 1 measured
    planted_register_spills<<<grid, BLOCK>>>(seed, out, ITERS);
    CUDA_CHECK(cudaGetLastError());
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> h(n);
  CUDA_CHECK(cudaMemcpy(h.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i : {0, 1, 777, n - 1}) {
    const float ref = reference(0.5f + float(i & 1023) / 1024.0f, ITERS);
    if (std::fabs(h[i] - ref) > 1e-4f * std::fabs(ref)) {
      std::fprintf(stderr, "planted_register_spills: out[%d] = %.7g, expected %.7g\n", i, h[i], ref);
      return 1;
    }
  }
  double sum = 0.0;
  for (float v : h) sum += v;
  std::printf("planted_register_spills ok %.6e\n", sum);
  CUDA_CHECK(cudaFree(seed)); CUDA_CHECK(cudaFree(out));
  return 0;
}
