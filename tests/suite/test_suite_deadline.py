"""A suite whose one problem cannot end inside its time budget: the problem's run is stopped at its deadline the
way a user stops a run, the suite ends within the overrun allowed (max(2%, 60 s)), and the problem keeps the
reference, resumable, counted correct at 1."""

from __future__ import annotations

import json
import os

from kernelpro.config import Settings
from kernelpro.runs.overrun import overrun_allowed_s
from kernelpro.suite.budget import Limits
from kernelpro.suite.driver import Driver, summary
from kernelpro.suite.lanes import local_lanes
from kernelpro.suite.layout import SuiteConfig, create_suite
from kernelpro.suite.local import LocalBackend
from kernelpro.suite.sources import resolve_sources
from tests.suite.helpers import ROOT, SHORT_TIMING

SLOW = '''import time

import torch


class Model(torch.nn.Module):
    def forward(self, x):
        time.sleep(1.0)  # every call: no judgment of it ends inside the suite's budget
        return torch.relu(x) * 2.0


def get_inputs():
    return [torch.randn(64)]


def get_init_inputs():
    return []
'''


def test_a_slow_problem_is_stopped_at_its_deadline_and_keeps_the_reference(tmp_path, monkeypatch):
    for name in [n for n in os.environ if n.startswith("KERNELPRO_")]:
        monkeypatch.delenv(name)
    for name, value in {**SHORT_TIMING, "KERNELPRO_MEMORY__PATH": str(tmp_path / "memory"),
                        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
                        }.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "slow_relu.py").write_text(SLOW)
    budget_s = 20.0
    config = SuiteConfig(sources=["x"], device="cpu", max_iters=8, no_memory=True, totals=Limits(time_s=budget_s))
    paths, ledger = create_suite(tmp_path / "suites", config, resolve_sources([tmp_path / "slow_relu.py"]))
    settings = Settings()

    status, reason = Driver(paths, ledger, settings, LocalBackend(local_lanes("cpu", settings))).run()

    active_s = float(ledger.suite()["active_s"])
    assert active_s <= budget_s + overrun_allowed_s(budget_s), (active_s, reason)
    row = ledger.problem("slow_relu")
    assert (status, row.state, row.attempts) == ("completed", "budget", 1), (status, reason, row)
    assert "stopped at its deadline" in row.result["stop_reason"]
    # stopped as a user stops a run: its outputs written, its checkpoint there for optimize --resume
    run_dir = paths.runs / row.run_id
    assert json.loads((run_dir / "run.json").read_text())["status"] == "stopped" and (run_dir / "checkpoint.sqlite"
                                                                                       ).is_file()
    scored = summary(paths, ledger, status, reason)
    assert (scored["budget"], scored["correct"], scored["fast_p"]["0"], scored["fast_p"]["1.0"],
            scored["geomean_speedup"]) == (1, 1, 1.0, 0.0, 1.0)
