// planted_launch_overhead: each launch does ~nothing, so fixed launch and ramp costs are the whole runtime.
//
// How: 2000 back-to-back launches of a trivial elementwise update on 32K floats (128 KiB, L2-resident),
// 256 blocks of 128 threads (at least one block per SM, so the grid itself is not undersized). Each kernel
// lasts a few microseconds, comparable to the launch latency; 2000 launches take a few ms of host time.
// Profile a handful of them (capture_planted.sh: --launch-skip 10 --launch-count 5).
//
// Expected evidence per profiled launch (H200, ncu --set full):
//   gpu__time_duration.sum                              < 5 us (expect ~2-4 us)
//   sm__throughput / dram__throughput / gpu__compute_memory_throughput (pct_of_peak_sustained_elapsed) < 10 %
//   launch__grid_size 256 (>= SM count), launch__block_size 128, dram bytes ~ 0 (L2 hits after the first launch)
//   sm__cycles_active.avg small (a few thousand cycles)
// Must NOT fire: low_parallelism (every SM gets blocks), memory_bound, compute_bound, memory_latency_bound
//   (stalls are ramp-up, not the point), occupancy_limited (theoretical 100 %), and every resource-specific id.
// Seen (nvcc 13.0 -O3 -arch=sm_90a -lineinfo, cuobjdump --dump-resource-usage, SASS):
//   REG:8 STACK:0; 1 LDG.E + 1 STG.E per thread.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "common.cuh"  // CUDA_CHECK

constexpr int N = 32768;
constexpr int BLOCK = 128;
constexpr int LAUNCHES = 2000;

__global__ void init_data(float* __restrict__ x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] = float(i & 1023);
}

__global__ void __launch_bounds__(BLOCK) planted_launch_overhead(float* __restrict__ x, int n) {
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) x[i] = fmaf(x[i], 0.5f, 1.0f);  // contracts towards 2
}

int main() {
  CUDA_CHECK(cudaSetDevice(0));
  float* x;
  CUDA_CHECK(cudaMalloc(&x, N * sizeof(float)));
  init_data<<<64, 256>>>(x, N);
  CUDA_CHECK(cudaGetLastError());

  const int grid = (N + BLOCK - 1) / BLOCK;
  for (int launch = 0; launch < LAUNCHES; ++launch) {
    planted_launch_overhead<<<grid, BLOCK>>>(x, N);
    CUDA_CHECK(cudaGetLastError());
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> h(N);
  CUDA_CHECK(cudaMemcpy(h.data(), x, N * sizeof(float), cudaMemcpyDeviceToHost));
  double sum = 0.0;
  for (float v : h) sum += v;
  if (sum != 2.0 * N) {  // after 2000 halvings every element has converged to exactly 2
    std::fprintf(stderr, "planted_launch_overhead: sum %.9g, expected %d\n", sum, 2 * N);
    return 1;
  }
  std::printf("planted_launch_overhead ok %.6e\n", sum);
  CUDA_CHECK(cudaFree(x));
  return 0;
}
