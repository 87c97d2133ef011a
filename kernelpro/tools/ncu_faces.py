"""The Nsight Compute browsing tools, as ``(content, artifact)`` replies: ncu's sections, sets and rules, and a
saved report's details page. Entries of ``faces.CATALOGUE``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelpro.tools import schemas as s
from kernelpro.tools.context import Reply, ToolContext


def _rows(rows: list[dict[str, str]], columns: tuple[str, ...]) -> str:
    return "\n".join(" | ".join(row.get(c, "") for c in columns if row.get(c)) for row in rows)


def _details(report: str, body: bool = False) -> Any:
    from kernelpro.profiling.ncu_details import read_report_details

    return read_report_details(Path(report), body=body)


def ncu_sections(context: ToolContext) -> Callable[..., Reply]:
    def run(**kwargs: Any) -> Reply:
        from kernelpro.profiling.ncu_details import report_sections
        from kernelpro.profiling.ncu_lists import ncu_listing

        args = s.NcuListArgs(**kwargs)
        if args.report:
            sections = report_sections(_details(args.report))
            return (f"{len(sections)} sections in {Path(args.report).name}:\n"
                    + _rows(sections, ("Identifier", "Display Name"))), {"sections": sections}
        sections, sets = ncu_listing("--list-sections"), ncu_listing("--list-sets")
        text = (f"sections (ncu --section ID):\n{_rows(sections, ('Identifier', 'Display Name', 'Enabled'))}\n"
                f"sets (ncu --set ID):\n{_rows(sets, ('Identifier', 'Sections', 'Estimated Metrics'))}")
        return text, {"sections": sections, "sets": sets}
    return run


def ncu_rules(context: ToolContext) -> Callable[..., Reply]:
    def run(**kwargs: Any) -> Reply:
        from kernelpro.profiling.ncu_details import report_rules
        from kernelpro.profiling.ncu_lists import ncu_listing

        args = s.NcuListArgs(**kwargs)
        rules = report_rules(_details(args.report)) if args.report else ncu_listing("--list-rules")
        where = Path(args.report).name if args.report else "ncu"
        return f"{len(rules)} rules ({where}):\n" + _rows(rules, tuple(rules[0]) if rules else ()), {"rules": rules}
    return run


def report_details(context: ToolContext) -> Callable[..., Reply]:
    def run(**kwargs: Any) -> Reply:
        args = s.ReportDetailsArgs(**kwargs)
        launches = _details(args.report, body=args.body)
        if args.kernel:
            launches = [launch for launch in launches if args.kernel in launch.name]
            if not launches:
                raise ValueError(f"no kernel matching {args.kernel!r} in {Path(args.report).name}")
        if args.section:
            wanted = args.section.lower()
            for launch in launches:
                launch.sections = [x for x in launch.sections if wanted in (x.id.lower(), x.name.lower())]
            if not any(launch.sections for launch in launches):
                raise ValueError(f"no section {args.section!r} in {Path(args.report).name}; ncu_sections with "
                                 "this report lists them")
        return "\n".join(launch.render() for launch in launches), [launch.model_dump() for launch in launches]
    return run
