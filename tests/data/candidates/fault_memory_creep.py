import torch.nn as nn


class ModelNew(nn.Module):
    """Grows resident memory slowly, in small touched blocks."""

    def __init__(self, scale):
        super().__init__()

    def forward(self, x):
        hoard = []
        while True:
            hoard.append(bytearray(16 << 20))
