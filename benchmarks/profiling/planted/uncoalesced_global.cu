// planted_uncoalesced_global: a stride-32 float gather: each warp load touches 32 different 128-byte lines,
// 32 sectors per request instead of 4, and uses 4 of every 32 bytes moved.
//
// How: out[i] = 2*in[32*i] + 1 for 8M outputs, reading one float out of every 128 bytes of a 1 GiB input
// (~17x the L2, so the waste reaches DRAM). Stores are coalesced; only the loads are strided. Full occupancy,
// so the memory system is busy, but mostly with sectors nobody uses. About 0.1-0.3 ms.
//
// Expected evidence (H200, ncu --set full):
//   l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum / l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum = 32 (ideal 4)
//   ncu's uncoalesced-global-access rule: ~87 % excessive sectors; memory_l2_theoretical_sectors_global_excessive
//   dram__bytes_read.sum ~ 8-16x the 32 MiB actually used (256-512 MiB)
//   dram__throughput.avg.pct_of_peak_sustained_elapsed is likely high (40-90 %): a symptom here, since
//   useful bandwidth is ~1/8 of it; sm__throughput < 30 %
// Must NOT fire: compute_bound, memory_latency_bound, occupancy_limited, low_parallelism, register_spills,
//   smem_bank_conflicts, warp_divergence, atomic_contention. memory_bound may also show; the cause to report
//   is the access pattern.
// Seen (nvcc 13.0 -O3 -arch=sm_90a -lineinfo, cuobjdump --dump-resource-usage, SASS):
//   REG:12 STACK:0; 1 scalar LDG.E.CONSTANT (strided) + 1 STG.E per thread.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "common.cuh"  // CUDA_CHECK

constexpr int STRIDE = 32;                     // floats: 128 bytes, one cache line per lane
constexpr size_t NOUT = size_t(8) << 20;       // 8M outputs (32 MiB)
constexpr size_t NIN = NOUT * STRIDE;          // 256M floats (1 GiB)
constexpr int BLOCK = 256;

__global__ void init_data(float* __restrict__ x, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    x[i] = float(i & 4095) * (1.0f / 4096.0f);
}

__global__ void __launch_bounds__(BLOCK)
planted_uncoalesced_global(const float* __restrict__ in, float* __restrict__ out, size_t n) {
  const size_t i = blockIdx.x * size_t(BLOCK) + threadIdx.x;
  if (i < n) out[i] = fmaf(in[i * STRIDE], 2.0f, 1.0f);  // lane k reads line k: 32 sectors per request
}

int main() {
  CUDA_CHECK(cudaSetDevice(0));
  float *in, *out;
  CUDA_CHECK(cudaMalloc(&in, NIN * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&out, NOUT * sizeof(float)));
  init_data<<<8192, 256>>>(in, NIN);
  CUDA_CHECK(cudaGetLastError());

  const unsigned grid = unsigned((NOUT + BLOCK - 1) / BLOCK);
  for (int launch = 0; launch < 2; ++launch) {  // 1 warm-up, 1 measured
    planted_uncoalesced_global<<<grid, BLOCK>>>(in, out, NOUT);
    CUDA_CHECK(cudaGetLastError());
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> h(NOUT);
  CUDA_CHECK(cudaMemcpy(h.data(), out, NOUT * sizeof(float), cudaMemcpyDeviceToHost));
  double sum = 0.0;
  for (size_t i = 0; i < NOUT; ++i) {
    const float expect = float((i * STRIDE) & 4095) * (1.0f / 4096.0f) * 2.0f + 1.0f;
    if (h[i] != expect) {
      std::fprintf(stderr, "planted_uncoalesced_global: out[%zu] = %.7g, expected %.7g\n", i, h[i], expect);
      return 1;
    }
    sum += h[i];
  }
  std::printf("planted_uncoalesced_global ok %.6e\n", sum);
  CUDA_CHECK(cudaFree(in)); CUDA_CHECK(cudaFree(out));
  return 0;
}
