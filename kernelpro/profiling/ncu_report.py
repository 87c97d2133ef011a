"""Read an Nsight Compute report (`.ncu-rep`) into KernelMetrics, without ncu and without a GPU.

Uses the `ncu_report` module from the `ncu-report` wheel (or the copy an Nsight Compute install ships). Metric
names, values and units are those of the raw CSV page with `--print-units base` (the report stores base units),
so both readers feed the same diagnosers. The report adds what the CSV lacks: ncu's own rule results, with their
estimated speedups.

The module is native code that can crash, so it runs in a child process (`ncu_report_reader`): a crash, a hang
or an unreadable file is an NcuReportError here, and the run that asked goes on with the CSV's metrics.

The launch id is the launch's position in the report, which is what ncu's CSV `ID` column counts.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from kernelpro.profiling.metrics import KernelMetrics
from kernelpro.profiling.ncu_report_reader import READER_ORIGIN

MAGIC = b"NVR\x00"  # the first bytes of every .ncu-rep file
READ_TIMEOUT_S = 300.0  # a full-section report of a few hundred launches reads in seconds


class NcuReportError(ValueError):
    """The file is missing, not an Nsight Compute report, holds no usable kernel launch, or its reader failed."""


def _check_magic(path: Path) -> None:
    try:
        with path.open("rb") as file:
            head = file.read(len(MAGIC))
    except FileNotFoundError:
        raise NcuReportError(f"{path}: no such file") from None
    except OSError as error:
        raise NcuReportError(f"cannot read {path}: {error.strerror}") from None
    if head != MAGIC:
        raise NcuReportError(f"{path}: not an Nsight Compute report (a .ncu-rep file starts with 'NVR')")


def _kernel_from_json(line: str) -> KernelMetrics:
    data = json.loads(line)
    for dims in ("block", "grid"):
        if data[dims] is not None:
            data[dims] = tuple(data[dims])
    data["rules"] = tuple(data["rules"])
    return KernelMetrics(**data)


def _reader_failure(path: Path, returncode: int, stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    module = next((line[len(READER_ORIGIN):] for line in lines if line.startswith(READER_ORIGIN)), "ncu_report")
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"{path}: the ncu_report module ({module}) crashed with {name} while reading it"
    detail = [line for line in lines if not line.startswith(READER_ORIGIN)]
    return detail[-1] if detail else f"{path}: the report reader exited with code {returncode}"


def _child_env() -> dict[str, str]:
    """This environment, with kernelpro importable in the child even when it runs from a source tree."""
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), package_root) if p)
    return env


def run_reader(module: str, path: str | Path, *args: str, timeout_s: float = READ_TIMEOUT_S) -> list[str]:
    """Run a reader module (``python -m module REPORT ARGS``) on a checked report; its stdout's JSON lines."""
    path = Path(path)
    _check_magic(path)
    command = [sys.executable, "-m", module, str(path), *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL,
                              env=_child_env())
    except subprocess.TimeoutExpired:
        raise NcuReportError(f"{path}: the ncu_report module did not finish reading it in {timeout_s:.0f} s") from None
    if done.returncode != 0:
        raise NcuReportError(_reader_failure(path, done.returncode, done.stderr))
    return [line for line in done.stdout.splitlines() if line.strip()]


def read_ncu_report(path: str | Path, timeout_s: float = READ_TIMEOUT_S) -> list[KernelMetrics]:
    """Every kernel launch in the report, in launch order."""
    lines = run_reader("kernelpro.profiling.ncu_report_reader", path, timeout_s=timeout_s)
    return [_kernel_from_json(line) for line in lines]
