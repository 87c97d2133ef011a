"""The second opinion's process: ``python -m kernelpro.harness.timing.second_opinion_worker RESULT_FD``, the job
on stdin.

It times the reference and one candidate (a run's best) by a method of its own, sharing nothing with the
judge's timer (``timing``, ``clocks``, ``stats``) but the loading of the two modules: rounds that alternate
which model goes first, each call on inputs drawn afresh from ``get_inputs()`` under a seed from the OS, and
each call's time the host's clock around the call and a device synchronisation (an L2-sized write before it on
CUDA, so no call finds the last one's data in the cache). It answers the raw times; the judge's side does the
arithmetic (``timing.second_opinion_stats``).

The candidate's code runs here, so the process is walled in as the judge's worker is (``worker.isolate``, its
environment, its device preparation), before any of that code runs. It speaks to the judge only through
RESULT_FD, one JSON object a line with the job's nonce: ``{"phase": ...}`` as it goes, ``{"result": ...}`` at
the end, whose ``status`` is ``measured`` (with ``reference_ns`` and ``candidate_ns``), ``failed`` (the
candidate) or ``unavailable`` (anything else).
"""

from __future__ import annotations

import gc
import json
import os
import resource
import secrets
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Bound before any candidate code runs.
_clock_ns = time.perf_counter_ns
_randbits = secrets.randbits
_gc_collect, _gc_disable = gc.collect, gc.disable

METHOD = "host clock around each call and a device synchronisation; fresh inputs per call; alternating rounds"


class CandidateFailed(Exception):
    """The candidate failed where the judge had found it correct: no figure, and a best that cannot count."""


class Unavailable(Exception):
    """No figure, for a reason that is not the candidate's (the reference, the machine)."""


def _to_device(value: Any, device: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, device) for v in value)
    return value


class Bench:
    """The two models built alike, and the plain loop that times them."""

    def __init__(self, job: dict[str, Any], workdir: Path, emit: Callable[[dict[str, Any]], None]) -> None:
        import torch

        from kernelpro.harness.worker.loader import Verdict, build, load_candidate, load_reference

        self.torch, self.device = torch, torch.device(job["device"])
        self.cuda = self.device.type == "cuda"
        self._seed = torch.manual_seed
        self._sync = torch.cuda.synchronize if self.cuda else (lambda *_: None)
        seed = int(job["seeds"]["init"])
        emit({"phase": "load_reference"})
        try:
            module = load_reference(job["reference_source"], workdir)
            self.get_inputs = module.get_inputs
            init_inputs = list(module.get_init_inputs())
            self.reference = build(module.Model, init_inputs, seed, self.device, workdir / "reference.py",
                                   "reference_failed")
        except Verdict as verdict:
            raise Unavailable(f"the reference: {verdict.result.message}") from None
        emit({"phase": "load_candidate"})
        try:
            model_new = load_candidate(job["candidate_source"], workdir)
            self.candidate = build(model_new, init_inputs, seed, self.device, workdir / "candidate.py")
        except Verdict as verdict:
            raise CandidateFailed(verdict.result.message) from None
        self.flush = None
        if not self.cuda:  # as many threads as a CPU judgment takes, so both time the same configuration
            from kernelpro.harness.cpu_load import choose_threads, sample_load

            torch.set_num_threads(choose_threads(int(job["harness"].get("cpu_threads", 0)), sample_load()))
        if self.cuda:
            l2 = getattr(torch.cuda.get_device_properties(self.device), "L2_cache_size", 0) or (64 << 20)
            self.flush = torch.empty(4 * l2, dtype=torch.int8, device=self.device)

    def inputs(self) -> list[Any]:
        """One input set, drawn under a seed from the OS."""
        self._seed(_randbits(62))
        return list(_to_device(list(self.get_inputs()), self.device))

    def call_ns(self, name: str, model: Any) -> int:
        """One call's time: its inputs drawn and the cache flushed first, outside the clock."""
        inputs = self.inputs()
        if self.flush is not None:
            self.flush.zero_()
        self._sync()
        start = _clock_ns()
        try:
            out = model(*inputs)
            self._sync()
        except Exception as exc:  # noqa: BLE001 - which model failed decides what it means
            if name == "candidate":
                raise CandidateFailed(f"a timed call raised {type(exc).__name__}: {exc}") from None
            raise Unavailable(f"the reference's timed call raised {type(exc).__name__}: {exc}") from None
        elapsed = _clock_ns() - start
        del out
        return elapsed

    def rounds(self, plan: dict[str, Any]) -> dict[str, Any]:
        """Warm-up calls, then paired rounds until ``rounds`` or, past ``min_rounds``, ``budget_s``."""
        models = {"reference": self.reference, "candidate": self.candidate}
        times: dict[str, list[int]] = {"reference": [], "candidate": []}
        with self.torch.no_grad():
            for _ in range(int(plan["warmup"])):
                for name, model in models.items():
                    self.call_ns(name, model)
            _gc_disable()
            started = _clock_ns()
            for index in range(int(plan["rounds"])):
                order = ["reference", "candidate"] if index % 2 == 0 else ["candidate", "reference"]
                for name in order:
                    times[name].append(self.call_ns(name, models[name]))
                _gc_collect(0)
                if index + 1 >= int(plan["min_rounds"]) and _clock_ns() - started > float(plan["budget_s"]) * 1e9:
                    break
        return {"status": "measured", "reference_ns": times["reference"], "candidate_ns": times["candidate"],
                "method": METHOD}


def measure(job: dict[str, Any], workdir: Path, emit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """The answer for the judge, whatever happens."""
    try:
        bench = Bench(job, workdir, emit)
        emit({"phase": "timing"})
        return bench.rounds(job["second_opinion"])
    except CandidateFailed as failure:
        return {"status": "failed", "message": str(failure)}
    except Unavailable as why:
        return {"status": "unavailable", "message": str(why)}
    except BaseException as exc:  # noqa: BLE001 - the judge must always get an answer
        return {"status": "unavailable", "message": f"the second opinion failed: {type(exc).__name__}: {exc}"}


def main() -> None:
    from kernelpro.harness.worker import process as worker

    result_fd = int(sys.argv[1])
    job: dict[str, Any] = json.loads(sys.stdin.read())
    nonce = job.pop("nonce")
    job["isolation"] = worker.isolate(job)
    channel = os.fdopen(result_fd, "w", buffering=1)

    def emit(message: dict[str, Any]) -> None:
        channel.write(json.dumps({"nonce": nonce, **message}) + "\n")
        channel.flush()

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    worker.die_with_parent()
    worker.apply_job_environment(job)
    emit({"phase": "start"})
    if refusal := worker.missing_walls(job, job["isolation"]):
        emit({"result": {"status": "unavailable", "message": refusal}})
        os._exit(0)
    if job["device"].startswith("cuda"):
        worker.prepare_device(job["device"], job["harness"]["gpu_memory_fraction"], job["isolation"])
    else:
        worker.limit_address_space(job["harness"]["memory_limit_mb"])
    emit({"result": measure(job, Path.cwd(), emit)})
    channel.close()
    os._exit(0)  # a candidate's thread or atexit hook must not hold the process


if __name__ == "__main__":
    main()
