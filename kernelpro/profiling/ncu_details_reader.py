"""The child-process side of ``ncu_details``: each launch's sections as ncu's details page shows them.

Run as ``python -m kernelpro.profiling.ncu_details_reader REPORT [--body]`` (the native module is kept out
of the caller's process, as in ``ncu_report_reader``): one JSON line per launch with its sections, each with its
header metrics (label, metric name, value, unit), optionally its body metrics, and ncu's rule results.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from kernelpro.profiling.ncu_csv import short_name
from kernelpro.profiling.ncu_report_reader import (
    _REPORT_ONLY_PREFIXES,
    READER_ORIGIN,
    ReportUnreadable,
    _rule,
    import_ncu_report,
)


def _metric(metric: Any) -> dict[str, Any] | None:
    if metric is None or metric.name().startswith(_REPORT_ONLY_PREFIXES) or not metric.has_value():
        return None
    value = metric.value()
    if isinstance(value, float) and math.isnan(value):
        return None
    return {"label": metric.label() or metric.name(), "metric": metric.name(), "value": value,
            "unit": metric.unit() or ""}


def _section(section: Any, rules: list[dict[str, Any]], body: bool) -> dict[str, Any]:
    groups = [section.header_metrics(), section.body_metrics()] if body else [section.header_metrics()]
    metrics = [found for group in groups for m in group or () if (found := _metric(m)) is not None]
    return {"id": section.identifier(), "name": section.name(), "description": section.description(),
            "metrics": metrics, "rules": [r for r in rules if r["section"] == section.identifier()]}


def load_details(path: str, body: bool = False) -> list[dict[str, Any]]:
    ncu_report = import_ncu_report()
    print(READER_ORIGIN + str(getattr(ncu_report, "__file__", "?")), file=sys.stderr, flush=True)
    try:
        context = ncu_report.load_report(path)
    except Exception as error:  # noqa: BLE001 - the library raises its own types for unreadable files
        raise ReportUnreadable(f"{path}: ncu_report could not load it: {error}") from None
    launches: list[dict[str, Any]] = []
    for r in range(context.num_ranges()):
        profiled_range = context.range_by_idx(r)
        for a in range(profiled_range.num_actions()):
            action = profiled_range.action_by_idx(a)
            full = action.name(action.NameBase_DEMANGLED)
            rules = [_rule(result) for result in action.rule_results_as_dicts()]
            sections = sorted(action.sections(), key=lambda s: s.order())
            launches.append({"name": short_name(full), "full_name": full, "launch": len(launches),
                             "sections": [_section(s, rules, body) for s in sections]})
    if not launches:
        raise ReportUnreadable(f"{path}: no kernel launches in the report (truncated, or ncu profiled nothing)")
    return launches


def main(argv: list[str]) -> int:
    try:
        launches = load_details(argv[0], body="--body" in argv[1:])
    except ReportUnreadable as error:
        print(error, file=sys.stderr)
        return 2
    for launch in launches:
        sys.stdout.write(json.dumps(launch) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
