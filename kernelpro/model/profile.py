"""Where a model's forward spends its time: torch.profiler over the whole forward, attributed to each graph node,
then to regions and to the module hierarchy.

The traced model runs node by node (a ``torch.fx.Interpreter``), each computing node inside a
``record_function`` range; a node's time is its operators' time inside that range (CPU time on a CPU, kernel
time on a GPU), so the interpreter's own Python is not counted. The same run records what each node's value is
(a tensor's shape, dtype and range), which the regions and the extracted problems are cut to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from kernelpro.model.regions import COMPUTE_OPS, Region, module_paths

RANGE_PREFIX = "kp_node::"


@dataclass(frozen=True)
class ValueInfo:
    """A node's value as the model ran: a tensor's shape, dtype and range, or not a tensor."""

    is_tensor: bool
    shape: tuple[int, ...] = ()
    dtype: str = ""
    low: float = 0.0
    high: float = 0.0


@dataclass
class RegionTime:
    region: Region
    time_us: float
    share: float

    @property
    def ceiling(self) -> float:
        """Amdahl's ceiling: the whole model's speedup were this region free."""
        return math.inf if self.share >= 1.0 else 1.0 / (1.0 - self.share)


@dataclass
class ModelProfile:
    """Per forward: each region's time and share, each module's time, the total."""

    total_us: float
    regions: list[RegionTime]
    modules: dict[str, float] = field(default_factory=dict)

    def top(self, count: int) -> list[RegionTime]:
        return sorted(self.regions, key=lambda r: r.share, reverse=True)[:count]


def value_info(value: Any) -> ValueInfo:
    import torch

    if not isinstance(value, torch.Tensor):
        return ValueInfo(is_tensor=False)
    low = high = 0.0
    if value.numel() and not value.is_floating_point() and not value.is_complex():
        low, high = float(value.min()), float(value.max())
    return ValueInfo(is_tensor=True, shape=tuple(value.shape), dtype=str(value.dtype).replace("torch.", ""),
                     low=low, high=high)


def _interpreter(graph_module: Any, timed: bool, keep: set[str], seen: dict[str, Any], kept: dict[str, Any]):
    import torch
    import torch.fx

    class Recorder(torch.fx.Interpreter):
        def run_node(self, node):
            if timed and node.op in COMPUTE_OPS:
                with torch.profiler.record_function(RANGE_PREFIX + node.name):
                    value = super().run_node(node)
            else:
                value = super().run_node(node)
            if not timed:
                seen[node.name] = value_info(value)
                if node.name in keep:
                    kept[node.name] = value.detach().clone() if isinstance(value, torch.Tensor) else value
            return value

    return Recorder(graph_module)


def observe(graph_module: Any, inputs: list[Any], keep: set[str] = frozenset()) -> tuple[dict[str, ValueInfo],
                                                                                        dict[str, Any]]:
    """One forward node by node: every node's ``ValueInfo``, and the values of the nodes in ``keep``."""
    import torch

    seen: dict[str, ValueInfo] = {}
    kept: dict[str, Any] = {}
    with torch.no_grad():
        _interpreter(graph_module, False, set(keep), seen, kept).run(*inputs)
    return seen, kept


def node_times(graph_module: Any, inputs: list[Any], device: str, repeats: int = 5) -> dict[str, float]:
    """Each computing node's time per forward, microseconds, averaged over ``repeats`` profiled forwards."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    runner = _interpreter(graph_module, True, set(), {}, {})
    with torch.no_grad():
        runner.run(*inputs)  # warm: first-call allocations and lazy initialisation are not the model's time
        if device == "cuda":
            torch.cuda.synchronize()
        with profile(activities=activities) as prof:
            for _ in range(repeats):
                runner.run(*inputs)
            if device == "cuda":
                torch.cuda.synchronize()
    times: dict[str, float] = {}
    for event in prof.events():
        if not event.name.startswith(RANGE_PREFIX):
            continue
        name = event.name[len(RANGE_PREFIX):]
        spent = sum((child.device_time_total if device == "cuda" else child.cpu_time_total)
                    for child in event.cpu_children)
        times[name] = times.get(name, 0.0) + spent / repeats
    return times


def attribute(graph_module: Any, regions: list[Region], times: dict[str, float]) -> ModelProfile:
    """Node times summed into regions (with their share of the whole) and into every module that ran them."""
    total = sum(times.values())
    rows = []
    for region in regions:
        spent = sum(times.get(name, 0.0) for name in region.nodes)
        rows.append(RegionTime(region=region, time_us=spent, share=spent / total if total > 0 else 0.0))
    modules: dict[str, float] = {}
    for node in graph_module.graph.nodes:
        if node.name in times:
            for path in module_paths(node):
                modules[path] = modules.get(path, 0.0) + times[node.name]
    return ModelProfile(total_us=total, regions=rows, modules=modules)
