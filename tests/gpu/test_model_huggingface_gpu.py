"""`kernelpro model` on CUDA end to end on GPT-2 small (its default config, random weights, nothing downloaded):
exported, its blocks extracted, optimised by the built-in recipes, spliced back and judged against the whole
model. The run's --json line is printed (pytest -s) and kept in the test's directory."""

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


def test_gpt2_small_is_optimised_by_its_regions_and_judged_end_to_end(tmp_path):
    transformers = pytest.importorskip("transformers")
    config = tmp_path / "gpt2"
    transformers.GPT2Config().save_pretrained(config)  # 12 layers, 768 wide: GPT-2 small's shape
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELPRO_")}
    env.update({"KERNELPRO_MEMORY__PATH": str(tmp_path / "memory"), "HF_HUB_OFFLINE": "1",
                "KERNELPRO_SUITE__BASELINES": '["eager"]',  # the compile baselines are not what this is about
                "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))})
    done = subprocess.run([sys.executable, "-m", "kernelpro.cli", "model", str(config), "--batch", "1",
                           "--seq-len", "128", "--device", "cuda", "--top", "2", "--max-iters", "2", "--policy",
                           "recipes", "--time-budget", "5m", "--no-profile", "--no-memory", "--runs-dir",
                           str(tmp_path / "runs"), "--json"], env=env, capture_output=True, text=True, timeout=570)
    assert done.returncode == 0, done.stderr[-3000:]
    line = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps(line, indent=1))
    regions = line["regions"]
    assert {f"model.h.{index}" for index in range(12)} <= {r["name"] for r in regions}
    assert [r["share"] for r in regions] == sorted((r["share"] for r in regions), reverse=True)
    assert abs(sum(r["share"] for r in regions) - 1) < 1e-6
    optimised = [r for r in regions if r["problem"]]
    assert len(optimised) == 2 and all(r["ceiling"] > 1 for r in optimised)
    for region in optimised:
        assert "transformers" not in Path(region["problem"]).read_text()
    spliced = [r for r in regions if r["spliced"]]
    assert spliced, [(r["name"], r["best"], r["note"]) for r in optimised]  # a recipe beats a launch-bound block
    for region in spliced:
        assert region["best"] > 1 and region["measured_gain"] is not None and len(region["measured_ci95"]) == 2
    assert line["end_to_end_correct"] is True and line["status"] != "incorrect"
    assert line["end_to_end_speedup"] > 0 and len(line["end_to_end_ci95"]) == 2 and line["predicted_speedup"] > 1
    assert "traced_by_export" in Path(line["patched_model"]).read_text()
    report = Path(line["report"]).read_text()
    assert "model.h." in report and "Amdahl" in report
