"""The Ray backend on a local CPU cluster with two lanes: the driver holds the ledger, and a problem whose actor is
killed mid-job is started again on a new actor, under the same run."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from kernelpro.config import Settings
from kernelpro.suite.budget import Limits
from kernelpro.suite.driver import Driver
from kernelpro.suite.layout import SuiteConfig, create_suite
from kernelpro.suite.sources import resolve_sources
from tests.conftest import DATA
from tests.suite.helpers import SHORT_TIMING

ray = pytest.importorskip("ray")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def local_cluster(tmp_path_factory):
    """One local cluster for every Ray test of the module (starting one is most of a Ray test's time)."""
    # The cluster's processes inherit this environment: this checkout's kernelpro, short timing.
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {**SHORT_TIMING, "KERNELPRO_MEMORY__PATH": str(tmp_path_factory.mktemp("memory")),
                            "RAY_USAGE_STATS_ENABLED": "0",
                            "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
                            }.items():
            patch.setenv(name, value)
        # two CPU lanes, no dashboard, no runtime environment, a small object store: the cheapest cluster
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=80 * 1024 ** 2)
        try:
            yield
        finally:
            ray.shutdown()


def test_a_killed_actors_problem_is_rescheduled_on_a_new_actor(tmp_path, local_cluster):
    from kernelpro.suite.ray_backend import RayBackend

    settings = Settings()
    settings.suite.cpu_lanes = 2
    refs = [r for r in resolve_sources([DATA / "problems"]) if r.key == "scale_relu"]
    # One candidate judged: the actor runs a whole `kernelpro optimize` with the least search there is, so the test
    # pays for scheduling, not for a search (tests/cli/test_suite.py searches).
    config = SuiteConfig(sources=[str(DATA / "problems")], device="cpu", max_iters=1, no_memory=True,
                         per_problem=Limits())
    paths, ledger = create_suite(tmp_path, config, refs)
    backend = RayBackend.connect("local", "cpu", settings)  # joins the cluster this process started
    assert [lane.name for lane in backend.lanes] == ["ray0", "ray1"]
    ended: list[tuple[str, str]] = []
    driver = Driver(paths, ledger, settings, backend)
    thread = threading.Thread(target=lambda: ended.append(driver.run()), daemon=True)
    thread.start()

    victim = ledger.problem("scale_relu")
    run_dir = paths.runs / victim.run_id
    started = paths.logs / "scale_relu.optimize.log"
    deadline = time.monotonic() + 240
    while not started.exists():  # the actor has started the problem's optimisation
        assert thread.is_alive() and time.monotonic() < deadline, "the problem never started"
        time.sleep(0.05)
    lane = ledger.problem("scale_relu").lane
    ray.kill(backend.actors[lane])
    thread.join(timeout=300)
    backend.close()

    assert ended and ended[0][0] == "completed", ended
    rows = {row.key: row for row in ledger.problems()}
    assert rows["scale_relu"].state == "done" and rows["scale_relu"].attempts == 2, rows["scale_relu"].failure
    assert rows["scale_relu"].lane in ("ray0", "ray1") and rows["scale_relu"].failure is None
    result = rows["scale_relu"].result
    assert result["run_id"] == victim.run_id and json.loads((run_dir / "run.json").read_text())["status"] == \
        result["status"] == "completed"  # the same run, started again, and ended by its budget
    assert result["stop_reason"].startswith("iteration budget reached") and result["candidates_judged"] == 1
