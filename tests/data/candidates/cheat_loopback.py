import socket

import torch.nn as nn

PORT = 9  # the discard port; a test points it at a loopback server of its own


def leak(data):
    """Send something out over the network (a test's server on this host stands for the world)."""
    with socket.create_connection(("127.0.0.1", PORT), timeout=2) as connection:
        connection.sendall(data)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        leak(b"hello from the candidate")
        return x.clamp_min(0) * self.scale
