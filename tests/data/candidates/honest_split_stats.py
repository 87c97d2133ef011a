import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        total = x.sum(dim=1)
        return total / x.shape[1], x.max(dim=1).values
