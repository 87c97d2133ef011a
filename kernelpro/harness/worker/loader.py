"""Loading the reference and the candidate inside the worker, with every failure classified."""

from __future__ import annotations

import inspect
import sys
import traceback
import types
from pathlib import Path
from typing import Any

import torch

from kernelpro.harness.guards.handler_probe import HandlerProbe
from kernelpro.harness.guards.integrity import real_manual_seed
from kernelpro.harness.inline_build.worker_side import ExtensionBuildError
from kernelpro.harness.isolation import findings as walls
from kernelpro.harness.result import EvalResult, rejected


class Verdict(Exception):
    """Raised inside the worker to end the evaluation with a result."""

    def __init__(self, result: EvalResult) -> None:
        super().__init__(result.message)
        self.result = result


def verdict(status: str, reason: str, message: str, **extra: Any) -> Verdict:
    return Verdict(EvalResult(status=status, reason=reason, message=message, **extra))


def short_traceback(exc: BaseException, filename: str, limit: int = 6) -> str:
    """The exception and the frames in ``filename`` (the user's file), not the judge's."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    lines = [f"  {Path(f.filename).name}:{f.lineno} in {f.name}: {f.line}" for f in frames[-limit:]]
    summary = f"{type(exc).__name__}: {exc}".strip()
    if len(summary) > 2000:
        summary = summary[:2000] + " ..."
    return "\n".join([summary, *lines])


def load_module(name: str, source: str, path: Path, probe: HandlerProbe | None = None) -> types.ModuleType:
    """Execute ``source`` as a fresh module that is not registered in ``sys.modules``; with ``probe``, its
    exception handlers instrumented."""
    path.write_text(source, encoding="utf-8")
    module = types.ModuleType(name)
    module.__file__ = str(path)
    code = probe.compile(source, str(path)) if probe else compile(source, str(path), "exec")
    if probe:
        probe.install(module.__dict__)
    sys.modules[name] = module  # some libraries (triton, dataclasses) look a module up while it runs
    try:
        exec(code, module.__dict__)
    finally:
        sys.modules.pop(name, None)
    return module


def load_reference(source: str, workdir: Path) -> types.ModuleType:
    path = workdir / "reference.py"
    try:
        module = load_module("kernelpro_reference", source, path)
    except BaseException as exc:  # noqa: BLE001 - anything the problem's code raises is reported
        raise verdict("runtime_error", "reference_failed",
                      f"the reference failed to load: {short_traceback(exc, str(path))}") from None
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise verdict("runtime_error", "reference_failed", f"the reference defines no {name}")
    return module


def load_candidate(source: str, workdir: Path, probe: HandlerProbe | None = None) -> type:
    """The candidate's ``ModelNew`` class; every way this can fail becomes a ``compile_error`` verdict."""
    path = workdir / "candidate.py"
    try:
        module = load_module("kernelpro_candidate", source, path, probe)
    except SyntaxError as exc:
        raise verdict("compile_error", "not_python",
                      f"not valid Python: line {exc.lineno}: {exc.msg}") from None
    except SystemExit as exc:
        raise verdict("compile_error", "exit_at_import",
                      f"the candidate called exit({exc.code!r}) while being imported") from None
    except MemoryError:
        raise verdict("runtime_error", "memory_limit", "ran out of memory while being imported") from None
    except ExtensionBuildError as exc:
        raise verdict("compile_error", "kernel_compile_error", str(exc)) from None
    except BaseException as exc:  # noqa: BLE001
        if hit := walls.findings_for(exc):
            raise Verdict(rejected(hit)) from None
        raise verdict("compile_error", "import_error",
                      f"importing the candidate failed: {short_traceback(exc, str(path))}") from None
    model_new = getattr(module, "ModelNew", None)
    if model_new is None:
        raise verdict("compile_error", "missing_model_new", "the candidate defines no ModelNew")
    if not (isinstance(model_new, type) and issubclass(model_new, torch.nn.Module)):
        raise verdict("compile_error", "missing_model_new",
                      f"ModelNew must be a torch.nn.Module subclass, got {type(model_new).__name__}")
    return model_new


def check_signature(model_new: type, init_inputs: list[Any], reference_cls: type) -> None:
    """ModelNew must accept the same constructor arguments as Model (``get_init_inputs()``)."""
    try:
        inspect.signature(model_new).bind(*init_inputs)
    except TypeError as exc:
        expected = inspect.signature(reference_cls)
        raise verdict("compile_error", "bad_signature",
                      f"ModelNew{inspect.signature(model_new)} cannot be built from get_init_inputs() "
                      f"({len(init_inputs)} argument(s), as Model{expected}): {exc}") from None
    except ValueError:
        pass  # no introspectable signature: construction will tell


def build(cls: type, init_inputs: list[Any], seed: int, device: torch.device, path: Path,
          failure_reason: str = "init_failed") -> torch.nn.Module:
    """Construct a model under ``seed``, so parameters created in the same order match between models."""
    real_manual_seed(seed)
    try:
        return cls(*init_inputs).to(device)
    except SystemExit as exc:
        raise verdict("runtime_error", "exit_called", f"{cls.__name__}() called exit({exc.code!r})") from None
    except MemoryError:
        raise verdict("runtime_error", "memory_limit", f"{cls.__name__}() ran out of memory") from None
    except ExtensionBuildError as exc:  # a load_inline in __init__
        raise verdict("compile_error", "kernel_compile_error", str(exc)) from None
    except BaseException as exc:  # noqa: BLE001
        if failure_reason != "reference_failed" and (hit := walls.findings_for(exc)):
            raise Verdict(rejected(hit)) from None
        raise verdict("runtime_error", failure_reason,
                      f"{cls.__name__}(*get_init_inputs()) failed: {short_traceback(exc, str(path))}") from None
