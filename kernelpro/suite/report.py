"""``suite.md`` and ``suite.html`` (one self-contained page, plots inlined) from the ledger, at any moment.

Everything from the problems (keys, failure messages) is escaped in the HTML.
"""

from __future__ import annotations

import base64
from dataclasses import replace
from html import escape
from pathlib import Path

from kernelpro.report.html import STYLE
from kernelpro.suite import report_content as content
from kernelpro.suite.baselines import compile_baselines
from kernelpro.suite.device_time import device_time, device_time_rows, judged_verdicts
from kernelpro.suite.driver import summary
from kernelpro.suite.layout import SuitePaths
from kernelpro.suite.ledger import Ledger, seen_state
from kernelpro.suite.plots import fast_p_png, histogram_png
from kernelpro.suite.report_energy import ENERGY_HEADER, energy_cells, shows_energy
from kernelpro.suite.scores import suite_scores

SCORE_HEADER = ("score", "against eager", "against the fastest torch.compile")
NOTE = ("fast_p: the share of all scored problems that are correct and more than p times faster than the baseline "
        "(KernelBench's definition). A problem's best counts only when the finalists' re-judgment finds it faster; "
        "otherwise it keeps the reference, at 1x (the table gives its fastest candidate beside). A problem a budget "
        "cut before an improvement (budget) keeps the reference too: correct, at 1x. Failed problems "
        "count as incorrect; degenerate problems are listed apart and not scored. In brackets, the geomean's 95% "
        "interval; in parentheses, the shares fast_p may take within its problems' own intervals, from those "
        "surely faster by p to those possibly so (the problems taken as they are).")

DEVICE_NOTE = ("Every verdict the runs took (baselines, candidates, finalists' re-judgments), each once: the time "
               "in the judge's workers, the phases that took a twentieth of it or more (a torch.compile candidate "
               "compiles in its first call, inside correctness) and, where jobs shared a GPU until timing, how "
               "they held it. Waits long beside the time held alone say fewer lanes per GPU would do; the most "
               "memory one job held while timed is what the other lanes' jobs on its GPU must fit beside.")


def _md_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    def cell(text: str) -> str:
        return " ".join(str(text).split()).replace("|", "\\|")

    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(cell(c) for c in row) + " |" for row in rows), ""]


