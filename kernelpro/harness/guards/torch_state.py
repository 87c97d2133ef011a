"""The process-wide state every model call shares: torch's flags, its global module hooks, its mode stacks, the
kernels registered for its operators, Python's trace hooks and collector.

The reference, the float64 oracle and the comparison all run in the candidate's interpreter. A candidate that
changes any of this at import or inside a call changes them too: half-precision defaults that loosen the
tolerance, one thread or no oneDNN for the reference, hooks that rewrite or repeat the reference's forward.
``TorchState.take`` records it once the reference is loaded and before the candidate is; ``changes`` names what
differs (putting back what it can), and the judge rejects any such change as ``judge_patch``. A candidate may
change what it likes inside its own call as long as it restores it before returning.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.library
import torch.nn.modules.module as module_hooks
from torch.backends import ContextProp

# torch._C's getters that are state, not facts about the build or counters that move by themselves.
GETTER_PREFIXES = ("_get_", "_is_", "_are_", "get_", "is_")
VOLATILE_GETTERS = {
    "_get_DTensor_sharding_propagator_cache_stats", "_get_caught_jit_exception_class_name",
    "_get_caught_jit_exception_original_msg", "_get_thread_name", "_get_upgraders_map_size",
    "_get_max_operator_version", "_get_cpu_capability", "_get_privateuse1_backend_name", "_is_tracing",
    "_get_tracing_state", "_is_ck_sdpa_available", "_is_flash_attention_available",
    "_is_default_mobile_cpu_allocator_set", "_get_graph_exec_group",
}
# Settings a candidate may leave changed: cuDNN's benchmark mode only lets cuDNN time its algorithms and keep
# the fastest, for the reference as much as for the candidate.
FREE_SETTINGS = {"torch._C._get_cudnn_benchmark", "torch.backends.cudnn.benchmark"}
# The operators a reference computes with, whose kernels no candidate may replace.
CORE_NAMESPACES = {"aten", "prims"}
HOOK_DICTS = tuple(name for name in vars(module_hooks) if name.startswith("_global_") and
                   isinstance(getattr(module_hooks, name), dict))
PLAIN = (bool, int, float, str, type(None), torch.dtype, tuple)


def _getters() -> dict[str, Callable[[], Any]]:
    """Every argument-free state getter of torch._C and torch.backends that answers a plain value without a
    warning, by the name messages give it."""
    found: dict[str, Callable[[], Any]] = {}
    for name, getter in vars(torch._C).items():
        if name.startswith(GETTER_PREFIXES) and name not in VOLATILE_GETTERS and callable(getter) \
                and not isinstance(getter, type):
            found[f"torch._C.{name}"] = getter
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith("torch.backends") and module is not None:
            for prop, value in vars(type(module)).items():
                if isinstance(value, ContextProp):
                    found[f"{module_name}.{prop}"] = (lambda m=module, p=prop: getattr(m, p))
    found["torch.get_default_device"] = torch.get_default_device
    found["gc.isenabled"], found["gc.get_threshold"] = gc.isenabled, gc.get_threshold
    found["torch function modes"] = torch._C._len_torch_function_stack
    found["torch dispatch modes"] = torch._C._len_torch_dispatch_stack
    found["sys.gettrace"], found["sys.getprofile"] = sys.gettrace, sys.getprofile
    usable = {}
    for name, getter in found.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                value = getter()
            except Exception:  # noqa: BLE001 - a getter that needs arguments or a device is not one of these
                continue
        if not caught and isinstance(value, PLAIN):
            usable[name] = getter
    return usable


_SETTERS: dict[str, Callable[[Any], Any]] = {
    "torch._C.get_default_dtype": torch.set_default_dtype, "torch._C.get_num_threads": torch.set_num_threads,
    "torch._C._get_float32_matmul_precision": torch.set_float32_matmul_precision,
    "torch._C.is_grad_enabled": torch.set_grad_enabled, "torch.get_default_device": torch.set_default_device,
    "gc.get_threshold": lambda value: gc.set_threshold(*value),
}


def _read(getter: Callable[[], Any]) -> Any:
    """The getter's value; torch refuses to answer some after a mix of its old and new setters."""
    try:
        return getter()
    except RuntimeError as exc:
        return f"(unreadable: {str(exc)[:80]})"


def _put_back(name: str, value: Any) -> None:
    """Set ``name`` back to ``value`` where torch has a setter for it (its ``_set_`` twin, say); the verdict does
    not depend on it: the worker is replaced after a candidate that changed any of this."""
    owner, _, attr = name.rpartition(".")
    twin = getattr(torch._C, "_set_" + attr.removeprefix("_get_"), None) if attr.startswith("_get_") else None
    with contextlib.suppress(Exception):
        if name in _SETTERS:
            _SETTERS[name](value)
        elif owner.startswith("torch.backends"):
            setattr(sys.modules[owner], attr, value)
        elif twin is not None:
            twin(*value) if isinstance(value, tuple) else twin(value)


@dataclass
class TorchState:
    """What the judge's calls rely on, recorded with ``take``."""

    getters: dict[str, Callable[[], Any]] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    hooks: dict[str, tuple[tuple[Any, Any], ...]] = field(default_factory=dict)
    impls: frozenset[str] = frozenset()
    operators: frozenset[str] = frozenset()

    @classmethod
    def take(cls) -> TorchState:
        getters = _getters()
        return cls(getters, {name: _read(getter) for name, getter in getters.items()},
                   {name: tuple(getattr(module_hooks, name).items()) for name in HOOK_DICTS},
                   frozenset(torch.library._impls), frozenset(torch._C._dispatch_get_all_op_names()))

    def changes(self, expected: dict[str, Any] | None = None) -> list[str]:
        """What differs from the recorded state, each put back where a setter exists. ``expected`` overrides a
        recorded value where the judge itself holds a different one now (no grad and no collector while timed)."""
        wanted = {**self.values, **(expected or {})}
        changed = []
        for name, getter in self.getters.items():
            now, then = _read(getter), wanted[name]
            if now == then or name in FREE_SETTINGS:
                continue
            changed.append(f"{name} ({then!r} -> {now!r})")
            _put_back(name, then)
        for name, items in self.hooks.items():
            hooks = getattr(module_hooks, name)
            if len(hooks) != len(items) or any(hooks.get(key) is not hook for key, hook in items):
                changed.append(f"torch.nn.modules.module.{name} (a global module hook)")
                hooks.clear()
                hooks.update(items)
        if len(torch.library._impls) != len(self.impls):
            changed += [f"the kernel of {op} (torch.library)" for op in self.overridden_operators()]
        return changed

    def overridden_operators(self) -> list[str]:
        """torch's own operators (``CORE_NAMESPACES``) that got a new kernel through ``torch.library``; the
        candidate's operators (a custom op in a namespace of its own) may have any, and torch's lazily imported
        parts register theirs for operators of namespaces of their own."""
        found = []
        for key in sorted(set(torch.library._impls) - self.impls):
            namespace, name, _key = (key.split("/") + ["", ""])[:3]
            if namespace in CORE_NAMESPACES and f"{namespace}::{name.split('.')[0]}" in self.operators:
                found.append(f"{namespace}::{name}")
        return found
