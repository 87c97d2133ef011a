"""Where `kernelpro memory search` spends its time: one CLI process end to end, against searches in one process.

    PYTHONPATH=. python benchmarks/memory_search_latency.py --out benchmarks/results/memory_search_latency_cpu.json

Builds a store of the memory tests' lessons in a temporary directory, then times (a) ``--repeats`` separate
``kernelpro memory search`` processes (each imports torch and sentence-transformers and loads the embedding model
once), and (b) in one process: the first search (which loads the model) and ``--repeats`` more (the model kept
by the process). Medians and ranges in seconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def summary(values: list[float]) -> dict[str, float]:
    return {"median_s": round(statistics.median(values), 3), "min_s": round(min(values), 3),
            "max_s": round(max(values), 3), "n": len(values)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        from kernelpro.config import MemorySettings
        from kernelpro.memory import MemoryStore
        from tests.memory.conftest import lessons
        imported = time.perf_counter() - start
        store = MemoryStore(MemorySettings(path=Path(tmp)))
        start = time.perf_counter()
        store.search("warp shuffle row reduction")  # empty store: embeds the query, so loads the model
        first = time.perf_counter() - start
        store.add_many(lessons())
        later = []
        for query in ["GEMM tile sizes", "register spills", "warp shuffle row reduction"] * args.repeats:
            start = time.perf_counter()
            store.search(query)
            later.append(time.perf_counter() - start)
        store.close()
        processes = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "kernelpro.cli", "memory", "search", "GEMM tile sizes", "--path",
                            tmp, "--json"], check=True, capture_output=True, cwd=ROOT)
            processes.append(time.perf_counter() - start)
    report = {"import_s": round(imported, 3), "first_search_in_process_s": round(first, 3),
              "later_searches_in_process": summary(later), "cli_process_end_to_end": summary(processes)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
