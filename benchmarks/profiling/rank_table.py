"""Print which finding comes first and second on each planted kernel (the diagnosers' report card).

    python benchmarks/profiling/rank_table.py [fixture dir]   # default: tests/data/ncu/planted

Every fixture is diagnosed as `kernelpro.profiling.diagnose` would for an agent (stage-1 class, then
the diagnosers it routes to, ranked by impact with causes before symptoms). Columns: fixture, roofline class,
the first two findings with their impact, and the ids the plant's header says must not fire that did.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from kernelpro.profiling.diagnose import diagnose
from kernelpro.profiling.findings import FINDING_IDS
from kernelpro.profiling.gpu_specs import lookup
from kernelpro.profiling.ncu_csv import read_ncu_csv

ROOT = Path(__file__).resolve().parents[2]


def forbidden(name: str) -> set[str]:
    source = ROOT / "benchmarks" / "profiling" / "planted" / f"{name}.cu"
    if not source.exists():
        return set()
    text = " ".join(line.lstrip("/ ") for line in source.read_text().split("#include")[0].splitlines())
    match = re.search(r"Must NOT fire:(.*?)\.(\s|$)", text)
    return {t for t in re.findall(r"[a-z_]+", match[1]) if t in FINDING_IDS} if match else set()


def main(directory: Path) -> int:
    gpu = lookup("NVIDIA H200")
    assert gpu is not None
    rows = [("fixture", "class", "first", "second", "wrongly fired")]
    for path in sorted(directory.glob("*.csv")):
        result = diagnose(read_ncu_csv(path)[0], gpu)
        shown = [f"{f.id} ({f.impact:.2f})" + (" [symptom]" if f.symptom_of else "") for f in result.findings]
        shown += ["-"] * (2 - len(shown))
        wrong = {f.id for f in result.findings} & forbidden(path.stem)
        rows.append((path.stem, result.roofline.kind, shown[0], shown[1], ", ".join(sorted(wrong)) or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for i, row in enumerate(rows):
        print("| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests" / "data" / "ncu" / "planted"))
