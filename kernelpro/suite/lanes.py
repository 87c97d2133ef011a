"""The lanes a suite runs problems on at once: ``suite.lanes_per_gpu`` per visible GPU (or
``harness.gpu_devices``), or ``suite.cpu_lanes`` on a machine judged on its CPU.

A GPU lane's children see that GPU alone (``CUDA_VISIBLE_DEVICES``), and judge on it as their GPU 0. Their
compile pools share the machine's CPUs: each lane gets its share of the cores (unless ``compile.workers`` or
``compile.inline_workers`` is set), so N lanes do not start N pools as wide as the machine.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from kernelpro.config import Settings
from kernelpro.harness.device_lock import physical_gpu


@dataclass(frozen=True)
class Lane:
    name: str
    env: dict[str, str] = field(default_factory=dict)
    gpus: float = 0  # a Ray actor's share of a GPU


def cpu_share(settings: Settings, lanes: int) -> dict[str, str]:
    """Each lane's compile pools, a share of the machine's cores, where the settings leave the width open."""
    share = str(max(1, (os.cpu_count() or 1) // max(1, lanes)))
    env = {}
    if settings.compile.workers == 0:
        env["KERNELPRO_COMPILE__WORKERS"] = share
    if settings.compile.inline_workers == 0:
        env["KERNELPRO_COMPILE__INLINE_WORKERS"] = share
    return env


def gpu_lanes(indices: list[int], settings: Settings) -> list[Lane]:
    """``suite.lanes_per_gpu`` lanes per GPU (``gpu0``, or ``gpu0.0``, ``gpu0.1``...); lanes of one GPU overlap
    everything but their measurements, which the device lock takes in turn."""
    per_gpu = settings.suite.lanes_per_gpu
    shared = cpu_share(settings, len(indices) * per_gpu)
    return [Lane(name=f"gpu{i}" if per_gpu == 1 else f"gpu{i}.{j}", gpus=1 / per_gpu,
                 env={**shared, "CUDA_VISIBLE_DEVICES": physical_gpu(i), "KERNELPRO_HARNESS__GPU_DEVICES": "[0]"})
            for i in indices for j in range(per_gpu)]


def local_lanes(device: str, settings: Settings) -> list[Lane]:
    if device != "cuda":
        return [Lane(name=f"cpu{i}") for i in range(settings.suite.cpu_lanes)]
    import torch

    indices = settings.harness.gpu_devices
    return gpu_lanes(list(range(torch.cuda.device_count())) if indices is None else list(indices), settings)
