"""What a run's stream tells whoever shows it (the terminal today, any other face alike): a node's update, a
question the run waits on (an interrupt of the interactive mode), and its end."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class NodeUpdate:
    """A node of the graph ran: its name and what it wrote to the state (its ``events`` among them)."""

    node: str
    values: dict[str, Any]


@dataclass(frozen=True)
class Question:
    """The run waits for the user: a plan or a candidate to approve, edit, skip or stop (``request``). The stream
    ends here; ``Run.stream(answer)`` goes on with the answer."""

    request: dict[str, Any]


@dataclass(frozen=True)
class Ended:
    """The run ended: ``status`` (completed, stopped or failed) and its state at the end. ``interrupted``: the user
    stopped it (Ctrl-C), resumable; ``error``: what failed it, its state kept for a resume."""

    status: str
    state: dict[str, Any] = field(default_factory=dict)
    interrupted: bool = False
    error: Exception | None = None

    @property
    def stopped_by_user(self) -> bool:
        """Ctrl-C, or a stop answered at a question."""
        return self.interrupted or str(self.state.get("stop_reason", "")).startswith("stopped by the user")


RunEvent = NodeUpdate | Question | Ended


@dataclass(frozen=True)
class PastEnd:
    """A resumed run that had ended already. ``goes_on``: it was stopped (at a question, or by a budget the budgets
    given now enlarge), ``why`` it had ended; ``stays_ended``: a budget leaves no room, ``why`` says which; ``failed``:
    its reference failed, which no budget mends."""

    kind: Literal["goes_on", "stays_ended", "failed"]
    why: str = ""
