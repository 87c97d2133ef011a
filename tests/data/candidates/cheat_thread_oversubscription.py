import torch
import torch.nn as nn

# At import: far more threads than cores, which the reference's calls then fight over.
torch.set_num_threads(64)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        torch.set_num_threads(1)  # its own call runs on one thread, and leaves the reference 64 again
        try:
            return torch.relu(x) * self.scale
        finally:
            torch.set_num_threads(64)
