import torch.nn as nn

import fast_kernels_that_do_not_exist  # noqa: F401


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
