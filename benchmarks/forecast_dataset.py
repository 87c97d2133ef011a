"""Build the forecasters' evaluation set: real LLM-written CUDA-L1 candidates judged on a GPU, as dataset rows.

    # here (no GPU): case directories from the CUDA-L1 release (its five GPUs' kernels for 250 KernelBench
    # problems), load_inline candidates skipped (about a minute's build each), duplicates dropped, shuffled
    python benchmarks/forecast_dataset.py prepare --out benchmarks/inputs/forecast_cases
    # on the GPU host: one judging pipeline for every case (one persistent worker per GPU), short timing;
    # rows are appended to the dataset after every chunk, so a run cut short keeps what it judged
    PYTHONPATH=. python benchmarks/forecast_dataset.py judge benchmarks/inputs/forecast_cases \\
        --out $OUT/forecast_dataset_h200.jsonl --deadline-s 330

Each row is a ``kernelpro.forecast.dataset.JudgedRow`` (problem source and hash, candidate source, hardware,
verdict, reason, speedup with its interval, class, reference and candidate times, compulsory bytes) tagged with
the release file, level, task and the speedup CUDA-L1 claimed. Score forecasters on it with
``benchmarks/forecast_scores.py``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelpro.config import Settings  # noqa: E402
from kernelpro.forecast.dataset import append_rows, hardware_name, row_for  # noqa: E402
from kernelpro.problem import ProblemError, parse_problem  # noqa: E402

MIRROR = Path("/work/.mirror/deepreinforce-ai+CUDA-L1/repo")
# The current release's five GPUs, then the first release's files (since moved or deleted; read from the history):
# its candidates differ (about 100 ran work on extra streams), so they add distinct candidates for the same problems.
RELEASE_FILES = [*(f"optimized_cuda_code/codes/{gpu}.json" for gpu in ("h100", "a100", "h20", "l40", "3090")),
                 *(f"optimized_cuda_code/deprecated/{gpu}.json" for gpu in ("h100_xsm", "a100_pcie", "h20", "l40",
                                                                            "rtx_3090")),
                 "optimized_cuda_code/h800_xsm.json", "optimized_cuda_code/codes/a100_v1.json"]
INLINE = re.compile(r"\bload_inline\b|torch\.utils\.cpp_extension|\bload\(\s*name\s*=")


def _git(mirror: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", f"--git-dir={mirror}", *args], capture_output=True, text=True)


def release_entries(mirror: Path, path: str) -> tuple[str, list[dict]]:
    """The newest committed version of a release file (a JSON object of levels, or JSON lines) and its commit."""
    revision = next((rev for rev in _git(mirror, "rev-list", "--all", "--", path).stdout.split()
                     if _git(mirror, "cat-file", "-e", f"{rev}:{path}").returncode == 0), None)
    if revision is None:
        return "", []
    text = _git(mirror, "show", f"{revision}:{path}").stdout
    try:
        data = json.loads(text)
        rows = [dict(entry, level_id=level) for level, entries in data.items() for entry in entries]
    except json.JSONDecodeError:
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return revision[:10], rows


def prepare(args: argparse.Namespace) -> None:
    out = Path(args.out)
    seen: set[str] = set()
    cases, skipped = [], {"load_inline": 0, "no_code": 0, "duplicate": 0, "problem_invalid": 0}
    for path in RELEASE_FILES:
        revision, entries = release_entries(Path(args.mirror), path)
        for entry in entries:
            ref, code = entry.get("ref_code") or "", entry.get("custom_code") or ""
            if not code.strip() or not ref.strip():
                skipped["no_code"] += 1
                continue
            if INLINE.search(code):
                skipped["load_inline"] += 1
                continue
            key = hashlib.sha256((ref + "\0" + code).encode()).hexdigest()
            if key in seen:
                skipped["duplicate"] += 1
                continue
            seen.add(key)
            level, task = int(entry["level_id"]), int(entry["task_id"])
            try:
                parse_problem(ref, name=f"L{level}_T{task:03d}")
            except ProblemError:
                skipped["problem_invalid"] += 1
                continue
            gpu = Path(path).stem
            claimed = entry.get("score", entry.get("score_default"))
            cases.append((f"{gpu}_L{level}_T{task:03d}", ref, code, {
                "release_file": f"{revision}:{path}", "release_gpu": gpu, "level": level, "task": task,
                "claimed_speedup": float(claimed) if claimed not in (None, "") else None}))
    random.Random(args.seed).shuffle(cases)  # a run cut short still covers every level and release
    for index, (name, ref, code, meta) in enumerate(cases[: args.limit or None]):
        case = out / f"{index:04d}_{name}"
        case.mkdir(parents=True, exist_ok=True)
        (case / "reference.py").write_text(ref, encoding="utf-8")
        (case / "candidate.py").write_text(code, encoding="utf-8")
        (case / "meta.json").write_text(json.dumps(meta, indent=1))
    print(f"{min(len(cases), args.limit or len(cases))} cases under {out}; skipped {skipped}")


def fast_settings(args: argparse.Namespace) -> Settings:
    """Short timing: a class needs the speedup within a few percent, not the judge's default 1%."""
    settings = Settings()
    harness = settings.harness
    harness.timing_budget_s, harness.min_timing_trials, harness.timing_trials = args.timing_budget_s, 5, 60
    harness.speedup_ci_width, harness.warmup = 0.08, 2
    harness.correctness_trials, harness.scaled_trials = 2, 1
    harness.timeout_s, harness.timeout_floor_s = args.timeout_s, min(args.timeout_s, 15.0)
    harness.worker_max_jobs = 256
    settings.forecast.record = False  # the rows go to --out, not to the user's dataset
    return settings


