"""Tells the judge while ``torch.compile`` is compiling inside a job, so the time limit fitted to the reference's
speed does not count it (``deadline.Deadline``).

``torch.compile`` is lazy: the candidate's first call traces, lowers and, under ``max-autotune``, benchmarks
every kernel choice, which took 33 s and more on KernelBench's matmuls on the H200, while that first call of a
hung candidate must still end within about a minute. Dynamo runs its compilation callbacks around every
compile (frames, lazy backward, Triton autotuning, CUDA-graph recording; nested compiles report once), and
the worker turns them into ``{"compiling": true|false}`` messages. A candidate that fakes them gains at most
the cap every job has (``harness.timeout_s``).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

Emit = Callable[[dict[str, Any]], None]


@contextlib.contextmanager
def reporting_compiles(emit: Emit) -> Iterator[None]:
    """Emit ``{"compiling": ...}`` around each compile while the block runs. Dynamo is only watched when it is
    already imported (the worker imports it for candidates that mention the compiler): importing it costs
    about a second."""
    if "torch._dynamo" not in sys.modules:
        yield
        return
    try:
        from torch._dynamo.callback import callback_handler
    except ImportError:
        yield
        return

    def started(*_: Any) -> None:
        emit({"compiling": True})

    def ended(*_: Any) -> None:
        emit({"compiling": False})

    callback_handler.register_start_callback(started)
    callback_handler.register_end_callback(ended)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError, AttributeError):
            callback_handler.remove_start_callback(started)
        with contextlib.suppress(ValueError, AttributeError):
            callback_handler.remove_end_callback(ended)
