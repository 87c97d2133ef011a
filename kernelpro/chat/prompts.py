"""The chat's prompt text, from templates: the system prompt carries the reference and the current candidate, so
the kernel under discussion is in context from the first turn and stays current as candidates are written."""

from __future__ import annotations

from pathlib import Path

from kernelpro.agents.templates import fence, render
from kernelpro.chat.session import ChatSession


def budgets_text(session: ChatSession, gpu_s: float) -> str:
    spent_usd = session.usd_spent()
    usd = f"${spent_usd:.3f} of " + (f"${session.budgets.usd:.2f}" if session.budgets.usd is not None
                                     else "no limit") + " on model calls"
    gpu = f"{gpu_s:.0f} s of " + (f"{session.budgets.gpu_s:.0f} s" if session.budgets.gpu_s is not None
                                  else "no limit") + " judging and profiling"
    return f"{usd}; {gpu}"


def system_prompt(session: ChatSession, candidate: str, gpu_s: float) -> str:
    path = Path(candidate) if candidate else None
    if path is not None and path.is_file():
        current = render("chat_candidate", candidate_name=path.name, candidate_source=fence(path.read_text()))
    else:
        current = render("chat_no_candidate")
    return render("chat_system", device=session.device, gpu=session.gpu, problem_name=session.problem.name,
                  reference_name=session.reference_path.name, reference=fence(session.problem.source),
                  candidate=current, budgets=budgets_text(session, gpu_s))
