"""The .ncu-rep reader against the raw CSV of the same H200 capture, its rule results, and broken files."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelpro.profiling.ncu_csv import read_ncu_csv
from kernelpro.profiling.ncu_report import NcuReportError, read_ncu_report

NCU = Path(__file__).parents[1] / "data" / "ncu"
REPORTS = ("memory_bound", "smem_bank_conflicts")


@pytest.mark.parametrize("name", REPORTS)
def test_report_agrees_with_the_csv_export_of_the_same_capture(name):
    (from_report,) = read_ncu_report(NCU / "reports" / f"{name}.ncu-rep")
    (from_csv,) = read_ncu_csv(NCU / "planted" / f"{name}.csv")
    assert from_report.name == from_csv.name == f"planted_{name}"
    assert from_report.full_name == from_csv.full_name
    assert from_report.launch == from_csv.launch == 0
    assert from_report.block == from_csv.block and from_report.grid == from_csv.grid
    assert set(from_report.values) == set(from_csv.values)
    for metric, value in from_csv.values.items():
        assert from_report.values[metric] == pytest.approx(value, rel=1e-6, abs=0.01), metric
    for metric, unit in from_csv.units.items():
        assert from_report.units[metric] == unit, metric
    # The CSV prints "no data" for metrics without a value; the report reader leaves them out, like n/a.
    csv_text = {k: v for k, v in from_csv.text.items() if v != "no data"}
    assert from_report.text == csv_text
    assert from_report.sm_clock_hz == pytest.approx(from_csv.sm_clock_hz) and from_report.sm_clock_hz > 1e9


def test_rule_results_carry_type_message_and_estimated_speedup():
    (kernel,) = read_ncu_report(NCU / "reports" / "smem_bank_conflicts.ncu-rep")
    rules = {r["rule"]: r for r in kernel.rules if r["type"] != "none"}
    conflicts = rules["SharedMemoryConflicts"]
    assert conflicts["type"] == "optimization"
    assert "bank conflict" in conflicts["message"]
    assert conflicts["speedup"] > 90 and conflicts["speedup_type"] in ("local", "global")
    assert rules["SOLBottleneck"]["type"] == "ok" and rules["SOLBottleneck"]["speedup"] is None
    # ncu's link markup is turned into plain names
    assert not any("@section:" in r["message"] or "@url:" in r["message"] for r in kernel.rules)
    assert any("Memory Workload Analysis" in r["message"] for r in kernel.rules)


def test_memory_bound_report_has_no_bank_conflict_rule():
    (kernel,) = read_ncu_report(NCU / "reports" / "memory_bound.ncu-rep")
    assert "SharedMemoryConflicts" not in {r["rule"] for r in kernel.rules}
    assert kernel.get("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed") > 75


def test_missing_file(tmp_path):
    with pytest.raises(NcuReportError, match="no such file"):
        read_ncu_report(tmp_path / "absent.ncu-rep")


def test_a_file_that_is_not_a_report(tmp_path):
    path = tmp_path / "profile.ncu-rep"
    path.write_text("==PROF== Connected to process 1\n")
    with pytest.raises(NcuReportError, match="not an Nsight Compute report"):
        read_ncu_report(path)


@pytest.mark.parametrize(("fraction", "match"), [(0.01, "no kernel launches"), (0.5, "truncated or corrupt")])
def test_truncated_reports(tmp_path, fraction, match):
    data = (NCU / "reports" / "memory_bound.ncu-rep").read_bytes()
    path = tmp_path / "cut.ncu-rep"
    path.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(NcuReportError, match=match):
        read_ncu_report(path)


def _fake_ncu_install(root: Path) -> Path:
    """An Nsight Compute layout: the ncu launcher at the top, its Python module under extras/python."""
    (root / "extras" / "python").mkdir(parents=True)
    (root / "extras" / "python" / "ncu_report.py").write_text("BUNDLED = True\n")
    ncu = root / "ncu"
    ncu.write_text("#!/bin/sh\n")
    ncu.chmod(0o755)
    return ncu


def test_without_the_package_the_copy_shipped_with_ncu_is_used(tmp_path, monkeypatch):
    import importlib.machinery
    import sys

    from kernelpro.profiling import ncu_command
    from kernelpro.profiling import ncu_report_reader as ncu_report

    install = tmp_path / "nsight-compute-2099.1"
    ncu = _fake_ncu_install(install)
    monkeypatch.setattr(ncu_command, "find_ncu", lambda name="ncu": str(ncu))
    assert install / "extras" / "python" in ncu_report.bundled_module_dirs()

    real_find = importlib.machinery.PathFinder.find_spec

    def without_the_wheel(name, path=None, target=None):
        spec = real_find(name, path, target)
        if name == "ncu_report" and spec is not None and str(install) not in (spec.origin or ""):
            return None
        return spec

    monkeypatch.setattr(importlib.machinery.PathFinder, "find_spec", without_the_wheel)
    monkeypatch.setattr(sys, "path", list(sys.path))
    saved = sys.modules.pop("ncu_report", None)
    try:
        assert getattr(ncu_report.import_ncu_report(), "BUNDLED", False)
    finally:
        sys.modules.pop("ncu_report", None)
        if saved is not None:
            sys.modules["ncu_report"] = saved


CRASHING_LIBRARY = ("import ctypes\n\n\ndef load_report(path):\n"
                    "    return ctypes.string_at(0)  # a null read: SIGSEGV, as a native bug would\n")


def _stand_in_library(directory: Path, body: str) -> Path:
    """A module named ``ncu_report`` that the reader's child process imports before the real one."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "ncu_report.py").write_text(body)
    return directory


