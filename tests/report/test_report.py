"""The run report: files written, content present, everything from the run escaped in HTML."""

from __future__ import annotations

import base64
import re
from datetime import datetime, timedelta, timezone
from html import escape

from kernelpro.harness.result import EvalResult
from kernelpro.report import RoleUsage, RunSummary, write_report
from kernelpro.search.tree import VariantTree
from tests.conftest import candidate, problem

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def run_and_tree() -> tuple[RunSummary, VariantTree, dict[str, str]]:
    tree = VariantTree.with_root(problem("scale_relu").source)
    root = tree.root
    root.profile_notes = "memory_bound: two passes over x"
    root.findings = ["memory_bound", "launch_overhead"]
    fused = tree.spawn(root.id, candidate("honest_scale_relu"), "fuse <relu> & scale in one pass", "llm", 1)
    fused.record(EvalResult(status="ok", correct=True, speedup=1.75, speedup_ci95=[1.7, 1.8], speed_verdict="faster"))
    fused.lesson = "one pass halves the traffic"
    broken = tree.spawn(root.id, candidate("honest_triton_scale_relu"), "a Triton kernel", "llm", 1)
    broken.record(EvalResult(status="incorrect", reason="mismatch", message="max abs error 3.2 at [0, 5]"))
    graphed = tree.spawn(fused.id, candidate("honest_cuda_scale_relu"), "NVRTC kernel", "recipe:cuda_graph", 2)
    graphed.record(EvalResult(status="ok", correct=True, speedup=2.4, speedup_ci95=[2.3, 2.5], speed_verdict="faster"))
    started = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
    run = RunSummary(
        run_id="run-<1>", problem="scale_relu", device="cuda", gpu_name="NVIDIA H200", idea_source="llm",
        models={"planner": "openai/gpt-5", "coder": "anthropic/<coder>"}, status="stopped",
        stop_reason="budget: $2 spent", started_at=started, ended_at=started + timedelta(minutes=12, seconds=5),
        iterations=2, candidates_judged=3, best_variant_id=graphed.id, best_speedup=2.4, best_speedup_ci95=[2.3, 2.5],
        llm_usage={"planner": RoleUsage(model="openai/gpt-5", tokens_in=12000, tokens_out=3400, cost_usd=0.21),
                   "coder": RoleUsage(model="local/<coder>", tokens_in=50000, tokens_out=9000, priced=False)},
        gpu_seconds=95.5)
    return run, tree, {"fused": fused.id, "broken": broken.id, "graphed": graphed.id}


def test_report_files_are_written(tmp_path):
    run, tree, _ = run_and_tree()
    paths = write_report(run, tree, tmp_path / "out")
    assert {p.name for p in (tmp_path / "out").iterdir()} == {"report.md", "report.html", "speedup.png"}
    assert paths.plot.read_bytes().startswith(PNG_MAGIC)


def test_markdown_tells_the_story_and_the_spend(tmp_path):
    run, tree, ids = run_and_tree()
    text = write_report(run, tree, tmp_path).markdown.read_text()
    assert "# kernelpro run run-<1>: scale_relu" in text
    assert "NVIDIA H200" in text and "stopped: budget: $2 spent" in text
    assert "![speedup over iterations](speedup.png)" in text
    assert tree.render_ascii() in text
    assert f"### {ids['fused']} (iteration 1," in text
    assert "- Led by: memory_bound: two passes over x; findings: memory_bound, launch_overhead" in text
    assert "- Outcome: incorrect: max abs error 3.2 at [0, 5]" in text
    assert "- Lesson: one pass halves the traffic" in text
    assert "| planner (openai/gpt-5) | 12,000 | 3,400 | $0.2100 |" in text
    assert "| total | 62,000 | 12,400 | $0.2100 (unpriced) |" in text
    assert "| Wall time | 12m 05s |" in text and "| GPU time | 1m 36s |" in text
    assert f"## Best candidate: {ids['graphed']} (2.40x [2.30-2.50], 95% interval)" in text
    assert 'extern "C" __global__ void scale_relu' in text


