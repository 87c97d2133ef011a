import torch
import torch.nn as nn

from kernelpro.runtime import CudaKernel

# A person's first CUDA version of ReLU-and-scale: correct, but launched on 4 blocks, so 4 of the GPU's SMs do
# all the work in a grid-stride loop while the rest sit idle.
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
        self.kernel(grid=(4,), block=(256,), args=(x, out, self.scale, x.numel()))
        return out
