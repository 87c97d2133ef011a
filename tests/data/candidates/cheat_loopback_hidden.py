import torch
import torch.nn as nn

PORT = 9  # the discard port; a test points it at a loopback server of its own


class ModelNew(nn.Module):
    """Reaches the network without importing any network module: torch.hub holds urllib's urlopen."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        torch.hub.urlopen(f"http://127.0.0.1:{PORT}/candidate-says-hello", timeout=2).read()
        return x.clamp_min(0) * self.scale