def test_html_is_self_contained_and_escaped(tmp_path):
    run, tree, _ = run_and_tree()
    paths = write_report(run, tree, tmp_path)
    page = paths.html.read_text()
    embedded = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert embedded and base64.b64decode(embedded.group(1)) == paths.plot.read_bytes()
    assert "<style>" in page and "<link" not in page and "<script" not in page
    assert "run-&lt;1&gt;" in page and "run-<1>" not in page
    assert "fuse &lt;relu&gt; &amp; scale in one pass" in page
    assert "local/&lt;coder&gt;" in page and "<coder>" not in page
    assert "const float* __restrict__ x" in page and "y[i] = fmaxf(x[i], 0.0f) * scale;" in page


def test_a_run_whose_candidates_are_not_faster_says_keep_the_reference(tmp_path):
    tree = VariantTree.with_root(problem("scale_relu").source)
    same = tree.spawn(tree.root.id, candidate("honest_scale_relu"), "the same ops", "llm", 1)
    same.record(EvalResult(status="ok", correct=True, speedup=1.01, speedup_ci95=[0.99, 1.02], speed_verdict="same"))
    run = RunSummary(run_id="r1", problem="scale_relu", device="cpu", idea_source="llm", status="completed",
                     started_at=datetime.now(timezone.utc), no_improvement_reason="1 correct candidate(s), none "
                     "measurably faster")
    assert tree.best() is None
    paths = write_report(run, tree, tmp_path)
    text, page = paths.markdown.read_text(), paths.html.read_text()
    assert "No improvement: keep the reference. 1 correct candidate(s), none measurably faster." in text
    assert "correct, 1.01x [0.99-1.02] same" in text and "Best candidate" not in text
    assert '<h2 class="bad">No improvement: keep the reference.' in page


def test_a_run_with_nothing_judged_still_reports(tmp_path):
    tree = VariantTree.with_root(problem("scale_relu").source)
    run = RunSummary(run_id="r0", problem="scale_relu", device="cpu", idea_source="recipes", status="failed",
                     stop_reason="no recipe applies", started_at=datetime.now(timezone.utc))
    paths = write_report(run, tree, tmp_path)
    text = paths.markdown.read_text()
    assert "| Best | no improvement: keep the reference" in text and "Best candidate" not in text
    assert "## No improvement: keep the reference." in text
    assert paths.plot.read_bytes().startswith(PNG_MAGIC)


def test_a_cpu_run_says_profiling_was_skipped_and_why(tmp_path):
    tree = VariantTree.with_root(problem("scale_relu").source)
    why = "not profiled: Nsight Compute profiles need a GPU"
    tree.root.no_profile = why
    child = tree.spawn(tree.root.id, candidate("honest_scale_relu"), "inference mode", "recipe:inference_mode", 1)
    child.record(EvalResult(status="ok", correct=True, speedup=0.9, speedup_ci95=[0.8, 1.0], speed_verdict="slower"))
    child.no_profile = why
    run = RunSummary(run_id="r2", problem="scale_relu", device="cpu", idea_source="recipes", status="completed",
                     started_at=datetime.now(timezone.utc))
    paths = write_report(run, tree, tmp_path)
    assert "| Profiling | skipped: Nsight Compute profiles need a GPU |" in paths.markdown.read_text()
    assert "skipped: Nsight Compute profiles need a GPU" in paths.html.read_text()


def test_the_report_says_what_was_profiled_and_why_the_rest_was_not(tmp_path):
    run, tree, ids = run_and_tree()
    tree.get(ids["fused"]).profile_notes = "memory_bound: one pass"
    tree.get(ids["graphed"]).no_profile = "the profiler saw no kernel"
    text = write_report(run, tree, tmp_path).markdown.read_text()
    assert ("| Profiling | the reference and 1 of 2 correct candidates (not profiled: the profiler saw no kernel) |"
            in text)


