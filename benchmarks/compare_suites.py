"""Two suites over the same problems, side by side: what each problem cost (GPU and wall seconds) and what each
found (the best speedup with its interval, each compile baseline's), read from the suites' ledgers, so a change
in how a suite runs (lanes, ``harness.share_until_timing``) is compared on the problems both finished.

    python benchmarks/compare_suites.py BEFORE/ledger.sqlite AFTER/ledger.sqlite --out OUT.json

A problem counts in the totals only when both suites finished it (``done``). ``agree`` says whether the two
best speedups' 95% intervals overlap, and the same for each baseline, and ``after_over_before`` the ratio of the
two figures (summed up over all problems: median, range, how many within 5%): a change in how lanes share the
GPU must not change what the judge finds beyond the spread between identical jobs.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
from pathlib import Path


def read_suite(ledger: Path) -> dict:
    """The suite's active seconds, settings and problems (by ``level/task``) from its ledger."""
    with sqlite3.connect(f"file:{ledger}?mode=ro&immutable=1", uri=True) as db:
        active_s, config = db.execute("select active_s, config from suite").fetchone()
        rows = db.execute("select level, task, state, gpu_s, wall_s, result, baselines, failure, attempts "
                          "from problems").fetchall()
    problems = {}
    for level, task, state, gpu_s, wall_s, result, baselines, failure, attempts in rows:
        result, baselines = json.loads(result or "{}"), json.loads(baselines or "{}")
        problems[f"L{level}/{task}"] = {
            "state": state, "attempts": attempts, "gpu_s": round(gpu_s or 0.0, 1), "wall_s": round(wall_s or 0.0, 1),
            "best": _figure(result.get("best_speedup"), result.get("best_speedup_ci95")),
            "baselines": {name: _figure(b.get("speedup"), b.get("speedup_ci95")) for name, b in baselines.items()},
            "failure": (failure or "")[:200]}
    return {"ledger": str(ledger), "active_s": round(active_s, 1),
            "environment": json.loads(config).get("environment", {}), "problems": problems}


def _figure(speedup: float | None, ci95: list[float] | None) -> dict | None:
    return None if speedup is None else {"speedup": round(speedup, 4), "ci95": ci95}


def _agree(a: dict | None, b: dict | None) -> bool | None:
    if not (a and b and a["ci95"] and b["ci95"]):
        return None
    return a["ci95"][0] <= b["ci95"][1] and b["ci95"][0] <= a["ci95"][1]


def _ratio(a: dict | None, b: dict | None) -> float | None:
    return round(b["speedup"] / a["speedup"], 4) if a and b and a["speedup"] else None


def compare(before: dict, after: dict) -> dict:
    rows, both = [], []
    for key in sorted(set(before["problems"]) | set(after["problems"])):
        a, b = before["problems"].get(key), after["problems"].get(key)
        row = {"problem": key, "before": a, "after": b}
        if a and b and a["state"] == b["state"] == "done":
            row["agree"] = {"best": _agree(a["best"], b["best"]),
                            **{n: _agree(a["baselines"].get(n), b["baselines"].get(n)) for n in b["baselines"]}}
            row["after_over_before"] = {"best": _ratio(a["best"], b["best"]),
                                        **{n: _ratio(a["baselines"].get(n), b["baselines"].get(n))
                                           for n in b["baselines"]}}
            both.append(row)
        rows.append(row)

    def total(side: str, key: str) -> float:
        return round(sum(r[side][key] for r in both), 1)

    agreement = [v for r in both for v in r["agree"].values() if v is not None]
    ratios = sorted(v for r in both for v in r["after_over_before"].values() if v is not None)
    spread = {"figures": len(ratios), "median": statistics.median(ratios) if ratios else None,
              "within_5pct": sum(abs(v - 1) <= 0.05 for v in ratios),
              "range": [ratios[0], ratios[-1]] if ratios else None}
    states = {side: {} for side in ("before", "after")}
    for side, suite in (("before", before), ("after", after)):
        for problem in suite["problems"].values():
            states[side][problem["state"]] = states[side].get(problem["state"], 0) + 1
    return {"before": {k: v for k, v in before.items() if k != "problems"} | {"states": states["before"]},
            "after": {k: v for k, v in after.items() if k != "problems"} | {"states": states["after"]},
            "done_in_both": len(both),
            "totals_done_in_both": {side: {"gpu_s": total(side, "gpu_s"), "wall_s": total(side, "wall_s")}
                                    for side in ("before", "after")},
            "intervals_overlap": f"{sum(agreement)}/{len(agreement)}", "after_over_before": spread, "problems": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    report = {"command": " ".join(sys.argv), **compare(read_suite(args.before), read_suite(args.after))}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: report[k] for k in ("done_in_both", "totals_done_in_both", "intervals_overlap",
                                             "after_over_before")}))
    print(json.dumps({side: {"active_s": report[side]["active_s"], "states": report[side]["states"]}
                      for side in ("before", "after")}))


if __name__ == "__main__":
    main()
