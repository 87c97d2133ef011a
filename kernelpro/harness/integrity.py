"""Keeps the judge's own tools out of the candidate's reach.

Before any candidate code runs, the worker records the identity of every function the judge and its timers
depend on. ``verify`` compares them afterwards, puts back anything replaced, and reports what was.
"""

from __future__ import annotations

import builtins
import sys
import time
import types
from dataclasses import dataclass, field
from typing import Any

import torch

TIMER_ATTRS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "time": (time, ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns",
                    "process_time", "process_time_ns", "sleep")),
    "torch.cuda": (torch.cuda, ("synchronize", "Event", "Stream", "current_stream", "default_stream", "stream",
                                "set_stream", "empty_cache", "memory_allocated")),
    "torch.cuda.Event": (torch.cuda.Event, ("record", "elapsed_time", "synchronize", "query", "wait")),
    "torch.cuda.Stream": (torch.cuda.Stream, ("synchronize", "wait_event", "wait_stream", "query",
                                              "record_event")),
}
JUDGE_ATTRS: dict[str, tuple[Any, tuple[str, ...]]] = {
    # Not torch.manual_seed: importing torch._dynamo (any torch.compile) wraps it. The judge seeds through
    # torch.random.manual_seed, bound below, which stays protected.
    "torch": (torch, ("allclose", "isclose", "equal", "isfinite", "isnan", "empty", "empty_like",
                      "zeros", "ones", "randn", "rand", "nonzero", "is_tensor", "no_grad", "clone")),
    "torch.Tensor": (torch.Tensor, ("clone", "copy_", "to", "double", "float", "equal", "data_ptr",
                                    "untyped_storage", "__eq__", "__ne__", "__gt__", "__sub__", "abs", "max",
                                    "sum", "any", "all", "norm", "numel", "view", "reshape", "contiguous",
                                    "item", "__bool__", "__float__", "detach", "isfinite", "nan_to_num")),
    "torch.nn.Module": (torch.nn.Module, ("__call__", "_call_impl", "to", "cuda", "forward", "__init__")),
    "torch.random": (torch.random, ("manual_seed", "seed", "initial_seed")),
    "builtins": (builtins, ("isinstance", "issubclass", "type", "id", "len", "getattr", "setattr", "float", "int",
                            "print", "open", "super", "__import__")),
}


# Bound at import, before any candidate code runs: what the judge seeds its generators with.
real_manual_seed = torch.random.manual_seed


@dataclass
class IntegritySnapshot:
    """Identities of protected attributes, keyed by (owner label, attribute name)."""

    attrs: dict[tuple[str, str], tuple[Any, Any]] = field(default_factory=dict)

    def add_namespace(self, label: str, owner: Any, code_only: bool = False) -> None:
        """Protect every attribute an object defines itself (used for the judge's own modules).

        ``code_only``: only functions, classes and modules, for libraries (torch, the standard library) whose
        plain values change lazily in normal use (``torch.cuda._cached_device_count``); a patch that cheats
        replaces code, and the flags a candidate might leave set are reset separately.
        """
        for name, value in list(vars(owner).items()):
            if name.startswith("__"):
                continue
            if code_only and not (callable(value) or isinstance(value, types.ModuleType)):
                continue
            self.attrs[(label, name)] = (owner, value)


def take_snapshot(extra_namespaces: dict[str, Any] | None = None) -> IntegritySnapshot:
    """Record the protected attributes now; call before loading any candidate code."""
    snapshot = IntegritySnapshot()
    for table in (TIMER_ATTRS, JUDGE_ATTRS):
        for label, (owner, names) in table.items():
            for name in names:
                # Absent names are recorded too: defining one on a subclass shadows the base's.
                snapshot.attrs[(label, name)] = (owner, vars(owner).get(name, _MISSING))
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith("kernelpro.") and module is not None:
            snapshot.add_namespace(module_name, module)
    for label, owner in (extra_namespaces or {}).items():
        snapshot.add_namespace(label, owner)
    return snapshot


def verify(snapshot: IntegritySnapshot) -> list[tuple[str, str]]:
    """``[(reason, what)]`` for every protected attribute that changed; each is restored on the way."""
    changed: list[tuple[str, str]] = []
    for (label, name), (owner, original) in snapshot.attrs.items():
        current = vars(owner).get(name, _MISSING)
        if current is original:
            continue
        if original is _MISSING:
            delattr(owner, name)
        else:
            setattr(owner, name, original)
        reason = "timer_patch" if label in TIMER_ATTRS else "judge_patch"
        changed.append((reason, f"{label}.{name}"))
    return changed


_MISSING = object()
