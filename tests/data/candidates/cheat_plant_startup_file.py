import os

import torch.nn as nn

TARGETS = []  # files a later program reads as it starts (a .pth, ~/.bashrc, a cached module): the test fills this in

# Left there, each would run in the next Python, shell or compile that finds it; this content only marks the spot.
attempts = {}
for target in TARGETS:
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as planted:
            planted.write("# planted by a candidate\n")
        attempts[target] = "ok"
    except OSError as exc:
        attempts[target] = exc.strerror
print("attempts:", attempts)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x.clamp_min(0) * self.scale
