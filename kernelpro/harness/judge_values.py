"""The judge's own numbers, frozen where the candidate's interpreter cannot write into them: the tolerances, the
reference's noise against its float64 oracle (which widens a tolerance), the precision limits.

Each is an immutable copy made when the judge computes it, carrying a digest of its items taken then;
``verified`` recomputes the digest before every use, so an object whose items were swapped behind its back
(``object.__setattr__``) is refused instead of trusted.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kernelpro.config.harness import KERNELBENCH_OTHER_TOLERANCE, KERNELBENCH_TOLERANCES

Rule = Literal["kernelpro", "kernelbench"]


class TamperedValue(RuntimeError):
    """One of the judge's frozen numbers no longer matches the digest it was made with."""


@dataclass(frozen=True)
class FrozenTolerance:
    """``|cand - ref| <= atol + rtol * |ref|`` (the settings' ``Tolerance``, immutable), under ``rule``:
    ``kernelpro`` takes ``atol`` down to each output's own scale and allows for the reference's noise
    (``compare.atol_at_scale``); ``kernelbench`` is ``torch.allclose(cand, ref)`` as written, ``atol`` as given and
    ``rtol`` against the candidate's magnitude."""

    atol: float
    rtol: float
    rule: Rule = "kernelpro"


class FrozenMap(Mapping[str, Any]):
    """A read-only mapping over a tuple of items, with the digest of those items from when it was made."""

    __slots__ = ("_items", "_digest")

    def __init__(self, items: Mapping[str, Any]) -> None:
        frozen = tuple(sorted(items.items()))
        object.__setattr__(self, "_items", frozen)
        object.__setattr__(self, "_digest", hash(frozen))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("the judge's values are read-only")

    def __getitem__(self, key: str) -> Any:
        for name, value in self._items:
            if name == key:
                return value
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"FrozenMap({dict(self._items)!r})"

    def verified(self) -> FrozenMap:
        """Itself, once its items are shown to be the ones it was made with."""
        if type(self) is not FrozenMap or hash(self._items) != self._digest:
            raise TamperedValue("the judge's frozen values were changed")
        return self


def frozen_tolerances(tolerances: Mapping[str, Any], profile: Rule = "kernelpro") -> FrozenMap:
    """Per dtype name, ``FrozenTolerance`` copies of the settings' tolerances; under the ``kernelbench`` profile,
    KernelBench's tolerance for each dtype instead (atol = rtol)."""
    if profile == "kernelbench":
        bench = {name: KERNELBENCH_TOLERANCES.get(name, KERNELBENCH_OTHER_TOLERANCE) for name in tolerances}
        return FrozenMap({name: FrozenTolerance(t, t, "kernelbench") for name, t in bench.items()})
    return FrozenMap({name: FrozenTolerance(float(t.atol), float(t.rtol)) for name, t in tolerances.items()})


def frozen_noise(noise: Mapping[str, float]) -> FrozenMap:
    """Per output leaf, the reference's error against its float64 oracle, as floats."""
    return FrozenMap({path: float(error) for path, error in noise.items()})


def widest_noise(noises: list[FrozenMap]) -> FrozenMap:
    """Per leaf, the largest of the input sets' noises: what the timed calls, on inputs drawn alike, allow for."""
    widest: dict[str, float] = {}
    for noise in noises:
        for path, error in noise.verified().items():
            widest[path] = max(widest.get(path, 0.0), error)
    return frozen_noise(widest)


@dataclass(frozen=True)
class JudgeLimits:
    """What a comparison allows, copied from the job's settings before any candidate code runs (the precision
    guard reads it as it reads ``HarnessSettings``)."""

    tolerances: FrozenMap
    precision_factor: float
    gross_relative_error: float
    profile: Rule = "kernelpro"
    """``harness.correctness_profile``: under ``kernelbench`` no float64 oracle is run and no noise measured."""


def judge_limits(settings: Any) -> JudgeLimits:
    profile = settings.correctness_profile
    return JudgeLimits(frozen_tolerances(settings.tolerances, profile), float(settings.precision_factor),
                       float(settings.gross_relative_error), profile)
