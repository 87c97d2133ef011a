import torch
import torch.nn as nn

from kernelpro.runtime import CudaKernel

# The same kernel launched on enough blocks to cover every element once: every SM streams its share.
SOURCE = r"""
extern "C" __global__ void scale_relu(const float* __restrict__ x, float* __restrict__ y, float scale, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = fmaxf(x[i], 0.0f) * scale;
}
"""


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.kernel = CudaKernel(SOURCE, "scale_relu")

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        self.kernel(grid=((n + 255) // 256,), block=(256,), args=(x, out, self.scale, n))
        return out
