"""Where the judge's input values come from: a seed drawn from the operating system when a round or a
correctness set begins, and the random generators reseeded from it again once the inputs are drawn.

So nothing a candidate can read before a round (the generators' state, an earlier round's seed, the job) tells
what that round's inputs will be: a candidate cannot compute future rounds' outputs while it is warmed up.
Each set's seed is still named in messages, so a failure can be reproduced.
"""

from __future__ import annotations

import random
import secrets
from typing import Any

import torch


def fresh_seed() -> int:
    """A seed for one input set or timed round, from the OS's secure generator."""
    return secrets.randbits(62)


def reseed_from_os() -> None:
    """Put torch's generators (the CPU's and every initialised GPU's) and Python's in a state drawn from the OS,
    which says nothing about any seed the judge uses next. Generator by generator: ``torch.manual_seed`` queues a
    seed for CUDA with the caller's stack where CUDA is not initialised, 0.4 ms a call on a CPU."""
    torch.default_generator.manual_seed(secrets.randbits(62))
    if torch.cuda.is_initialized():
        for generator in torch.cuda.default_generators:
            generator.manual_seed(secrets.randbits(62))
    random.seed(secrets.randbits(62))


def placed(inputs: list[Any], device: torch.device, scale: float | None = None, shift: float | None = None
           ) -> list[Any]:
    """``inputs`` on ``device``, their floating-point tensors times ``scale`` and plus ``shift`` (None: as drawn);
    other values as they are."""
    moved = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
    if scale:
        moved = [x * scale if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in moved]
    if shift:
        moved = [x + shift if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in moved]
    return moved
