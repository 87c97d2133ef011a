"""`kernelpro diagnose` on the planted H200 profiles, and `kernelpro profile` where no GPU is present."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kernelpro.cli import app
from kernelpro.profiling.collect import gpu_visible
from tests.conftest import DATA

runner = CliRunner()
PLANTED = DATA / "ncu" / "planted"


@pytest.mark.parametrize("planted", ["uncoalesced_global", "atomic_contention", "tensor_cores_unused"])
def test_diagnose_json_has_kernels_with_roofline_and_ranked_findings(planted):
    result = runner.invoke(app, ["diagnose", "--ncu-csv", str(PLANTED / f"{planted}.csv"), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["gpu"] == "NVIDIA H200"
    (kernel,) = data["kernels"]
    assert kernel["name"] == f"planted_{planted}"
    assert {"kind", "distances"} <= set(kernel["roofline"])
    first = kernel["findings"][0]
    assert first["id"] == planted
    assert {"id", "severity", "evidence", "explanation", "advice"} <= set(first)
    assert first["advice"] and first["evidence"]


def test_diagnose_text_reads_like_advice():
    result = runner.invoke(app, ["diagnose", "--ncu-csv", str(PLANTED / "register_spills.csv"),
                                 "--ncu-rep", str(DATA / "ncu" / "reports" / "memory_bound.ncu-rep")])
    assert result.exit_code == 0, result.output
    assert "register_spills" in result.stdout and "local memory" in result.stdout


def test_diagnose_errors_are_specific(tmp_path):
    missing = runner.invoke(app, ["diagnose", "--ncu-csv", str(tmp_path / "none.csv")])
    assert missing.exit_code == 2 and "cannot read" in missing.output
    (tmp_path / "not.csv").write_text("a,b\n1,2\n")
    wrong = runner.invoke(app, ["diagnose", "--ncu-csv", str(tmp_path / "not.csv")])
    assert wrong.exit_code == 2 and "--page raw" in wrong.output
    nothing = runner.invoke(app, ["diagnose"])
    assert nothing.exit_code == 2 and "--ncu-csv" in nothing.output


def test_profile_without_a_gpu_says_so_and_falls_back(tmp_path):
    result = runner.invoke(app, ["profile", str(DATA / "problems" / "scale_relu.py"), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["source"] == "torch.profiler" and data["kernels"] == []
    assert "GPU" in data["error"] and data["events"]


def test_profile_without_a_gpu_names_the_tool_it_uses():
    if gpu_visible():
        pytest.skip("this machine has a GPU: Nsight Compute is the tool")
    result = runner.invoke(app, ["profile", str(DATA / "problems" / "scale_relu.py")])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "with torch.profiler (no NVIDIA GPU here" in said and "with Nsight Compute" not in said
