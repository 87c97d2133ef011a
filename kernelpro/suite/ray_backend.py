"""The Ray backend (``--ray auto|local|ADDRESS``; ``pip install -e ".[ray]"``): problems scheduled over a Ray
cluster, one actor per lane (``num_gpus=1`` each on a GPU cluster), the driver holding the ledger.

An actor runs a problem's job exactly as a local lane does (``suite.job.run_job``: ``kernelpro optimize``, which
judges the baselines first, in a child process on the actor's node, which dies with it), so the suite directory must
be on storage every node sees. When an actor or its node is lost mid-problem, the problem comes back as
``lost``; the driver starts it again on a new actor, where ``optimize --resume`` continues its run from the
checkpoint.
"""

from __future__ import annotations

import itertools
from typing import Any

from kernelpro.config import Settings
from kernelpro.suite.job import JobOutcome, JobSpec
from kernelpro.suite.lanes import Lane


class RayUnavailable(RuntimeError):
    """Ray is not installed, or no cluster could be reached."""


class ProblemWorker:
    """A Ray actor that runs one problem's job at a time."""

    def run(self, spec: dict[str, Any]) -> dict[str, Any]:
        from kernelpro.suite.job import JobSpec, run_job

        return run_job(JobSpec.model_validate(spec)).model_dump()

    def pid(self) -> int:
        import os

        return os.getpid()


class RayBackend:
    name = "ray"

    def __init__(self, ray: Any, lanes: list[Lane]) -> None:
        self.ray, self.lanes = ray, lanes
        self._generation = itertools.count()
        self.actors: dict[str, Any] = {}
        self._running: dict[str, tuple[Any, str]] = {}  # lane -> (object ref, problem key)

    @classmethod
    def connect(cls, address: str, device: str, settings: Settings) -> RayBackend:
        """Join the cluster at ``address`` (``auto``: a running one; ``local``: start one here), or use the one
        this process already joined; one lane per GPU of the cluster, or ``suite.cpu_lanes`` on CPUs."""
        try:
            import ray
        except ImportError as error:
            raise RayUnavailable('--ray needs Ray: pip install -e ".[ray]"') from error
        if not ray.is_initialized():
            try:
                ray.init(address=None if address == "local" else address, include_dashboard=False,
                         log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as error:
                raise RayUnavailable(f"could not reach a Ray cluster at {address!r}: {error}") from error
        if device == "cuda":
            gpus = int(ray.cluster_resources().get("GPU", 0))
            if gpus < 1:
                raise RayUnavailable("the Ray cluster has no GPUs; run on --device cpu or add GPU nodes")
            per_gpu = settings.suite.lanes_per_gpu  # a share of a GPU each; the device lock takes turns
            lanes = [Lane(name=f"ray{i}", gpus=1 / per_gpu, env={"KERNELPRO_HARNESS__GPU_DEVICES": "[0]"})
                     for i in range(gpus * per_gpu)]  # Ray sets each actor's CUDA_VISIBLE_DEVICES to its GPU
        else:
            lanes = [Lane(name=f"ray{i}") for i in range(settings.suite.cpu_lanes)]
        return cls(ray, lanes)

    def _actor(self, lane: Lane) -> Any:
        if lane.name not in self.actors:
            remote = self.ray.remote(ProblemWorker).options(
                num_gpus=lane.gpus, num_cpus=1, max_restarts=0, max_concurrency=1,
                name=f"kernelpro-{lane.name}-{next(self._generation)}")
            self.actors[lane.name] = remote.remote()
        return self.actors[lane.name]

    def start(self, spec: JobSpec, lane: Lane) -> None:
        ref = self._actor(lane).run.remote(spec.model_dump())
        self._running[lane.name] = (ref, spec.key)

    def wait(self, timeout_s: float) -> list[tuple[str, JobOutcome]]:
        if not self._running:
            return []
        by_ref = {ref: lane for lane, (ref, _) in self._running.items()}
        ready, _ = self.ray.wait(list(by_ref), num_returns=1, timeout=timeout_s)
        finished = []
        for ref in ready:
            lane = by_ref[ref]
            _, key = self._running.pop(lane)
            finished.append((lane, self._outcome(ref, key, lane)))
        return finished

    def _outcome(self, ref: Any, key: str, lane: str) -> JobOutcome:
        from ray.exceptions import RayActorError

        try:
            return JobOutcome.model_validate(self.ray.get(ref))
        except RayActorError as error:  # the actor or its node is gone: a new actor takes the lane
            self.actors.pop(lane, None)
            return JobOutcome(key=key, ok=False, failure_kind="lost",
                              failure=f"the Ray actor running it was lost ({type(error).__name__})")
        except Exception as error:  # noqa: BLE001 - anything else the job raised is the problem's failure
            return JobOutcome(key=key, ok=False, failure_kind="crash",
                              failure=f"the Ray task failed ({type(error).__name__}: {str(error)[:300]})")

    def close(self) -> None:
        for actor in self.actors.values():
            self.ray.kill(actor)
        self.actors.clear()
