"""`kernelpro chat`: a conversation about one kernel with the real judge and profiler as the agent's tools.

Part of the command-line layer: it reads the options, chooses the thread (set up by ``app/chat_thread.py``, its
checkpointer and session with it) and prints; ``chat_terminal.py`` shows the conversation.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from kernelpro.cli.errors import fail as _fail
from kernelpro.cli.inputs import budgets_or_fail
from kernelpro.config import load_settings
from kernelpro.problem import ProblemError, load_problem

NO_MODEL_NOTICE = """\
No language model is configured, so the chat cannot answer in words. The direct commands still work: /judge FILE,
/profile [FILE], /diff, /save NAME, /budget. To talk, resume this thread with a model:
  {resume} --model MODEL
or configure one as below and resume it with: {resume}
{how}"""


def resume_command(thread_id: str, chats_dir: Path, default_dir: Path) -> str:
    """The command that resumes the thread, naming its chats directory when it is not the default."""
    where = f" --chats-dir {shlex.quote(str(chats_dir))}" if Path(chats_dir) != Path(default_dir) else ""
    return f"kernelpro chat --thread {shlex.quote(thread_id)}{where}"


def list_threads(chats_dir: Path, console: Console) -> None:
    """The saved threads, each id whole (it is what ``--thread`` takes): a table where it fits the width whole,
    else one thread a paragraph, its id on a line of its own."""
    from kernelpro.chat.files import list_threads as threads

    found = threads(chats_dir)
    if not found:
        console.print(f"no chat threads in {chats_dir}")
        return
    rows = [(meta["thread_id"], meta.get("created", ""), Path(meta.get("problem_path", "")).name,
             Path(meta["candidate_path"]).name if meta.get("candidate_path") else "", meta.get("device", ""),
             meta.get("model") or "none") for meta in found]
    table = Table("thread", "created", "problem", "started with", "device", "model")
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    if Measurement.get(console, console.options.update_width(10**6), table).maximum <= console.width:  # all whole
        console.print(table)
        return
    for thread, created, problem, candidate, device, model in rows:
        console.print(f"[bold]{escape(thread)}[/]", soft_wrap=True, highlight=False)
        said = f"created {created}, problem {problem}" + (f", started with {candidate}" if candidate else "") + \
            f", on {device}, model {model}"
        console.print(Padding(Text(said), (0, 0, 0, 2), expand=False), highlight=False)


def run_chat(reference: Optional[Path], candidate: Optional[Path], model: Optional[str], device: str,
             thread: Optional[str], gpu_budget: Optional[str], usd_budget: Optional[float],
             chats_dir: Optional[Path]) -> None:
    from kernelpro.app.chat_thread import create_thread, open_chat_thread
    from kernelpro.chat.files import ChatFiles
    from kernelpro.chat.session import ChatBudgets
    from kernelpro.llm.models import HOW_TO_CONFIGURE, llm_configured

    console = Console()
    given = budgets_or_fail(None, None, gpu_budget, usd_budget)
    settings = load_settings()
    if model:
        settings.llm.model = model
    chats_dir = chats_dir or settings.chat.dir
    resumed = thread is not None and (Path(chats_dir) / thread / "thread.json").is_file()
    if resumed:
        files = ChatFiles.open(chats_dir, thread)
        meta = files.meta()
        if reference is not None and Path(reference).resolve() != Path(meta["problem_path"]).resolve():
            _fail(f"thread {thread} is about {meta['problem_path']}, not {reference}; leave the problem out to "
                  "resume it, or start a new thread")
        reference = Path(meta["problem_path"])
        budgets = ChatBudgets.model_validate(meta.get("budgets") or {})
        if gpu_budget is not None:
            budgets.gpu_s = given["gpu_s"]
        if usd_budget is not None:
            budgets.usd = usd_budget
        if meta.get("model") and not model:
            settings.llm.model = meta["model"]
    elif reference is None:
        _fail("give a problem file (kernelpro chat REF.py [CAND.py]), or --thread ID to resume one")
    for path in (reference, candidate):
        if path is not None and not Path(path).is_file():
            _fail(f"no file {path}")
    try:
        load_problem(reference)
    except ProblemError as error:
        _fail(str(error))
    if not resumed:
        budgets = ChatBudgets(usd=usd_budget if usd_budget is not None else settings.llm.budget_usd,
                              gpu_s=given["gpu_s"])
        try:
            files = create_thread(settings, reference, device, chats_dir=chats_dir, thread_id=thread, meta={
                "model": settings.llm.model, "budgets": budgets.model_dump(),
                "candidate_path": str(candidate.resolve()) if candidate else ""})
        except ValueError as error:
            _fail(str(error))

    resume = resume_command(files.thread_id, chats_dir, settings.chat.dir)
    chat = open_chat_thread(settings, files, resumed=resumed, budgets=budgets, candidate=candidate)
    try:
        session = chat.session
        console.print(f"chat [bold]{escape(files.thread_id)}[/] about {escape(session.problem.name)} on "
                      f"{session.device} ({escape(session.gpu)})"
                      + (f", resumed after {chat.turns} messages" if resumed else "")
                      + f"; candidates go to {escape(str(files.candidates))}. /help lists the commands.",
                      soft_wrap=True)
        if session.tool_calling:
            console.print(f"the chat calls tools by {escape(session.tool_calling)}", soft_wrap=True)
        if not llm_configured(settings):
            console.print(f"[yellow]{escape(NO_MODEL_NOTICE.format(resume=resume, how=HOW_TO_CONFIGURE))}[/]",
                          soft_wrap=True)
        from kernelpro.cli.chat_terminal import ChatTerminal

        ChatTerminal(console, chat.conversation).loop()
        console.print(f"thread saved; resume with: {escape(resume)}", soft_wrap=True)
    finally:
        chat.close()


def register(app: typer.Typer) -> None:
    @app.command("chat")
    def chat(
        reference: Annotated[Optional[Path], typer.Argument(help="KernelBench-format problem file.")] = None,
        candidate: Annotated[Optional[Path], typer.Argument(help="Your candidate (ModelNew), if you have one.")]
        = None,
        model: Annotated[Optional[str], typer.Option(help="LiteLLM model, e.g. anthropic/claude-sonnet-4-5.")]
        = None,
        device: Annotated[str, typer.Option(help="cpu, cuda, or auto.")] = "auto",
        thread: Annotated[Optional[str], typer.Option("--thread", help="Resume this thread (or start one with "
                                                                       "this id).")] = None,
        list_: Annotated[bool, typer.Option("--list", help="List the saved threads.")] = False,
        gpu_budget: Annotated[Optional[str], typer.Option("--gpu-budget", help="Judging and profiling time, "
                                                                               "e.g. 10m.")] = None,
        usd_budget: Annotated[Optional[float], typer.Option("--usd-budget", help="LLM dollars for the thread.")]
        = None,
        chats_dir: Annotated[Optional[Path], typer.Option("--chats-dir", help="Where threads are kept.")] = None,
    ) -> None:
        """Debug one slow kernel in conversation: the agent judges, profiles and diagnoses with the real tools."""
        if list_:
            list_threads(chats_dir or load_settings().chat.dir, Console())
            return
        run_chat(reference, candidate, model, device, thread, gpu_budget, usd_budget, chats_dir)


__all__ = ["register", "run_chat"]
