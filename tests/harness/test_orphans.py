"""A judge killed outright takes its workers with it: a candidate stuck in a loop must not spin on unowned."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from kernelpro.harness.worker.dirs import worker_root

ROOT = Path(__file__).resolve().parents[2]

DRIVER = textwrap.dedent('''
    import sys
    from pathlib import Path

    from kernelpro.config import Settings
    from kernelpro.harness.pipeline import Pipeline
    from kernelpro.problem import load_problem

    LOOPING = """
    import torch.nn as nn


    class ModelNew(nn.Module):
        def __init__(self, scale):
            super().__init__()

        def forward(self, x):
            open("MARKER", "w").close()  # in its own directory: now in the loop, silent (no broken pipe ends it)
            while True:
                pass
    """

    data, mode, marker = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    settings = Settings()
    settings.harness.worker_mode = mode
    settings.harness.timeout_s = 600  # far past the test: only the judge's death can end the loop
    settings.harness.timeout_floor_s = 600
    problem = load_problem(data / "problems" / "scale_relu.py")
    looping = LOOPING.replace("MARKER", marker)
    with Pipeline("cpu", settings) as pipeline:
        pipeline.judge([(problem, looping)])
''')


@pytest.mark.parametrize("mode", ["persistent", "fresh"])
def test_killing_the_judge_kills_a_looping_candidate(tmp_path, mode):
    script = tmp_path / "driver" / "driver.py"  # its directory is on the judge's sys.path: read-only in workers
    script.parent.mkdir()
    script.write_text(DRIVER)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    name = f"looping-{tmp_path.name}"  # the candidate can write only in its own directory: found there
    proc = subprocess.Popen([sys.executable, str(script), str(ROOT / "tests" / "data"), mode, name], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    driver = psutil.Process(proc.pid)
    family: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 120
        while not any(worker_root().rglob(name)):
            assert proc.poll() is None and time.monotonic() < deadline, "the candidate never started looping"
            time.sleep(0.2)
        family = driver.children(recursive=True)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        _, alive = psutil.wait_procs(family, timeout=15)
        assert not alive, f"still running after the judge died: {[(p.pid, p.cmdline()[-3:]) for p in alive]}"
    finally:
        proc.kill()
        for leftover in family:  # never leave a spinning process behind, even when the test fails
            with contextlib.suppress(psutil.Error):
                leftover.kill()
