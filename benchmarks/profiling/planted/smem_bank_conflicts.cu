// planted_smem_bank_conflicts: a 32x32 float tile in shared memory read column-wise without padding: all 32
// lanes of every shared load hit the same bank (32-way conflict, 32 wavefronts per request).
//
// How: a tiled transpose of an 8192x4096 float matrix (128 MiB in, 128 MiB out) with 32x8-thread blocks. Each
// block stores its 32x32 tile row-wise (conflict-free), then every thread reads 32 distinct elements of one tile
// row, tile[lane][c] with c uniform across the warp: addresses lane*32 + c all map to bank c. Each output is an
// 8-element cyclic window sum of a tile row, written transposed and coalesced. The padded twin
// (healthy_smem_padded.cu, tile[32][33]) does the same work conflict-free and is DRAM-bound; this one spends
// ~15x longer in the shared-memory pipe. About 0.7-1.5 ms (vs ~70-90 us padded).
//
// Expected evidence (H200, ncu --set full):
//   l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum ~ 31 x smsp__inst_executed_op_shared_ld.sum
//   l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum / smsp__inst_executed_op_shared_ld.sum ~ 32
//   l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum ~ 0 (stores are row-wise)
//   stalls: mio_throttle / short_scoreboard dominant; dram__throughput < 15 %
//   ncu's shared-memory bank-conflict rule fires with a large estimated speedup
// Must NOT fire: memory_bound, compute_bound, uncoalesced_global (global accesses are 4 sectors/request),
//   occupancy_limited, register_spills, warp_divergence, barrier_stalls (one barrier per tile), low_parallelism.
// Seen (nvcc 13.0 -O3 -arch=sm_90a -lineinfo, cuobjdump --dump-resource-usage, SASS):
//   REG:31 STACK:0, SHARED:5120 (4 KiB tile + 1 KiB reserve); per thread 4 LDG, 4 STS,
//   1 BAR, 32 scalar LDS, 4 STG; no LDL/STL.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "common.cuh"  // CUDA_CHECK

constexpr int H = 8192, W = 4096;  // input rows x columns; the output is W x H
constexpr int TILE = 32, ROWS = 8;
constexpr int PAD = 0;             // the planted fault: no padding column

__global__ void init_data(float* __restrict__ x, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    x[i] = float(i % 1021) * (1.0f / 1024.0f);
}

__global__ void __launch_bounds__(TILE * ROWS)
planted_smem_bank_conflicts(const float* __restrict__ in, float* __restrict__ out) {
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
    for (int j = 0; j < ROWS; ++j) s += tile[tx][(c + j) & (TILE - 1)];  // column-wise: one bank per warp
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
    planted_smem_bank_conflicts<<<grid, block>>>(in, out);
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
      std::fprintf(stderr, "planted_smem_bank_conflicts: out[%zu] = %.7g, expected %.7g\n", q, hout[q], ref);
      return 1;
    }
  }
  for (float v : hout) sum += v;
  std::printf("planted_smem_bank_conflicts ok %.6e\n", sum);
  CUDA_CHECK(cudaFree(in)); CUDA_CHECK(cudaFree(out));
  return 0;
}
