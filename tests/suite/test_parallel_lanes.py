"""Two problems at once on two CPU lanes of the local backend: each runs in processes of its own, into its own run
directory, and the ledger (the driver its only writer) ends consistent with what the runs wrote."""

from __future__ import annotations

import json

from kernelpro.suite.driver import Driver, Progress
from kernelpro.suite.lanes import local_lanes
from kernelpro.suite.local import LocalBackend
from tests.suite.helpers import two_problem_cpu_suite


def test_two_problems_run_at_once_in_two_lanes_with_their_own_runs(tmp_path, monkeypatch):
    settings, paths, ledger = two_problem_cpu_suite(tmp_path, monkeypatch)
    at_once: list[int] = []

    def seen(progress: Progress) -> None:
        at_once.append(len(progress.running))

    status, reason = Driver(paths, ledger, settings, LocalBackend(local_lanes("cpu", settings)),
                            on_progress=seen).run()

    assert (status, reason) == ("completed", "2 problem(s) done, 0 failed")
    assert max(at_once) == 2  # the second started before the first finished
    rows = {row.key: row for row in ledger.problems()}
    assert set(rows) == {"scale_relu", "repeated_relu"}
    assert {row.lane for row in rows.values()} == {"cpu0", "cpu1"}
    assert len({row.run_id for row in rows.values()}) == 2
    for key, row in rows.items():
        assert row.state == "done" and row.attempts == 1 and row.failure is None
        run_dir = paths.runs / row.run_id
        run = json.loads((run_dir / "run.json").read_text())
        assert run["problem"] == key and run["status"] == row.result["status"] == "completed"
        assert row.result["run_id"] == row.run_id and row.result["stop_reason"].startswith("iteration budget reached")
        assert (paths.logs / f"{key}.optimize.log").read_text().count("--- ") == 1  # started once, in its lane
    assert sorted(p.name for p in paths.runs.iterdir()) == sorted(row.run_id for row in rows.values())
