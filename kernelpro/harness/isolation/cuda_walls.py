"""Whether CUDA starts behind a confined worker's walls on this machine: its own root and, once CUDA has started,
the socket filter (``isolation.worker_walls``).

The driver's start-up reads and opens what a machine's setup puts where it likes (device files, ``/run``,
sockets), and a driver that cannot gives up with "OS call failed" (error 304), as it does inside Landlock. So
before the first CUDA worker of a process is confined, a child process is confined as a worker would be and
starts CUDA and runs a kernel. Where that works, CUDA workers get the walls (``cuda_confine`` in their job and
setup); where it does not, they keep the namespaces, the read-only judge files and the audit hook, and their
verdicts' ``details.isolation.missing`` says why. Asked once per process: one CUDA start, about a second.
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernelpro.config import HarnessSettings

PROBE_TIMEOUT_S = 120.0

_CHILD = r"""
import json, sys
from kernelpro.harness.isolation.walls import isolate_worker
protections = isolate_worker(True, landlock=False, protected=json.loads(sys.argv[1]), confine=True,
                             sockets_later=True)
from kernelpro.harness.worker.process import prepare_device
isolation = protections.as_dict()
try:
    prepare_device(sys.argv[2], 0.05, isolation)
    import torch
    ran = float((torch.ones(256, device=sys.argv[2]) * 2).sum().item())
except Exception as exc:  # noqa: BLE001 - whatever the driver said is the answer
    print(json.dumps({"ok": False, "why": f"{type(exc).__name__}: {exc}"[:400], "isolation": isolation}))
else:
    print(json.dumps({"ok": ran == 512.0, "why": "" if ran == 512.0 else f"a kernel computed {ran}",
                      "isolation": isolation}))
"""


@functools.cache
def _probe(device: str, protected: tuple[str, ...]) -> tuple[bool, str]:
    from kernelpro.harness.worker.dirs import make_worker_dir
    from kernelpro.harness.worker.sandbox import worker_environment

    workdir = make_worker_dir("kernelpro-cuda-walls-")
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(list(protected)), device],
                              capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False,
                              cwd=workdir, env=worker_environment(workdir=workdir))
    except subprocess.TimeoutExpired:
        return False, f"a confined process did not start CUDA within {PROBE_TIMEOUT_S:.0f} s"
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        return False, f"the confined CUDA probe failed: {tail[0][:400]}"
    answer = json.loads(lines[-1])
    if not answer["ok"]:
        return False, f"CUDA does not start behind them on this machine ({answer['why']})"
    return True, ""


def cuda_walls_hold(device: str, protected: list[str]) -> tuple[bool, str]:
    """(True, "") where a CUDA worker on ``device`` can have its own root and the socket filter, else (False,
    why). Probed once per process and device."""
    return _probe(device, tuple(protected))


def cuda_confinement(device: str, harness: HarnessSettings, protected: list[str]) -> dict[str, Any]:
    """What a CUDA worker's job or setup carries: whether it gets its own root and the socket filter, and why not.
    Nothing for a CPU worker, or with ``harness.isolate`` off."""
    if not device.startswith("cuda") or not harness.isolate:
        return {}
    holds, why = cuda_walls_hold(device, protected)
    return {"cuda_confine": holds, "cuda_confine_why": why}
