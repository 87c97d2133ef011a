"""The part of the .ncu-rep reader that touches NVIDIA's ``ncu_report`` module; it runs in a child process.

The module is native code that shares a process badly: Nsight Compute 2025.3.1's bundled copy segfaulted in
``IMetric.unit()`` inside ``kernelpro optimize`` (torch loaded beside it), and read the same kind of report
cleanly in a process of its own. So :func:`kernelpro.profiling.ncu_report.read_ncu_report` runs this as
``python -m kernelpro.profiling.ncu_report_reader REPORT``, which imports neither torch nor the graph: the
kernels come back as JSON lines on stdout, a readable failure as exit code 2 with the message on stderr.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

from kernelpro.profiling.metrics import KernelMetrics
from kernelpro.profiling.ncu_csv import short_name

MESSAGE_TYPES = {0: "none", 1: "ok", 2: "optimization", 3: "warning", 4: "error"}
SPEEDUP_TYPES = {0: "unknown", 1: "local", 2: "global"}
# ncu's markup in rule messages: @section:Id:Shown Name@ and @url:Shown Name:https://...@
_SECTION_LINK = re.compile(r"@section:[^:@]*:([^@]*)@")
_URL_LINK = re.compile(r"@url:([^:@]*):([^@]*)@")
# Derived helper metrics ncu keeps in reports for its rules; the CSV export leaves them out.
_REPORT_ONLY_PREFIXES = ("breakdown:", "group:")
READER_ORIGIN = "ncu_report module: "  # the first stderr line names the module, so a crash can name it too


class ReportUnreadable(ValueError):
    """The library is missing, or it cannot load the report."""


def _plain_message(text: str) -> str:
    """A rule message without ncu's link markup: sections by name, links as `name (url)`."""
    return _URL_LINK.sub(r"\1 (\2)", _SECTION_LINK.sub(r"\1", text)).strip()


def _rule(result: dict[str, Any]) -> dict[str, Any]:
    message = result.get("rule_message") or {}
    speedup = result.get("speedup_estimation") or {}
    return {
        "rule": result.get("rule_identifier", ""),
        "name": result.get("name", ""),
        "section": result.get("section_identifier", ""),
        "type": MESSAGE_TYPES.get(message.get("type", 0), "none"),
        "title": message.get("title", ""),
        "message": _plain_message(message.get("message", "")),
        "speedup": speedup.get("speedup"),  # estimated % of the kernel's time recoverable
        "speedup_type": SPEEDUP_TYPES.get(speedup.get("type", 0), "unknown") if speedup else None,
    }


def _dims(values: dict[str, float], prefix: str) -> tuple[int, int, int] | None:
    keys = [f"{prefix}_{axis}" for axis in "xyz"]
    return tuple(int(values[k]) for k in keys) if all(k in values for k in keys) else None  # type: ignore[return-value]


def _kernel(action: Any, launch: int) -> KernelMetrics:
    values: dict[str, float] = {}
    units: dict[str, str] = {}
    text: dict[str, str] = {}
    for name in action.metric_names():
        if name.startswith(_REPORT_ONLY_PREFIXES):
            continue
        metric = action.metric_by_name(name)
        if metric is None or not metric.has_value():
            continue
        value = metric.value()
        if isinstance(value, str):
            if value.strip():
                text[name] = value
        elif value is not None and not (isinstance(value, float) and math.isnan(value)):
            values[name] = float(value)
            if metric.unit():
                units[name] = metric.unit()
    full = action.name(action.NameBase_DEMANGLED)
    return KernelMetrics(
        name=short_name(full), launch=launch, values=values, units=units, text=text, full_name=full,
        block=_dims(values, "launch__block_dim"), grid=_dims(values, "launch__grid_dim"),
        rules=tuple(_rule(r) for r in action.rule_results_as_dicts()),
    )


def bundled_module_dirs() -> list[Path]:
    """Where an Nsight Compute install keeps its own copy of the module (``extras/python``), newest first."""
    from kernelpro.profiling.ncu_command import find_ncu

    roots = []
    ncu = find_ncu()
    if ncu:
        real = Path(ncu).resolve()
        roots += [real.parent, real.parent.parent]  # <install>/ncu, or <install>/target/.../ncu behind a link
    roots += sorted((Path(p) for p in glob.glob("/usr/local/cuda*/nsight-compute*")), reverse=True)
    roots += sorted((Path(p) for p in glob.glob("/opt/nvidia/nsight-compute/*")), reverse=True)
    return [root / "extras" / "python" for root in roots if (root / "extras" / "python" / "ncu_report.py").is_file()]


def import_ncu_report() -> Any:
    """The ``ncu-report`` package, else the copy that ships with an installed ncu."""
    try:
        import ncu_report

        return ncu_report
    except ImportError:
        pass
    for directory in bundled_module_dirs():
        sys.path.insert(0, str(directory))
        try:
            import ncu_report

            return ncu_report
        except ImportError:
            sys.path.remove(str(directory))
    raise ReportUnreadable("reading .ncu-rep files needs the ncu-report package (pip install ncu-report) or an "
                           "Nsight Compute install (its extras/python); or give the raw CSV instead")


def load_kernels(path: str | Path) -> list[KernelMetrics]:
    """Every kernel launch in the report, in launch order, read in this process."""
    ncu_report = import_ncu_report()
    print(READER_ORIGIN + str(getattr(ncu_report, "__file__", "?")), file=sys.stderr, flush=True)
    try:
        context = ncu_report.load_report(str(path))
    except Exception as error:  # noqa: BLE001 - the library raises its own types for unreadable files
        raise ReportUnreadable(f"{path}: ncu_report could not load it: {error}") from None
    kernels: list[KernelMetrics] = []
    for r in range(context.num_ranges()):
        profiled_range = context.range_by_idx(r)
        for a in range(profiled_range.num_actions()):
            action = profiled_range.action_by_idx(a)
            if not action.metric_names():
                raise ReportUnreadable(f"{path}: launch {len(kernels)} has no metrics; the report is truncated or "
                                       "corrupt")
            kernels.append(_kernel(action, len(kernels)))
    if not kernels:
        raise ReportUnreadable(f"{path}: no kernel launches in the report (truncated, or ncu profiled nothing)")
    return kernels


def main(argv: list[str]) -> int:
    try:
        kernels = load_kernels(argv[0])
    except ReportUnreadable as error:
        print(error, file=sys.stderr)
        return 2
    for kernel in kernels:
        sys.stdout.write(json.dumps(dataclasses.asdict(kernel)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
