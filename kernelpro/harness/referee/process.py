"""The referee: ``python -m kernelpro.harness.referee.process RESULT_FD`` and, per model (reference, then
candidate), the
pipe to it, the pipe from it and the shared memory each way (``referee.wire``); the job as JSON on stdin.
The trusted side of a judgment, in a process that never loads candidate code.

It holds the input generator (a seed from the OS for every set and round: the reference's ``get_inputs`` runs
here), the comparison, the float64 oracle's verdict and the report. Each model lives in a process of its own
(``referee.model_server``, the same code for both), which gets each set's inputs written into its tensors and sends its
outputs back as bytes: nothing the candidate does in its process can change what the reference computes, what
the comparison allows, what the inputs will be, or what this process reports. Both models are timed by the same
clock, each in its own process, in rounds this process interleaves, and every call is also timed from outside
(``referee.timing.timer_check``).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import torch

from kernelpro.config import HarnessSettings
from kernelpro.harness import cpu_load
from kernelpro.harness.guards import memory_floor
from kernelpro.harness.guards.compare import Mismatch, compare_outputs
from kernelpro.harness.guards.precision import checks_precision, judge_precision, reference_noise
from kernelpro.harness.guards.timed_checks import TimedCallChecks
from kernelpro.harness.input_draws import fresh_seed, placed, reseed_from_os
from kernelpro.harness.judge_values import frozen_noise, judge_limits, widest_noise
from kernelpro.harness.referee.timing import (
    ModelFailed,
    ModelLink,
    RemoteClock,
    RemoteModel,
    on_device,
    timer_check,
)
from kernelpro.harness.referee.wire import Arena, CannotCarry
from kernelpro.harness.timing import stats
from kernelpro.harness.timing.clocks import CpuClock, CudaClock
from kernelpro.harness.timing.rounds import run_timing
from kernelpro.harness.timing.scorecards import kernelbench_score
from kernelpro.harness.worker.correctness import InputSet
from kernelpro.harness.worker.loader import Verdict, load_reference
from kernelpro.harness.worker.model_calls import all_finite

ECHOES = 15


class Finding(Exception):
    """The referee's verdict on the candidate, reached before the end: ``status``, ``reason``, ``message``."""

    def __init__(self, status: str, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message


class Referee:
    def __init__(self, job: dict[str, Any], links: dict[str, ModelLink], emit: Any) -> None:
        self.job, self.links, self.emit = job, links, emit
        self.settings = HarnessSettings.model_validate(job["harness"])
        self.device = torch.device(job["device"])
        self.limits = judge_limits(self.settings)
        self.workdir = Path.cwd()
        self.started = time.perf_counter()
        self.draw_on_device = True
        self.models = {name: RemoteModel(link, self.device) for name, link in links.items()}

    def phase(self, name: str) -> None:
        self.emit({"phase": f"referee: {name}"})

    def judge(self) -> dict[str, Any]:
        try:
            return self._judge()
        except Finding as found:
            return {"status": found.status, "reason": found.reason, "message": found.message}
        except ModelFailed as failed:
            if failed.who == "reference":  # the reference's own failure: nothing about the candidate was decided
                return {"status": "error", "reason": "reference_failed", "message": f"the reference: {failed}"}
            return {"status": failed.status, "reason": failed.reason,
                    "message": f"in its own process, under the referee: {failed}"}
        except Verdict as failure:  # the reference's module, here
            return {"status": "error", "reason": failure.result.reason, "message": failure.result.message}
        except CannotCarry as exc:  # the problem's inputs hold values that do not cross between processes
            return {"status": "unavailable", "reason": "referee_unavailable",
                    "message": f"the referee could not pass the problem's values to the models' processes: {exc}"}

    def _judge(self) -> dict[str, Any]:
        self.phase("load")
        threads = self.choose_threads()
        self.module = load_reference(self.job["reference_source"], self.workdir)  # its inputs; never its Model
        init_inputs = list(self.module.get_init_inputs())
        seed = self.job["seeds"]["init"]
        self.links["reference"].load(init_inputs, seed, threads)
        warm_inputs = self.make_inputs(fresh_seed())
        warm = self.models["reference"](*warm_inputs)
        self.links["candidate"].expect_outputs(warm)
        self.traffic_bytes = memory_floor.compulsory_bytes(warm_inputs, warm)
        del warm, warm_inputs
        self.links["candidate"].load(init_inputs, seed, threads)
        checked, noise = self.check_sets()
        report: dict[str, Any] = {"status": "ok", "reason": None, "sets_checked": checked}
        if self.job.get("timing", True):
            self.time_models(noise, report)
        report["elapsed_s"] = round(time.perf_counter() - self.started, 3)
        return report

    def choose_threads(self) -> int | None:
        """On the CPU, both models get the same threads, chosen as the worker chooses them (``cpu_load``)."""
        if self.device.type != "cpu":
            return None
        return cpu_load.choose_threads(self.settings.cpu_threads, cpu_load.sample_load())

    def make_inputs(self, seed: int, scale: float | None = None, shift: float | None = None) -> list[Any]:
        """``get_inputs()`` under ``seed`` (on the GPU where it can draw there, as the worker does), scaled or
        shifted; the generators reseeded from the OS after."""
        try:
            inputs = self.draw(seed)
        finally:
            reseed_from_os()
        return placed(inputs, self.device, scale, shift)

    def draw(self, seed: int) -> list[Any]:
        if self.device.type == "cuda" and self.draw_on_device:
            torch.manual_seed(seed)
            random.seed(seed)
            try:
                with torch.device(self.device):
                    return list(self.module.get_inputs())
            except Exception:  # noqa: BLE001 - only means "draw on the CPU"
                self.draw_on_device = False
        torch.manual_seed(seed)
        random.seed(seed)
        return list(self.module.get_inputs())

    def check_sets(self) -> tuple[int, Any]:
        """The candidate against the reference and its float64 oracle on the referee's own input sets: plain ones
        (``referee_trials``) and, where configured, one shifted by ``magnitude_shift``. Every second set goes into
        the tensors of the last call, as the worker's checks do (``correctness.py``)."""
        sets = [InputSet()] * max(1, self.settings.referee_trials)
        if self.settings.shifted_trials:
            sets.append(InputSet(shift=self.settings.magnitude_shift))
        tolerances = self.limits.tolerances.verified()
        noises, checked = [], 0
        for index, drawn in enumerate(sets):
            self.phase(f"set {index + 1}/{len(sets)}")
            seed = fresh_seed()
            inputs = self.make_inputs(seed, drawn.scale, drawn.shift)
            outputs = {}
            for name in ("candidate", "reference"):
                self.links[name].stage(inputs, index % 2 == 1, seed)
                outputs[name] = on_device(self.links[name].call("plain")[1], self.device)
            ref_out, cand_out = outputs["reference"], outputs["candidate"]
            if not all_finite(ref_out):
                continue  # outside the reference's domain
            oracle_out = None  # KernelBench's profile has no oracle and allows for no noise
            if self.limits.profile != "kernelbench" and any(checks_precision(leaf) for leaf in _tensors(ref_out)):
                oracle_out = on_device(self.links["reference"].oracle(), self.device)
            noise = frozen_noise(reference_noise(ref_out, oracle_out) if oracle_out is not None else {})
            if drawn == InputSet():
                noises.append(noise)
            where = f"the referee's input set {index + 1} (seed {seed}{drawn.describe()})"
            outcome = compare_outputs(ref_out, cand_out, tolerances, noise.verified())
            if isinstance(outcome, Mismatch):
                raise Finding("incorrect", outcome.reason, f"{where}: {outcome.message}")
            if oracle_out is not None and (judged := judge_precision(cand_out, ref_out, oracle_out, self.limits)):
                raise Finding(judged[0], "precision", f"{where}: {judged[1]}")
            checked += 1
        if not checked:
            raise ModelFailed("reference", "it returned NaN or Inf on every one of the referee's input sets",
                              "reference_failed")
        return checked, widest_noise(noises) if noises else frozen_noise({})

    def time_models(self, noise: Any, report: dict[str, Any]) -> None:
        self.phase("timing")
        clock = RemoteClock(*_clock_method(self.device))
        round_seeds: dict[int, int] = {}
        tolerances = self.limits.tolerances.verified()

        def draw(index: int) -> list[Any]:
            round_seeds.pop(index - 2, None)
            round_seeds[index] = fresh_seed()
            return self.make_inputs(round_seeds[index])

        def before_call(name: str, index: int) -> None:
            self.models[name].seed = round_seeds[index]

        def replayed(index: int, other: int) -> None:
            raise Finding("rejected", "cached_output", f"a timed call on the referee's fresh inputs (round "
                          f"{index + 1}) returned the output for the inputs of round {other + 1}")

        def mismatch(outcome: Mismatch, _out: Any, _expected: Any, index: int) -> None:
            raise Finding("incorrect", outcome.reason,
                          f"in a timed call, on the referee's fresh inputs of round {index + 1}: {outcome.message}")

        models = {"reference": self.models["reference"], "candidate": self.models["candidate"]}
        # on a GPU, the processes' empty round trip (see timer_check); the CPU's allowance is read off the calls
        trip = max(self.models[name].link.round_trip_ms() for name in models) if self.device.type == "cuda" else None

        def timed() -> Any:  # every timing its own rounds' checks: a round's index names another round's inputs
            clock.outside.clear()
            checks = TimedCallChecks(tolerances, noise.verified(), lambda: None, replayed, mismatch, all_finite,
                                     self.settings.timed_check_elements)
            return run_timing(models, draw, clock, self.settings, checks, before_call)

        run = timed()
        if first := timer_check(clock.outside, self.settings.referee_timer_tolerance,
                                self.settings.referee_timer_floor_ms, trip):
            # A clock that under-reports does so again; a burst of the host's other work seldom lands twice, and
            # an honest candidate must not be refused for it. The figures are the second timing's, whichever way.
            run = timed()
            if why := timer_check(clock.outside, self.settings.referee_timer_tolerance,
                                  self.settings.referee_timer_floor_ms, trip):
                raise Finding("rejected", "timer_mismatch", why)
            report["timer_rechecked"] = f"timed again, and passed, after: {first}"
        host_side = self.device.type == "cpu" or run.host_checked
        spread = self.settings.job_spread_gpu if not host_side else self.settings.job_spread_host_fresh
        estimate = stats.estimate_speedup(run.costs["reference"], run.costs["candidate"], self.settings.min_effect,
                                          seed=fresh_seed(), job_spread=spread)
        if self.device.type == "cuda" and (below := memory_floor.below_floor(
                run.timings["candidate"].median_ms, self.traffic_bytes, memory_floor.peak_bandwidth_gbs(self.device))):
            report["guards"] = [below.model_dump(mode="json")]
        spans = {name: [o.span_ms if o.span_ms is not None else o.host_ms
                        for o in clock.outside.get((name, "time"), [])][max(1, self.settings.warmup):]
                 for name in ("reference", "candidate")}
        if score := kernelbench_score(spans["reference"], spans["candidate"], self.device.type == "cuda",
                                      seed=fresh_seed()):
            report["kernelbench"] = score.model_dump(mode="json")
        report.update({
            "speedup": estimate.speedup, "speedup_ci95": [round(estimate.low, 6), round(estimate.high, 6)],
            "speed_verdict": estimate.verdict, "rounds": run.rounds, "stopped_by": run.stopped_by,
            "reference": run.timings["reference"].model_dump(mode="json"),
            "candidate": run.timings["candidate"].model_dump(mode="json"),
            "outside_ms": {f"{name}_{kind}": round(sorted(o.outside_ms for o in calls)[len(calls) // 2], 4)
                           for (name, kind), calls in clock.outside.items()},
        })


def _clock_method(device: torch.device) -> tuple[str, int]:
    """What the models' processes time with (``clocks.make_clock``), and how many issue calls it makes."""
    clock = CudaClock if device.type == "cuda" else CpuClock
    return clock.method + "; each model in a process of its own, every call also timed from outside", \
        clock.issue_calls


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def main() -> None:
    from kernelpro.harness.worker.process import die_with_parent, isolate, prepare_device

    result_fd, *ends = (int(a) for a in sys.argv[1:10])
    job: dict[str, Any] = json.loads(sys.stdin.read())
    nonce = job.pop("nonce")
    job["isolation"] = isolate(job)
    channel = os.fdopen(result_fd, "w", buffering=1)

    def emit(message: dict[str, Any]) -> None:
        channel.write(json.dumps({"nonce": nonce, **message}) + "\n")
        channel.flush()

    die_with_parent()
    if job["device"].startswith("cuda"):
        prepare_device(job["device"], job["harness"]["gpu_memory_fraction"], job["isolation"])
    any_size = job["harness"]["memory_limit_mb"] << 20
    links = {name: ModelLink(name, ends[4 * i], ends[4 * i + 1], any_size,
                             (Arena(ends[4 * i + 2]), Arena(ends[4 * i + 3])))
             for i, name in enumerate(("reference", "candidate"))}
    try:
        report = Referee(job, links, emit).judge()
    except BaseException as exc:  # noqa: BLE001 - the judge must always hear why
        report = {"status": "error", "reason": "referee_error", "message": f"the referee failed: {exc!r}"[:2000]}
    for link in links.values():
        link.close()
    emit({"result": report})
    channel.close()
    os._exit(0)


if __name__ == "__main__":
    main()