def judge(args: argparse.Namespace) -> None:
    from kernelpro.harness.pipeline import Pipeline

    cases = sorted(p for p in Path(args.cases).iterdir() if (p / "candidate.py").is_file())[: args.limit or None]
    out = Path(args.out)
    done = set()
    if out.exists():  # resumable: cases already judged into --out are not judged again
        done = {json.loads(line)["tags"].get("case") for line in out.read_text().splitlines() if line.strip()}
    todo = [c for c in cases if c.name not in done]
    started, judged, verdicts = time.monotonic(), 0, Counter()
    with Pipeline(args.device, fast_settings(args)) as pipeline:
        hardware = hardware_name(pipeline.device)
        for start in range(0, len(todo), args.chunk):
            if time.monotonic() - started > args.deadline_s:
                print(f"deadline: stopping with {len(todo) - start} cases left", flush=True)
                break
            chunk = todo[start: start + args.chunk]
            items, metas = [], []
            for case in chunk:
                meta = json.loads((case / "meta.json").read_text()) | {"case": case.name}
                name = f"L{meta['level']}_T{meta['task']:03d}"
                problem = parse_problem((case / "reference.py").read_text(), name=name)
                items.append((problem, (case / "candidate.py").read_text(errors="replace")))
                metas.append(meta)
            results = pipeline.judge(items)
            append_rows(out, [row_for(p, src, r, hardware, "benchmark:cuda-l1", tags=m | {"judge_s": r.elapsed_s})
                              for (p, src), r, m in zip(items, results, metas, strict=True)])
            verdicts.update(r.status for r in results)
            judged += len(chunk)
            ok = sum(r.status == "ok" for r in results)
            print(f"{judged}/{len(todo)} judged in {time.monotonic() - started:.0f}s ({ok}/{len(chunk)} ok in the "
                  f"last chunk)", flush=True)
        stats = pipeline.stats
    print(json.dumps({"judged": judged, "by_status": dict(verdicts), "elapsed_s": round(time.monotonic() - started, 1),
                      "hardware": hardware,
                      "worker_starts": stats.worker_starts, "restarts": len(stats.restarts), "out": str(out)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    prep = commands.add_parser("prepare", help="write case directories from the CUDA-L1 release")
    prep.add_argument("--out", required=True)
    prep.add_argument("--mirror", default=str(MIRROR), help="bare git directory of deepreinforce-ai/CUDA-L1")
    prep.add_argument("--seed", type=int, default=0)
    prep.add_argument("--limit", type=int, default=0, help="at most this many cases")
    run = commands.add_parser("judge", help="judge every case under CASES into a dataset file")
    run.add_argument("cases")
    run.add_argument("--out", required=True, help="the dataset JSONL (appended to; cases in it are skipped)")
    run.add_argument("--device", default="cuda")
    run.add_argument("--chunk", type=int, default=24, help="cases judged per pipeline batch between appends")
    run.add_argument("--deadline-s", type=float, default=330.0, help="start no new chunk after this long")
    run.add_argument("--timing-budget-s", type=float, default=0.25)
    run.add_argument("--timeout-s", type=float, default=60.0, help="wall-time limit per candidate")
    run.add_argument("--limit", type=int, default=0)
    args = parser.parse_args()
    prepare(args) if args.command == "prepare" else judge(args)


if __name__ == "__main__":
    main()
