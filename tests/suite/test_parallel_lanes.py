"""Two problems at once on two CPU lanes of the local backend: each runs in processes of its own, into its own run
directory, and the ledger (the driver its only writer) ends consistent with what the runs wrote."""

from __future__ import annotations

import json
import os
from pathlib import Path

from kernelpro.config import Settings
from kernelpro.suite.budget import Limits
from kernelpro.suite.driver import Driver, Progress
from kernelpro.suite.lanes import local_lanes
from kernelpro.suite.layout import SuiteConfig, create_suite
from kernelpro.suite.local import LocalBackend
from kernelpro.suite.sources import resolve_sources
from tests.conftest import DATA
from tests.suite.helpers import SHORT_TIMING

ROOT = Path(__file__).resolve().parents[2]


def test_two_problems_run_at_once_in_two_lanes_with_their_own_runs(tmp_path, monkeypatch):
    for name in [n for n in os.environ if n.startswith("KERNELPRO_")]:
        monkeypatch.delenv(name)
    for name, value in {**SHORT_TIMING, "KERNELPRO_MEMORY__PATH": str(tmp_path / "memory"),
                        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
                        }.items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    settings.suite.cpu_lanes = 2
    refs = resolve_sources([DATA / "problems" / "scale_relu.py", DATA / "problems" / "repeated_relu.py"])
    # No money to spend: each run is a whole `kernelpro optimize` that ends at its first step, so the test pays
    # for two runs side by side, not for two searches (tests/cli/test_suite.py judges).
    config = SuiteConfig(sources=["x"], device="cpu", max_iters=1, no_memory=True, per_problem=Limits(usd=0.0))
    paths, ledger = create_suite(tmp_path, config, refs)
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
        assert run["problem"] == key and run["status"] == row.result["status"] == "stopped"
        assert row.result["run_id"] == row.run_id and row.result["stop_reason"].startswith("LLM budget spent")
        assert (paths.logs / f"{key}.optimize.log").read_text().count("--- ") == 1  # started once, in its lane
    assert sorted(p.name for p in paths.runs.iterdir()) == sorted(row.run_id for row in rows.values())
