"""Ctrl-C while a candidate is being judged: the cut judgment is no verdict anywhere, and `--resume` judges it.

A real `kernelpro optimize` process; the loopback model's coder writes a candidate whose import says it is being
judged (a file in its worker's directory, under the run's TMPDIR: the one place a worker may write) and waits
until the test releases it, so the interrupt lands inside its judgment whatever the machine's speed. The
interrupt is SIGINT to the run's process group, as a terminal's Ctrl-C is.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from tests.cli.test_optimize import PLAN, PROBLEM, environment, last_json, optimize, role_of
from tests.graphs.helpers import HONEST
from tests.support.openai_server import Completion, OpenAIServer, openai_server_fixture  # noqa: F401

HELD = ("import pathlib\nimport time\n\n"
        "pathlib.Path('judging').write_text('')\n"
        "while not pathlib.Path('release').exists():\n"
        "    time.sleep(0.05)\n\n") + HONEST


def being_judged(scratch: Path, proc: subprocess.Popen) -> Path:
    """The directory of the worker judging HELD, once its import has begun."""
    deadline = time.monotonic() + 300
    while not (found := list(scratch.glob("kernelpro-*/**/judging"))):
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "the candidate was never judged"
        time.sleep(0.05)
    return found[0].parent


def one_candidate_agents(server: OpenAIServer, source: str) -> None:
    def respond(body: dict) -> Completion:
        role = role_of(body)
        if role == "probe":
            return Completion("ready", prompt_tokens=0, completion_tokens=0)
        if role == "planner":
            return Completion(f"```json\n{json.dumps(PLAN)}\n```", prompt_tokens=100, completion_tokens=50)
        if role == "coder":
            answer = {"summary": "clamp and scale fused", "code": "@python:1"}
            return Completion(f"```python\n{source}```\n```json\n{json.dumps(answer)}\n```", prompt_tokens=100,
                              completion_tokens=50)
        review = {"verdict": "credible", "risks": [], "supports_idea": True, "techniques": ["fusion"],
                  "lesson": "scale_relu: one fused expression."}
        return Completion(f"```json\n{json.dumps(review)}\n```", prompt_tokens=100, completion_tokens=50)

    server.responder = respond


def test_ctrl_c_while_judging_records_no_verdict_and_resume_judges_the_candidate(openai_server, tmp_path):
    one_candidate_agents(openai_server, HELD)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**environment(openai_server, tmp_path), "KERNELPRO_FORECAST__DATASET": str(tmp_path / "judged.jsonl"),
           "KERNELPRO_SEARCH__FINALISTS": "0", "TMPDIR": str(scratch),
           # the held candidate waits in every process that imports it: only the worker's is released
           "KERNELPRO_HARNESS__SECOND_OPINION": "false"}
    runs = tmp_path / "runs"
    args = ["--runs-dir", str(runs), "--json"]
    proc = optimize([str(PROBLEM), "--device", "cpu", "--max-iters", "1", "--run-id", "cut", *args], env, tmp_path,
                    start_new_session=True)
    being_judged(scratch, proc)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the run's process group; the judge's worker has a session of its own
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr[-3000:]
    assert "resume with: kernelpro optimize --resume cut" in stderr

    run = runs / "cut"
    (written,) = run.joinpath("candidates").glob("*.py")  # the candidate's code is kept: it was paid for
    variant = written.stem
    assert not run.joinpath("candidates", f"{variant}.json").exists(), "a cut judgment was stored as a verdict"
    assert not run.joinpath("results.jsonl").exists() or not run.joinpath("results.jsonl").read_text().strip()
    assert not (tmp_path / "judged.jsonl").exists() or not (tmp_path / "judged.jsonl").read_text().strip()

    resumed = optimize(["--resume", "cut", *args], env, tmp_path)
    being_judged(scratch, resumed).joinpath("release").write_text("")  # judged to its end this time
    stdout, stderr = resumed.communicate(timeout=600)
    result = last_json(stdout)
    assert resumed.returncode in (0, 3), stderr[-3000:]
    assert "recovered from the run directory" not in stderr and "crashed" not in stderr
    assert result["candidates_judged"] == 1
    (logged,) = [json.loads(line) for line in run.joinpath("results.jsonl").read_text().splitlines()]
    assert logged["variant"] == variant and logged["status"] == "ok", logged
    (row,) = [json.loads(line) for line in (tmp_path / "judged.jsonl").read_text().splitlines()]
    assert row["verdict"] == "ok", row
