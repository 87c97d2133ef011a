import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The group norm by hand in float32 (its own order of sums, so its rounding differs), then the mean."""

    def __init__(self, channels, groups):
        super().__init__()
        self.groups = groups
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        n, c = x.shape[:2]
        grouped = x.reshape(n, self.groups, -1)
        mean = grouped.mean(dim=2, keepdim=True)
        var = grouped.var(dim=2, unbiased=False, keepdim=True)
        normed = ((grouped - mean) / torch.sqrt(var + 1e-5)).reshape(x.shape)
        out = normed * self.weight.view(1, c, 1, 1) + self.bias.view(1, c, 1, 1)
        return out.mean(dim=[1, 2, 3])
