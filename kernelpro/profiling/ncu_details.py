"""A report's details page: each kernel launch's sections (their metrics by ncu's own labels) and rule results.

What ``ncu --import REPORT --page details`` prints, read without ncu through the ``ncu_report`` module in a child
process (``ncu_details_reader``). It also tells which sections and rules a report holds (``report_sections``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from kernelpro.profiling.ncu_report import run_reader


class SectionDetails(BaseModel):
    id: str
    name: str
    description: str = ""
    metrics: list[dict[str, Any]] = []
    rules: list[dict[str, Any]] = []

    def render(self) -> list[str]:
        lines = [f"  {self.name} ({self.id})"]
        for metric in self.metrics:
            value = metric["value"]
            shown = f"{value:,.6g}" if isinstance(value, (int, float)) else str(value)
            lines.append(f"    {metric['label']}: {shown} {metric['unit']}".rstrip())
        for rule in self.rules:
            if rule["type"] in ("optimization", "warning", "error") or rule["message"]:
                gain = f" (est. speedup {rule['speedup']:.1f}%)" if rule.get("speedup") else ""
                lines.append(f"    [{rule['type']}] {rule['rule']}{gain}: {rule['message']}")
        return lines


class LaunchDetails(BaseModel):
    name: str
    full_name: str = ""
    launch: int
    sections: list[SectionDetails]

    def render(self) -> str:
        lines = [f"{self.name} (launch {self.launch}):"]
        return "\n".join(lines + [line for section in self.sections for line in section.render()])


def read_report_details(path: str | Path, *, body: bool = False) -> list[LaunchDetails]:
    """Every launch of a .ncu-rep with its sections; ``body`` adds each section's body metrics (charts, tables)."""
    lines = run_reader("kernelpro.profiling.ncu_details_reader", path, *(["--body"] if body else []))
    return [LaunchDetails(**json.loads(line)) for line in lines]


def report_sections(launches: list[LaunchDetails]) -> list[dict[str, str]]:
    """The sections a report holds, each once: identifier, name, description."""
    seen: dict[str, dict[str, str]] = {}
    for launch in launches:
        for section in launch.sections:
            seen.setdefault(section.id, {"Identifier": section.id, "Display Name": section.name,
                                         "Description": section.description})
    return list(seen.values())


def report_rules(launches: list[LaunchDetails]) -> list[dict[str, str]]:
    """The rules whose results a report holds, each once: identifier, name, section."""
    seen: dict[str, dict[str, str]] = {}
    for launch in launches:
        for section in launch.sections:
            for rule in section.rules:
                seen.setdefault(rule["rule"], {"Identifier": rule["rule"], "Display Name": rule.get("name", ""),
                                               "Section": section.id})
    return list(seen.values())
