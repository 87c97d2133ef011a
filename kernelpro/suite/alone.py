"""Problems that ran out of GPU memory beside other problems on their GPU run again, alone on it.

Lanes on one GPU (``suite.lanes_per_gpu`` above 1) share its memory: a problem whose tensors take gigabytes
can run out beside the others' jobs (two KernelBench level-1 problems with 6-7 GiB tensors did, on an H200 with
5-8 lanes). That is the suite's doing, not the problem's, so the driver puts such a problem back (failure kind
``gpu_memory``) and starts it again once no other problem runs on its GPU, starting no other there until it
ends: in practice at the end of the suite. A problem that runs out alone has failed (``gpu_memory``;
``suite run --resume ID --retry gpu_memory`` runs it again, beside the others first). Lanes are told apart by
the GPU their children see (``CUDA_VISIBLE_DEVICES``); lanes that name none (the CPU's, a Ray cluster's) count
as one device.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kernelpro.harness.result import OUT_OF_GPU_MEMORY
from kernelpro.suite.lanes import Lane
from kernelpro.suite.ledger import ProblemRow

KIND = "gpu_memory"


def device_of(lane: Lane) -> str:
    return lane.env.get("CUDA_VISIBLE_DEVICES", "")


def ran_out_beside_others(failure: str, lane_name: str | None, lanes: Iterable[Lane]) -> bool:
    """Whether a failure is the GPU running out of memory on a lane whose GPU other lanes share."""
    if not OUT_OF_GPU_MEMORY.search(failure or ""):
        return False
    lanes = list(lanes)
    mine = next((device_of(lane) for lane in lanes if lane.name == lane_name), None)
    return mine is not None and sum(device_of(lane) == mine for lane in lanes) > 1


def waiting(rows: Iterable[ProblemRow]) -> set[str]:
    """The problems put back to run alone on their GPU."""
    return {row.key for row in rows if row.failure_kind == KIND}


def pick(queue: Iterable[str], needs_alone: Callable[[str], bool], free: list[Lane], busy: dict[str, Lane],
         alone: set[str]) -> tuple[str, Lane] | None:
    """The queued problem to start now, and its lane: a free lane on a GPU where no problem runs alone. A
    problem that must run alone goes only where nothing runs, and only when no other queued problem can start
    (its GPU's other lanes would idle meanwhile). ``alone``: the busy lanes whose problem runs alone."""
    running_on = {device_of(lane) for lane in busy.values()}
    held = {device_of(busy[name]) for name in alone if name in busy}
    open_lanes = [lane for lane in free if device_of(lane) not in held]
    keys = list(queue)
    if (other := next((k for k in keys if not needs_alone(k)), None)) is not None:
        return (other, open_lanes[0]) if open_lanes else None
    quiet = [lane for lane in open_lanes if device_of(lane) not in running_on]
    return (keys[0], quiet[0]) if keys and quiet else None
