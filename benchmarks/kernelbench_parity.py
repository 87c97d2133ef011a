"""Judge real LLM-written KernelBench candidates with kernelpro and with KernelBench's own evaluator, on one GPU in
one run, and measure how often the two agree.

    # once, here: cases from CUDA-L1's release (first and current H100 files), those that build or compile
    # nothing while judged, and KernelBench's src/ from a checkout (a bare git directory is enough)
    python benchmarks/kernelbench_parity.py prepare --out benchmarks/inputs/kernelbench_parity \\
        --source first=PATH/h100_xsm.json --source current=PATH/codes/h100.json --per-level 10 \\
        --kernelbench-git KERNELBENCH_GIT_DIR --kernelbench-out benchmarks/inputs/kernelbench_src
    # then, on the GPU host
    python3 benchmarks/kernelbench_parity.py judge benchmarks/inputs/kernelbench_parity --device cuda \\
        --kernelbench benchmarks/inputs/kernelbench_src/src --out OUT.json

For every case, in turn: kernelpro's verdict through one Pipeline (``harness.correctness_profile = "kernelbench"``,
``search.scorecard = "kernelbench"``), then ``kernelbench.eval.eval_kernel_against_ref`` in a fresh process
(``kernelbench_parity_runner.py``: KernelBench's defaults, killed after ``--timeout-s``), so that drift reaches both
alike. The runner's process is started before kernelpro judges its case, so its torch import overlaps that
judgment (nothing of it touches the GPU until its case is handed over; ``--no-prewarm`` starts it afterwards).
The JSON has every case's two verdicts and figures and the agreement (``kernelbench_parity_summary.py``), written
again after each case.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import judge_real_candidates  # noqa: E402
from kernelbench_parity_summary import summarize  # noqa: E402

RUNNER = ROOT / "benchmarks" / "kernelbench_parity_runner.py"
BUILDS_WHILE_JUDGED = ("load_inline", "cpp_extension", "torch.compile")
"""Candidates whose source holds one of these build an extension or compile a graph while judged (a minute or
more each): left out by default."""


# -- prepare ----------------------------------------------------------------------------------------
def without_builds(entries: list[dict[str, Any]], markers: tuple[str, ...]) -> dict[str, list[dict[str, Any]]]:
    """The release's entries whose candidate contains none of ``markers``, as a release file's object of levels."""
    levels: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        if any(marker in entry["custom_code"] for marker in markers):
            continue
        kept = {"task_id": entry["task"], "ref_code": entry["ref_code"], "custom_code": entry["custom_code"]}
        if entry["claimed"] is not None:
            kept["score"] = entry["claimed"]
        levels.setdefault(str(entry["level"]), []).append(kept)
    return levels


def prepare(args: argparse.Namespace) -> None:
    """``judge_real_candidates``' cases, chosen among each release's candidates that build nothing."""
    markers = tuple(args.without) if args.without else BUILDS_WHILE_JUDGED
    with tempfile.TemporaryDirectory(prefix="kb-parity-sources-") as staging:
        sources = []
        for spec in args.source:
            label, _, path = spec.rpartition("=")
            label = label or Path(path).stem
            kept = without_builds(judge_real_candidates.read_release(Path(path)), markers)
            filtered = Path(staging) / label / Path(path).name
            filtered.parent.mkdir()
            filtered.write_text(json.dumps(kept), encoding="utf-8")
            sources.append(f"{label}={filtered}")
        judge_real_candidates.prepare(argparse.Namespace(out=args.out, source=sources, per_level=args.per_level))
    if args.kernelbench_git:
        extract_kernelbench(Path(args.kernelbench_git), Path(args.kernelbench_out))


def extract_kernelbench(git_dir: Path, out: Path) -> None:
    """KernelBench's ``src/`` at the checkout's HEAD, and its commit in ``COMMIT`` beside it."""
    commit = subprocess.run(["git", "-C", str(git_dir), "rev-parse", "HEAD"], check=True, capture_output=True,
                            text=True).stdout.strip()
    out.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(git_dir), "archive", "HEAD", "src"], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
    (out / "COMMIT").write_text(commit + "\n")
    print(f"KernelBench {commit[:7]} src/ under {out}")


# -- judge ------------------------------------------------------------------------------------------
def select_cases(cases: Path, pattern: str = "*", limit: int = 0) -> list[Path]:
    """Case directories (those with a candidate.py) whose name matches ``pattern``, sorted, the first ``limit``."""
    chosen = sorted(p for p in cases.iterdir() if (p / "candidate.py").is_file() and fnmatch.fnmatch(p.name, pattern))
    return chosen[:limit or None]


def unusable(device: str, kernelbench_src: Path, cuda_available: bool) -> str | None:
    """Why this run cannot compare anything, or None."""
    if not device.startswith("cuda"):
        return (f"--device {device}: KernelBench's evaluator runs on CUDA only (eval_kernel_against_ref asserts "
                "torch.cuda.is_available()), so there is nothing to compare with; run on a GPU host with --device cuda")
    if not cuda_available:
        return "--device cuda, but torch sees no CUDA device here: KernelBench's evaluator needs one"
    if not (kernelbench_src / "kernelbench" / "eval.py").is_file():
        return (f"--kernelbench {kernelbench_src}: no kernelbench/eval.py under it; pass KernelBench's src/ "
                "directory (prepare --kernelbench-git extracts it)")
    return None


def parity_settings() -> Any:
    from kernelpro.config import Settings

    settings = Settings()
    settings.harness.correctness_profile = "kernelbench"
    settings.harness.apply_correctness_profile()
    settings.search.scorecard = "kernelbench"
    return settings


def kernelpro_row(case: Path, result: Any) -> dict[str, Any]:
    row = judge_real_candidates.row_for(case, {}, result)
    del row["case"]
    score = result.kernelbench
    return {**row, "correct": result.correct, "speedup_ci95": result.speedup_ci95,
            "correctness_profile": result.correctness_profile,
            "kernelbench_speedup": score.speedup if score else None,
            "kernelbench_ci95": score.speedup_ci95 if score else None,
            "kernelbench_reference_ms": score.reference_ms if score else None,
            "kernelbench_candidate_ms": score.candidate_ms if score else None,
            "kernelbench_rounds": score.rounds if score else None}


def judge_with_kernelpro(pipeline: Any, case: Path) -> dict[str, Any]:
    from kernelpro.problem import ProblemError, parse_problem

    try:
        problem = parse_problem((case / "reference.py").read_text(encoding="utf-8"), name=case.name)
    except ProblemError as exc:
        return {"status": "problem_invalid", "reason": None, "verdict": "problem_invalid", "message": str(exc)[:400]}
    source = (case / "candidate.py").read_text(encoding="utf-8", errors="replace")
    return kernelpro_row(case, pipeline.judge([(problem, source)])[0])


def start_runner(kernelbench_src: Path, workdir: Path) -> tuple[subprocess.Popen, Path]:
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "runner.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, str(RUNNER), str(kernelbench_src.resolve())], cwd=workdir,
                                stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    return proc, log


def judge_with_kernelbench(proc: subprocess.Popen, log: Path, case: Path, timeout_s: float) -> dict[str, Any]:
    """The runner's report, or why there is none (``timeout``, ``crashed``)."""
    out = log.parent / "report.json"
    job = {"reference": str((case / "reference.py").resolve()), "candidate": str((case / "candidate.py").resolve()),
           "out": str(out)}
    started = time.monotonic()
    try:
        proc.stdin.write((json.dumps(job) + "\n").encode())
        proc.stdin.close()
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return {"default": {"outcome": "timeout", "elapsed_s": round(time.monotonic() - started, 1),
                            "message": f"killed after {timeout_s:g} s; output ends: {_tail(log)}"}, "loose": None}
    except BrokenPipeError:
        proc.wait()
    if proc.returncode != 0 or not out.is_file():
        return {"default": {"outcome": "crashed", "elapsed_s": round(time.monotonic() - started, 1),
                            "message": f"exit status {proc.returncode}; output ends: {_tail(log)}"}, "loose": None}
    return json.loads(out.read_text())


