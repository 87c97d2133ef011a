import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
import torch.nn as nn
from cutlass.cute.runtime import from_dlpack


@cute.kernel
def scale_relu_kernel(gX: cute.Tensor, gY: cute.Tensor, scale: cutlass.Float32, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()
    i = bidx * bdim + tidx
    if i < n:
        gY[i] = cute.arch.fmax(gX[i], cutlass.Float32(0.0)) * scale


@cute.jit
def scale_relu(mX: cute.Tensor, mY: cute.Tensor, scale: cutlass.Float32, n: cutlass.Int32, stream: cuda.CUstream):
    threads = 256
    scale_relu_kernel(mX, mY, scale, n).launch(grid=(cute.ceil_div(n, threads), 1, 1), block=(threads, 1, 1),
                                               stream=stream)


class ModelNew(nn.Module):
    """ReLU and scale fused in one CuTe DSL kernel, compiled once on first use, launched on torch's stream."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.compiled = None

    def forward(self, x):
        flat = x.contiguous().view(-1)
        out = torch.empty_like(flat)
        mx = from_dlpack(flat, assumed_align=16).mark_layout_dynamic()
        my = from_dlpack(out, assumed_align=16).mark_layout_dynamic()
        stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
        n = cutlass.Int32(flat.numel())
        if self.compiled is None:
            self.compiled = cute.compile(scale_relu, mx, my, cutlass.Float32(self.scale), n, stream)
        self.compiled(mx, my, cutlass.Float32(self.scale), n, stream)
        return out.view(x.shape)
