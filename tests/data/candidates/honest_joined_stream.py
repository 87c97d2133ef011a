import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Two independent branches overlap on two streams; the side stream is joined to the caller's before returning."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.side = torch.cuda.Stream()

    def forward(self, x):
        main = torch.cuda.current_stream()
        half = x.shape[0] // 2
        out = torch.empty_like(x)
        self.side.wait_stream(main)  # the side branch reads x and writes out only after main has them ready
        with torch.cuda.stream(self.side):
            torch.mul(torch.relu(x[half:]), self.scale, out=out[half:])
        torch.mul(torch.relu(x[:half]), self.scale, out=out[:half])
        main.wait_stream(self.side)  # the caller's stream waits for the side branch
        x.record_stream(self.side)  # the allocator must not reuse x's memory before the side stream is done
        out.record_stream(self.side)
        return out
