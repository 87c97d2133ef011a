import torch
import torch.nn as nn

from kernelpro.runtime import CudaKernel

SOURCE = r"""
extern "C" __global__ void scale_relu(const float* x, float* y, float scale, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f) * scal;
}
"""


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.kernel = CudaKernel(SOURCE, "scale_relu")

    def forward(self, x):
        out = torch.empty_like(x)
        self.kernel(grid=((x.numel() + 255) // 256,), block=(256,), args=(x, out, self.scale, x.numel()))
        return out
