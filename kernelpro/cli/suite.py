"""`kernelpro suite run|status|report`: many problems in one run, each a full `kernelpro optimize` run.

Part of the command-line layer: it chooses the suite directory, prints, and starts the driver
(``kernelpro.suite.driver``) on local GPU lanes or on Ray.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelpro.cli.errors import fail
from kernelpro.cli.inputs import (
    CorrectnessOption,
    ScorecardOption,
    budgets_or_fail,
    hold_run_lock,
    releases_run_locks,
    retry_kinds_or_fail,
)
from kernelpro.cli.suite_options import create_from_options, new_totals
from kernelpro.config import load_settings
from kernelpro.exit_codes import SETUP_FAILED

suite_app = typer.Typer(help="Overnight runs over many problems: KernelBench's fast_p, geomean, baselines, spend.",
                        no_args_is_help=True)


def _backend(config, settings, device: str):
    """The suite backend by name (``kernelpro.seams.SUITE_BACKENDS``): ``suite.backend`` where set, else Ray's
    where the suite has a Ray address and this machine's lanes otherwise."""
    from kernelpro.seams import SUITE_BACKENDS
    from kernelpro.suite.ray_backend import RayUnavailable

    name = settings.suite.backend or ("ray" if config.ray else "local")
    try:
        return SUITE_BACKENDS.build(name, config.ray, device, settings)
    except RayUnavailable as error:
        fail(str(error))


