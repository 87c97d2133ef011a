import torch.nn as nn


class FasterModel(nn.Module):
    def forward(self, x):
        return x
