"""CUDA sources the compile tests build: working kernels, and broken ones with known mistakes."""

ADD = r"""
extern "C" __global__ void add_kernel(const float* __restrict__ x, const float* __restrict__ y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}
"""

SCALE = r"""
extern "C" __global__ void scale_kernel(const float* x, float* out, float scale, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] * scale;
}
"""

TEMPLATED = r"""
template <typename T, int N>
__global__ void fill(T* out, T value) {
    for (int i = threadIdx.x; i < N; i += blockDim.x) out[i] = value;
}
"""

# 32 x 33 floats + 16 ints: 4288 bytes of static shared memory.
SHARED = r"""
extern "C" __global__ void transpose_tile(const float* in, float* out) {
    __shared__ float tile[32][33];
    __shared__ int flags[16];
    tile[threadIdx.y][threadIdx.x] = in[threadIdx.y * 32 + threadIdx.x];
    if (threadIdx.x < 16) flags[threadIdx.x] = 1;
    __syncthreads();
    out[threadIdx.x * 32 + threadIdx.y] = tile[threadIdx.x][threadIdx.y] * flags[threadIdx.x & 15];
}
"""
SHARED_BYTES = 32 * 33 * 4 + 16 * 4

# 48 live accumulators under a 32-register cap (1024 threads, 2 blocks per SM) spill; the runtime-indexed
# array lives on the stack.
SPILL = r"""
extern "C" __global__ void __launch_bounds__(1024, 2) spill(const float* in, float* out, int k) {
    float acc[48];
    #pragma unroll
    for (int j = 0; j < 48; ++j) acc[j] = in[threadIdx.x + j * 1024];
    #pragma unroll
    for (int r = 0; r < 8; ++r) {
        #pragma unroll
        for (int j = 0; j < 48; ++j) acc[j] = acc[j] * acc[(j + r + 1) % 48] + 1.0f;
    }
    float local[64];
    for (int j = 0; j < 64; ++j) local[j] = in[j * k];
    float s = local[k & 63];
    #pragma unroll
    for (int j = 0; j < 48; ++j) s += acc[j];
    out[threadIdx.x] = s;
}
"""

UNDEFINED = r"""
extern "C" __global__ void add_kernel(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int unused = 3;
    if (i < n) out[i] = x[i] + undefined_thing;
}
"""

TEMPLATE_ERROR = r"""
template <typename T>
struct Acc {
    __device__ static T zero() { return T::zero_value; }
};
template <typename T, int N>
__device__ T reduce(const T* p) {
    T s = Acc<T>::zero();
    for (int i = 0; i < N; ++i) s += p[i];
    return s;
}
extern "C" __global__ void reduce_kernel(const float* x, float* out) {
    out[0] = reduce<float, 4>(x);
}
"""

TOO_MUCH_SHARED = r"""
extern "C" __global__ void big(float* out) {
    __shared__ float tile[65536];
    tile[threadIdx.x] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = tile[threadIdx.x + 1];
}
"""

MISSING_HEADER = r"""
#include <not_a_header.h>
extern "C" __global__ void k(float* out) { out[0] = 1.0f; }
"""

MANY_ERRORS = "\n".join(f'extern "C" __global__ void k{i}(float* out) {{ out[0] = missing_{i}; }}' for i in range(30))

CUTE_COPY = r"""
#include <cute/tensor.hpp>
using namespace cute;
extern "C" __global__ void cute_copy(const float* src, float* dst) {
    auto layout = make_layout(make_shape(Int<32>{}, Int<8>{}));
    Tensor s = make_tensor(make_gmem_ptr(src), layout);
    Tensor d = make_tensor(make_gmem_ptr(dst), layout);
    for (int i = threadIdx.x; i < size(layout); i += blockDim.x) d(i) = s(i);
}
"""

# local_tile with a 1-D tiler and a 3-D coordinate: a static assertion deep inside CuTe.
CUTE_ERROR = r"""
#include <cute/tensor.hpp>
using namespace cute;
extern "C" __global__ void cute_tile(const float* src, float* dst) {
    auto layout = make_layout(make_shape(Int<32>{}, Int<8>{}));
    Tensor s = make_tensor(make_gmem_ptr(src), layout);
    Tensor d = make_tensor(make_gmem_ptr(dst), layout);
    auto t = local_tile(s, make_shape(Int<8>{}), make_coord(0, 0, 0));
    d(0) = t(0);
}
"""
