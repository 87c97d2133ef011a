import torch
import torch.nn as nn


class ResidualBlock(nn.Module):
    """x + W2 relu(W1 norm(x)), scaled by a learned gain."""

    def __init__(self, width, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, hidden)
        self.down = nn.Linear(hidden, width)
        self.gain = nn.Parameter(torch.ones(width))

    def forward(self, x):
        return x + self.down(torch.relu(self.up(self.norm(x)))) * self.gain


class Model(nn.Module):
    """A small residual MLP: an input projection, residual blocks, a head."""

    def __init__(self, features=32, width=64, hidden=256, depth=2, classes=10):
        super().__init__()
        self.embed = nn.Linear(features, width)
        self.blocks = nn.ModuleList([ResidualBlock(width, hidden) for _ in range(depth)])
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return self.head(torch.tanh(x))


def get_inputs():
    return [torch.randn(64, 32)]


def get_init_inputs():
    return [32, 64, 256, 2, 10]
