"""The judge's CPU timing on a busy machine, against a plain timing loop under the same load.

    PYTHONPATH=. python benchmarks/cpu_contention.py --out benchmarks/results/cpu_contention.json

The README's first run on a two-core machine: ``tests/data/problems/scale_relu.py`` and its ``compile_default``
recipe (torch.compile, default mode). With one spinning process per usable core (the other job), the judge
times the candidate; a plain loop then times the same candidate in a fresh process under the same load, with
torch's default threads (the obvious alternative: what a user's own timing loop would read). Both idle and
loaded. Reported: the judge's candidate median, the plain loop's median, their ratio, the threads the judge
chose, the other work's load it saw and whether it marked the verdict ``contended``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelpro.config import Settings  # noqa: E402
from kernelpro.harness import cpu_load  # noqa: E402
from kernelpro.harness.judge import judge  # noqa: E402
from kernelpro.problem import load_problem  # noqa: E402
from kernelpro.recipes.catalogue import recipes_for  # noqa: E402

PROBLEM = ROOT / "tests" / "data" / "problems" / "scale_relu.py"

PLAIN_LOOP = textwrap.dedent('''
    import importlib.util, statistics, sys, time, torch
    spec = importlib.util.spec_from_file_location("cand", sys.argv[1])
    cand = importlib.util.module_from_spec(spec); spec.loader.exec_module(cand)
    spec = importlib.util.spec_from_file_location("ref", sys.argv[2])
    ref = importlib.util.module_from_spec(spec); spec.loader.exec_module(ref)
    model = cand.ModelNew(*ref.get_init_inputs())
    samples = []
    with torch.no_grad():
        for i in range(30):  # warm-up, torch.compile's compilation included
            model(*ref.get_inputs())
        for i in range(400):
            args = ref.get_inputs()
            start = time.perf_counter_ns()
            model(*args)
            samples.append((time.perf_counter_ns() - start) / 1e6)
    print(statistics.median(samples), torch.get_num_threads())
''')


def plain_loop(candidate: Path) -> tuple[float, int]:
    out = subprocess.run([sys.executable, "-c", PLAIN_LOOP, str(candidate), str(PROBLEM)], capture_output=True,
                         text=True, check=True).stdout.split()
    return float(out[0]), int(out[1])


def measure(candidate_source: str, candidate_path: Path) -> dict:
    settings = Settings()
    result = judge(load_problem(PROBLEM), candidate_source, device="cpu", settings=settings)
    plain_ms, plain_threads = plain_loop(candidate_path)
    return {"status": result.status, "judge_candidate_ms": result.candidate_ms,
            "judge_reference_ms": result.reference_ms, "speedup": result.speedup,
            "speedup_ci95": result.speedup_ci95, "speed_verdict": result.speed_verdict,
            "contended": result.contended, "cpu": result.details.get("cpu"), "plain_loop_ms": plain_ms,
            "plain_loop_threads": plain_threads,
            "judge_over_plain": result.candidate_ms / plain_ms if result.candidate_ms else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    problem = load_problem(PROBLEM)
    (recipe,) = [r for r in recipes_for(problem, "cpu") if r.name == "compile_default"]
    candidate_path = args.out.with_suffix(".candidate.py")
    candidate_path.write_text(recipe.source)
    report: dict = {"command": " ".join(sys.argv), "usable_cores": cpu_load.usable_cores()}
    report["idle"] = measure(recipe.source, candidate_path)
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cpu_load.usable_cores())]
    try:
        time.sleep(1.0)
        report["loaded"] = measure(recipe.source, candidate_path)
    finally:
        for proc in spinners:
            proc.kill()
    candidate_path.unlink()
    args.out.write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
