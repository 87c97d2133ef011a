"""Profile a model and write its top regions as problems: the first half of a model run."""

from __future__ import annotations

import re
from pathlib import Path

from kernelpro.atomic_write import write_atomic
from kernelpro.model.extract import ExtractError, region_problem
from kernelpro.model.plan import ModelPlan, RegionEntry
from kernelpro.model.profile import attribute, node_times, observe
from kernelpro.model.regions import partition, trace
from kernelpro.model.roundtrip import round_trip_error
from kernelpro.model.source import ModelSource


class ModelFailed(RuntimeError):
    """The user's model failed to build or to run its forward; the message says how."""


def _on(device: str, values: list) -> list:
    import torch

    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def prepare(source: ModelSource, directory: Path, device: str, top: int, depth: int = 1,
            real_weights: bool = False, repeats: int = 5) -> ModelPlan:
    """The plan of a new model run in ``directory``: every region with its share, the ``top`` largest written as
    problems (a region that cannot stand alone is skipped, with why, and the next one taken)."""
    import torch

    torch.manual_seed(0)
    try:
        model, inputs = source.build()
        model, inputs = model.to(device), _on(device, inputs)
    except Exception as error:  # noqa: BLE001 - the user's code: told as such
        raise ModelFailed(f"the model failed to build ({type(error).__name__}: {error})") from None
    graph_module = trace(model, inputs)
    try:
        infos, _ = observe(graph_module, inputs)
    except Exception as error:  # noqa: BLE001
        raise ModelFailed(f"the traced model failed to run its forward ({type(error).__name__}: {error})") from None
    regions = partition(graph_module, lambda name: infos[name].is_tensor, depth + (1 if source.wrapped else 0))
    profile = attribute(graph_module, regions, node_times(graph_module, inputs, device, repeats))
    entries = [RegionEntry(region=row.region, time_us=row.time_us, share=row.share) for row in profile.regions]
    problems = directory / "problems"
    problems.mkdir(parents=True, exist_ok=True)
    write_atomic(directory / "reference.py", source.reference_source)
    ranked = sorted(entries, key=lambda e: e.share, reverse=True)
    wanted = {name for e in ranked for name in e.region.inputs + e.region.outputs}
    _, values = observe(graph_module, inputs, wanted)
    written = 0
    for entry in ranked:
        if written >= top or entry.share <= 0:
            break
        title = (f"Region {entry.region.name} of {source.name}: {entry.share:.1%} of its forward on {device}. "
                 "Extracted by kernelpro model.")
        try:
            extracted = region_problem(graph_module, entry.region, infos, title, real_weights)
        except ExtractError as error:
            entry.skipped = str(error)
            continue
        if problem := round_trip_error(graph_module, entry.region, extracted.source, values, device):
            entry.skipped = f"the extracted problem does not reproduce the region: {problem}"
            continue
        written += 1
        path = problems / f"r{written:02d}_{re.sub(r'[^A-Za-z0-9]+', '_', entry.region.name).strip('_')}.py"
        write_atomic(path, extracted.source)
        entry.problem = str(path.resolve())
    plan = ModelPlan(name=source.name, directory=directory, device=device, total_us=profile.total_us,
                     regions=entries, modules=profile.modules)
    plan.save()
    return plan
