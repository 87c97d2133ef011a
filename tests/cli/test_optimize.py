"""`kernelpro optimize` end to end in a real process: a loopback OpenAI-compatible server plays the model.

The agents reach the server through LiteLLM over HTTP; the candidates are judged by the real CPU judge; the run
checkpoints to SQLite. The kill test stops the process mid-run and resumes it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import DATA
from tests.graphs.helpers import HONEST
from tests.support.openai_server import Completion, OpenAIServer, openai_server_fixture  # noqa: F401

PROBLEM = DATA / "problems" / "scale_relu.py"
PLAN = {"analysis": "only the reference so far", "ideas": [
    {"title": "fuse relu and scale", "description": "one clamp-multiply expression", "rationale": "two passes",
     "techniques": ["fusion"]},
    {"title": "in-place clamp on a copy", "description": "clone then clamp_ and mul_", "rationale": "fewer temps",
     "techniques": ["in-place"]}]}
VARIANTS = [HONEST, HONEST.replace("torch.clamp(x, min=0.0) * self.scale",
                                   "x.clone().clamp_(min=0.0).mul_(self.scale)"),
            HONEST.replace("torch.clamp(x, min=0.0) * self.scale", "torch.relu(x).mul(self.scale)")]


def role_of(body: dict) -> str:
    if any(t["function"]["name"] == "report_ready" for t in body.get("tools", [])):
        return "probe"  # the tool-calling probe at the start (LiteLLM does not know openai/test-model)
    system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
    for role in ("planner", "coder", "profiler-interpreter", "critic"):
        if f"You are the {role}" in str(system):
            return role
    raise AssertionError(f"an agent with an unknown system prompt: {str(system)[:200]}")


def scripted_agents(server: OpenAIServer, delay_s: float = 0.0) -> None:
    """Text-protocol replies per agent; the coder writes a different candidate each time."""
    coded = iter(range(100))

    def respond(body: dict) -> Completion:
        role = role_of(body)
        if role == "probe":  # text, not a tool call: the agents use the text protocol
            return Completion("ready", prompt_tokens=0, completion_tokens=0)
        time.sleep(delay_s)
        if role == "planner":
            return Completion(f"Plan:\n```json\n{json.dumps(PLAN)}\n```", prompt_tokens=2000, completion_tokens=300)
        if role == "coder":
            source = VARIANTS[next(coded) % len(VARIANTS)]
            answer = {"summary": "clamp and scale fused", "code": "@python:1"}
            return Completion(f"```python\n{source}```\n```json\n{json.dumps(answer)}\n```",
                              prompt_tokens=3000, completion_tokens=400)
        review = {"verdict": "credible", "risks": [], "supports_idea": True, "techniques": ["fusion"],
                  "lesson": "scale_relu: fusing the clamp and the multiply beats two elementwise passes."}
        return Completion(f"```json\n{json.dumps(review)}\n```", prompt_tokens=1500, completion_tokens=100)

    server.responder = respond


def environment(server: OpenAIServer, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELPRO_")}
    env.update({
        "KERNELPRO_LLM__MODEL": "openai/test-model", "KERNELPRO_LLM__API_BASE": server.base_url,
        "KERNELPRO_LLM__API_KEY": "sk-loopback-secret", "KERNELPRO_LLM__RETRY_BACKOFF_S": "0.01",
        "KERNELPRO_LLM__PRICES": json.dumps({"openai/test-model": {"input_per_mtok": 2.0, "output_per_mtok": 10.0}}),
        "KERNELPRO_MEMORY__PATH": str(tmp_path / "memory"), "KERNELPRO_COMPILE__CACHE_DIR": str(tmp_path / "cc"),
        "KERNELPRO_HARNESS__TIMING_BUDGET_S": "0.3",
        "KERNELPRO_HARNESS__REFEREE": "false", "KERNELPRO_HARNESS__TIMING_TRIALS": "5",
        "KERNELPRO_HARNESS__MIN_TIMING_TRIALS": "5", "KERNELPRO_HARNESS__CPU_CONTENTION_CORES": "1e9",
    })
    return env


def optimize(args: list[str], env: dict[str, str], cwd: Path, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kernelpro.cli", "optimize", *args], env=env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def assert_a_real_improvement_or_keep_the_reference(result: dict, variants: list[str]) -> None:
    """A run ends with a candidate that is faster beyond its interval, or says to keep the reference."""
    if result["improved"]:
        low, _ = result["best_speedup_ci95"]
        assert low > 1.0 and result["best_speedup"] > 1.0
        assert Path(result["best_candidate"]).read_text().strip() in [v.strip() for v in variants]
    else:
        assert result["best_speedup"] == 1.0 and result["best_variant"] == "reference"
        assert Path(result["best_candidate"]) == PROBLEM and result["no_improvement_reason"]


def test_optimize_with_a_model_over_http(openai_server, tmp_path):
    scripted_agents(openai_server)
    proc = optimize([str(PROBLEM), "--device", "cpu", "--max-iters", "3", "--runs-dir", str(tmp_path / "runs"),
                     "--json"], environment(openai_server, tmp_path), tmp_path)
    stdout, stderr = proc.communicate(timeout=600)
    result = last_json(stdout)
    assert proc.returncode == (0 if result["improved"] else 3), stderr[-3000:]  # ok, or no improvement
    assert result["status"] == "completed" and result["candidates_judged"] == 3
    assert result["search_policy"] == "mcts" and result["idea_source"] == "llm"  # the default with a model
    assert_a_real_improvement_or_keep_the_reference(result, VARIANTS)
    report = Path(result["report"]).read_text()
    assert "fuse relu and scale" in report and "<img" in report
    entries = [json.loads(line) for line in Path(result["results"]).read_text().splitlines()]
    logged = [e for e in entries if "final_of" not in e]
    finals = [e for e in entries if "final_of" in e]
    assert len(logged) == 3 and {e["final_of"] for e in finals} <= {e["variant"] for e in logged}
    assert all(e["speedup_ci95"] and e["speed_verdict"] for e in entries if e["status"] == "ok")

    bodies = [r.body for r in openai_server.completions]
    assert role_of(bodies[0]) == "probe" and "text protocol" in stderr and "does not know it" in stderr
    bodies = [b for b in bodies if role_of(b) != "probe"]
    roles = [role_of(b) for b in bodies]
    # a batch: the reference's two planned ideas coded in parallel and judged together, then reviewed; then a
    # new plan (with the measured speedups and code side by side) and one more candidate to the budget. Which
    # variant the search plans from next follows the measured speedups, so a second plan may come first.
    assert roles[:6] == ["planner", "coder", "coder", "critic", "critic", "planner"]
    assert roles[-2:] == ["coder", "critic"] and set(roles[6:-2]) <= {"planner"} and len(roles) <= 9
    per_call = {"planner": 2000 * 2 + 300 * 10, "coder": 3000 * 2 + 400 * 10, "critic": 1500 * 2 + 100 * 10}
    assert result["llm_cost_usd"] == pytest.approx(sum(per_call[r] for r in roles) / 1e6)
    assert all(b["model"] == "test-model" for b in bodies)
    assert all(r.headers["authorization"] == "Bearer sk-loopback-secret" for r in openai_server.completions)
    planner = json.dumps(bodies[0]["messages"])
    assert "torch.relu(x) * self.scale" in planner and "Lessons from the search memory" in planner
    coders = json.dumps([bodies[1]["messages"], bodies[2]["messages"]])
    assert "fuse relu and scale" in coders and "in-place clamp on a copy" in coders
    assert "Judge: ok" in json.dumps(bodies[3]["messages"])
    second_plan = json.dumps(bodies[5]["messages"])
    first = logged[0]
    assert f"- {first['variant']} [pytorch] {first['speedup']:.2f}x" in second_plan
    assert "The code of the fastest variants" in second_plan
    assert "fusing the clamp and the multiply" in second_plan  # the critic's lesson, back from the memory
    assert "No language model" not in stderr


def test_without_a_model_it_says_so_and_runs_the_recipes(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELPRO_")}
    env.update({"KERNELPRO_MEMORY__PATH": str(tmp_path / "memory"), "KERNELPRO_HARNESS__TIMING_BUDGET_S": "0.3",
                "KERNELPRO_HARNESS__REFEREE": "false",
                "KERNELPRO_HARNESS__TIMING_TRIALS": "5", "KERNELPRO_HARNESS__MIN_TIMING_TRIALS": "5",
                "KERNELPRO_HARNESS__CPU_CONTENTION_CORES": "1e9"})
    # The README's first run: several recipes judged on a CPU machine, not one.
    proc = optimize([str(PROBLEM), "--device", "cpu", "--max-iters", "3", "--runs-dir", str(tmp_path / "runs"),
                     "--json", "--no-memory"], env, tmp_path)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode in (0, 3), stderr[-3000:]
    assert "No language model is configured" in stderr and "KERNELPRO_LLM__MODEL" in stderr
    notice = " ".join(stderr.split("To let the agents")[0].split())
    assert "on this CPU: torch.inference_mode" in notice and "not profiled: profiling needs an NVIDIA GPU" in notice
    assert "CUDA graph" not in notice and "cuDNN" not in notice and "TF32" not in notice  # what runs here, only
    result = last_json(stdout)
    assert proc.returncode == (0 if result["improved"] else 3)
    assert result["search_policy"] == result["idea_source"] == "recipes" and result["candidates_judged"] == 3
    logged = [json.loads(line) for line in Path(result["results"]).read_text().splitlines()]
    judged = [e for e in logged if "final_of" not in e]
    assert len({e["origin"] for e in judged}) == 3 and all(e["origin"].startswith("recipe:") for e in judged)
    recipes = [(Path(result["run_dir"]) / "candidates" / f"{e['variant']}.py").read_text() for e in judged]
    assert_a_real_improvement_or_keep_the_reference(result, recipes)
    if not result["improved"]:
        assert "no improvement: keep the reference" in Path(result["report_md"]).read_text().lower()


def test_a_killed_run_resumes_without_losing_or_rejudging_anything(openai_server, tmp_path):
    scripted_agents(openai_server, delay_s=0.2)
    env = environment(openai_server, tmp_path)
    runs = tmp_path / "runs"
    proc = optimize([str(PROBLEM), "--device", "cpu", "--max-iters", "3", "--runs-dir", str(runs), "--json"],
                    env, tmp_path, start_new_session=True)
    deadline = time.monotonic() + 300
    results = None
    while time.monotonic() < deadline:
        found = list(runs.glob("*/results.jsonl"))
        if found and found[0].read_text().count("\n") >= 1:
            results = found[0]
            break
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        time.sleep(0.1)
    assert results is not None, "no candidate was judged in time"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    before = [json.loads(line) for line in results.read_text().splitlines()]
    assert 1 <= len(before) < 3

    run_id = results.parent.name
    resumed = optimize(["--resume", run_id, "--runs-dir", str(runs), "--json"], env, tmp_path)
    stdout, stderr = resumed.communicate(timeout=600)
    result = last_json(stdout)
    assert resumed.returncode == (0 if result["improved"] else 3), stderr[-3000:]
    assert result["run_id"] == run_id and result["status"] == "completed" and result["candidates_judged"] == 3
    after = [json.loads(line) for line in results.read_text().splitlines()]
    assert [e["variant"] for e in after[: len(before)]] == [e["variant"] for e in before]  # nothing lost
    judged = [e for e in after if "final_of" not in e]
    assert len({e["variant"] for e in after}) == len(after) and len(judged) == 3  # nothing judged twice
