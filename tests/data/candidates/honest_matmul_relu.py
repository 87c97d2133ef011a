import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The same computation written as addmm and clamp: fewer intermediate tensors."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.addmm(self.linear.bias, x, self.linear.weight.t()).clamp_min_(0.0)
