// Shared by every planted program: stop at the first failing CUDA call, naming it and where it was.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                                         \
  do {                                                                                           \
    cudaError_t err_ = (call);                                                                   \
    if (err_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

#include <cmath>
#include <vector>

// Copy n floats back, print "<name> ok <sum>" (the line capture_planted.sh looks for); 1 if the sum is not finite.
inline int report_float_checksum(const char* name, const float* device, size_t n) {
  std::vector<float> h(n);
  CUDA_CHECK(cudaMemcpy(h.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost));
  double sum = 0.0;
  for (float v : h) sum += v;
  if (!std::isfinite(sum)) { std::fprintf(stderr, "%s: non-finite result\n", name); return 1; }
  std::printf("%s ok %.6e\n", name, sum);
  return 0;
}