def _first_on_path(monkeypatch, directory: Path) -> None:
    import os

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(directory), os.environ.get("PYTHONPATH")) if p))


def test_with_neither_the_package_nor_ncu_the_error_says_what_to_install(monkeypatch):
    import sys

    from kernelpro.profiling import ncu_report_reader

    monkeypatch.setitem(sys.modules, "ncu_report", None)
    monkeypatch.setattr(ncu_report_reader, "bundled_module_dirs", lambda: [])
    with pytest.raises(ncu_report_reader.ReportUnreadable, match="pip install ncu-report"):
        ncu_report_reader.load_kernels(NCU / "reports" / "memory_bound.ncu-rep")


def test_the_libraries_own_error_comes_back_from_the_child(tmp_path, monkeypatch):
    refusing = _stand_in_library(tmp_path / "refusing", "def load_report(path):\n"
                                 "    raise RuntimeError('unsupported report version 99')\n")
    _first_on_path(monkeypatch, refusing)
    with pytest.raises(NcuReportError, match="ncu_report could not load it: unsupported report version 99"):
        read_ncu_report(NCU / "reports" / "memory_bound.ncu-rep")


def test_a_crash_in_the_library_is_an_error_not_the_callers_crash(tmp_path, monkeypatch):
    crashing = _stand_in_library(tmp_path / "crashing", CRASHING_LIBRARY)
    _first_on_path(monkeypatch, crashing)
    with pytest.raises(NcuReportError, match=r"crashed with SIGSEGV") as raised:
        read_ncu_report(NCU / "reports" / "memory_bound.ncu-rep")
    assert str(crashing / "ncu_report.py") in str(raised.value)  # names the module that crashed


def test_a_hang_in_the_library_times_out(tmp_path, monkeypatch):
    hanging = _stand_in_library(tmp_path / "hanging", "import time\n\n\ndef load_report(path):\n"
                                "    time.sleep(3600)\n")
    _first_on_path(monkeypatch, hanging)
    with pytest.raises(NcuReportError, match="did not finish reading it in 2 s"):
        read_ncu_report(NCU / "reports" / "memory_bound.ncu-rep", timeout_s=2)


def test_profiling_keeps_the_csv_metrics_when_the_report_reader_crashes(tmp_path, monkeypatch):
    from kernelpro.profiling.collect import _attach_rules

    crashing = _stand_in_library(tmp_path / "crashing", CRASHING_LIBRARY)
    _first_on_path(monkeypatch, crashing)
    kernels = read_ncu_csv(NCU / "planted" / "memory_bound.csv")
    warnings: list[str] = []
    assert _attach_rules(kernels, NCU / "reports" / "memory_bound.ncu-rep", warnings) == kernels
    assert len(warnings) == 1 and "rule results unavailable" in warnings[0] and "SIGSEGV" in warnings[0]
