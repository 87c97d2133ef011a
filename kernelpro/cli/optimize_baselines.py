"""`kernelpro optimize --baselines`: the compile baselines judged by the run itself, before its search.

A suite's job asks for them, so that a problem costs one process and one worker rather than a process of its own
for the baselines first (``suite/baselines.measure_for_run`` judges them, once per run, or reuses the verdicts an
earlier run kept in the cache: ``suite/baseline_cache.py``; ``--fresh`` measures them anew).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from kernelpro.cli.errors import fail
from kernelpro.runs.files import RunFiles


def baseline_names(text: str | None) -> list[str]:
    """``--baselines NAMES``' compile baselines; exits with the known names on an unknown one."""
    from kernelpro.suite.baselines import COMPILE_BASELINES

    names = [n.strip() for n in (text or "").split(",") if n.strip() and n.strip() != "eager"]
    if unknown := [n for n in names if n not in COMPILE_BASELINES]:
        fail(f"--baselines: unknown compile baseline(s) {', '.join(unknown)}; known: eager, "
             f"{', '.join(COMPILE_BASELINES)}")
    return names


def wanted_by_run(files: RunFiles, given: list[str]) -> list[str]:
    """The baselines a run judges: those it was started with, or (a run resumed with ``--baselines``, started
    without) those given now, which it then remembers."""
    meta = files.meta()
    if meta.get("baselines"):
        return list(meta["baselines"])
    if given:
        files.update_meta(baselines=given)
    return given


def judge_run_baselines(out: Console, context: Any, files: RunFiles, names: list[str], settings: Any,
                        device: str) -> dict[str, dict[str, Any]] | None:
    """The run's baselines (judged now unless it judged them before a kill, or reused from the cache as
    ``cache.baselines`` says); None when it has none to judge."""
    if not names:
        return None
    from kernelpro.forecast.dataset import hardware_name
    from kernelpro.report.content import reused_text
    from kernelpro.search.tree import speedup_text
    from kernelpro.suite.baseline_cache import RunBaselines
    from kernelpro.suite.baselines import measure_for_run

    summary = files.baselines()
    fresh = settings.cache.baselines == "fresh"
    if summary is None:
        out.print(f"judging the compile baselines first: {', '.join(names)}"
                  + (" (fresh: none reused from the cache)" if fresh else ""), soft_wrap=True)
        summary = measure_for_run(context.problem, names, context.evaluate, files.root, files.root.name,
                                  settings.forecast.dataset if settings.forecast.record else None,
                                  hardware_name(device), RunBaselines.for_run(context.problem, device, settings),
                                  fresh, warn=lambda message: out.print(f"[yellow]{escape(message)}[/]",
                                                                        soft_wrap=True))
    for name, verdict in summary.items():
        said = speedup_text(verdict.get("speedup"), verdict.get("speedup_ci95")) if verdict.get("correct") else \
            f"{verdict.get('status')}: {verdict.get('message', '')}"
        out.print(f"baseline {name}: {escape(str(said))}{escape(reused_text(verdict))}", soft_wrap=True)
    return summary
