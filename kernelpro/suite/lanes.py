"""The lanes a suite runs problems on at once: one per visible GPU (or ``harness.gpu_devices``), or
``suite.cpu_lanes`` on a machine judged on its CPU.

A GPU lane's children see that GPU alone (``CUDA_VISIBLE_DEVICES``), and judge on it as their GPU 0; their
compiles share the machine's CPUs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from kernelpro.config import Settings


@dataclass(frozen=True)
class Lane:
    name: str
    env: dict[str, str] = field(default_factory=dict)
    gpus: int = 0


def _physical(index: int) -> str:
    # CUDA_VISIBLE_DEVICES is CUDA's, not a kernelpro setting: the driver's GPU i is its i-th entry.
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    return visible[index] if index < len(visible) else str(index)


def gpu_lanes(indices: list[int]) -> list[Lane]:
    return [Lane(name=f"gpu{i}", gpus=1,
                 env={"CUDA_VISIBLE_DEVICES": _physical(i), "KERNELPRO_HARNESS__GPU_DEVICES": "[0]"})
            for i in indices]


def local_lanes(device: str, settings: Settings) -> list[Lane]:
    if device != "cuda":
        return [Lane(name=f"cpu{i}") for i in range(settings.suite.cpu_lanes)]
    import torch

    indices = settings.harness.gpu_devices
    return gpu_lanes(list(range(torch.cuda.device_count())) if indices is None else list(indices))