@suite_app.command("run")
@releases_run_locks
def run(
    sources: Annotated[Optional[list[Path]], typer.Argument(help="Problem directories, KernelBench checkouts, "
                                                            "problem files or text files listing them.")] = None,
    level: Annotated[Optional[list[int]], typer.Option("--level", help="KernelBench level(s) to run: --level 1 2 3.")]
    = None,
    tasks: Annotated[Optional[str], typer.Option("--tasks", help="KernelBench task ids, e.g. 1-20,40.")] = None,
    device: Annotated[str, typer.Option(help="cpu, cuda, or auto.")] = "auto",
    policy: Annotated[Optional[str], typer.Option("--policy", help="Search policy of every run.")] = None,
    objective: Annotated[Optional[str], typer.Option("--objective", help="What every run optimises: time, energy "
                                                     "or edp (energy and edp need a GPU's NVML counter).")] = None,
    model: Annotated[Optional[str], typer.Option(help="LiteLLM model for every agent.")] = None,
    max_iters: Annotated[Optional[int], typer.Option("--max-iters", help="Candidates judged per problem.")] = None,
    time_budget: Annotated[Optional[str], typer.Option("--time-budget", help="The suite's wall time, e.g. 8h.")]
    = None,
    gpu_budget: Annotated[Optional[str], typer.Option("--gpu-budget", help="The suite's GPU time, e.g. 2h.")] = None,
    usd_budget: Annotated[Optional[float], typer.Option("--usd-budget", help="The suite's model dollars.")] = None,
    per_problem_budget: Annotated[Optional[str], typer.Option(
        "--per-problem-budget", help="Caps on each problem's share: time=10m,gpu=5m,usd=0.5 (or one duration).")]
    = None,
    runs_dir: Annotated[Optional[Path], typer.Option("--runs-dir", help="Where suite directories go.")] = None,
    resume: Annotated[Optional[str], typer.Option("--resume", help="Finish the suite with this id.")] = None,
    retry: Annotated[Optional[str], typer.Option("--retry", help="With --resume: run failed problems again, those "
                                                 "of these failure kinds (crash,hang,lost,setup,problem,gpu_memory) "
                                                 "or all; their baselines are kept. budget: the problems a budget cut, "
                                                 "their runs resumed with a new share added.")] = None,
    ray: Annotated[Optional[str], typer.Option("--ray", help="Run problems on Ray: auto (a running cluster), "
                                               "local (start one here) or an address.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Progress to stderr; the last stdout line is one JSON "
                                                         "object.")] = False,
    no_memory: Annotated[bool, typer.Option("--no-memory", help="Runs neither read nor write the search memory.")]
    = False,
    no_profile: Annotated[bool, typer.Option("--no-profile", help="Skip Nsight Compute profiles.")] = False,
    fresh: Annotated[bool, typer.Option("--fresh", help="Judge every problem's compile baselines anew rather than "
                                        "reuse the verdicts kept in the cache (the new ones are kept).")] = False,
    correctness: Annotated[Optional[str], CorrectnessOption] = None,
    scorecard: Annotated[Optional[str], ScorecardOption] = None,
    overnight: Annotated[bool, typer.Option("--overnight", help="Plan the suite: cheap problems first (by cached "
                                            "baselines, else by size), budget shares by cost, lanes from the "
                                            "devices, and the time it will take said before it starts "
                                            "(--time-budget 8h unless given). Kept on --resume.")] = False,
) -> None:
    """Optimise every problem of SOURCE... in turn (one per GPU at once) and score the suite."""
    from kernelpro.cli.suite_terminal import SuiteBar
    from kernelpro.run_stack import run_stack_problem
    from kernelpro.suite.disk import enforce_disk_budget
    from kernelpro.suite.driver import Driver, summary
    from kernelpro.suite.layout import SuiteConfig, open_suite
    from kernelpro.suite.ledger import LedgerError
    from kernelpro.suite.recorded_env import restore as restore_environment
    from kernelpro.suite.report import write_suite_report

    out = Console(stderr=True) if as_json else Console()
    budgets_or_fail(max_iters, time_budget, gpu_budget, usd_budget)  # one that allows nothing is refused first
    if fresh:  # a setting of the suite's: recorded with its others, so every job and a --resume carry it
        os.environ["KERNELPRO_CACHE__BASELINES"] = "fresh"
    settings = load_settings()
    # before any suite is made or baseline measured: every problem would fail alike (a resumed suite's model is
    # its own, read from its ledger below; a broken client then stops it at its first problem)
    if problem := run_stack_problem(with_model=bool(model or settings.llm.model)):
        fail(f"no run can be set up here, so the suite does not start: {problem}", code=SETUP_FAILED)
    runs_dir = runs_dir or settings.runs_dir
    kinds = retry_kinds_or_fail(retry, resume)
    if resume:
        try:
            paths, ledger = open_suite(runs_dir, resume)
        except LedgerError as error:
            fail(str(error))
    elif not sources:
        fail("give at least one SOURCE (a problem directory, a KernelBench checkout or a list file), or --resume")
    else:
        paths, ledger = create_from_options(sources, level or [], tasks, device, policy, model, max_iters, time_budget,
                                gpu_budget, usd_budget, per_problem_budget, runs_dir, ray, no_memory, no_profile,
                                settings, objective, correctness, scorecard, overnight)
    hold_run_lock(paths.root, f"suite {paths.suite_id}")
    config = SuiteConfig.model_validate(ledger.suite()["config"])
    if resume and overnight and config.overnight is None:
        fail(f"suite {paths.suite_id} was not made with --overnight: its order and shares were fixed when it was "
             "made, so it cannot be planned now; resume it without --overnight (an overnight suite keeps its plan "
             "on --resume without the flag)")
    if resume and (given := new_totals(time_budget, gpu_budget, usd_budget)):  # the suite goes on under them
        config.totals = config.totals.model_copy(update=given)
        ledger.set_suite(config=config.model_dump(mode="json"))
    if resume:
        for line in restore_environment(config.environment):
            out.print(f"[yellow]this shell sets {escape(line)}; it holds for the rest of the suite, except what "
                      "the suite's own config fixes (its baselines, budgets, policy, objective and model)[/]",
                      soft_wrap=True)
        settings = load_settings()  # with the suite's own settings restored
    if config.overnight is not None:  # the plan's lanes: one a GPU (or what its memory holds), one on the CPU
        settings.suite.lanes_per_gpu, settings.suite.cpu_lanes = config.overnight.lanes_per_gpu, 1
    backend = _backend(config, settings, config.device)
    if not backend.lanes:
        fail(f"no lane to run problems on ({backend.name}, device {config.device}): no GPU is visible; "
             "use --device cpu, or set harness.gpu_devices")
    if retry:  # under the suite's lock (no driver writes this ledger now), with lanes to run them on
        again = ledger.retry_failed(kinds)
        out.print(f"{len(again)} failed problem(s) to run again" + (f": {', '.join(again)}" if again else ""),
                  soft_wrap=True)
    rows = ledger.problems()
    out.print(f"suite [bold]{paths.suite_id}[/] in {paths.root}: {len(rows)} problem(s) on {config.device}, "
              f"{len(backend.lanes)} lane(s) ({backend.name})" + (" (resumed)" if resume else ""), soft_wrap=True)
    if config.overnight is not None:
        _say_plan(out, ledger, config, len(backend.lanes))

    written = [time.monotonic()]

    def after_problem() -> None:
        enforce_disk_budget(paths, ledger, settings.suite.disk_budget_mb)
        if time.monotonic() - written[0] >= settings.suite.report_interval_s:
            write_suite_report(paths, ledger)
            written[0] = time.monotonic()

    status, reason = "failed", ""
    with SuiteBar(out, len(rows)) as bar:
        driver = Driver(paths, ledger, settings, backend, on_progress=bar.update, after_problem=after_problem)
        try:
            status, reason = driver.run()
        except KeyboardInterrupt:
            status, reason = "stopped", "interrupted"
        except Exception as error:  # noqa: BLE001 - the ledger keeps every finished problem
            status, reason = "failed", f"the suite's driver failed ({type(error).__name__}: {error})"
        finally:
            backend.close()
    ledger.set_suite(status=status, stop_reason=reason)
    write_suite_report(paths, ledger)
    result = summary(paths, ledger, status, reason)
    if status != "completed":
        out.print(f"[yellow]{escape(reason)}[/]; continue with: kernelpro suite run --resume {paths.suite_id}"
                  + (f" --runs-dir {runs_dir}" if runs_dir != settings.runs_dir else ""), soft_wrap=True)
    if as_json:
        print(json.dumps(result))
    else:
        out.print(f"[bold]{status}[/]: {result['improved']} of {result['problems_scored']} problem(s) improved; "
                  f"{_headline_scores(result)}; report: {result['report']}", soft_wrap=True)
    if driver.setup_failure:  # the machine cannot run a problem: a script must not read this as done
        raise typer.Exit(code=SETUP_FAILED)


