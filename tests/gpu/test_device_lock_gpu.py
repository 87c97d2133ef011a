"""Two processes judging on one GPU at once take turns: each judgment holds the GPU's lock, and the other waits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")]

ROOT = Path(__file__).resolve().parents[2]
JUDGE = """
import json, sys, time
from kernelpro.config import Settings
from kernelpro.harness.pipeline import Pipeline
from tests.conftest import candidate, problem
settings = Settings()
settings.harness.timing_budget_s, settings.harness.device_lock_dir = 1.0, sys.argv[1]
items = [(problem("matmul_relu"), candidate("honest_matmul_relu"))] * 5
with Pipeline("cuda", settings) as pipeline:
    results = pipeline.judge(items)
    print(json.dumps({"ok": [r.status for r in results], "waited": pipeline.stats.device_lock_wait_s}))
"""


def test_two_processes_on_one_gpu_wait_for_each_others_judgments(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    procs = [subprocess.Popen([sys.executable, "-c", JUDGE, str(tmp_path)], cwd=ROOT, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    answers = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr[-3000:]
        answers.append(json.loads(stdout.strip().splitlines()[-1]))
    assert all(a["ok"] == ["ok"] * 5 for a in answers)
    assert sum(a["waited"] for a in answers) > 1.0  # one process's judgments waited for the other's
    assert list(tmp_path.glob("gpu-*.lock"))
