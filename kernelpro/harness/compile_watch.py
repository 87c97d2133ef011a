"""Tells the judge while ``torch.compile`` is compiling inside a job, so the time limit fitted to the reference's
speed does not count it (``deadline.Deadline``).

``torch.compile`` is lazy: the candidate's first call traces, lowers and, under ``max-autotune``, benchmarks
every kernel choice, which took 33 s and more on KernelBench's matmuls on the H200, while that first call of a
hung candidate must still end within about a minute. Dynamo runs its compilation callbacks around every
compile (frames, lazy backward, Triton autotuning, CUDA-graph recording; nested compiles report once), and
the worker turns them into ``{"compiling": true|false}`` messages. A candidate that fakes them gains at most
the cap every job has (``harness.timeout_s``). A job that shares the device until timing also lets the device go
while Dynamo compiles (``device_turns``).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from kernelpro.harness.device_turns import DeviceTurns, benchmarks_hold_the_device

Emit = Callable[[dict[str, Any]], None]


@contextlib.contextmanager
def reporting_compiles(emit: Emit, turns: DeviceTurns | None = None) -> Iterator[None]:
    """Emit ``{"compiling": ...}`` around each compile while the block runs, and tell ``turns`` (the job's hold
    on the device) when each starts and ends. Dynamo is only watched when it is already imported (the worker
    imports it for candidates that mention the compiler): importing it costs about a second."""
    if "torch._dynamo" not in sys.modules:
        yield
        return
    try:
        from torch._dynamo.callback import callback_handler
    except ImportError:
        yield
        return

    def started(*args: Any) -> None:
        emit({"compiling": True})
        if turns is not None:  # older Dynamo calls without the trigger: the device is then kept
            trigger = getattr(getattr(args[0], "callback_trigger", None), "name", None) if args else None
            turns.compile_started(trigger)

    def ended(*_: Any) -> None:
        emit({"compiling": False})  # before waiting for the device: the deadline counts that wait apart
        if turns is not None:
            turns.compile_ended()

    callback_handler.register_start_callback(started)
    callback_handler.register_end_callback(ended)
    try:
        if turns is not None and turns.state == "shared":  # a sharing job: each benchmark holds the device alone
            with benchmarks_hold_the_device(turns):
                yield
        else:
            yield
    finally:
        with contextlib.suppress(ValueError, AttributeError):
            callback_handler.remove_start_callback(started)
        with contextlib.suppress(ValueError, AttributeError):
            callback_handler.remove_end_callback(ended)