@suite_app.command("status")
def status(
    suite_id: Annotated[str, typer.Argument(help="The suite's id.")],
    runs_dir: Annotated[Optional[Path], typer.Option("--runs-dir", help="Where suite directories are.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """Where a suite stands, while it runs or after: each problem's state, the scores so far."""
    from kernelpro.suite.driver import summary
    from kernelpro.suite.layout import open_suite
    from kernelpro.suite.ledger import INTERRUPTED, LedgerError, seen_state
    from kernelpro.suite.report_energy import energy_pair, shows_energy
    from kernelpro.suite.scores import suite_scores

    settings = load_settings()
    try:
        paths, ledger = open_suite(runs_dir or settings.runs_dir, suite_id)
    except LedgerError as error:
        fail(str(error))
    driven = ledger.driven()  # a driver killed outright left "running" behind: nothing runs it now
    suite = ledger.suite()
    shown = seen_state(suite["status"], driven)
    result = summary(paths, ledger, shown, suite.get("stop_reason") or "")
    rows = ledger.problems()
    states = {row.key: seen_state(row.state, driven) for row in rows}
    resume = _resume_command(suite_id, runs_dir, settings.runs_dir)
    if as_json:
        result["states"] = states
        if INTERRUPTED in (shown, *states.values()):
            result["resume"] = resume
        print(json.dumps(result))
        return
    from kernelpro.harness.timing.stats import speedup_text

    _, scores = suite_scores(rows)
    energy = shows_energy(suite["config"], rows)
    table = Table("problem", "state", "lane", "attempts", "best",
                  *(("J/call (reference -> best)", "W (reference -> best)") if energy else ()), "note")
    for row, score in zip(rows, scores, strict=True):
        best = speedup_text(score.speedup, score.speedup_ci95) if score.speedup else "-"
        table.add_row(row.key, states[row.key], row.lane or "-", str(row.attempts), best,
                      *(energy_pair(row) if energy else ()),
                      escape((row.failure or (row.result or {}).get("stop_reason") or "")[:80]))
    console = Console()
    console.print(table)
    console.print(f"{suite_id} ({result['objective']}): {shown}; {result['finished']}/"
                  f"{result['problems']} finished, {result['improved']} improved, {_headline_scores(result)}"
                  + (f"; ETA {result['eta_seconds'] / 60:.0f} min" if result.get("eta_seconds") is not None else ""),
                  soft_wrap=True)
    if INTERRUPTED in (shown, *states.values()):
        console.print(f"[yellow]no process runs this suite any more (its driver was killed or its machine went "
                      f"down); what it finished is kept. Resume with: {escape(resume)}[/]", soft_wrap=True)


def _say_plan(out: Console, ledger, config, lanes: int) -> None:
    """The overnight plan's projection: made over the lanes when the suite first runs, recorded in its ledger,
    and the same line on every resume."""
    from kernelpro.suite.overnight import project

    plan = config.overnight
    if plan.projection is None:
        plan.projection = project(plan, lanes, config.device, config.totals.time_s)
        ledger.set_suite(config=config.model_dump(mode="json"))
    out.print(escape(plan.projection.text), soft_wrap=True, highlight=False)


def _resume_command(suite_id: str, runs_dir: Optional[Path], default_runs_dir: Path) -> str:
    """The command that goes on with the suite, naming its runs directory when it is not the default."""
    elsewhere = runs_dir is not None and Path(runs_dir) != Path(default_runs_dir)
    where = f" --runs-dir {shlex.quote(str(runs_dir))}" if elsewhere else ""
    return f"kernelpro suite run --resume {suite_id}{where}"


def _headline_scores(result: dict) -> str:
    """fast_1.0 with its range and the geomean with its interval, as the suite's JSON object gives them."""
    from kernelpro.harness.timing.stats import speedup_text

    shares, geomean, ci = result["fast_p_range"].get("1.0"), result["geomean_speedup"], result["geomean_speedup_ci95"]
    return (f"fast_1.0 {result['fast_p']['1.0']:.2f}"
            + (f" ({shares[0]:.2f}-{shares[1]:.2f})" if shares and shares[0] != shares[1] else "")
            + (f", geomean {speedup_text(geomean, ci if ci and ci[1] > ci[0] else None)}" if geomean else ""))


@suite_app.command("report")
def report(
    suite_id: Annotated[str, typer.Argument(help="The suite's id.")],
    runs_dir: Annotated[Optional[Path], typer.Option("--runs-dir", help="Where suite directories are.")] = None,
) -> None:
    """Write suite.html and suite.md from the ledger now (also while the suite runs)."""
    from kernelpro.suite.layout import open_suite
    from kernelpro.suite.ledger import LedgerError
    from kernelpro.suite.report import write_suite_report

    try:
        paths, ledger = open_suite(runs_dir or load_settings().runs_dir, suite_id)
    except LedgerError as error:
        fail(str(error))
    html, markdown = write_suite_report(paths, ledger)
    Console().print(f"{html}\n{markdown}", soft_wrap=True, highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(suite_app, name="suite")


__all__ = ["register"]
