"""Checks on what a candidate returns across calls: the same storage handed back twice (``output_reused``).

A caller that keeps one call's output and makes another call must still hold the first result. A CUDA-graph
candidate that returns its static output buffer breaks that: the replay overwrites the earlier output. Only
storages still alive count: one the judge freed may be handed out again by the allocator, legitimately.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch

from kernelpro.harness.guards.compare import flatten
from kernelpro.harness.result import GuardFinding


def _storages(output: Any) -> list[tuple[str, torch.UntypedStorage]]:
    return [(path, leaf.untyped_storage()) for path, leaf in flatten(output)
            if type(leaf) is torch.Tensor and leaf.numel() and not leaf.is_meta]


def shared_storage(first: Any, second: Any) -> list[str]:
    """Paths of ``second`` whose storage is also one of ``first``'s (both alive)."""
    held = {storage.data_ptr() for _, storage in _storages(first)}
    return [path for path, storage in _storages(second) if storage.data_ptr() in held]


class OutputHistory:
    """The storages one model returned, held weakly, so a later call returning one of them is noticed."""

    def __init__(self) -> None:
        self._earlier: list[weakref.ref] = []
        self.reused: list[str] = []

    def record(self, output: Any) -> None:
        """Note the paths of ``output`` whose storage an earlier call returned and that is still alive."""
        alive = {ref().data_ptr() for ref in self._earlier if ref() is not None}
        self.reused += [path for path, storage in _storages(output) if storage.data_ptr() in alive]
        self._earlier = [ref for ref in self._earlier if ref() is not None]
        self._earlier += [weakref.ref(storage) for _, storage in _storages(output)]

    def finding(self) -> GuardFinding | None:
        """An ``output_reused`` warning if any call returned live storage an earlier one returned."""
        if not self.reused:
            return None
        paths = ", ".join(dict.fromkeys(self.reused[:3]))
        return GuardFinding(reason="output_reused", severity="warn", source="dynamic",
                            message=f"{paths} is storage an earlier call returned, so a caller holding that output "
                                    "sees it overwritten; a CUDA-graph candidate should return a copy of its static "
                                    "output (out.clone())")
