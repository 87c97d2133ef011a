// planted_healthy_smem_padded: control for smem_bank_conflicts: the same tiled transpose and the same column-wise
// shared-memory reads, with the tile padded to 32x33 so lane k of a column read hits bank (k + c) % 32: no conflicts.
//
// How: identical to smem_bank_conflicts.cu except PAD = 1 (and the kernel name). 8192x4096 floats, 128 MiB in and
// 128 MiB out, 32x8-thread blocks, one barrier per tile, 32 conflict-free shared loads per thread. With the
// shared-memory pipe no longer the limit the kernel streams at DRAM speed: about 70-90 us.
//
// Expected evidence (H200, ncu --set full):
//   l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum ~ 0 (wavefronts per shared load ~1)
//   dram__throughput.avg.pct_of_peak_sustained_elapsed 60-90 % (memory_bound is its correct, healthy state)
//   global loads and stores at 4 sectors per request; theoretical occupancy 100 %
// Must NOT fire: smem_bank_conflicts, uncoalesced_global, compute_bound, occupancy_limited, register_spills,
//   warp_divergence, barrier_stalls, low_parallelism, launch_overhead. memory_bound is expected (near roofline).
// Seen (nvcc 13.0 -O3 -arch=sm_90a -lineinfo, cuobjdump --dump-resource-usage, SASS):
//   REG:31 STACK:0, SHARED:5248 (4224-byte padded tile + 1 KiB reserve); the same
//   4 LDG, 4 STS, 1 BAR, 32 LDS, 4 STG as smem_bank_conflicts.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "common.cuh"  // CUDA_CHECK

constexpr int H = 8192, W = 4096;  // input rows x columns; the output is W x H
constexpr int TILE = 32, ROWS = 8;
constexpr int PAD = 1;             // one padding column: row stride 33 words

__global__ void init_data(float* __restrict__ x, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    x[i] = float(i % 1021) * (1.0f / 1024.0f);
}

__global__ void __launch_bounds__(TILE * ROWS)
planted_healthy_smem_padded(const float* __restrict__ in, float* __restrict__ out) {
  __shared__ float tile[TILE][TILE + PAD];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE;
#pragma unroll
  for (int k = 0; k < TILE; k += ROWS) tile[ty + k][tx] = in[size_t(r0 + ty + k) * W + c0 + tx];  // row-wise
  __syncthreads();
#pragma unroll
  for (int k = 0; k < TILE; k += ROWS) {
    const int c = ty + k;
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < ROWS; ++j) s += tile[tx][(c + j) & (TILE - 1)];  // column-wise: bank (lane + c) % 32, all distinct
    out[size_t(c0 + c) * H + r0 + tx] = s;
  }
}

int main() {
  CUDA_CHECK(cudaSetDevice(0));
  const size_t n = size_t(H) * W;
  float *in, *out;
  CUDA_CHECK(cudaMalloc(&in, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&out, n * sizeof(float)));
  init_data<<<4096, 256>>>(in, n);
  CUDA_CHECK(cudaGetLastError());

  const dim3 grid(W / TILE, H / TILE), block(TILE, ROWS);
  for (int launch = 0; launch < 2; ++launch) {  // 1 warm-up, 1 measured
    planted_healthy_smem_padded<<<grid, block>>>(in, out);
    CUDA_CHECK(cudaGetLastError());
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> hin(n), hout(n);
  CUDA_CHECK(cudaMemcpy(hin.data(), in, n * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hout.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
  double sum = 0.0;
  for (size_t q = 0; q < n; q += 997) {  // out[col][row] = sum_j in[row][tile_base(col) + (col + j) % 32]
    const size_t col = q / H, row = q % H, base = col & ~size_t(TILE - 1);
    float ref = 0.f;
    for (int j = 0; j < ROWS; ++j) ref += hin[row * W + base + ((col + j) & (TILE - 1))];
    if (hout[q] != ref) {
      std::fprintf(stderr, "planted_healthy_smem_padded: out[%zu] = %.7g, expected %.7g\n", q, hout[q], ref);
      return 1;
    }
  }
  for (float v : hout) sum += v;
  std::printf("planted_healthy_smem_padded ok %.6e\n", sum);
  CUDA_CHECK(cudaFree(in)); CUDA_CHECK(cudaFree(out));
  return 0;
}
