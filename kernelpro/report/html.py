"""The report as one self-contained HTML page: inline CSS, the plot inlined as a base64 PNG.

Everything that comes from a run (ideas, diagnoses, candidate code, model names) is escaped.
"""

from __future__ import annotations

import base64
from html import escape

from kernelpro.report import content
from kernelpro.report.summary import RunSummary
from kernelpro.search.tree import VariantTree

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; color: #222; line-height: 1.45; }
h1 { font-size: 1.5rem; } h2 { margin-top: 2rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5rem 0; } td, th { border: 1px solid #ddd; padding: 0.25rem 0.6rem; }
th { background: #f4f4f4; text-align: left; }
pre { background: #f7f7f7; padding: 0.8rem; overflow-x: auto; font-size: 0.85rem; }
.step { border-left: 3px solid #1f5fa8; padding-left: 0.8rem; margin: 1rem 0; }
.ok, .better { color: #2a9d3f; } .bad { color: #c62828; } .worse { color: #d9480f; } .same { color: #757575; }
.contended { font-style: italic; } img { max-width: 100%; }
.tree { background: #f7f7f7; padding: 0.8rem; font-family: ui-monospace, monospace; font-size: 0.85rem;
        white-space: pre-wrap; overflow-wrap: anywhere; }
.wide { overflow-x: auto; max-width: 100%; }
"""


def tree_html(text: str) -> str:
    """The variant tree as a box its lines wrap inside: a long line goes on under its own text, past the branch
    lines (a hanging indent), instead of running out of the box."""
    lines = []
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip("│├└─ "))
        lines.append(f'<div style="padding-left: {indent}ch; text-indent: -{indent}ch">{escape(line)}</div>')
    return '<div class="tree">' + "".join(lines) + "</div>"


def _table(rows: list[tuple[str, ...]], header: tuple[str, ...] | None = None) -> str:
    head = "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>" if header else ""
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f'<div class="wide"><table>{head}{body}</table></div>'


def render_html(run: RunSummary, tree: VariantTree, png: bytes) -> str:
    best = tree.best()
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>kernelpro run {escape(run.run_id)}</title><style>{STYLE}</style></head><body>",
        f"<h1>kernelpro run {escape(run.run_id)}: {escape(run.problem)}</h1>",
        _table(content.overview(run, tree)),
        f'<img alt="speedup over iterations" src="data:image/png;base64,{base64.b64encode(png).decode()}">',
        "<h2>Variants</h2>", tree_html(tree.render_ascii()), "<h2>Steps</h2>",
    ]
    for step in content.steps(tree):
        v = step.variant
        tone = "bad" if step.tone == "failed" else step.tone  # slower reads as worse, never as a success
        tone += " contended" if step.contended else ""
        items = [f"<b>{escape(v.id)}</b> (iteration {v.iteration}, from {escape(v.parent_id or '')}, "
                 f"{escape(v.origin)}, {escape(v.kind)})"]
        for label, text in step.fields:
            shown = f'<span class="{tone}">{escape(text)}</span>' if label == "Outcome" else escape(text)
            items.append(f"{label}: {shown}")
        parts.append('<div class="step">' + "<br>".join(items) + "</div>")
    energy = content.energy_rows(tree)
    if energy:
        parts += ["<h2>Time and energy</h2>", _table(energy, content.ENERGY_HEADER)]
    parts += ["<h2>Spend</h2>", _table(content.spend(run), ("role", "tokens in", "tokens out", "cost")),
              _table(content.resources(run))]
    if best is not None:
        parts += [f"<h2>{escape(content.best_title(best, tree.objective))}</h2>", f"<pre>{escape(best.source)}</pre>"]
    else:
        parts += [f'<h2 class="bad">{escape(content.no_improvement(run))}</h2>']
    parts.append("</body></html>")
    return "\n".join(parts)
