"""The referee's side of the two models' processes, and the timing both get.

``ModelLink`` sends one model's process its requests and reads its answers; ``RemoteModel`` makes it a model
``timing.run_timing`` can time through ``RemoteClock``: each model is timed in its own process by the judge's
clock, in rounds the referee orders. Each call is also timed here, from outside, from the request until its whole
output has arrived, and ``timer_check`` tells whether the candidate's claimed times fit those: what a call's
outside time adds to its own claim is measured on the reference's process, which runs the same code around its
calls and which the candidate cannot touch.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from kernelpro.harness.referee import wire


class ModelFailed(RuntimeError):
    """A model's process answered a request with an error, sent something malformed, or is gone."""

    def __init__(self, who: str, message: str, reason: str, status: str = "runtime_error") -> None:
        super().__init__(message)
        self.who, self.reason, self.status = who, reason, status


class ModelLink:
    def __init__(self, who: str, to_model: int, from_model: int, byte_limit: int,
                 arenas: tuple[wire.Arena, wire.Arena] | None = None) -> None:
        self.who, self.to_model, self.from_model = who, to_model, from_model
        self.to_arena, self.from_arena = arenas or (None, None)
        self.byte_limit = byte_limit  # the candidate's: lowered once the reference's outputs are known

    def expect_outputs(self, reference_output: Any) -> None:
        """Accept answers of up to twice the reference output's bytes: any more is not an honest output."""
        self.byte_limit = 2 * wire.tensor_bytes(reference_output) + (1 << 20)

    def request(self, header: dict[str, Any], value: Any = None, *, send_value: bool = False
                ) -> tuple[dict[str, Any], Any]:
        if send_value:  # what the problem's own values cannot carry is the referee's limit, not the model's fault
            tensors: list[Any] = []
            wire.encode(value, tensors)
        try:
            if send_value:
                wire.send(self.to_model, header, value, self.to_arena)
            else:
                wire.send(self.to_model, header)
            answer, out = wire.receive(self.from_model, self.byte_limit, self.from_arena)
        except wire.ClosedPipe:
            raise ModelFailed(self.who, f"the {self.who}'s process exited or was killed", "exited") from None
        except wire.WireError as exc:
            raise ModelFailed(self.who, f"the {self.who}'s process answered outside the protocol: {exc}",
                              "protocol", "rejected") from None
        if "error" in answer:
            raise ModelFailed(self.who, str(answer["error"])[:2000], str(answer.get("reason", "exception")),
                              str(answer.get("status", "runtime_error")))
        return answer, out

    def load(self, init_inputs: list[Any], seed: int, threads: int | None) -> None:
        self.request({"op": "load", "seed": seed, "threads": threads}, init_inputs, send_value=True)

    def stage(self, inputs: list[Any], refill: bool, seed: int) -> None:
        self.request({"op": "stage", "refill": refill, "seed": seed}, list(inputs), send_value=True)

    def call(self, kind: str) -> tuple[dict[str, Any], Any]:
        return self.request({"op": "call", "kind": kind})

    def round_trip_ms(self, times: int = 15) -> float:
        """The median of ``times`` empty requests' round trips: the pipe and the waking, no call, no copy."""
        trips = []
        for _ in range(times):
            started = time.perf_counter_ns()
            self.request({"op": "ping"})
            trips.append((time.perf_counter_ns() - started) / 1e6)
        return statistics.median(trips)

    def oracle(self) -> Any:
        """The float64 oracle of the staged inputs (the reference's process only); None where it has none."""
        try:
            return self.request({"op": "oracle"})[1]
        except ModelFailed as failed:
            if failed.reason == "no_oracle":
                return None
            raise

    def close(self) -> None:
        try:
            wire.send(self.to_model, {"op": "quit"})
        except wire.WireError:
            pass


@dataclass
class Outside:
    """One call timed from outside: ``outside_ms`` from request to whole output, ``host_ms`` the host time the
    model's own clock gave, ``span_ms`` its GPU span (None off the GPU)."""

    outside_ms: float
    host_ms: float
    span_ms: float | None


class RemoteModel:
    """A model as ``run_timing`` sees it: a call stages its arguments in the model's process (in the tensors of its
    last call when ``run_timing`` refilled them) and runs it there."""

    def __init__(self, link: ModelLink, device: torch.device) -> None:
        self.link, self.device = link, device
        self.seed = 0
        self.staged: list[Any] | None = None

    def stage(self, args: list[Any]) -> None:
        refill = self.staged is not None and len(self.staged) == len(args) and all(
            a is b for a, b in zip(self.staged, args, strict=True) if isinstance(a, torch.Tensor))
        self.link.stage(args, refill, self.seed)
        self.staged = list(args)

    def run(self, kind: str) -> tuple[dict[str, Any], Any]:
        """The answer and the output, as it arrived (on the host)."""
        return self.link.call(kind)

    def __call__(self, *args: Any) -> Any:  # a plain call, outside any clock
        self.stage(list(args))
        return on_device(self.run("plain")[1], self.device)


def on_device(value: Any, device: torch.device) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, list):
        return [on_device(v, device) for v in value]
    if isinstance(value, tuple):
        return tuple(on_device(v, device) for v in value)
    if isinstance(value, dict):
        return {k: on_device(v, device) for k, v in value.items()}
    return value


