"""The suite report's overview: a running suite has no stop reason yet, and its status says so plainly."""

from kernelpro.suite.report_content import overview

SUMMARY = {"suite_id": "s1", "problems": 2, "finished": 1, "failed": 0, "degenerate": [], "active_seconds": 90}


def test_status_shows_the_stop_reason_only_when_there_is_one():
    running = dict(overview({**SUMMARY, "status": "running", "stop_reason": None}, {}, []))
    stopped = dict(overview({**SUMMARY, "status": "stopped", "stop_reason": "time budget spent"}, {}, []))
    assert running["Status"] == "running"
    assert stopped["Status"] == "stopped: time budget spent"
    assert running["Active time"] == "1.5 min"


def test_the_settings_the_suite_ran_with_are_shown():
    config = {"environment": {"KERNELPRO_HARNESS__TIMING_BUDGET_S": "3.0", "KERNELPRO_SUITE__LANES_PER_GPU": "2"}}
    shown = dict(overview({**SUMMARY, "status": "running"}, config, []))
    assert shown["Settings"] == "harness.timing_budget_s=3.0; suite.lanes_per_gpu=2"
    assert dict(overview({**SUMMARY, "status": "running"}, {}, []))["Settings"] == "no KERNELPRO_* variable set"
