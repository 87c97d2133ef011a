"""Compile baselines' verdicts kept across runs: the key (what misses, what hits), reuse unless fresh, the age
reported, entries that cannot be trusted set aside."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from kernelpro.config import Settings
from kernelpro.harness.result import EvalResult, Timing
from kernelpro.report.content import reused_text
from kernelpro.runs.judged_before import JudgedBefore
from kernelpro.suite.baseline_cache import BaselineCache, RunBaselines
from kernelpro.suite.baseline_key import baseline_key, digest
from kernelpro.suite.baselines import baseline_source, measure_for_run
from kernelpro.suite.ledger import ProblemRow
from kernelpro.suite.report_content import _baseline_text
from tests.conftest import DATA, problem
from tests.suite.helpers import ROOT, SHORT_TIMING

MACHINE = {"gpu": "NVIDIA H100 80GB HBM3", "driver": "570.86.15"}
SOFTWARE = {"torch": "2.13.0+cu128", "torch_cuda": "12.8", "triton": "3.5.0", "python": "3.11.9",
            "kernelpro": "0.9.0"}
NOW = 1_750_000_000.0


def timing(ms: float) -> Timing:
    return Timing(median_ms=ms, p10_ms=ms, p90_ms=ms, mean_ms=ms, trials=20, method="cuda_events")


def verdict(**changes) -> EvalResult:
    fields = {"status": "ok", "correct": True, "speedup": 1.31, "speedup_ci95": [1.28, 1.34],
              "speed_verdict": "faster", "candidate": timing(0.61), "reference": timing(0.8), "elapsed_s": 42.0}
    return EvalResult(**{**fields, **changes})


def run_cache(tmp_path, settings: Settings | None = None, machine=MACHINE, software=SOFTWARE,
              source: str | None = None) -> RunBaselines:
    scale_relu = problem("scale_relu")
    if source is not None:
        scale_relu = dataclasses.replace(scale_relu, source=source)
    return RunBaselines(BaselineCache(tmp_path / "baselines"), scale_relu, "cuda", settings or Settings(),
                        machine, software)


def codes(name: str = "compile_default") -> dict[str, str]:
    return {name: baseline_source(problem("scale_relu"), name)}


def test_the_same_problem_machine_software_and_settings_hit_and_a_change_of_any_misses(tmp_path):
    cache = run_cache(tmp_path)
    assert cache.keep("compile_default", codes()["compile_default"], verdict(), NOW) is None
    found, warnings = run_cache(tmp_path).reusable(codes(), fresh=False, now=NOW + 60)
    assert found["compile_default"].result.speedup == 1.31 and warnings == []

    newer_torch = {**SOFTWARE, "torch": "2.14.0+cu128"}
    other_gpu = {**MACHINE, "gpu": "NVIDIA H200"}
    other_driver = {**MACHINE, "driver": "575.51.03"}
    longer_timing = Settings()
    longer_timing.harness.timing_budget_s *= 2
    source = problem("scale_relu").source + "\n# edited\n"
    for missing in (run_cache(tmp_path, software=newer_torch), run_cache(tmp_path, machine=other_gpu),
                    run_cache(tmp_path, machine=other_driver), run_cache(tmp_path, settings=longer_timing),
                    run_cache(tmp_path, source=source)):
        assert missing.reusable(codes(), fresh=False, now=NOW) == ({}, [])
    assert run_cache(tmp_path).reusable(codes("compile_max_autotune_no_cudagraphs"), False, NOW) == ({}, [])

    patient = Settings()
    patient.harness.timeout_s *= 3  # a limit on the work, not what it measures
    assert "compile_default" in run_cache(tmp_path, settings=patient).reusable(codes(), False, NOW)[0]


def test_the_environment_that_steers_inductor_is_in_the_key_and_the_directories_it_names_are_not():
    scale_relu, settings = problem("scale_relu"), Settings()

    def key(environ):
        return digest(baseline_key(scale_relu, "compile_default", "code", "cuda", settings, MACHINE, SOFTWARE,
                                   environ))

    plain = key({"PATH": "/usr/bin"})
    assert key({"PATH": "/usr/bin", "TORCHINDUCTOR_CACHE_DIR": "/tmp/x", "CUDA_VISIBLE_DEVICES": "3"}) == plain
    assert key({"TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS": "TRITON"}) != plain
    assert key({"OMP_NUM_THREADS": "4"}) != plain


def test_a_fresh_run_reuses_nothing_and_an_unknown_machine_neither_reuses_nor_keeps(tmp_path):
    run_cache(tmp_path).keep("compile_default", codes()["compile_default"], verdict(), NOW)
    assert run_cache(tmp_path).reusable(codes(), fresh=True, now=NOW) == ({}, [])
    unknown = run_cache(tmp_path, machine=None)
    assert unknown.reusable(codes(), fresh=False, now=NOW) == ({}, [])
    assert unknown.keep("compile_default", codes()["compile_default"], verdict(), NOW) is None
    assert len(list((tmp_path / "baselines").rglob("*.json"))) == 1


def test_a_verdict_measured_beside_other_work_or_cut_short_is_never_kept(tmp_path):
    cache = run_cache(tmp_path)
    for bad in (verdict(contended=True), verdict(status="timeout", correct=False, speedup=None),
                verdict(status="runtime_error", reason="crashed", correct=False, speedup=None)):
        cache.keep("compile_default", codes()["compile_default"], bad, NOW)
    assert not (tmp_path / "baselines").exists()


def test_a_corrupt_or_misfiled_entry_is_ignored_with_a_warning_and_replaced_by_the_new_measurement(tmp_path):
    cache = run_cache(tmp_path)
    code = codes()["compile_default"]
    key = cache.key("compile_default", code)
    path = cache.cache.path(digest(key))
    path.parent.mkdir(parents=True)
    for text in ('{"format": 1, "digest": "', json.dumps({"format": 1, "digest": digest(key), "key": {**key,
                                                          "baseline": "other"}, "measured_at": NOW,
                                                          "result": verdict().model_dump(mode="json")}),
                 json.dumps({"format": 1, "digest": digest(key), "key": key, "measured_at": NOW,
                             "result": {"status": "no such status"}}),
                 json.dumps({"format": 1, "digest": digest(key), "key": key, "measured_at": NOW + 86400,
                             "result": verdict().model_dump(mode="json")})):
        path.write_text(text)
        found, warnings = cache.reusable(codes(), fresh=False, now=NOW)
        assert found == {} and len(warnings) == 1
        assert warnings[0].startswith(f"ignoring the corrupt cached baseline {path} (") and "judging it again" in \
            warnings[0]
    assert cache.keep("compile_default", code, verdict(speedup=1.5), NOW) is None
    found, warnings = cache.reusable(codes(), fresh=False, now=NOW)
    assert found["compile_default"].result.speedup == 1.5 and warnings == []


def test_a_run_whose_baselines_are_all_cached_judges_none_and_says_each_was_reused_with_its_age(tmp_path):
    cache = run_cache(tmp_path)
    cache.keep("compile_default", codes()["compile_default"], verdict(), time.time() - 3 * 3600)
    run_root = tmp_path / "run"
    run_root.mkdir()
    # No evaluator at all: a cached baseline is never judged.
    summary = measure_for_run(problem("scale_relu"), ["eager", "compile_default"], None, run_root, "r-1", None,
                              "NVIDIA H100 80GB HBM3", cache)
    baseline = summary["compile_default"]
    assert baseline["speedup"] == 1.31 and baseline["reference_ms"] == 0.8
    assert baseline["device_s"] == 0.0 and baseline["reused"]["device_s"] == 42.0  # no device time spent now
    assert 3 * 3600 <= baseline["reused"]["age_s"] < 4 * 3600
    assert reused_text(baseline) == " (reused, measured 3.0 h before)"
    assert json.loads((run_root / "baselines.json").read_text()) == summary
    found = JudgedBefore.of_run(run_root).find(codes()["compile_default"])
    assert found is not None and found[1] == "the compile_default baseline, reused from the cache"
    suite_row = ProblemRow(idx=0, key="level1_19_ReLU", path="scale_relu.py", level=1, task=19, state="done",
                           result={"reference_ms": 0.8}, baselines=summary)
    assert _baseline_text(suite_row) == "eager 0.8 ms; compile default 1.31x [1.28-1.34] (reused, measured 3.0 h " \
                                        "before)"


def test_optimize_reuses_a_cached_baseline_and_says_so_with_its_age(tmp_path, monkeypatch):
    """`kernelpro optimize --baselines` with the baseline's verdict in the cache, kept under this machine's own
    key, judges no baseline: the run's output, its --json object and its report say it was reused, and how long
    before it was measured."""
    for name in [n for n in os.environ if n.startswith("KERNELPRO_")]:
        monkeypatch.delenv(name)
    for name, value in {**SHORT_TIMING, "KERNELPRO_CACHE__ROOT": str(tmp_path / "cache"),
                        "KERNELPRO_MEMORY__PATH": str(tmp_path / "memory"), "KERNELPRO_FORECAST__RECORD": "false",
                        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
                        }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    scale_relu = problem("scale_relu")
    cache = RunBaselines.for_run(scale_relu, "cpu", Settings())
    # slower than eager: the run answers its compile_default recipe from it and has no finalist to re-judge
    slower = verdict(speedup=0.8, speedup_ci95=[0.78, 0.82], speed_verdict="slower")
    cache.keep("compile_default", baseline_source(scale_relu, "compile_default"), slower, time.time() - 7200)
    done = subprocess.run([sys.executable, "-m", "kernelpro.cli", "optimize", str(DATA / "problems" / "scale_relu.py"),
                           "--device", "cpu", "--baselines", "compile_default", "--max-iters", "1", "--policy",
                           "recipes", "--no-memory", "--no-profile", "--runs-dir", str(tmp_path / "runs"), "--json"],
                          env=dict(os.environ), cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 3), done.stderr[-3000:]  # improved or not: the baselines are what is checked
    assert "baseline compile_default: 0.80x [0.78-0.82] (reused, measured 2.0 h before)" in done.stderr, \
        done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["baselines"]["compile_default"]["reused"]["device_s"] == 42.0
    [line] = [line for line in Path(summary["report_md"]).read_text().splitlines() if "torch.compile baselines" in line]
    assert "compile_default 0.80x [0.78-0.82] (reused, measured 2.0 h before)" in line
