"""A model run's plan: the model profiled, its regions ranked, the top ones written as problems, all kept in
``model.json`` beside them so a stopped run resumes without profiling again.

A model run directory (``<runs_dir>/<model-run-id>/``): ``reference.py`` (the whole model as a problem),
``problems/`` (one problem per extracted region), ``suites/`` (the suite over them), ``model.json``, and at the
end ``patched_model.py`` and ``report.md``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernelpro.atomic_write import write_atomic
from kernelpro.model.regions import Region


@dataclass
class RegionEntry:
    """A region, its time per forward and share of the whole, and the problem it became (or why not)."""

    region: Region
    time_us: float
    share: float
    problem: str | None = None
    skipped: str = ""

    @property
    def ceiling(self) -> float | None:
        return None if self.share >= 1.0 else 1.0 / (1.0 - self.share)


@dataclass
class ModelPlan:
    name: str
    directory: Path
    device: str
    total_us: float
    regions: list[RegionEntry]
    modules: dict[str, float] = field(default_factory=dict)
    suite_id: str | None = None
    suite_options: list[str] = field(default_factory=list)

    @property
    def reference(self) -> Path:
        return self.directory / "reference.py"

    @property
    def problems_dir(self) -> Path:
        return self.directory / "problems"

    @property
    def suites_dir(self) -> Path:
        return self.directory / "suites"

    def extracted(self) -> list[RegionEntry]:
        return [entry for entry in self.regions if entry.problem]

    def save(self) -> None:
        data = {"name": self.name, "device": self.device, "total_us": self.total_us, "modules": self.modules,
                "suite_id": self.suite_id, "suite_options": self.suite_options,
                "regions": [{**asdict(e), "region": e.region.to_dict()} for e in self.regions]}
        write_atomic(self.directory / "model.json", json.dumps(data, indent=1))

    @classmethod
    def load(cls, directory: Path) -> ModelPlan:
        data: dict[str, Any] = json.loads((directory / "model.json").read_text(encoding="utf-8"))
        regions = [RegionEntry(**{**e, "region": Region.from_dict(e["region"])}) for e in data["regions"]]
        return cls(name=data["name"], directory=directory, device=data["device"], total_us=data["total_us"],
                   regions=regions, modules=data.get("modules", {}), suite_id=data.get("suite_id"),
                   suite_options=data.get("suite_options", []))
