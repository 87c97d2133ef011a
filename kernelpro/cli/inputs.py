"""What the commands check before they start anything: the device exists, the files are there and readable, the
problem is in KernelBench's format. Each failure is one specific line and exit code 2, never a traceback. Also
what they read from their options alike: durations (``--time-budget 15m``)."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer

from kernelpro.cli.errors import fail
from kernelpro.config import Settings
from kernelpro.problem import Problem, ProblemError, load_problem
from kernelpro.run_lock import RunBusy, RunLock

T = TypeVar("T")
DEVICES = ("auto", "cpu", "cuda")


def device_or_fail(device: str, settings: Settings, asked_by: str | None = None) -> str:
    """``cpu`` or ``cuda``: ``auto`` (or ``settings.device``) resolved; ``cuda`` refused where no GPU is visible.
    ``asked_by`` names who asked for the device in the message (default: the option or the setting)."""
    if device not in DEVICES:
        fail(f"--device {device!r}: use one of {', '.join(DEVICES)}")
    chosen = device if device != "auto" else settings.device
    if chosen == "cpu":
        return chosen  # nothing to check: no torch import, so a process that judges nothing itself starts faster
    import torch

    if chosen == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if chosen == "cuda" and not torch.cuda.is_available():
        why = ("this torch is a CPU-only build" if torch.version.cuda is None
               else "torch sees no GPU (no NVIDIA driver, or CUDA_VISIBLE_DEVICES hides them)")
        where = asked_by or ("--device cuda" if device == "cuda" else "the setting device = \"cuda\"")
        fail(f"{where}, but no GPU is usable here: {why}. Use --device cpu, or run on a machine with an NVIDIA "
             "GPU (kernelpro doctor shows what this one has)")
    return chosen


def problem_or_fail(path: Path) -> Problem:
    try:
        return load_problem(path)
    except ProblemError as error:
        fail(str(error))


def judged_before_or_fail(path: Path | None, resume: str | None) -> None:
    """``optimize --judged-before``: a file of earlier verdicts that reads, for a new run only."""
    if path is None:
        return
    if resume:
        fail("--judged-before is for a new run; a resumed run keeps the verdicts it adopted")
    from kernelpro.runs.judged_before import JudgedBefore, JudgedBeforeError

    try:
        JudgedBefore.read(path)
    except JudgedBeforeError as error:
        fail(str(error))


def candidate_or_fail(path: Path) -> str:
    """A candidate's source. Bytes that are not UTF-8 are kept (replaced) for the judge to classify as not Python;
    a file that is missing, a directory or unreadable is refused here."""
    if path.is_dir():
        fail(f"{path}: a directory, not a candidate file")
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        fail(f"{path}: no such file")
    except OSError as error:
        fail(f"{path}: cannot be read ({error.strerror})")


def objective_or_fail(objective: str | None, settings: Settings, device: str) -> None:
    """Set ``search.objective`` from ``--objective`` (when given) and check it can be measured here: energy and
    EDP need NVML's energy counter on an NVIDIA GPU, so on a CPU, or where NVML gives no counter, they are refused
    before anything runs. Choosing one turns ``harness.energy`` on."""
    from kernelpro.search.objective import ENERGY_OBJECTIVES, OBJECTIVES

    if objective is not None:
        if objective not in OBJECTIVES:
            fail(f"--objective {objective!r}: use one of {', '.join(OBJECTIVES)}")
        settings.search.objective = objective  # type: ignore[assignment]
    chosen = settings.search.objective
    if chosen not in ENERGY_OBJECTIVES:
        return
    asked = f"--objective {chosen}" if objective is not None else f"the setting search.objective = \"{chosen}\""
    if device != "cuda":
        fail(f"{asked} needs NVML's energy readings on an NVIDIA GPU, and this run is on {device}: use "
             "--objective time, or --device cuda on a machine with a GPU")
    from kernelpro.harness.timing.energy import unavailable

    if reason := unavailable(0):
        fail(f"{asked} needs NVML's energy readings, which this GPU cannot give ({reason}); use --objective time")
    settings.apply_objective()


CORRECTNESS_ENV = "KERNELPRO_HARNESS__CORRECTNESS_PROFILE"


def correctness_or_fail(profile: str | None, settings: Settings) -> None:
    """Set ``harness.correctness_profile`` from ``--correctness`` (when given): ``kernelpro``, or ``kernelbench``
    for KernelBench's own check (``torch.allclose`` at 1e-4 for float32, 1e-2 for half types, on five input sets), which
    fixes its trials."""
    from typing import get_args

    from kernelpro.config import HarnessSettings

    if profile is None:
        return
    profiles = get_args(HarnessSettings.model_fields["correctness_profile"].annotation)
    if profile not in profiles:
        fail(f"--correctness {profile!r}: use one of {', '.join(profiles)}")
    settings.harness.correctness_profile = profile  # type: ignore[assignment]
    settings.harness.apply_correctness_profile()


CorrectnessOption = typer.Option(
    "--correctness", metavar="[kernelpro|kernelbench]",
    help="Which correctness check judges: kernelpro (default: tolerances at each output's scale, the reference's "
         "noise, scaled and shifted sets, a float64 oracle) or kernelbench (KernelBench's own: torch.allclose at "
         "atol=rtol=1e-4 for float32, 1e-2 for half types, on 5 input sets, nothing more). Sets "
         "harness.correctness_profile.")


SCORECARD_ENV = "KERNELPRO_SEARCH__SCORECARD"


def scorecard_or_fail(scorecard: str | None, settings: Settings) -> None:
    """Set ``search.scorecard`` from ``--scorecard`` (when given): ``kernelpro`` or ``kernelbench``."""
    from kernelpro.search.objective import SCORECARDS

    if scorecard is None:
        return
    if scorecard not in SCORECARDS:
        fail(f"--scorecard {scorecard!r}: use one of {', '.join(SCORECARDS)}")
    settings.search.scorecard = scorecard  # type: ignore[assignment]


ScorecardOption = typer.Option(
    "--scorecard", metavar="[kernelpro|kernelbench]",
    help="Which reading of the timed rounds decides a best (both are shown): kernelpro (default: each round's cost "
         "the larger of the GPU span and the host's issue time, median of paired ratios) or kernelbench "
         "(KernelBench's convention: mean of CUDA events behind the L2 flush, no host floor). Sets "
         "search.scorecard.")


def hold_run_lock(directory: Path, what: str) -> None:
    """Hold ``directory``'s driver lock (``run_lock``) until the command ends (``releases_run_locks``): a run or
    suite that another live process drives is refused, not driven twice."""
    try:
        lock = RunLock.acquire(directory, what)
    except RunBusy as error:
        fail(str(error))
    if _HELD:
        _HELD[-1].append(lock)
    # called outside a command (a library caller): the lock lasts as long as the process


_HELD: list[list[RunLock]] = []  # per running command, the run locks it took


def releases_run_locks(command: Callable[..., T]) -> Callable[..., T]:
    """A command whose run locks are released when it returns or raises (in-process callers, such as tests,
    may run it again at once)."""
    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> T:
        held: list[RunLock] = []
        _HELD.append(held)
        try:
            return command(*args, **kwargs)
        finally:
            _HELD.remove(held)
            for lock in held:
                lock.release()
    return run


# a suite problem's failure kinds (suite.job), and budget: the problems a budget cut, given more of it
RETRY_KINDS = ("crash", "hang", "lost", "setup", "problem", "gpu_memory", "budget")


def retry_kinds_or_fail(retry: str | None, resume: str | None) -> set[str] | None:
    """The failure kinds ``--retry`` names (None: every failed problem); refused without ``--resume``."""
    if retry is None:
        return None
    if not resume:
        fail("--retry runs a suite's failed problems again: give the suite with --resume ID")
    words = {w.strip() for w in retry.split(",") if w.strip()}
    if words == {"all"}:
        return None
    if not words or (unknown := words - set(RETRY_KINDS)):
        fail(f"--retry {retry!r}: give all, or failure kinds among {', '.join(RETRY_KINDS)}"
             + (f" (not {', '.join(sorted(unknown))})" if words else ""))
    return words


def budgets_or_fail(max_iters: int | None, time_budget: str | None, gpu_budget: str | None,
                    usd_budget: float | None) -> dict[str, Any]:
    """``--max-iters`` (at least 1), ``--time-budget``, ``--gpu-budget`` and ``--usd-budget`` (each above 0) as
    ``max_iters``, ``time_s``, ``gpu_s`` and ``usd``; None where an option is not given. A budget that allows
    nothing is refused before anything runs, never read as a default or spent at once."""
    if max_iters is not None and max_iters < 1:
        fail(f"--max-iters {max_iters}: give the number of candidates to judge, at least 1")
    if usd_budget is not None and not usd_budget > 0:
        fail(f"--usd-budget {usd_budget:g}: give the dollars the models may spend, above 0")
    seconds = {}
    for flag, text in (("--time-budget", time_budget), ("--gpu-budget", gpu_budget)):
        seconds[flag] = durations(text)
        if seconds[flag] is not None and not seconds[flag] > 0:
            fail(f"{flag} {text!r}: give a duration above 0, e.g. 90s, 15m, 2h or 1h30m")
    return {"max_iters": max_iters, "time_s": seconds["--time-budget"], "gpu_s": seconds["--gpu-budget"],
            "usd": usd_budget}


def durations(text: str | None) -> float | None:
    """'90', '90s', '15m', '2h', '1h30m' -> seconds."""
    if text is None:
        return None
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([hms]?)", text.strip().lower())
    if not parts or "".join(n + u for n, u in parts) != re.sub(r"\s+", "", text.strip().lower()):
        raise typer.BadParameter(f"{text!r} is not a duration; use e.g. 90s, 15m, 2h or 1h30m")
    return sum(float(n) * {"h": 3600, "m": 60, "s": 1, "": 1}[u] for n, u in parts)


# Options that take several small numbers, written as ``--level 1 2 3`` as well as ``--level 1 --level 2``
SPREAD_OPTIONS = ("--level",)


def spread_option_values(args: list[str]) -> list[str]:
    """``--level 1 2 3`` as ``--level 1 --level 2 --level 3``: a command-line parser takes one value per option, and
    the others would be read as sources. A one-digit token that names an existing path stays a source; nothing
    after ``--`` is touched."""
    out: list[str] = []
    pending = spreading = None
    for index, arg in enumerate(args):
        more = bool(re.fullmatch(r"\d", arg)) and not os.path.exists(arg)
        if pending:  # the option's own value, whatever it is
            out += [pending, arg]
            pending, spreading = None, (pending if more else None)
        elif spreading and more:
            out += [spreading, arg]
        elif arg == "--":
            return out + args[index:]
        elif arg in SPREAD_OPTIONS:
            pending, spreading = arg, None
        else:
            spreading = None
            out.append(arg)
    return out + ([pending] if pending else [])