def _claimed(answer: dict[str, Any], key: str, who: str) -> float:
    value = answer.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        raise ModelFailed(who, f"the {who}'s process claimed a time of {value!r}", "timer_mismatch", "rejected")
    return float(value)


@dataclass
class RemoteClock:
    """Each model's own process times its calls by the judge's clock (``method``); every call is also timed here,
    from outside, into ``outside`` (per model and per kind: ``time`` or ``issue``)."""

    method: str
    issue_calls: int
    outside: dict[tuple[str, str], list[Outside]] = field(default_factory=dict)

    def prepare(self) -> None:
        """Nothing here: each model's process prepares (flushes) right before its call."""

    def _call(self, kind: str, model: RemoteModel, args: list[Any]) -> tuple[float, float | None, Any]:
        model.stage(args)
        started = time.perf_counter_ns()
        answer, out = model.run(kind)
        outside = (time.perf_counter_ns() - started) / 1e6
        who = model.link.who
        host = _claimed(answer, "host_ms", who)
        span = _claimed(answer, "span_ms", who) if kind == "time" else None
        self.outside.setdefault((who, kind), []).append(Outside(outside, host, span))
        return host, span, on_device(out, model.device)  # the copy back is the referee's, not timed

    def time(self, model: RemoteModel, args: list[Any]) -> tuple[float, float, Any]:
        host, span, out = self._call("time", model, args)
        return (host if span is None else span), host, out

    def issue_ms(self, model: RemoteModel, args: list[Any]) -> tuple[float, Any]:
        host, _span, out = self._call("issue", model, args)
        return host, out


# Two processes running the same code around a call still differ by a share of that work (where each was woken,
# what each last touched): a steady 0.027 ms of a 0.2 ms round trip between two honest processes on two busy cores.
OVERHEAD_SHARE = 0.25


def _excess(cand: list[float], ref: list[float], relative_to: float, relative: float, floor_ms: float,
            round_trip_ms: float | None = None) -> tuple[float, float] | None:
    """(median, allowance) of the per-round differences ``cand - ref`` when the median passes the allowance:
    ``floor_ms``, ``relative`` of ``relative_to``, ``OVERHEAD_SHARE`` of the round trip (``round_trip_ms``, else
    the reference's own median), and three standard errors of that median (from the rounds' own spread),
    whichever is largest. None when it does not."""
    differences = [c - r for c, r in zip(cand, ref, strict=False)]
    if len(differences) < 3:
        return None
    middle = statistics.median(differences)
    spread = 1.4826 * statistics.median(abs(d - middle) for d in differences)
    trip = statistics.median(ref) if round_trip_ms is None else round_trip_ms
    allowance = max(floor_ms, relative * relative_to, OVERHEAD_SHARE * max(0.0, trip),
                    3 * 1.2533 * spread / len(differences) ** 0.5)
    return (middle, allowance) if middle > allowance else None


def timer_check(outside: dict[tuple[str, str], list[Outside]], relative: float, floor_ms: float,
                round_trip_ms: float | None = None) -> str | None:
    """Why the candidate's claimed times do not fit the times taken from outside, or None when they do.

    What a call's outside time adds to the host time its own clock gave is the same code's work around the call
    in both processes (waking, the pipe, the output's copy), so round by round the candidate's addition may
    exceed the reference's by the noise only; a clock that under-reports shows as a steady excess. Tested on
    the median of the rounds' differences, against three standard errors of it, ``floor_ms`` and ``relative``
    of the candidate's own time. On the GPU its span may not fall short of its host time by more than the
    reference's does, by the same test. What passes unseen is an under-report within that allowance: a quarter of
    a round trip between two processes, tens of microseconds a call on a quiet host.

    ``round_trip_ms`` is the processes' empty round trip (``ModelLink.round_trip_ms``). On a GPU the outside time
    also holds work both models' processes do alike around a call (the L2 flush, the output's copy to the host):
    a quarter of that would hide a whole small kernel, so the share is of the round trip alone. Without it, the
    share is of the reference's whole addition (on the CPU, where that is the round trip).
    """
    for kind in ("time", "issue"):
        cand, ref = outside.get(("candidate", kind), []), outside.get(("reference", kind), [])
        claimed = statistics.median(o.host_ms for o in cand) if cand else 0.0
        found = _excess([o.outside_ms - o.host_ms for o in cand], [o.outside_ms - o.host_ms for o in ref],
                        claimed, relative, floor_ms, round_trip_ms)
        if found:
            typical = statistics.median(o.outside_ms for o in cand)
            return (f"the candidate's own clock claimed {claimed:.4g} ms a {kind} call, but from outside each "
                    f"took {typical:.4g} ms, {found[0]:.4g} ms more than the reference's calls add to theirs "
                    f"(at most {found[1]:.4g} ms is noise)")
        spans = [o for o in cand if o.span_ms is not None]
        ref_spans = [o for o in ref if o.span_ms is not None]
        if kind == "time" and spans and ref_spans:
            found = _excess([o.host_ms - o.span_ms for o in spans], [o.host_ms - o.span_ms for o in ref_spans],
                            claimed, relative, floor_ms, round_trip_ms)
            if found:
                span = statistics.median(o.span_ms for o in spans)
                return (f"the candidate's own clock claimed a GPU span of {span:.4g} ms inside a host time of "
                        f"{claimed:.4g} ms, {found[0]:.4g} ms shorter than the reference's spans fall short of "
                        f"theirs (at most {found[1]:.4g} ms is noise)")
    return None
