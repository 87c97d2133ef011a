import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Draws its own dropout mask (a uniform draw compared with p) instead of the reference's: the masks differ."""

    def __init__(self, features, p):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.p = p

    def forward(self, x):
        y = self.linear(x)
        keep = (torch.rand_like(y) >= self.p).to(y.dtype) / (1.0 - self.p)
        return torch.softmax(y * keep * 4.0, dim=1)
