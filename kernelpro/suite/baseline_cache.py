"""Compile baselines' verdicts kept across runs and suites, so a problem's ``torch.compile`` baselines are
measured once per machine and software, not once per suite.

An entry is ``<cache.root>/baselines/<digest[:2]>/<digest>.json``: the key's fields in full (``baseline_key``),
when it was measured, and the verdict (which carries the reference's timing beside the baseline's). It is written
whole or not at all (``write_atomic``). An entry is trusted only when it reads back as written: valid JSON of this
format, its digest and key the very ones asked for, a verdict that validates, a time of measurement not in the
future; anything else is set aside with a warning and the baseline judged again (its new verdict replaces it).

Only verdicts about the code are kept (ok, incorrect, rejected, a compile error, as ``judged_before`` reuses),
never one measured beside other work (``contended``), a timeout or a worker's failure.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kernelpro.atomic_write import write_atomic
from kernelpro.config import Settings
from kernelpro.harness.result import EvalResult
from kernelpro.problem import Problem
from kernelpro.suite import baseline_key as keys

ENTRY_FORMAT = 1
KEPT_STATUSES = ("ok", "incorrect", "rejected", "compile_error")
FUTURE_SLACK_S = 300.0  # clocks of machines sharing a cache disagree a little


def worth_keeping(result: EvalResult) -> bool:
    """A verdict about the code itself, measured without other work beside it."""
    return result.status in KEPT_STATUSES and not result.contended


@dataclass(frozen=True)
class CachedVerdict:
    """A verdict found in the cache, and when it was measured (seconds since the epoch)."""

    result: EvalResult
    measured_at: float
    path: Path

    def age_s(self, now: float | None = None) -> float:
        return max(0.0, (time.time() if now is None else now) - self.measured_at)


class BaselineCache:
    """The entries under ``root`` (``cache.root``'s ``baselines/``)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).expanduser()

    def path(self, digest: str) -> Path:
        return self.root / digest[:2] / f"{digest}.json"

    def get(self, key: dict[str, Any], now: float | None = None) -> tuple[CachedVerdict | None, str | None]:
        """(the verdict kept under ``key``, None) on a hit; (None, None) on a miss; (None, why) for an entry that
        cannot be trusted."""
        digest = keys.digest(key)
        path = self.path(digest)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None, None
        except OSError as error:
            return None, f"the cached baseline {path} cannot be read ({error.strerror or error}); judging it again"
        try:
            entry = json.loads(text)
            if not isinstance(entry, dict) or entry.get("format") != ENTRY_FORMAT:
                raise ValueError(f"not an entry of format {ENTRY_FORMAT}")
            if entry.get("digest") != digest or entry.get("key") != key:
                raise ValueError("its key is not the one it is filed under")
            measured_at = float(entry["measured_at"])
            if measured_at > (time.time() if now is None else now) + FUTURE_SLACK_S:
                raise ValueError("measured in the future")
            result = EvalResult.model_validate(entry["result"])
            if not worth_keeping(result):
                raise ValueError(f"a verdict of status {result.status} is never kept")
        except (ValueError, KeyError, TypeError, ValidationError) as error:
            reason = f"{type(error).__name__}: {error}".splitlines()[0][:200]
            return None, f"ignoring the corrupt cached baseline {path} ({reason}); judging it again"
        return CachedVerdict(result, measured_at, path), None

    def put(self, key: dict[str, Any], result: EvalResult, problem_name: str, now: float | None = None) -> str | None:
        """Keep ``result`` under ``key``; None when kept (or not worth keeping), else why it could not be."""
        if not worth_keeping(result):
            return None
        digest = keys.digest(key)
        path = self.path(digest)
        entry = {"format": ENTRY_FORMAT, "digest": digest, "key": key, "problem": problem_name,
                 "measured_at": time.time() if now is None else now, "result": result.model_dump(mode="json")}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, json.dumps(entry))
        except OSError as error:  # a cache that cannot be written costs the next suite a measurement, no more
            return f"the baseline's verdict could not be cached ({error.strerror or error}: {error.filename})"
        return None


class RunBaselines:
    """One run's view of the cache: its problem, device and settings, the machine and software they ran on."""

    def __init__(self, cache: BaselineCache, problem: Problem, device: str, settings: Settings,
                 machine: dict[str, str] | None, software: dict[str, str]) -> None:
        self.cache, self.problem, self.device, self.settings = cache, problem, device, settings
        self.machine, self.software = machine, software

    @classmethod
    def for_run(cls, problem: Problem, device: str, settings: Settings) -> RunBaselines | None:
        """The cache for this run, or None when ``cache.baselines`` is off."""
        if settings.cache.baselines == "off":
            return None
        return cls(BaselineCache(settings.cache.baselines_dir), problem, device, settings,
                   keys.machine_identity(device), keys.software())

    def key(self, name: str, code: str) -> dict[str, Any] | None:
        """Baseline ``name``'s key (its ``code`` the candidate judged); None where the machine is unknown."""
        if self.machine is None:
            return None
        return keys.baseline_key(self.problem, name, code, self.device, self.settings, self.machine, self.software)

    def reusable(self, codes: dict[str, str], fresh: bool, now: float | None = None
                 ) -> tuple[dict[str, CachedVerdict], list[str]]:
        """The baselines among ``codes`` (name -> code) with a verdict to reuse (none when ``fresh``), and the
        warnings about entries that could not be trusted."""
        found: dict[str, CachedVerdict] = {}
        warnings: list[str] = []
        if fresh:
            return found, warnings
        for name, code in codes.items():
            key = self.key(name, code)
            if key is None:
                continue
            hit, warning = self.cache.get(key, now)
            if hit is not None:
                found[name] = hit
            if warning:
                warnings.append(warning)
        return found, warnings

    def keep(self, name: str, code: str, result: EvalResult, now: float | None = None) -> str | None:
        """Keep a fresh verdict; None when kept or not kept on purpose, else why it could not be."""
        key = self.key(name, code)
        return None if key is None else self.cache.put(key, result, self.problem.name, now)
