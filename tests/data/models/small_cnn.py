import torch
import torch.nn as nn


def build():
    """A small CNN: two conv stages and a classifier."""
    return nn.Sequential(
        nn.Sequential(nn.Conv2d(3, 16, kernel_size=3, padding=1), nn.BatchNorm2d(16), nn.ReLU()),
        nn.Sequential(nn.Conv2d(16, 32, kernel_size=3, padding=1, stride=2), nn.BatchNorm2d(32), nn.ReLU()),
        nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10)),
    ).eval()


def example_inputs():
    return [torch.randn(4, 3, 32, 32)]
