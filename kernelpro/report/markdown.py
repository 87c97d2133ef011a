"""The report as Markdown."""

from __future__ import annotations

from kernelpro.report import content
from kernelpro.report.summary import RunSummary
from kernelpro.search.tree import VariantTree


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(_cell(c) for c in row) + " |" for row in rows)]


def render_markdown(run: RunSummary, tree: VariantTree, plot_name: str) -> str:
    best = tree.best()
    lines = [f"# kernelpro run {run.run_id}: {run.problem}", "", *_table(("", ""), content.overview(run, tree)), "",
             f"![speedup over iterations]({plot_name})", "", "## Variants", "", "```",
             tree.render_ascii(), "```", "", "## Steps", ""]
    for step in content.steps(tree):
        v = step.variant
        lines.append(f"### {v.id} (iteration {v.iteration}, from {v.parent_id}, {v.origin}, {v.kind})")
        for label, text in step.fields:  # one line each, but the profile that led here keeps its layout
            lines.append(f"- {label}: {text if label == 'Led by' else ' '.join(text.split()) or '-'}")
        lines.append("")
    energy = content.energy_rows(tree)
    if energy:
        lines += ["## Time and energy", "", *_table(content.ENERGY_HEADER, energy), ""]
    lines += ["## Spend", "", *_table(("role", "tokens in", "tokens out", "cost"), content.spend(run)), "",
              *_table(("", ""), content.resources(run)), ""]
    if best is not None:
        lines += [f"## {content.best_title(best, tree.objective)}", "", "```python", best.source.rstrip(), "```", ""]
    else:
        lines += [f"## {content.no_improvement(run)}", ""]
    return "\n".join(lines)
