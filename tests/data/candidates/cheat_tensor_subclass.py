import torch
import torch.nn as nn


class LazyResult(torch.Tensor):
    """A tensor subclass: the kind of object that can defer work until it is inspected."""


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return (torch.relu(x) * self.scale).as_subclass(LazyResult)
