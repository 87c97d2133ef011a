"""The forecast report: a markdown table of every forecaster's scores and the plots beside it.

    report.md, scores.json, risk_coverage.png, reliability.png, confusion_<forecaster>.png
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kernelpro.forecast.classes import CONFIDENCES, N_CLASSES, Forecast
from kernelpro.forecast.scores import risk_coverage

ROWS = [("accuracy", "accuracy", "+"), ("accuracy_within_1", "off-by-one accuracy", "+"),
        ("half_brier", "half-Brier", "-"), ("crps", "ordinal CRPS", "-"), ("nll", "NLL", "-"), ("ece", "ECE (10)", "-"),
        *[(f"aurc_{k}", f"AURC ({k})", "-") for k in CONFIDENCES],
        ("recovered_top_1pct", "speedup recovered, top 1%", "+"),
        ("recovered_top_10pct", "speedup recovered, top 10%", "+"),
        ("recovered_top_50pct", "speedup recovered, top 50%", "+"),
        ("mape_expected_speedup", "MAPE of expected speedup", "-"), ("spearman", "Spearman (expected speedup)", "+")]


class Scored:
    """One forecaster's scores with the forecasts and truths they came from (correct candidates only)."""

    def __init__(self, report: dict, forecasts: Sequence[Forecast], truth: Sequence[int]) -> None:
        self.report = report
        kept = [i for i, c in enumerate(truth) if c >= 1]
        self.probs = np.array([forecasts[i].probabilities for i in kept]).reshape(-1, N_CLASSES)
        self.truth = np.array([truth[i] for i in kept], dtype=int)

    @property
    def name(self) -> str:
        return str(self.report["forecaster"])


def markdown(scored: Sequence[Scored], title: str, notes: Sequence[str] = ()) -> str:
    head = "| score | " + " | ".join(f"{s.name} (all) | {s.name} (parsed)" for s in scored) + " |"
    lines = [f"# {title}", "", *notes, "" if notes else "", head, "|" + "---|" * (1 + 2 * len(scored))]
    for key, label, better in ROWS:
        cells = [_cell(s.report[view].get(key)) for s in scored for view in ("all", "parsed")]
        lines.append(f"| {label} ({'higher' if better == '+' else 'lower'} is better) | " + " | ".join(cells) + " |")
    for label, key in (("candidates scored", "n"),):
        lines.append(f"| {label} | " + " | ".join(_cell(s.report[v].get(key)) for s in scored
                                                  for v in ("all", "parsed")) + " |")
    lines += ["", *(f"- {s.name}: {s.report['candidates']} candidates, {s.report['failures_left_out']} left out "
                    f"(failures, class 0, never predicted; {s.report.get('degenerate_left_out', 0)} of them correct "
                    "candidates of degenerate problems, whose speedups are hollow), "
                    f"{s.report['parse_failures']} parse failures (scored as uniform in *all*, left out of "
                    "*parsed*)" for s in scored), "",
              "![risk-coverage](risk_coverage.png)", "", "![reliability](reliability.png)", "",
              *(f"![confusion {s.name}](confusion_{s.name}.png)" for s in scored), ""]
    return "\n".join(lines)


def _cell(value: object) -> str:
    return "" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def write_report(out: Path, scored: Sequence[Scored], title: str, notes: Sequence[str] = ()) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "scores.json").write_text(json.dumps([s.report for s in scored], indent=1) + "\n")
    (out / "risk_coverage.png").write_bytes(_risk_coverage_png(scored))
    (out / "reliability.png").write_bytes(_reliability_png(scored))
    for s in scored:
        (out / f"confusion_{s.name}.png").write_bytes(_confusion_png(s))
    path = out / "report.md"
    path.write_text(markdown(scored, title, notes))
    return path


def _figure(width: float = 8, height: float = 4.5):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100)


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()


def _risk_coverage_png(scored: Sequence[Scored]) -> bytes:
    figure = _figure(4 * len(CONFIDENCES), 3.6)
    for index, kind in enumerate(CONFIDENCES):
        axes = figure.add_subplot(1, len(CONFIDENCES), index + 1)
        for s in scored:
            if len(s.truth):
                coverage, risk = risk_coverage(s.probs, s.truth, kind)
                axes.plot(coverage, risk, label=s.name)
        axes.set(title=f"confidence: {kind}", xlabel="coverage", ylabel="risk (error rate)", ylim=(0, 1))
        axes.legend(fontsize=8)
    return _png(figure)


def _reliability_png(scored: Sequence[Scored]) -> bytes:
    figure = _figure(5, 4.5)
    axes = figure.add_subplot()
    axes.plot([0, 1], [0, 1], color="#999999", linestyle="--", label="calibrated")
    edges = np.linspace(0, 1, 11)
    for s in scored:
        if not len(s.truth):
            continue
        conf, right = s.probs.max(1), (s.probs.argmax(1) + 1 == s.truth)
        index = np.clip(np.digitize(conf, edges[1:-1]), 0, 9)
        xs = [conf[index == b].mean() for b in range(10) if (index == b).any()]
        ys = [right[index == b].mean() for b in range(10) if (index == b).any()]
        axes.plot(xs, ys, marker="o", label=s.name)
    axes.set(xlabel="confidence (max probability)", ylabel="accuracy", xlim=(0, 1), ylim=(0, 1))
    axes.legend(fontsize=8)
    return _png(figure)


def _confusion_png(s: Scored) -> bytes:
    figure = _figure(4.5, 4)
    axes = figure.add_subplot()
    matrix = np.zeros((N_CLASSES, N_CLASSES))
    for p, y in zip(s.probs, s.truth, strict=True):
        matrix[y - 1, int(p.argmax())] += 1
    image = axes.imshow(matrix, cmap="Blues", origin="lower", extent=(0.5, 8.5, 0.5, 8.5))
    figure.colorbar(image, ax=axes)
    axes.set(title=s.name, xlabel="predicted class", ylabel="true class")
    return _png(figure)
