"""The checks on every timed call's output: each round's candidate output against the reference's output for the
same fresh inputs, and, when it differs, against what earlier rounds gave (a replayed result): the candidate's
own earlier outputs by fingerprint, the reference's latest ones by comparison.

A large output is checked at ``harness.timed_check_elements`` positions drawn afresh for each call, after it
returned, by a generator seeded from the operating system: checking every element of KernelBench's 6 GiB
outputs in float64 took most of each timed round, with the device held alone. A candidate that leaves even a
thousandth of its output unwritten or stale, to save time, is seen at about a thousand of a million positions;
the correctness trials before timing check every element. A sample that disagrees is not the last word: the
whole output is compared again, and that decides and says what is wrong.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import torch

from kernelpro.config import Tolerance
from kernelpro.harness.guards import chunked
from kernelpro.harness.guards.compare import Agreement, Mismatch, compare_outputs, fingerprint, flatten

KEPT_ROUNDS = 4  # earlier rounds' reference outputs held for the replay check


class SampledPositions:
    """Where a timed call's large outputs are checked: ``count`` flat positions of an output of more elements,
    ``fresh`` for every comparison, or ``fixed`` for the job (fingerprints must look at the same ones)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.generators: dict[torch.device, torch.Generator] = {}
        self.kept: dict[tuple[torch.device, int], torch.Tensor] = {}
        self.sampled = 0  # output tensors compared at sampled positions

    def _draw(self, tensor: torch.Tensor) -> torch.Tensor:
        if tensor.device not in self.generators:
            generator = torch.Generator(device=tensor.device)
            generator.manual_seed(secrets.randbits(63))  # not the global generators, which candidates seed
            self.generators[tensor.device] = generator
        return torch.randint(tensor.numel(), (self.count,), device=tensor.device,
                             generator=self.generators[tensor.device])

    def applies(self, tensor: torch.Tensor) -> bool:
        return 0 < self.count < tensor.numel()

    def fresh(self, tensor: torch.Tensor) -> torch.Tensor | None:
        if not self.applies(tensor):
            return None
        self.sampled += 1
        return self._draw(tensor)

    def fixed(self, tensor: torch.Tensor) -> torch.Tensor | None:
        if not self.applies(tensor):
            return None
        key = (tensor.device, tensor.numel())
        if key not in self.kept:
            self.kept[key] = self._draw(tensor)
        return self.kept[key]

    def kept_values(self, output: Any) -> list[Any]:
        """An output's leaves as an earlier round is kept: a large plain tensor by its values at the ``fixed``
        positions (a 6 GiB output by 4 MiB), anything else whole."""
        leaves = []
        for _, leaf in flatten(output):
            positions = self.fixed(leaf) if isinstance(leaf, torch.Tensor) and type(leaf) is torch.Tensor else None
            leaves.append(chunked.take(leaf, positions) if positions is not None else leaf)
        return leaves


class TimedCallChecks:
    """``after_call`` for ``timing.run_timing``: checks every candidate call against its own round's reference
    output, and a wrong one against the reference's outputs of the latest rounds, which it keeps: whole for the
    round being checked, by their sampled values once that round is done (``SampledPositions.kept_values``), so
    KernelBench's 6 GiB outputs do not hold 24 GiB beside a job that shares its GPU."""

    def __init__(self, tolerances: dict[str, Tolerance], noise: dict[str, float],
                 after_candidate_call: Callable[[], None],
                 on_replay: Callable[[int, int], None],
                 on_mismatch: Callable[[Mismatch, Any, Any, int], None],
                 all_finite: Callable[[Any], bool], sampled_elements: int = 0) -> None:
        self.tolerances, self.noise = tolerances, noise
        self.positions = SampledPositions(sampled_elements)
        self.after_candidate_call = after_candidate_call
        self.on_replay, self.on_mismatch, self.all_finite = on_replay, on_mismatch, all_finite
        self.expected: dict[int, Any] = {}
        self.whole: int | None = None  # the latest round, whose reference output is kept whole
        self.pending: dict[int, list[Any]] = {}
        self.printed: dict[tuple, int] = {}  # fingerprints of the candidate's outputs, to the round that gave each
        self.checked = 0

    def __call__(self, name: str, index: int, out: Any) -> None:
        if name == "candidate":
            self.after_candidate_call()
            if index in self.expected:
                self.check(index, out)
            else:  # the candidate ran first in this round: checked when the reference's output arrives
                self.pending.setdefault(index, []).append(out)
            return
        if self.whole in self.expected:  # its round is checked: its sampled values are enough from now on
            self.expected[self.whole] = self.positions.kept_values(self.expected[self.whole])
        self.expected[index], self.whole = out, index
        for old in [i for i in self.expected if i <= index - KEPT_ROUNDS]:
            del self.expected[old]
        for waiting in self.pending.pop(index, []):
            self.check(index, waiting)

    def check(self, index: int, out: Any) -> None:
        expected = self.expected[index]
        outcome = compare_outputs(expected, out, self.tolerances, self.noise, self.positions.fresh)
        if isinstance(outcome, Mismatch) and self.positions.count:  # the whole output decides
            outcome = compare_outputs(expected, out, self.tolerances, self.noise)
        self.checked += 1
        printed = fingerprint(out, self.positions.fixed)
        first = self.printed.setdefault(printed, index)
        if not isinstance(outcome, Mismatch) or not self.all_finite(expected):
            return
        if first != index:  # the very output it gave for the inputs of an earlier round
            self.on_replay(index, first)
        kept = self.positions.kept_values(out)  # as every other round's reference output is kept by now
        for other_index, other in self.expected.items():
            if other_index != index and isinstance(
                    compare_outputs(other, kept, self.tolerances, self.noise), Agreement):
                self.on_replay(index, other_index)
        self.on_mismatch(outcome, out, expected, index)
