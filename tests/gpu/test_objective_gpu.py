"""`kernelpro optimize --objective energy` on CUDA: every correct candidate judged with paired NVML readings (an
energy ratio with its interval, joules per call and watts), the best chosen by energy, the summary and report
saying so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.conftest import DATA

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")]


@pytest.mark.gpu_exclusive
def test_an_energy_run_measures_every_correct_candidate_and_chooses_its_best_by_energy(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELPRO_")}
    env.update({"KERNELPRO_MEMORY__PATH": str(tmp_path / "memory"), "KERNELPRO_HARNESS__ENERGY_SECONDS": "0.5",
                "KERNELPRO_HARNESS__ENERGY_REPEATS": "4"})
    problem = DATA / "problems" / "softmax_wide.py"
    done = subprocess.run([sys.executable, "-m", "kernelpro.cli", "optimize", str(problem), "--objective", "energy",
                           "--device", "cuda", "--max-iters", "2", "--no-profile", "--no-memory", "--runs-dir",
                           str(tmp_path / "runs"), "--json"],
                          env=env, capture_output=True, text=True, timeout=1200, cwd=tmp_path)
    assert done.returncode in (0, 3), done.stderr[-3000:]  # an improvement, or none: keep the reference
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["objective"] == "energy" and summary["candidates_judged"] >= 1
    results = [json.loads(line) for line in Path(summary["results"]).read_text().splitlines()]
    measured = [r for r in results if r["status"] == "ok" and r["correct"]]
    assert measured, "no correct candidate to measure"
    for r in measured:
        assert r["energy_ratio"] > 0 and r["energy_ci95"][0] <= r["energy_ratio"] <= r["energy_ci95"][1], r["variant"]
        assert r["energy_verdict"] in ("less", "more", "same", "uncertain") and r["edp_verdict"] is not None
        assert r["candidate"]["energy_j"] > 0 and r["candidate"]["power_w"] > 0 and r["reference"]["energy_j"] > 0
        assert len(r["details"]["energy"]["readings"]["candidate"]) == 4
    if summary["improved"]:
        assert summary["best_energy_ci95"][0] > 1.0  # less energy beyond its interval, whatever its speed
        assert summary["best_power_w"] > 0 and summary["reference_energy_j"] > 0
        verdicts = {r["variant"]: r for r in results}
        best = verdicts.get(f"{summary['best_variant']}.final") or verdicts[summary["best_variant"]]
        assert best["energy_verdict"] == "less"
    else:
        assert "lower in energy per call" in summary["no_improvement_reason"]
    report = Path(summary["report_md"]).read_text()
    assert "| Objective | energy |" in report and "## Time and energy" in report and " W " in report
