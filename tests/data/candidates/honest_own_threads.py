import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """One intra-op thread for a call too small to split, the caller's count put back before it returns."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return torch.relu(x) * self.scale
        finally:
            torch.set_num_threads(threads)
