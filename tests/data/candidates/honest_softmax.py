import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Softmax by hand in float32, stable: subtract the row max."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        shifted = x - x.amax(dim=-1, keepdim=True)
        e = shifted.exp()
        return e / e.sum(dim=-1, keepdim=True)