def _html_table(rows: list[tuple[str, ...]], header: tuple[str, ...] | None = None, raw_column: int | None = None
                ) -> str:
    head = "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>" if header else ""
    body = "".join("<tr>" + "".join(f"<td>{c if i == raw_column else escape(str(c))}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f'<div class="wide"><table>{head}{body}</table></div>'  # a wide table scrolls in its own box


def write_suite_report(paths: SuitePaths, ledger: Ledger) -> tuple[Path, Path]:
    suite, driven = ledger.suite(), ledger.driven()  # "running" with its driver gone reads as interrupted
    data = summary(paths, ledger, seen_state(suite["status"], driven), suite.get("stop_reason") or "")
    rows = ledger.problems()
    scores, problems = suite_scores(rows)
    against_compile = bool(compile_baselines(suite["config"].get("baselines", [])))
    header = SCORE_HEADER if against_compile else SCORE_HEADER[:2]
    score_rows = content.score_rows(scores, against_compile)
    curve, histogram = fast_p_png(problems, against_compile), histogram_png(problems)
    (paths.root / "fast_p.png").write_bytes(curve)
    (paths.root / "speedups.png").write_bytes(histogram)
    overview = content.overview(data, suite["config"], rows)
    shown = [replace(row, state=seen_state(row.state, driven)) for row in rows]
    table, problem_header = content.problem_rows(shown, problems), content.PROBLEM_HEADER
    if shows_energy(suite["config"], rows):  # joules and watts beside time, right after the speedups
        at = problem_header.index("vs compile") + 1
        problem_header = (*problem_header[:at], *ENERGY_HEADER, *problem_header[at:])
        table = [(*r[:at], *energy_cells(row), *r[at:]) for r, row in zip(table, rows, strict=True)]
    links = [content.report_link(row, paths.root) for row in rows]
    failures, degenerate = content.failures(rows), content.degenerate(problems)
    pruned = content.pruned_rows(ledger.pruned())
    held = device_time_rows(device_time(judged_verdicts(paths.root, [(r.key, r.run_id or "") for r in rows])))

    md = [f"# kernelpro suite {paths.suite_id}", "", *_md_table(("", ""), overview), "## Scores", "", NOTE, "",
          *_md_table(header, score_rows), "### In KernelBench's convention", "", content.KERNELBENCH_NOTE, "",
          *_md_table(content.KERNELBENCH_HEADER, content.kernelbench_rows(scores)), "![fast_p](fast_p.png)", "",
          "![speedups](speedups.png)", ""]
    if scores.per_level:
        md += ["## Per level", "", *_md_table(content.LEVEL_HEADER, content.level_rows(scores))]
    md += ["## Spend", "", *_md_table(("", ""), content.spend_rows(scores))]
    if held:
        md += ["## Device time", "", DEVICE_NOTE, "", *_md_table(("", ""), held)]
    md += ["## Problems", "",
           *_md_table((*problem_header, "report"),
                      [(*r, f"[report]({link})" if link else "-") for r, link in zip(table, links, strict=True)])]
    html = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
            f"<title>kernelpro suite {escape(paths.suite_id)}</title><style>{STYLE}</style></head><body>",
            f"<h1>kernelpro suite {escape(paths.suite_id)}</h1>", _html_table(overview), "<h2>Scores</h2>",
            f"<p>{escape(NOTE)}</p>", _html_table(score_rows, header), "<h3>In KernelBench's convention</h3>",
            f"<p>{escape(content.KERNELBENCH_NOTE)}</p>",
            _html_table(content.kernelbench_rows(scores), content.KERNELBENCH_HEADER),
            f'<img alt="fast_p" src="data:image/png;base64,{base64.b64encode(curve).decode()}">',
            f'<img alt="speedups" src="data:image/png;base64,{base64.b64encode(histogram).decode()}">']
    if scores.per_level:
        html += ["<h2>Per level</h2>", _html_table(content.level_rows(scores), content.LEVEL_HEADER)]
    html += ["<h2>Spend</h2>", _html_table(content.spend_rows(scores))]
    if held:
        html += ["<h2>Device time</h2>", f"<p>{escape(DEVICE_NOTE)}</p>", _html_table(held)]
    html += ["<h2>Problems</h2>",
             _html_table([(*r, f'<a href="{escape(link)}">report</a>' if link else "-")
                          for r, link in zip(table, links, strict=True)], (*problem_header, "report"),
                         raw_column=len(problem_header))]
    if degenerate:
        md += ["## Degenerate problems (not scored)", "", *_md_table(("problem", "finding"), degenerate)]
        html += ["<h2>Degenerate problems (not scored)</h2>", _html_table(degenerate, ("problem", "finding"))]
    if cut := content.cut_by_budget(rows):
        md += ["## Cut by a budget (the reference kept)", "", *_md_table(("problem", "what cut it"), cut)]
        html += ["<h2>Cut by a budget (the reference kept)</h2>", _html_table(cut, ("problem", "what cut it"))]
    if failures:
        md += ["## Failures", ""]
        html.append("<h2>Failures</h2>")
        for kind, items in failures.items():
            count = content.failure_count(items)
            md += [f"### {kind} ({count})", "", *_md_table(content.FAILURE_HEADER, items)]
            html += [f"<h3>{escape(kind)} ({count})</h3>", _html_table(items, content.FAILURE_HEADER)]
    if pruned:
        md += ["## Dropped to fit the disk budget", "", *_md_table(content.PRUNED_HEADER, pruned)]
        html += ["<h2>Dropped to fit the disk budget</h2>", _html_table(pruned, content.PRUNED_HEADER)]
    html.append("</body></html>")
    paths.markdown.write_text("\n".join(md), encoding="utf-8")
    paths.html.write_text("\n".join(html), encoding="utf-8")
    return paths.html, paths.markdown
