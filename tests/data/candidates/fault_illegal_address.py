import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bad_store_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    tl.store(out_ptr + offsets + (1 << 40), x)  # far outside any allocation: an illegal address


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        bad_store_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
