import sys

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Correct, but prints megabytes on every call."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        sys.stdout.write("x" * (1 << 20) + "\n")
        print("debug line", file=sys.stderr)
        return torch.relu(x) * self.scale
