"""One candidate's job, from the judge's side: the checks before any process, the job, the verdict after.

Static checks run here, in the caller's process, on the source alone; everything that executes the
candidate's code runs in a worker process (fresh or long-lived), whose death or silence is classified here.
"""

from __future__ import annotations

import ast
import contextlib
import os
import secrets
import signal
import site
import sys
from pathlib import Path
from typing import Any

from kernelpro.config import KERNELPRO_HOME, Settings
from kernelpro.harness.footprint import PROBLEM_TOO_BIG, reference_out_of_memory
from kernelpro.harness.guards.static import scan_source
from kernelpro.harness.isolation.cuda_walls import cuda_confinement
from kernelpro.harness.result import CUT_AT_DEADLINE, EvalResult, GuardFinding, rejected
from kernelpro.harness.worker.dirs import caller_caches, worker_root
from kernelpro.harness.worker.sandbox import PACKAGE_ROOT, WorkerOutcome
from kernelpro.problem import Problem, module_level_names


def resolve_device(device: str) -> str:
    """``auto`` becomes ``cuda`` when PyTorch sees a GPU, else ``cpu``."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def precheck(source: str) -> EvalResult | list[GuardFinding]:
    """Cheap checks before any process starts: a compile error, a static rejection, or the findings."""
    if "\x00" in source:
        return EvalResult(status="compile_error", reason="not_python", message="not Python source (binary data)")
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return EvalResult(status="compile_error", reason="not_python",
                          message=f"not valid Python: line {exc.lineno}: {exc.msg}")
    if "ModelNew" not in module_level_names(tree):
        return EvalResult(status="compile_error", reason="missing_model_new",
                          message="the candidate defines no ModelNew (a torch.nn.Module built like Model)")
    findings = scan_source(source)
    if any(f.severity == "reject" for f in findings):
        return rejected(findings)
    return findings


def protected_paths(settings: Settings) -> list[str]:
    """The directories a worker may read but never write (``isolation.mounts``).

    The judge's: the run directories (checkpoints, results, reports), the chats' threads,
    ``harness.protected_dirs`` (a suite's ledger), kernelpro's home (the search memory, the judged-candidate
    dataset), kernelpro's cache root (the baselines' verdicts) and the caches the judge builds into (compiled
    kernels, load_inline extensions), so no candidate can edit a verdict or plant a module that a later candidate
    would load. And what the user's next program runs:
    the Python installation (a ``.pth`` file in site-packages runs in every Python started after, the kernelpro
    CLI with its provider's key included), kernelpro's own source, HOME (``~/.bashrc``, ``~/.config``), the
    caller's compile caches (``worker.dirs.caller_caches``) and the directory every worker's own is made in."""
    owned = [Path(p).expanduser() for p in (KERNELPRO_HOME, settings.memory.path, settings.compile.cache_dir,
                                            settings.cache.root)]
    if settings.compile.inline_cache:
        owned.append(settings.compile.inline_cache_dir.expanduser())
    owned += [*caller_caches(), worker_root()]
    for path in owned:  # made now: a directory that does not exist yet cannot be mounted read-only, and a
        with contextlib.suppress(OSError):  # candidate could create it first and plant in it
            path.mkdir(parents=True, exist_ok=True)
    others = [settings.runs_dir, settings.chat.dir, *settings.harness.protected_dirs, *python_installation(),
              PACKAGE_ROOT, Path.home()]
    return [str(p.resolve()) for p in dict.fromkeys([*(Path(o).expanduser() for o in others), *owned])]


def python_installation() -> list[str]:
    """Every directory Python starts from: its prefixes, every site-packages directory (the user's too), and
    what else is on ``sys.path``."""
    prefixes = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]
    sites = [*site.getsitepackages(), site.getusersitepackages()]
    return [*prefixes, *sites, *(p for p in sys.path if os.path.isabs(p) and os.path.isdir(p))]


def make_job(problem: Problem, candidate_source: str, device: str, settings: Settings,
             timing: bool = True) -> dict[str, Any]:
    """The worker's instructions. The seeds of the model's weights and of the problem check come from the OS's
    secure generator; the inputs the candidate is judged on are drawn in the worker as each set or round begins
    (``input_draws``), so the job holds nothing that tells them."""

    def seeds(n: int) -> list[int]:
        return [secrets.randbits(62) for _ in range(n)]

    protected = protected_paths(settings)
    return {
        "reference_source": problem.source,
        "candidate_source": candidate_source,
        "device": device,
        "timing": timing,
        # without the judge's name: a judge registered at run time is known in this process only, and the
        # worker, judging as it is told, has no use for it
        "harness": settings.harness.model_dump(mode="json", exclude={"backend"}),
        "compile": settings.compile.model_dump(mode="json"),  # so kernelpro.runtime in the worker shares the cache
        "protected_paths": protected,
        **cuda_confinement(device, settings.harness, protected),
        "seeds": {"init": secrets.randbits(62),
                  "problem": seeds(4)},  # the reference alone: does its output vary (problem_checks)
    }


def classify(outcome: WorkerOutcome, settings: Settings) -> EvalResult:
    """Turn what came back from the worker into a verdict, including when nothing did."""
    if outcome.result is not None:
        result = EvalResult.model_validate(outcome.result)
    elif outcome.timed_out and outcome.cut_by_caller:
        result = EvalResult(status="timeout", reason=CUT_AT_DEADLINE,
                            message=f"not judged: stopped {outcome.time_limit} during {outcome.last_phase}")
    elif outcome.timed_out:
        result = EvalResult(status="timeout", reason="wall_time",
                            message=f"no result {outcome.time_limit or f'within {settings.harness.timeout_s:g} s'} "
                                    f"(stopped during {outcome.last_phase})")
    elif outcome.memory_exceeded_mb is not None and outcome.last_phase == "load_reference":  # before any candidate
        result = EvalResult(status="runtime_error", reason=PROBLEM_TOO_BIG, message=reference_out_of_memory(
            f"while loading and first called (the worker used {outcome.memory_exceeded_mb:.0f} MB)", None,
            settings.harness.memory_limit_mb))
    elif outcome.memory_exceeded_mb is not None:
        result = EvalResult(status="runtime_error", reason="memory_limit",
                            message=f"used {outcome.memory_exceeded_mb:.0f} MB of host memory, over the "
                                    f"{settings.harness.memory_limit_mb} MB limit (during {outcome.last_phase})")
    elif outcome.returncode is not None and outcome.returncode < 0:
        name = signal.Signals(-outcome.returncode).name
        result = EvalResult(status="runtime_error", reason="crashed",
                            message=f"the worker died from {name} during {outcome.last_phase}")
    else:
        result = EvalResult(status="runtime_error", reason="exited",
                            message=f"the worker exited with code {outcome.returncode} during "
                                    f"{outcome.last_phase} without a result (os._exit or native code)")
    result.correctness_profile = settings.harness.correctness_profile  # the judge's word, not the worker's
    result.worker_output = outcome.output_tail
    result.elapsed_s = round(outcome.elapsed_s, 3)
    if outcome.output_bytes > len(outcome.output_tail.encode()):
        result.details["output_bytes"] = outcome.output_bytes
    return result
