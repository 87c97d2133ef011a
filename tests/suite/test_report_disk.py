"""The suite report from a ledger (fast_p table and curve, problems, failures by kind and cause, degenerate
problems apart, what the disk budget dropped), and the disk budget itself."""

from __future__ import annotations

import gzip
import json
import os

import pytest

from kernelpro.suite.disk import enforce_disk_budget, tree_bytes
from kernelpro.suite.layout import open_suite
from kernelpro.suite.ledger import LedgerError
from kernelpro.suite.report import write_suite_report
from tests.suite.helpers import ledger_with, run_summary


def test_the_report_shows_scores_problems_failures_and_links(tmp_path):
    report = tmp_path / "run-a" / "report.html"
    report.parent.mkdir()
    report.write_text("<html></html>")
    paths, ledger = ledger_with(tmp_path, {
        "level1/1_A": {"level": 1, "result": run_summary(True, 2.0, report=str(report)),
                       "baselines": {"compile_default": {"correct": True, "speedup": 1.6, "status": "ok"}}},
        "level1/2_B<script>": {"level": 1, "state": "failed", "failure": "exited with -9: <oom>",
                               "failure_kind": "crash"},
        "level1/3_C": {"level": 1, "state": "failed", "failure": "ran past its limit", "failure_kind": "hang"},
        "level1/5_E": {"level": 1, "state": "failed", "failure": "exited with -9: <oom>", "failure_kind": "crash"},
        "level1/4_D": {"level": 1, "result": run_summary(False, None, correct=0, degenerate="constant_output: y")},
    })
    ledger.record_pruned("runs/x/profiles/p0/profile.ncu-rep.gz", "level1/1_A", "dropped", 3_000_000, "0a1b2c3d")
    html_path, md_path = write_suite_report(paths, ledger)
    md, html = md_path.read_text(), html_path.read_text()
    assert "| fast_1.0 | 0.250 | 0.250 |" in md and "| fast_1.5 | 0.250 | 0.000 |" in md  # 2.0x / 1.6x
    assert "2.00x" in md and "[1.90-2.10]" in md and "compile default 1.60x" in md and "eager 1 ms" in md
    assert "### crash (2)" in md and "### hang (1)" in md and "| ran past its limit | 1: level1/3_C |" in md
    assert md.count("exited with -9") == 1 and "2: level1/2_B<script>, level1/5_E |" in md  # one cause, one row
    assert "## Degenerate problems (not scored)" in md and "constant_output: y" in md
    assert "[report](../run-a/report.html)" in md and (paths.root / "fast_p.png").read_bytes()[:4] == b"\x89PNG"
    assert html.count("data:image/png;base64,") == 2 and '<a href="../run-a/report.html">' in html
    assert "<script>" not in html and "&lt;oom&gt;" in html  # what comes from problems is escaped
    assert "level 1" in md  # the per-level table
    assert "## Dropped to fit the disk budget" in md and "| level1/1_A | dropped | 0a1b2c3d | runs/x/profiles" in md


def test_the_disk_budget_compresses_then_drops_profiles_of_finished_runs_and_says_so(tmp_path):
    paths, ledger = ledger_with(tmp_path, {"a": {"result": run_summary(True, 1.5)}, "b": {"state": "running"}})
    for key in ("a", "b"):
        run = paths.runs / ledger.problem(key).run_id
        (run / "profiles" / "p0").mkdir(parents=True)
        (run / "profiles" / "p0" / "profile.ncu-rep").write_bytes(bytes(range(256)) * 4000)  # ~1 MB, compressible
        (run / "profiles" / "p0" / "metrics.csv").write_text("kernel,metric\n")
        (run / "checkpoint.sqlite").write_bytes(b"\0" * 500_000)
    assert enforce_disk_budget(paths, ledger, None) == 0
    size = tree_bytes(paths.root)
    freed = enforce_disk_budget(paths, ledger, (size - 500_000) / 1e6)
    done = paths.runs / ledger.problem("a").run_id
    assert freed >= 500_000 and tree_bytes(paths.root) <= size - 500_000
    assert not (done / "profiles" / "p0" / "profile.ncu-rep").exists()
    assert gzip.decompress((done / "profiles" / "p0" / "profile.ncu-rep.gz").read_bytes())[:4] == bytes(range(4))
    assert (done / "profiles" / "p0" / "metrics.csv").exists()  # what reports need stays
    running = paths.runs / ledger.problem("b").run_id
    assert (running / "profiles" / "p0" / "profile.ncu-rep").exists()  # a running problem is left alone
    enforce_disk_budget(paths, ledger, 0.6)
    actions = [(p["problem"], p["action"], p["path"].rsplit("/", 1)[-1]) for p in ledger.pruned()]
    assert ("a", "dropped", "profile.ncu-rep.gz") in actions and ("a", "compressed", "checkpoint.sqlite") in actions
    assert all(problem == "a" for problem, _, _ in actions)


