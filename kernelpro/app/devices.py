"""The name a run or a chat gives its device, for prompts, memory records and reports."""

from __future__ import annotations

import platform


def device_name(device: str) -> str:
    """The GPU's name on ``cuda``; the CPU's architecture otherwise."""
    if device == "cuda":
        import torch

        return torch.cuda.get_device_name(0)
    return f"CPU ({platform.machine()})"
