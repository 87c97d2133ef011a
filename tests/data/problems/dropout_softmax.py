import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer, dropout in training mode, then a softmax: the output depends on random draws."""

    def __init__(self, features, p):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        return torch.softmax(self.dropout(self.linear(x)) * 4.0, dim=1)


def get_inputs():
    return [torch.randn(32, 64)]


def get_init_inputs():
    return [64, 0.3]
