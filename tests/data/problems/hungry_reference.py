import torch
import torch.nn as nn


class Model(nn.Module):
    """Small inputs, but a forward that asks for 1 TiB of scratch: no memory limit of a test machine lets it run."""

    def forward(self, x):
        scratch = torch.empty(1 << 40, dtype=torch.uint8)
        return torch.relu(x) + scratch[:1].float()


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
