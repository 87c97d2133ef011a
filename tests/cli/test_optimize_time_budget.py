"""`kernelpro optimize --time-budget 1s` in a real process: the first judgment runs, nothing starts after it, the
finalists' re-judgment is not begun, and the run says what the budget cut."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import DATA

ROOT = Path(__file__).resolve().parents[2]


def test_a_one_second_budget_judges_one_candidate_and_says_what_it_cut(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELPRO_")}
    env.update({"PYTHONPATH": str(ROOT), "KERNELPRO_MEMORY__PATH": str(tmp_path / "memory"),
                "KERNELPRO_HARNESS__TIMING_BUDGET_S": "0.3",
                "KERNELPRO_HARNESS__REFEREE": "false", "KERNELPRO_HARNESS__TIMING_TRIALS": "5",
                "KERNELPRO_HARNESS__MIN_TIMING_TRIALS": "5",
                # every verdict marked contended: no candidate is then "measured slower" beyond doubt, so the
                # one judged is a finalist whatever this machine's speed, and its re-judgment is what is cut
                "KERNELPRO_HARNESS__CPU_CONTENTION_CORES": "0"})
    runs = tmp_path / "runs"
    done = subprocess.run([sys.executable, "-m", "kernelpro.cli", "optimize", str(DATA / "problems" / "scale_relu.py"),
                           "--device", "cpu", "--time-budget", "1s", "--runs-dir", str(runs), "--no-memory", "--json"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 3 and result["status"] == "stopped", done.stderr[-3000:]
    assert result["candidates_judged"] == 1  # the first judgment, not the first batch of four
    assert "time budget" in result["stop_reason"]
    said = " ".join(done.stderr.split())
    assert "time budget: finalists not re-judged" in said and "the best stands on its first judgment" in said
    run_dir = Path(result["run_dir"])
    assert not list(run_dir.rglob("*.final.py"))  # no finalist's re-judgment began
    logged = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert len(logged) == 1 and "final_of" not in logged[0]
