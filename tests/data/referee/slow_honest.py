import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Slow (20 ms a call) and says so: the clock liar's honest twin."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        time.sleep(0.02)
        return torch.relu(x) * self.scale
