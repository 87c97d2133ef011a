"""What `kernelpro suite run` shows while it runs: a rich progress bar with problems done, the best so far, the
spend and the ETA, and one line per finished problem."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kernelpro.harness.timing.stats import speedup_text
from kernelpro.suite.driver import Progress as SuiteProgress


class SuiteBar:
    def __init__(self, console: Console, total: int) -> None:
        self.console = console
        self.bar = Progress(TextColumn("[bold cyan]suite"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("{task.fields[status]}"), console=console, transient=False)
        self.task = self.bar.add_task("suite", total=total, status="")
        self.last = ""

    def __enter__(self) -> SuiteBar:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def update(self, progress: SuiteProgress) -> None:
        best = (f"best {speedup_text(progress.best[1], progress.best_ci95)} ({progress.best[0]})" if progress.best
                else "none faster yet")
        eta = f"ETA {progress.eta_s / 60:.0f} min" if progress.eta_s is not None else "ETA -"
        running = ", ".join(progress.running.values()) or "-"
        status = (f"{progress.failed} failed | {best} | GPU {progress.gpu_s / 60:.1f} min | ${progress.usd:.3f} | "
                  f"{eta} | running: {running}")
        self.bar.update(self.task, completed=progress.done + progress.failed, status=escape(status))
        if progress.last and progress.last != self.last:
            self.last = progress.last
            self.bar.console.print(f"[dim]{escape(progress.last)}[/]", soft_wrap=True, highlight=False)
