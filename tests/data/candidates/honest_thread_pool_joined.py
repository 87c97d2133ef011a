from concurrent.futures import ThreadPoolExecutor

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Two halves of the rows on two threads, the pool shut down (its threads joined) before forward returns."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        out = torch.empty_like(x)
        half = x.shape[0] // 2

        def rows(part):
            torch.mul(torch.relu(x[part]), self.scale, out=out[part])

        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(rows, [slice(0, half), slice(half, None)]))
        return out
