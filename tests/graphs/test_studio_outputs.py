"""A run started through LangGraph Studio's graph leaves the files `kernelpro optimize` leaves (in process: the
Studio graph compiled here with an in-memory checkpointer, as the server would, on a CPU recipe run)."""

from __future__ import annotations

import json
import os

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from kernelpro.app.studio import open_studio_run
from kernelpro.graphs import studio
from kernelpro.graphs.studio import StudioRuns, studio_builder
from tests.conftest import DATA

SHORT = {"KERNELPRO_HARNESS__TIMING_BUDGET_S": "0.3",
         "KERNELPRO_HARNESS__REFEREE": "false", "KERNELPRO_HARNESS__TIMING_TRIALS": "5",
         "KERNELPRO_HARNESS__MIN_TIMING_TRIALS": "5", "KERNELPRO_HARNESS__CPU_CONTENTION_CORES": "1e9",
         "KERNELPRO_HARNESS__CORRECTNESS_TRIALS": "2", "KERNELPRO_SEARCH__FINALISTS": "0"}


INPUTS = {"problem_path": str(DATA / "problems" / "repeated_relu.py"), "device": "cpu", "max_iters": 1,
          "no_memory": True, "no_profile": True}


def _recipes_run_here(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("KERNELPRO_LLM__")]:
        monkeypatch.delenv(name)  # no model: the built-in recipes
    for name, value in {**SHORT, "KERNELPRO_RUNS_DIR": str(tmp_path / "runs")}.items():
        monkeypatch.setenv(name, value)


def test_a_studio_run_writes_the_report_the_best_candidate_and_the_summary(tmp_path, monkeypatch):
    _recipes_run_here(tmp_path, monkeypatch)
    runs = StudioRuns(open_studio_run)
    graph = studio_builder(runs).compile(checkpointer=InMemorySaver())
    state = graph.invoke(INPUTS, {"configurable": {"thread_id": "studio"}, "recursion_limit": 100})
    assert state["status"] == "completed", state.get("stop_reason")
    run_dir = tmp_path / "runs" / state["run_id"]
    outputs = state["outputs"]
    assert outputs["run_dir"] == str(run_dir) and outputs["candidates_judged"] == 1
    for name in ("report.md", "report.html", "speedup.png", "summary.json"):
        assert (run_dir / name).is_file(), name
    assert json.loads((run_dir / "summary.json").read_text()) == outputs
    expected = run_dir / "best_candidate.py" if outputs["improved"] else DATA / "problems" / "repeated_relu.py"
    assert outputs["best_candidate"] == str(expected) and expected.is_file()
    assert state["run_id"] in (run_dir / "report.md").read_text()
    assert state["events"][-1].startswith(f"write_outputs: {outputs['best_candidate']}, report {run_dir}")
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
    assert not runs._contexts  # the run's judge was closed at the end


def test_a_studio_run_whose_node_raises_still_leaves_its_files_marked_failed(tmp_path, monkeypatch):
    _recipes_run_here(tmp_path, monkeypatch)

    def broken_select(state, runtime):
        raise RuntimeError("the search broke")

    monkeypatch.setattr(studio, "NODES", [(n, broken_select if n == "select" else fn) for n, fn in studio.NODES])
    runs = StudioRuns(open_studio_run)
    graph = studio_builder(runs).compile(checkpointer=InMemorySaver())
    with pytest.raises(RuntimeError, match="the search broke"):  # Studio shows the error itself
        graph.invoke(INPUTS, {"configurable": {"thread_id": "studio"}, "recursion_limit": 100})
    (run_dir,) = (tmp_path / "runs").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "failed" and "select failed: RuntimeError: the search broke" in summary["stop_reason"]
    assert (run_dir / "report.md").is_file() and summary["best_candidate"] == INPUTS["problem_path"]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"
    assert not runs._contexts  # its judge closed
