"""`kernelpro suite run` on CUDA: one lane per visible GPU, the compile baselines judged against eager, the scores
against both, the report."""

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


def test_a_cuda_suite_measures_its_baselines_and_scores_against_them(tmp_path):
    source = tmp_path / "problems.txt"
    source.write_text(f"{DATA / 'problems' / 'scale_relu.py'}\n{DATA / 'problems' / 'matmul_relu.py'}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELPRO_")}
    env.update({"KERNELPRO_MEMORY__PATH": str(tmp_path / "memory"),
                "KERNELPRO_SUITE__BASELINES": '["eager", "compile_default", "compile_max_autotune_no_cudagraphs"]'})
    done = subprocess.run([sys.executable, "-m", "kernelpro.cli", "suite", "run", str(source), "--device", "cuda",
                           "--max-iters", "1", "--policy", "recipes", "--no-profile", "--no-memory", "--runs-dir",
                           str(tmp_path / "suites"), "--json"], env=env, capture_output=True, text=True,
                          timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["status"] == "completed" and result["problems"] == 2 and result["failed"] == 0
    assert f"{torch.cuda.device_count()} lane(s) (local)" in done.stderr
    assert result["gpu_seconds"] > 0 and set(result["fast_p_vs_compile"]) == set(result["fast_p"])
    from kernelpro.suite.layout import open_suite

    _, ledger = open_suite(tmp_path / "suites", result["suite_id"])
    for row in ledger.problems():
        assert set(row.baselines) == {"compile_default", "compile_max_autotune_no_cudagraphs"}
        for baseline in row.baselines.values():
            assert baseline["status"] in ("ok", "incorrect", "compile_error", "runtime_error", "timeout")
            if baseline["correct"]:
                assert baseline["speedup"] > 0 and len(baseline["speedup_ci95"]) == 2
        assert row.result["reference_ms"] > 0
    md = Path(result["report_md"]).read_text()
    assert "against the fastest torch.compile" in md and "compile default" in md
