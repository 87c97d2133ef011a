"""One model's process under the referee: ``python -m kernelpro.harness.referee.model_server IN OUT IN_ARENA OUT_ARENA``
(pipes and shared memory, ``referee.wire``), the job as JSON on stdin, ``serves`` naming the model: ``candidate``
or ``reference``.

The same code serves both, so both models are loaded, fed, called, timed and answered alike, and whatever a
process costs around a call (waking up, the pipe, copying the output) it costs both. The candidate's process holds
the candidate and nothing the verdict depends on: no reference, no input generator, no comparison, no result
channel to the judge. It answers the referee's requests (``referee.wire``): load, stage inputs, call (plainly,
or timed by the judge's clock) and send back the output; the reference's also runs its float64 oracle. Whatever
the candidate's process answers is only a claim: the referee compares its outputs with the reference's, and its
claimed times with the time each request took, measured from outside.
"""

from __future__ import annotations

import gc
import os
import resource
import sys
import traceback
from pathlib import Path
from typing import Any

import torch

from kernelpro.harness.referee import wire


class ModelServer:
    """One model (``serves``) behind the referee's requests."""

    def __init__(self, job: dict[str, Any], inbound: int, outbound: int, arenas: tuple[wire.Arena, wire.Arena]
                 ) -> None:
        from kernelpro.config import HarnessSettings
        from kernelpro.harness.timing.clocks import make_clock

        self.job, self.inbound, self.outbound = job, inbound, outbound
        self.in_arena, self.out_arena = arenas
        self.settings = HarnessSettings.model_validate(job["harness"])
        self.device = torch.device(job["device"])
        self.clock = make_clock(self.device, self.settings)
        self.model: Any = None
        self.args: list[Any] | None = None
        self.serves = job.get("serves", "candidate")
        self.seed = 0

    def serve(self) -> None:
        while True:
            try:
                request, value = wire.receive(self.inbound, int(self.job["referee_input_bytes"]), self.in_arena)
            except wire.ClosedPipe:
                return
            op = request.get("op")
            if op == "quit":
                return
            if op == "ping":  # the round trip alone: what the pipe and waking cost, nothing of a call
                wire.send(self.outbound, {"ok": True})
                continue
            try:
                getattr(self, f"on_{op}")(request, value) if op in ("load", "stage", "call", "oracle") else \
                    wire.send(self.outbound, {"error": f"unknown request {op!r}", "reason": "protocol"})
            except wire.ClosedPipe:
                return

    def on_load(self, request: dict[str, Any], init_inputs: Any) -> None:
        from kernelpro.harness.worker.loader import Verdict, build, load_candidate, load_reference

        workdir = Path.cwd() / "job"  # the model's own files only, beside none of the process's (tmp, caches)
        workdir.mkdir(exist_ok=True)
        os.chdir(workdir)
        if request.get("threads"):
            torch.set_num_threads(int(request["threads"]))  # both models' processes alike
        try:
            if self.serves == "reference":
                cls = load_reference(self.job["reference_source"], workdir).Model
                self.model = build(cls, list(init_inputs), int(request["seed"]), self.device,
                                   workdir / "reference.py", failure_reason="reference_failed")
            else:
                cls = load_candidate(self.job["candidate_source"], workdir)
                self.model = build(cls, list(init_inputs), int(request["seed"]), self.device,
                                   workdir / "candidate.py")
        except Verdict as failure:
            wire.send(self.outbound, {"error": failure.result.message, "status": failure.result.status,
                                      "reason": failure.result.reason})
            return
        wire.send(self.outbound, {"ok": True})

    def on_stage(self, request: dict[str, Any], inputs: Any) -> None:
        """The round's inputs, written into the tensors of the last call (``refill``) or into new ones, and the
        random generators put in the round's state (``worker.model_calls.seed_call``)."""
        from kernelpro.harness.timing.rounds import refill_inputs
        from kernelpro.harness.worker.model_calls import seed_call

        moved = [x.to(self.device) if isinstance(x, torch.Tensor) else x for x in inputs]
        kept = self.args if request.get("refill") else None
        self.args = refill_inputs(kept, moved)
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        self.seed = int(request["seed"])
        seed_call(self.seed)  # here, not in the call: the call's time from outside is the call's
        wire.send(self.outbound, {"ok": True})

    def on_oracle(self, _request: dict[str, Any], _value: Any) -> None:
        """The model run in float64 on the staged inputs, upcast (``precision.oracle_outputs``), from the same
        random state as its call; an error where an op has no float64 kernel."""
        from kernelpro.harness.guards.precision import oracle_outputs
        from kernelpro.harness.worker.model_calls import seed_call

        seed_call(self.seed)
        try:
            out = oracle_outputs(self.model, self.args or [])
        except Exception as exc:  # noqa: BLE001 - no oracle for this model
            if self.device.type == "cuda":
                torch.cuda.empty_cache()
            wire.send(self.outbound, {"error": f"float64 oracle unavailable ({exc})"[:2000], "reason": "no_oracle"})
            return
        wire.send(self.outbound, {"ok": True}, out, self.out_arena)

    def on_call(self, request: dict[str, Any], _value: Any) -> None:
        """The call, with the cyclic collector paused from the request until its answer is sent (as the judge's own
        rounds pause it, ``timing.collector_paused``), the young garbage collected after: a collection that the
        call's allocations set off must not land between the call and its answer, where only the outside clock
        sees it."""
        gc.disable()
        try:
            self._call(request)
        finally:
            gc.enable()
            gc.collect(0)

    def _call(self, request: dict[str, Any]) -> None:
        from kernelpro.harness.timing.rounds import shares_storage
        from kernelpro.harness.worker.model_calls import no_grad

        call = no_grad(self.model)
        args = self.args or []
        header: dict[str, Any] = {"ok": True}
        try:
            if request["kind"] == "time":
                self.clock.prepare()
                header["span_ms"], header["host_ms"], out = self.clock.time(call, args)
            elif request["kind"] == "issue":
                self.clock.prepare()
                header["host_ms"], out = self.clock.issue_ms(call, args)
            else:
                out = call(*args)
                if self.device.type == "cuda":
                    torch.cuda.synchronize()
        except BaseException as exc:  # noqa: BLE001 - every failure is the candidate's, told to the referee
            text = "".join(traceback.format_exception_only(type(exc), exc)).strip()[-2000:]
            wire.send(self.outbound, {"error": text, "reason": type(exc).__name__})
            return
        if shares_storage(out, args):
            self.args = None  # its output lives in the inputs: the next inputs go to new tensors
        try:
            wire.send(self.outbound, header, out, self.out_arena)
        except wire.WireError as exc:
            wire.send(self.outbound, {"error": str(exc), "reason": "output_type"})


def main() -> None:
    from kernelpro.harness.worker.process import (
        apply_job_environment,
        die_with_parent,
        isolate,
        limit_address_space,
        prepare_device,
    )

    inbound, outbound, in_arena, out_arena = (int(a) for a in sys.argv[1:5])
    arenas = (wire.Arena(in_arena), wire.Arena(out_arena))  # mapped before the address-space cap
    job: dict[str, Any] = __import__("json").loads(sys.stdin.read())
    job["isolation"] = isolate(job)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    die_with_parent()
    apply_job_environment(job)
    if job["device"].startswith("cuda"):
        prepare_device(job["device"], job["harness"]["gpu_memory_fraction"], job["isolation"])
    else:
        limit_address_space(job["harness"]["memory_limit_mb"])
    ModelServer(job, inbound, outbound, arenas).serve()
    os._exit(0)


if __name__ == "__main__":
    main()
