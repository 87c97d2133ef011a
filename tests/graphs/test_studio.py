"""LangGraph Studio's view of the optimisation graph, through the real local API server (`langgraph dev`).

The server is the one Studio talks to; the test drives it with the langgraph SDK's client as Studio does: the
graphs' schemas, then an interactive CPU run of the built-in recipes (no model configured), each interrupt
approved until the run completes.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("langgraph_api", reason="needs langgraph-cli[inmem] (the dev extra)")

from langgraph_sdk import get_sync_client  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PROBLEM = REPO / "tests" / "data" / "problems" / "repeated_relu.py"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _config_in(directory: Path) -> Path:
    """The repository's langgraph.json with its paths made absolute (the server resolves them from where it runs,
    and it runs in a directory of its own, where it keeps .langgraph_api/)."""
    config = json.loads((REPO / "langgraph.json").read_text())
    config["dependencies"] = [str(REPO / d) for d in config["dependencies"]]
    config["graphs"] = {name: str(REPO / spec) for name, spec in config["graphs"].items()}
    (directory / "langgraph.json").write_text(json.dumps(config))
    return directory / "langgraph.json"


@pytest.fixture
def server(tmp_path):
    """`langgraph dev` on a free port, in a directory of its own."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KERNELPRO_LLM__", "LANGSMITH_", "LANGCHAIN_"))}
    env.update({
        "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]), "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "KERNELPRO_RUNS_DIR": str(tmp_path / "runs"), "KERNELPRO_MEMORY__PATH": str(tmp_path / "memory"),
        "KERNELPRO_HARNESS__TIMING_BUDGET_S": "0.3",
        "KERNELPRO_HARNESS__REFEREE": "false", "KERNELPRO_HARNESS__TIMING_TRIALS": "5",
        "KERNELPRO_HARNESS__MIN_TIMING_TRIALS": "5", "KERNELPRO_HARNESS__CPU_CONTENTION_CORES": "1e9",
        "KERNELPRO_SEARCH__FINALISTS": "0",  # the re-judging of finalists is tested elsewhere; here it only costs
    })
    log = tmp_path / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "langgraph_cli", "dev", "--no-browser", "--no-reload",
                                 "--port", str(port), "--config", str(_config_in(tmp_path))],
                                cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, f"langgraph dev exited:\n{log.read_text()[-3000:]}"
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    pass
                if get_sync_client(url=url).assistants.search(graph_id="optimize"):
                    break
            except Exception:  # noqa: BLE001 - not up yet
                pass
            assert time.monotonic() < deadline, f"langgraph dev did not come up:\n{log.read_text()[-3000:]}"
            time.sleep(0.5)
        yield get_sync_client(url=url, timeout=300), tmp_path
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def test_studio_shows_the_schemas_and_runs_the_recipes_with_their_interrupts(server):
    client, tmp_path = server
    optimize = client.assistants.search(graph_id="optimize")[0]["assistant_id"]
    schemas = client.assistants.get_schemas(optimize)
    inputs = schemas["input_schema"]
    assert inputs["required"] == ["problem_path"]
    assert {"device", "max_iters", "model", "interactive", "usd_budget"} <= set(inputs["properties"])
    assert inputs["properties"]["device"]["enum"] == ["auto", "cpu", "cuda"]
    assert "variants" in schemas["state_schema"]["properties"] and schemas["context_schema"] is None
    chat = client.assistants.search(graph_id="chat")[0]["assistant_id"]
    assert "messages" in client.assistants.get_schemas(chat)["state_schema"]["properties"]

    thread = client.threads.create()["thread_id"]
    client.runs.wait(thread, optimize, input={"problem_path": str(PROBLEM), "device": "cpu", "max_iters": 1,
                                              "no_memory": True, "interactive": True})
    asked = []
    state = client.threads.get_state(thread)
    while state["interrupts"]:
        question = state["interrupts"][0]["value"]
        asked.append(question["kind"])
        if question["kind"] == "plan":
            assert question["ideas"] and question["ideas"][0]["title"]
        client.runs.wait(thread, optimize, command={"resume": {"action": "approve"}})
        state = client.threads.get_state(thread)
    values = state["values"]
    assert asked[:2] == ["plan", "code"]
    assert values["status"] == "completed" and values["iteration"] == 1, values.get("stop_reason")
    assert values["events"][0].startswith(f"open_run: run {values['run_id']}")
    run_dir = tmp_path / "runs" / values["run_id"]
    assert json.loads((run_dir / "run.json").read_text())["studio"] is True
    assert len((run_dir / "results.jsonl").read_text().splitlines()) == 1
    assert [r["status"] for r in client.runs.list(thread)] == ["success"] * (len(asked) + 1)
