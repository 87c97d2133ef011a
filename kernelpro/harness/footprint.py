"""Whether a problem fits the worker's host memory at all (``harness.memory_limit_mb``), and the verdict when not.

The inputs' size is read from ``get_inputs()`` drawn on PyTorch's meta device: shapes and dtypes, no memory. A
correctness check holds the drawn set, the candidate's copy and the reference's at once, beside both outputs, so
a problem whose inputs alone take more than the limit over that many copies cannot be judged here, whatever the
candidate. A reference that runs out of memory on its own is the same: no candidate can be judged against it.
Either is the machine's limit, not a candidate's failure, and says so with the numbers and what to do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

PROBLEM_TOO_BIG = "problem_too_big"
"""The verdict's reason: the problem cannot be judged within this worker's memory (the run ends as unusable here)."""
HELD_COPIES = 3
"""The copies of the inputs a correctness check holds at once: the drawn set, the candidate's, the reference's."""
GIB = float(1 << 30)


def input_bytes(get_inputs: Callable[[], Any]) -> int | None:
    """The bytes of the tensors ``get_inputs()`` makes, from their shapes and dtypes alone (drawn on the meta
    device, so nothing is allocated); None when it cannot be drawn there (numpy, a device of its own)."""
    import torch  # the worker's: the judge's side reads this module's messages without importing torch
    from torch.utils._pytree import tree_leaves

    try:
        with torch.device("meta"):
            leaves = tree_leaves(list(get_inputs()))
    except Exception:  # noqa: BLE001 - any failure here only means "not known before drawing"
        return None
    tensors = [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]
    if any(t.device.type != "meta" for t in tensors):
        return None
    return sum(t.numel() * t.element_size() for t in tensors)


def _size(count: int) -> str:
    if count >= GIB / 10:
        return f"{count / GIB:.2f} GiB"
    return f"{count / (1 << 20):.1f} MiB" if count >= 1 << 20 else f"{count / 1024:.0f} KiB"


def what_to_do(limit_mb: int) -> str:
    return (f"raise harness.memory_limit_mb (now {limit_mb}, {limit_mb / 1024:.1f} GiB; KERNELPRO_HARNESS__"
            "MEMORY_LIMIT_MB or [harness] memory_limit_mb in kernelpro.toml) on a machine with the memory, or make "
            "get_inputs() smaller")


def inputs_over_limit(inputs: int | None, limit_mb: int, outputs: int = 0) -> str | None:
    """Why a problem whose inputs take ``inputs`` bytes (and the reference's own outputs ``outputs``, once known)
    cannot be judged within ``limit_mb``, or None."""
    if inputs is None:
        return None
    held = inputs * HELD_COPIES + outputs * 2  # the candidate's outputs and the reference's
    if held <= limit_mb * float(1 << 20):
        return None
    also = f" and its outputs {_size(outputs)}" if outputs else ""
    twice = " and the outputs twice" if outputs else ""
    return (f"get_inputs() makes {_size(inputs)} of inputs{also}, and checking a candidate holds the inputs "
            f"{HELD_COPIES} times{twice} at once ({_size(held)}), over the worker's host memory limit: "
            f"{what_to_do(limit_mb)}")


def reference_out_of_memory(what: str, inputs: int | None, limit_mb: int) -> str:
    """The message when the reference itself ran out of memory within ``limit_mb`` (``what``: where)."""
    size = f" (its inputs take {_size(inputs)})" if inputs is not None else ""
    return f"the reference ran out of host memory {what}{size} within the worker's limit: {what_to_do(limit_mb)}"