def test_the_compile_baselines_a_run_judged_are_in_its_overview_with_the_best_against_the_fastest(tmp_path):
    run, tree, _ = run_and_tree()
    run.baselines = {"compile_default": {"status": "ok", "correct": True, "speedup": 1.2, "speedup_ci95": [1.1, 1.3]},
                     "compile_max_autotune_no_cudagraphs": {"status": "incorrect", "correct": False, "speedup": None}}
    text = write_report(run, tree, tmp_path).markdown.read_text()
    assert ("| torch.compile baselines | compile_default 1.20x [1.10-1.30]; compile_max_autotune_no_cudagraphs "
            "incorrect; the best is 2.00x [1.82-2.20] the fastest (compile_default), the intervals combined |") in text
    run.baselines = {}
    assert "torch.compile baselines" not in write_report(run, tree, tmp_path / "none").markdown.read_text()


def _colour_of(page: str, css_class: str) -> str:
    """The colour the page's style gives ``css_class``."""
    rules = re.findall(r"([^{}]+)\{\s*color:\s*(#[0-9a-f]{6});", page[page.index("<style>"):page.index("</style>")])
    return next(colour for selectors, colour in rules
                if f".{css_class}" in [s.strip() for s in selectors.split(",")])


def test_each_outcome_is_coloured_by_its_call_slower_as_worse_and_busy_verdicts_are_marked(tmp_path):
    tree = VariantTree.with_root(problem("scale_relu").source)
    calls = {"faster": (1.6, False), "slower": (0.5, False), "same": (1.0, False), "uncertain": (1.3, True)}
    for i, (call, (speedup, busy)) in enumerate(calls.items(), start=1):
        child = tree.spawn(tree.root.id, candidate("honest_scale_relu") + f"\n# {i}", call, "llm", i)
        child.record(EvalResult(status="ok", correct=True, speedup=speedup, speedup_ci95=[speedup * 0.9, speedup * 1.1],
                                speed_verdict=call, contended=busy))
    run = RunSummary(run_id="r3", problem="scale_relu", device="cpu", idea_source="llm", status="completed",
                     started_at=datetime.now(timezone.utc))
    paths = write_report(run, tree, tmp_path)
    page = paths.html.read_text()

    def tone(speedup_text: str) -> list[str]:
        found = re.search(r'<span class="([a-z ]+)">correct, ' + re.escape(speedup_text), page)
        assert found, speedup_text
        return found.group(1).split()

    assert tone("1.60x") == ["better"] and tone("0.50x") == ["worse"] and tone("1.00x") == ["same"]
    assert tone("1.30x") == ["same", "contended"]
    green, grey, worse = _colour_of(page, "better"), _colour_of(page, "same"), _colour_of(page, "worse")
    assert worse not in (green, grey) and int(worse[1:3], 16) > 0xc0 and int(worse[5:7], 16) < 0x40  # red/orange
    assert grey[1:3] == grey[3:5] == grey[5:7]
    note = "timed on a busy machine (contended)"
    assert page.count(note) == 1 and paths.markdown.read_text().count(note) == 1


def test_the_variant_tree_wraps_inside_its_box_under_its_own_text(tmp_path):
    run, tree, ids = run_and_tree()
    tree.get(ids["graphed"]).idea = "a very long idea " * 10
    page = write_report(run, tree, tmp_path).html.read_text()
    style = page[page.index("<style>"):page.index("</style>")]
    rule = re.search(r"\.tree \{([^}]*)\}", style)
    assert rule and "white-space: pre-wrap" in rule.group(1) and "overflow-wrap: anywhere" in rule.group(1)
    box = page[page.index('<div class="tree">'):page.index("<h2>Steps</h2>")]
    lines = tree.render_ascii().splitlines()
    assert len(lines) == 4 and box.count("<div style=") == len(lines)
    deepest = next(line for line in lines if ids["graphed"] in line)
    indent = deepest.index(ids["graphed"])
    assert f'<div style="padding-left: {indent}ch; text-indent: -{indent}ch">{escape(deepest)}</div>' in box
