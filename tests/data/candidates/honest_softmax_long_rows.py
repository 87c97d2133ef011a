import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Softmax in float32 by hand, summed in another order than torch's (blocks of 256, then the blocks' sums)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        e = (x - x.amax(dim=1, keepdim=True)).exp()
        total = e.reshape(x.shape[0], -1, 256).sum(dim=2).sum(dim=1, keepdim=True)
        return e / total
