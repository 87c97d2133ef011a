"""ncu's sections, sets and rules: its dash-ruled listings parsed, and a saved report's own sections and rules."""

from __future__ import annotations

import pytest

from kernelpro.profiling.ncu_details import read_report_details, report_rules, report_sections
from kernelpro.profiling.ncu_lists import NcuListError, ncu_listing, parse_table
from kernelpro.profiling.ncu_report import NcuReportError
from tests.conftest import DATA

# The shapes `ncu --list-sections` (ruled above and below its header) and `ncu --list-sets` (ruled below, long
# cells wrapped onto lines whose first column is blank, a value running past its ruler) print.
SECTIONS = """\
-------------------------- ------------------------------------ ------- ------------------------------
Identifier                 Display Name                         Enabled Filename
-------------------------- ------------------------------------ ------- ------------------------------
LaunchStats                Launch Statistics                    yes     .../Sections/LaunchStatistics.section
SpeedOfLight_RooflineChart GPU Speed Of Light Roofline Chart    no      .../SpeedOfLight_RooflineChart.section
"""
SETS = """\
Identifier Sections                                          Enabled Estimated Metrics
---------- ------------------------------------------------- ------- -----------------
basic      LaunchStats, Occupancy, SpeedOfLight              yes     213
detailed   ComputeWorkloadAnalysis, LaunchStats, MemoryWorkloadAnalysis,
           Occupancy, SpeedOfLight                           no      1007
"""


def test_sections_listing_is_read_by_column():
    rows = parse_table(SECTIONS)
    assert [r["Identifier"] for r in rows] == ["LaunchStats", "SpeedOfLight_RooflineChart"]
    assert rows[1]["Display Name"] == "GPU Speed Of Light Roofline Chart" and rows[1]["Enabled"] == "no"
    assert rows[0]["Filename"].endswith("LaunchStatistics.section")


def test_sets_listing_joins_wrapped_rows():
    basic, detailed = parse_table(SETS)
    assert basic == {"Identifier": "basic", "Sections": "LaunchStats, Occupancy, SpeedOfLight", "Enabled": "yes",
                     "Estimated Metrics": "213"}
    assert detailed["Sections"] == ("ComputeWorkloadAnalysis, LaunchStats, MemoryWorkloadAnalysis, Occupancy, "
                                    "SpeedOfLight")
    assert detailed["Enabled"] == "no" and detailed["Estimated Metrics"] == "1007"


def test_text_without_a_table_has_no_rows():
    assert parse_table("==ERROR== unrecognised option\n") == []


def test_without_ncu_the_listing_says_what_to_give_instead(tmp_path):
    with pytest.raises(NcuListError, match="not installed.*saved .ncu-rep"):
        ncu_listing("--list-sections", ncu=str(tmp_path / "no-ncu-here"))


def test_a_report_tells_its_sections_metrics_and_rules():
    (launch,) = read_report_details(DATA / "ncu" / "reports" / "memory_bound.ncu-rep")
    assert launch.name == "planted_memory_bound"
    sections = {s["Identifier"] for s in report_sections([launch])}
    assert {"SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats"} <= sections
    speed = next(s for s in launch.sections if s.id == "SpeedOfLight")
    dram = next(m for m in speed.metrics if m["label"] == "DRAM Throughput")
    assert dram["metric"] == "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed" and dram["value"] > 80
    assert "SOLBottleneck" in {r["Identifier"] for r in report_rules([launch])}
    assert "DRAM Throughput: 89.998 %" in launch.render()


def test_a_file_that_is_not_a_report_is_named(tmp_path):
    fake = tmp_path / "x.ncu-rep"
    fake.write_text("not a report")
    with pytest.raises(NcuReportError, match="not an Nsight Compute report"):
        read_report_details(fake)
