"""A candidate beside what it replaced: the unified diff, and the verdict in a few lines."""

from __future__ import annotations

import difflib
from typing import Any


def unified_diff(old: str, new: str, old_name: str, new_name: str, context: int = 3) -> str:
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), old_name, new_name,
                                 n=context)
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return text or "(no change)\n"


def verdict_summary(verdict: dict[str, Any]) -> str:
    """One line from ``EvalResult.to_json_dict()``: status, reason, speedup with its interval."""
    head = verdict.get("status", "?") + (f" ({verdict['reason']})" if verdict.get("reason") else "")
    speedup, ci = verdict.get("speedup"), verdict.get("speedup_ci95")
    if speedup is not None:
        head += f", {speedup:.2f}x"
        if ci:
            head += f" [{ci[0]:.2f}, {ci[1]:.2f}]"
        if verdict.get("speed_verdict"):
            head += f" {verdict['speed_verdict']}"
    return head
