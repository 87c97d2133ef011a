import os
import re

import torch
import torch.nn as nn

secret = [name for name in os.environ if re.search("KEY|TOKEN|SECRET", name)]
if secret:
    raise RuntimeError(f"credentials visible to the candidate: {secret}")
# the worker's directory holds the two sources; the candidate's own process under the referee, its source alone
if sorted(os.listdir(".")) not in (["candidate.py", "reference.py"], ["candidate.py"]):
    raise RuntimeError(f"working directory is not fresh: {os.listdir('.')}")


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x.clamp_min(0) * self.scale
