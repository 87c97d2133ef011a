import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_relu_kernel(x_ptr, out_ptr, scale, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0) * scale, mask=mask)


class ModelNew(nn.Module):
    """ReLU and scale fused into one Triton kernel: one read and one write per element."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        scale_relu_kernel[(triton.cdiv(n, 1024),)](x, out, self.scale, n, BLOCK=1024)
        return out