def _profile(run, index: int, candidate_source: str | None) -> None:
    """A profile directory as the run's profiler leaves it: its target job and an incompressible report."""
    directory = run / "profiles" / f"p{index}"
    directory.mkdir(parents=True)
    (directory / "job-plain.json").write_text(json.dumps({"candidate_source": candidate_source, "mode": "plain"}))
    (directory / "profile.ncu-rep").write_bytes(os.urandom(400_000))


def test_the_disk_budget_keeps_the_best_and_the_finalists_profiles_and_drops_the_others_first(tmp_path):
    paths, ledger = ledger_with(tmp_path, {"a": {"result": {**run_summary(True, 1.5), "best_variant": "bbbb1111"}}})
    run = paths.runs / ledger.problem("a").run_id
    (run / "candidates").mkdir(parents=True)
    sources = {"bbbb1111": "class ModelNew: best = 1\n", "ffff2222": "class ModelNew: finalist = 1\n",
               "cccc3333": "class ModelNew: other = 1\n"}
    for variant, source in sources.items():
        (run / "candidates" / f"{variant}.py").write_text(source)
    (run / "candidates" / "ffff2222.final.py").write_text(sources["ffff2222"])
    (run / "results.jsonl").write_text("\n".join(json.dumps(e) for e in (
        {"variant": "cccc3333"}, {"variant": "ffff2222"}, {"variant": "bbbb1111"},
        {"variant": "ffff2222.final", "final_of": "ffff2222"}, {"variant": "bbbb1111.final", "final_of": "bbbb1111"},
    )) + "\n")
    for index, source in enumerate([sources["cccc3333"], sources["bbbb1111"], None, sources["ffff2222"]]):
        _profile(run, index, source)  # p0 another variant's, p1 the best's, p2 the reference's, p3 a finalist's
    (run / "checkpoint.sqlite").write_bytes(b"\0" * 300_000)

    enforce_disk_budget(paths, ledger, (tree_bytes(paths.root) - 700_000) / 1e6)
    profiles = run / "profiles"
    assert not list((profiles / "p0").glob("profile.ncu-rep*")) and not list((profiles / "p2").glob("profile*"))
    assert (profiles / "p1" / "profile.ncu-rep").exists() and (profiles / "p3" / "profile.ncu-rep").exists()
    assert (run / "checkpoint.sqlite").exists()  # the others' profiles were enough
    dropped = {(p["path"].split("/")[-2], p["variant"]) for p in ledger.pruned() if p["action"] == "dropped"}
    assert dropped == {("p0", "cccc3333"), ("p2", "reference")}

    enforce_disk_budget(paths, ledger, 0.001)  # nothing else can go: the kept profiles are compressed, not dropped
    assert (profiles / "p1" / "profile.ncu-rep.gz").exists() and (profiles / "p3" / "profile.ncu-rep.gz").exists()
    last = {p["path"].split("/")[-2]: (p["action"], p["variant"]) for p in ledger.pruned() if "p1" in p["path"]
            or "p3" in p["path"]}
    assert last == {"p1": ("compressed", "bbbb1111 (best)"), "p3": ("compressed", "ffff2222 (finalist)")}
    assert not [p for p in ledger.pruned() if p["action"] == "dropped" and p["variant"].endswith(")")]
    md = write_suite_report(paths, ledger)[1].read_text()
    assert "| a | dropped | cccc3333 | runs/" in md and "| a | compressed | bbbb1111 (best) | runs/" in md


def test_an_unknown_suite_names_the_ones_there(tmp_path):
    paths, _ = ledger_with(tmp_path, {"a": {"state": "pending"}})
    with pytest.raises(LedgerError, match="no suite 'nope'.*suite-test"):
        open_suite(tmp_path, "nope")
    assert open_suite(tmp_path, "suite-test")[0] == paths
