"""Keeps the judge's own tools out of the candidate's reach.

Before any candidate code runs, the worker records the identity of every function the judge and its timers
depend on. ``verify`` compares them afterwards, puts back anything replaced, and reports what was.
"""

from __future__ import annotations

import builtins
import operator
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


# The torch namespaces the reference, the oracle and the comparison call into: every loaded module under these,
# each class they define (its methods, and no method added to it) included.
TORCH_ROOTS = ("torch.nn", "torch.linalg", "torch.fft", "torch.special", "torch.autograd", "torch.random",
               "torch.functional", "torch._tensor", "torch.overrides", "torch.cuda", "torch.backends")
# Whose classes' methods are watched: the modules and tensors the reference is made of and called with.
CLASS_ROOTS = ("torch.nn.", "torch._tensor", "torch.autograd.grad_mode", "torch.autograd.function",
               "torch.functional", "torch.overrides")
# Replaced lazily by torch itself: importing torch._dynamo wraps torch.manual_seed (the judge seeds through
# torch.random.manual_seed, bound below).
LAZILY_REPLACED = {("torch", "manual_seed"), ("torch", "Storage")}  # Storage follows the default dtype
IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE
CLASS_LAYOUT = {"__doc__", "__dict__", "__weakref__", "__module__", "__slots__", "__annotations__", "__parameters__",
                "__orig_bases__", "__abstractmethods__", "_abc_impl"}


@dataclass(frozen=True)
class WatchedNamespace:
    """One namespace's code entries, checked in one pass: ``owner``'s live ``vars`` must still map each of
    ``names`` to the same object and, for a class (``size`` given), hold no name it did not hold."""

    label: str
    owner: Any
    names: tuple[str, ...]
    values: tuple[Any, ...]
    size: int | None
    pick: Any = None  # operator.itemgetter of ``names``, made once

    def __post_init__(self) -> None:
        object.__setattr__(self, "pick", operator.itemgetter(*self.names))

    def changed(self) -> list[str]:
        """The names replaced or added, each put back as it was."""
        entries = vars(self.owner)
        try:  # one pass in C; a tuple compares its items by identity first, so unchanged code costs no __eq__
            same = self.pick(entries) == self.values
        except KeyError:
            same = False
        if same and (self.size is None or len(entries) == self.size):
            return []
        changed = []
        for name, value in zip(self.names, self.values, strict=True):
            if entries.get(name) is not value:
                changed.append(name)
                setattr(self.owner, name, value)
        if self.size is not None:
            for name in set(entries) - set(self.names) - CLASS_LAYOUT:
                changed.append(name)
                delattr(self.owner, name)
        return changed


@dataclass
class IntegritySnapshot:
    """Identities of protected attributes, keyed by (owner label, attribute name)."""

    attrs: dict[tuple[str, str], tuple[Any, Any]] = field(default_factory=dict)
    namespaces: list[WatchedNamespace] = field(default_factory=list)
    _groups: list[tuple[Any, Any, tuple[Any, ...], list[tuple[str, str]]]] = field(default_factory=list)
    _groups_for: int = -1

    def add_torch_namespaces(self) -> None:
        """Every function, class and module the torch namespaces the judge and the reference use hold, and the
        methods of every class among them, each class once."""
        modules = [(name, module) for name, module in list(sys.modules.items()) if module is not None and (
            name == "torch" or any(name == root or name.startswith(root + ".") for root in TORCH_ROOTS))]
        seen: set[int] = {id(torch.Tensor)}
        self._add_class(torch.Tensor)  # its __module__ says "torch"
        for name, module in modules:
            entries = vars(module)
            names = tuple(k for k, v in list(entries.items()) if not k.startswith("__")
                          and (name, k) not in LAZILY_REPLACED and (callable(v) or isinstance(v, types.ModuleType)))
            if len(names) > 1:  # itemgetter gives a tuple from two names on
                self.namespaces.append(WatchedNamespace(name, module, names, tuple(entries[k] for k in names), None))
            for value in (entries[k] for k in names):
                if isinstance(value, type) and id(value) not in seen and str(value.__module__).startswith(CLASS_ROOTS):
                    seen.add(id(value))
                    self._add_class(value)

    def _add_class(self, cls: type) -> None:
        if cls.__flags__ & IMMUTABLE_TYPE:  # nothing can be set on it (torch.FloatTensor and the like)
            return
        entries = cls.__dict__
        names = tuple(k for k in list(entries) if k not in CLASS_LAYOUT)
        if len(names) > 1:
            self.namespaces.append(WatchedNamespace(f"{cls.__module__}.{cls.__qualname__}", cls, names,
                                                tuple(entries[k] for k in names), len(entries)))

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


def take_snapshot(extra_namespaces: dict[str, Any] | None = None, torch_namespaces: bool = False
                  ) -> IntegritySnapshot:
    """Record the protected attributes now; call before loading any candidate code. ``torch_namespaces``: the
    torch namespaces too (``add_torch_namespaces``)."""
    snapshot = IntegritySnapshot()
    if torch_namespaces:
        snapshot.add_torch_namespaces()
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


def _suspects(snapshot: IntegritySnapshot) -> list[tuple[str, str]]:
    """The keys of ``attrs`` to look at one by one: those of owners not shown unchanged in one pass
    (``WatchedNamespace``'s way), and the names recorded as absent. The groups are made again when ``attrs``
    grew (``add_namespace`` after the snapshot)."""
    if snapshot._groups_for != len(snapshot.attrs):
        groups: dict[int, tuple[Any, list[tuple[str, str]], list[Any]]] = {}
        for key, (owner, original) in snapshot.attrs.items():
            entry = groups.setdefault(id(owner) if original is not _MISSING else id(key), (owner, [], []))
            entry[1].append(key)
            entry[2].append(original)
        snapshot._groups = [(owner, operator.itemgetter(*(name for _, name in keys)) if len(keys) > 1 else None,
                             tuple(values), keys) for owner, keys, values in groups.values()]
        snapshot._groups_for = len(snapshot.attrs)
    suspects = []
    for owner, pick, values, keys in snapshot._groups:
        try:
            if pick is not None and pick(vars(owner)) == values:
                continue
        except KeyError:
            pass
        suspects += keys
    return suspects


def verify(snapshot: IntegritySnapshot) -> list[tuple[str, str]]:
    """``[(reason, what)]`` for every protected attribute that changed; each is restored on the way."""
    changed: list[tuple[str, str]] = []
    for label, name in _suspects(snapshot):
        owner, original = snapshot.attrs[(label, name)]
        current = vars(owner).get(name, _MISSING)
        if current is original:
            continue
        if original is _MISSING:
            delattr(owner, name)
        else:
            setattr(owner, name, original)
        reason = "timer_patch" if label in TIMER_ATTRS else "judge_patch"
        changed.append((reason, f"{label}.{name}"))
    for namespace in snapshot.namespaces:
        changed += [("judge_patch", f"{namespace.label}.{name}") for name in namespace.changed()]
    return changed


_MISSING = object()
