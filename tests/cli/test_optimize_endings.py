"""What `kernelpro optimize` says as it ends when there is nothing to keep or compare: a reference that fails is
input to fix (exit 2, its error line), never "keep the reference"."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kernelpro.cli import app
from kernelpro.exit_codes import BAD_INPUT
from tests.conftest import DATA

BROKEN = (DATA / "problems" / "scale_relu.py").read_text().replace(
    "return torch.relu(x) * self.scale", 'raise ValueError("shapes do not line up: 64 vs 128")')


def test_a_reference_whose_forward_raises_is_bad_input_with_its_error_line(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELPRO_FORECAST__DATASET", str(tmp_path / "judged.jsonl"))
    problem = tmp_path / "broken_relu.py"
    problem.write_text(BROKEN)
    line = BROKEN.splitlines().index('        raise ValueError("shapes do not line up: 64 vs 128")') + 1
    runs = tmp_path / "runs"
    args = ["--runs-dir", str(runs), "--no-memory"]
    result = CliRunner().invoke(app, ["optimize", str(problem), "--device", "cpu", "--max-iters", "1",
                                      "--run-id", "b1", *args])
    assert result.exit_code == BAD_INPUT, result.output
    said = " ".join(result.output.split())
    assert (f"error: the reference {problem} fails, so no candidate can be judged against it: the reference's "
            "Model.forward failed: ValueError: shapes do not line up: 64 vs 128 (line "
            f"{line} in forward:") in said
    assert "fix the problem file and start a new run" in said and "keep the reference" not in said

    again = CliRunner().invoke(app, ["optimize", "--resume", "b1", "--json", *args])
    assert again.exit_code == BAD_INPUT, again.output  # resuming mends nothing: the same answer
    summary = json.loads(again.stdout.strip().splitlines()[-1])
    assert summary["status"] == "failed" and summary["no_improvement_reason"].startswith(
        "the reference fails: the reference's Model.forward failed: ValueError")
