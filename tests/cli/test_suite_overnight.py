"""`kernelpro suite run --overnight` end to end in real processes: it plans, says how long it will take, runs the
cheap problem first, reports the plan beside what it took, and keeps the plan on --resume; a suite made without it
cannot be planned on a resume."""

from __future__ import annotations

import json
import sqlite3

from typer.testing import CliRunner

from kernelpro.cli.main import app
from kernelpro.suite.layout import SuiteConfig, create_suite
from kernelpro.suite.sources import resolve_sources
from tests.cli.test_suite import cli, environment, last_json
from tests.conftest import DATA

runner = CliRunner()


def test_an_overnight_suite_runs_cheap_problems_first_and_keeps_its_plan_on_resume(tmp_path):
    env, suites = environment(tmp_path), tmp_path / "suites"
    env["KERNELPRO_CACHE__ROOT"] = str(tmp_path / "cache")
    problems = [str(DATA / "problems" / "softmax_wide.py"), str(DATA / "problems" / "scale_relu.py")]
    proc = cli(["suite", "run", *problems, "--overnight", "--device", "cpu", "--max-iters", "1", "--runs-dir",
                str(suites), "--no-memory", "--json"], env, tmp_path)
    stdout, stderr = proc.communicate(timeout=300)
    result = last_json(stdout)
    assert (result["status"], result["finished"]) == ("completed", 2), stderr[-3000:]
    said = [line for line in stderr.splitlines() if line.startswith("overnight plan: ")]
    assert len(said) == 1 and said[0].startswith("overnight plan: 2 problems, cheap first; about ") and \
        "on the CPU (1 lane)" in said[0] and "from 0 cached baselines and 2.5 GPU-minutes a problem" in said[0] and \
        said[0].endswith("within the 8.0-hour time budget (suite.overnight_time_budget_s: no --time-budget was "
                         "given)"), stderr[-3000:]
    assert stderr.index("scale_relu: started") < stderr.index("softmax_wide: started")
    with sqlite3.connect(result["ledger"]) as conn:
        order = [key for (key,) in conn.execute("SELECT key FROM problems ORDER BY idx")]
        config = json.loads(conn.execute("SELECT config FROM suite").fetchone()[0])
    assert order == ["scale_relu", "softmax_wide"] and config["totals"]["time_s"] == 8 * 3600.0
    assert config["overnight"]["projection"]["text"] == said[0] == result["overnight"]["plan"]
    assert result["overnight"]["wall_s"] > 0 and result["overnight"]["projected_wall_s"] > 0
    assert f"| Overnight plan | {said[0]} |" in (suites / result["suite_id"] / "suite.md").read_text()

    proc = cli(["suite", "run", "--resume", result["suite_id"], "--overnight", "--runs-dir", str(suites)], env,
               tmp_path)
    stdout, stderr = proc.communicate(timeout=300)  # without --json, the lines go to stdout
    assert proc.returncode == 0 and [line for line in stdout.splitlines()
                                     if line.startswith("overnight plan: ")] == said, stderr[-3000:]

    plain, _ = create_suite(suites, SuiteConfig(sources=["x"], device="cpu"),
                            resolve_sources([DATA / "problems" / "scale_relu.py"]))
    refused = runner.invoke(app, ["suite", "run", "--resume", plain.suite_id, "--overnight", "--runs-dir",
                                  str(suites)])
    assert refused.exit_code == 2 and "was not made with --overnight" in " ".join(refused.output.split())