def _tail(log: Path, chars: int = 600) -> str:
    return log.read_text(errors="replace")[-chars:] if log.is_file() else ""


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def progress(index: int, total: int, row: dict[str, Any]) -> str:
    kp, kb = row["kernelpro"], row["kernelbench"]
    called = kb.get("outcome") if kb.get("outcome") != "verdict" else ("correct" if kb["correctness"] else
                                                                       "compiled" if kb["compiled"] else "no-build")
    loose = row.get("kernelbench_loose")
    again = f" (at 1e-2: {'correct' if loose.get('correctness') else 'incorrect'})" if loose else ""
    return (f"[{index}/{total}] {row['case']:24s} kernelpro {kp.get('verdict', '')[:30]:30s} "
            f"{_figure(kp.get('kernelbench_speedup')):>8s} (own {_figure(kp.get('speedup'))})  "
            f"KernelBench {called}{again} {_figure((loose or kb).get('speedup'))}  "
            f"[{kp.get('elapsed_s') or 0:.0f} s + {kb.get('elapsed_s') or 0:.0f} s]")


def judge(args: argparse.Namespace) -> None:
    import torch

    from kernelpro.harness.pipeline import Pipeline

    src = Path(args.kernelbench)
    reason = unusable(args.device, src, torch.cuda.is_available())
    if reason:
        raise SystemExit(f"kernelbench_parity: {reason}")
    cases = select_cases(Path(args.cases), args.cases_glob, args.limit)
    commit_file = src.parent / "COMMIT"
    report: dict[str, Any] = {
        "command": " ".join(sys.argv), "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
        "python": platform.python_version(),
        "kernelbench_commit": commit_file.read_text().strip() if commit_file.is_file() else None,
        "kernelbench_call": {"seed_num": 42, "num_correct_trials": 5, "num_perf_trials": 100,
                             "timing_method": "cuda_event", "precision": "fp32", "backend": "cuda",
                             "measure_performance": True, "timeout_s": args.timeout_s},
        "kernelpro_settings": {"harness.correctness_profile": "kernelbench", "search.scorecard": "kernelbench"},
        "rows": []}
    workroot = Path(tempfile.mkdtemp(prefix="kb-parity-"))
    started = time.monotonic()
    try:
        settings = parity_settings()
        with Pipeline(args.device, settings) as pipeline:
            for index, case in enumerate(cases, 1):
                meta = json.loads((case / "meta.json").read_text()) if (case / "meta.json").is_file() else {}
                workdir = workroot / case.name
                runner = start_runner(src, workdir) if args.prewarm else None
                try:
                    kernelpro = judge_with_kernelpro(pipeline, case)
                    runner = runner or start_runner(src, workdir)
                    answer = judge_with_kernelbench(*runner, case, args.timeout_s)
                finally:
                    if runner and runner[0].poll() is None:  # its own session: it would outlive this process
                        os.killpg(runner[0].pid, signal.SIGKILL)
                        runner[0].wait()
                row = {"case": case.name, **meta, "kernelpro": kernelpro, "kernelbench": answer["default"],
                       "kernelbench_loose": answer.get("loose"), "kernelbench_shimmed": answer.get("shimmed")}
                report["rows"].append(row)
                print(progress(index, len(cases), row), flush=True)
                report["elapsed_s"] = round(time.monotonic() - started, 1)
                report["summary"] = summarize(report["rows"])
                if args.out:
                    Path(args.out).write_text(json.dumps(report, indent=1, default=str) + "\n")
    finally:
        shutil.rmtree(workroot, ignore_errors=True)
    print(json.dumps({k: v for k, v in report.get("summary", {}).items()}, indent=1, default=str))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    prep = commands.add_parser("prepare", help="write case directories from released candidate files")
    prep.add_argument("--source", action="append", required=True, help="LABEL=PATH of a release file (repeatable)")
    prep.add_argument("--out", required=True, help="directory to write the cases into")
    prep.add_argument("--per-level", type=int, default=10, help="tasks per level, chosen on the claiming source")
    prep.add_argument("--without", action="append", default=[],
                      help=f"leave out candidates containing this text (repeatable; default {BUILDS_WHILE_JUDGED})")
    prep.add_argument("--kernelbench-git", help="a KernelBench git directory whose HEAD's src/ to extract")
    prep.add_argument("--kernelbench-out", default="benchmarks/inputs/kernelbench_src")
    run = commands.add_parser("judge", help="judge every case under CASES with kernelpro and with KernelBench")
    run.add_argument("cases")
    run.add_argument("--device", default="cuda")
    run.add_argument("--kernelbench", required=True, help="KernelBench's src/ directory (holding kernelbench/)")
    run.add_argument("--out", help="JSON file for the rows and the agreement, rewritten after every case")
    run.add_argument("--limit", type=int, default=0, help="only the first N cases")
    run.add_argument("--cases-glob", default="*", help="only the case directories whose name matches")
    run.add_argument("--timeout-s", type=float, default=120.0, help="KernelBench's process is killed after this")
    run.add_argument("--no-prewarm", dest="prewarm", action="store_false",
                     help="start KernelBench's process only after kernelpro's verdict (no overlap at all)")
    args = parser.parse_args()
    prepare(args) if args.command == "prepare" else judge(args)


if __name__ == "__main__":
    main()
