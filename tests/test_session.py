"""The run as an object (app/session.py): a short CPU run with the built-in recipes (no model) opened from its
RunSpec, streamed as typed events and finished into its RunOutcome; Ctrl-C inside the stream is the user's stop,
and the stopped run resumes to its end."""

from __future__ import annotations

from kernelpro.app.session import Ended, NodeUpdate, open_or_resume
from kernelpro.run_lock import RunLock
from kernelpro.runs.outcome import RunOutcome
from kernelpro.runs.spec import Budgets, RunSpec
from tests.conftest import DATA


def short_run(settings, tmp_path, **fields) -> RunSpec:
    settings.llm.model = None  # the built-in recipes
    settings.harness.referee = False
    settings.harness.correctness_trials = 2
    settings.search.finalists = 0
    settings.forecast.record = False
    return RunSpec(**{"problem_path": DATA / "problems" / "repeated_relu.py", "runs_dir": tmp_path / "runs",
                      "device": "cpu", "budgets": Budgets(max_iters=1), "no_memory": True, "no_profile": True,
                      **fields})


def test_a_run_streams_its_steps_and_finishes_into_its_outcome(settings, tmp_path):
    spec = short_run(settings, tmp_path, run_id="r-1")
    with open_or_resume(spec, settings) as run:
        assert (run.run_id, run.resumed, run.previous) == ("r-1", False, {})
        events = list(run.stream())
        outcome = run.finish()
    *steps, end = events
    assert isinstance(end, Ended) and end.status == "completed" and not end.stopped_by_user
    assert all(isinstance(step, NodeUpdate) for step in steps) and "judge" in {step.node for step in steps}
    assert (outcome.status, outcome.candidates_judged, outcome.search_policy) == ("completed", 1, "recipes")
    assert RunOutcome.read(tmp_path / "runs" / "r-1").to_json() == outcome.to_json()
    RunLock.acquire(tmp_path / "runs" / "r-1", "run r-1").release()  # the run let its lock go


def test_ctrl_c_inside_the_stream_is_the_users_stop_and_the_run_resumes(settings, tmp_path):
    spec = short_run(settings, tmp_path)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    with open_or_resume(spec, settings) as run:
        run.context.evaluate.judge_many = interrupted  # Ctrl-C while a candidate is judged
        *_, end = run.stream()
        outcome = run.finish()
    assert isinstance(end, Ended) and (end.status, end.interrupted, end.stopped_by_user) == ("stopped", True, True)
    assert (outcome.status, outcome.candidates_judged) == ("stopped", 0)

    resumed = spec.model_copy(update={"run_id": run.run_id})
    with open_or_resume(resumed, settings) as again:
        assert again.resumed and again.previous
        *_, end = again.stream()
        outcome = again.finish()
    assert (end.status, outcome.status, outcome.candidates_judged) == ("completed", "completed", 1)
