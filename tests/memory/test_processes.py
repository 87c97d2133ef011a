"""Several processes on one store: concurrent writers lose nothing, and a killed writer breaks nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from kernelpro.memory import Insight, MemoryFilter, MemoryStore

WORKER = Path(__file__).with_name("_worker.py")
REPO = Path(__file__).resolve().parents[2]


def start_writer(path: Path, tag: str, count: int, go: Path | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = [sys.executable, str(WORKER), str(path), tag, str(count), *([str(go)] if go else [])]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)


def read_line(proc: subprocess.Popen) -> str:
    line = proc.stdout.readline()
    assert line, f"the writer ended early: {proc.stderr.read()[-3000:]}"
    return line.strip()


def assert_intact(store: MemoryStore, records: list[Insight]) -> None:
    """Every record is listed and is its own nearest neighbour, so the vector index holds it too."""
    assert {r.id for r in store.records()} >= {r.id for r in records}
    for record in records:
        assert store.search(record.document(), k=1)[0].record.id == record.id


def test_two_processes_writing_at_once_lose_nothing(store, tmp_path):
    count = 25
    go = tmp_path / "go"
    writers = [start_writer(store.path, tag, count, go) for tag in ("alpha", "beta")]
    try:
        assert [read_line(w) for w in writers] == ["ready", "ready"]
        go.touch()  # both start writing at the same moment
        for writer in writers:
            _, err = writer.communicate(timeout=120)
            assert writer.returncode == 0, err[-3000:]
    finally:
        for writer in writers:
            writer.kill()
    assert store.count() == 2 * count
    for tag in ("alpha", "beta"):
        written = store.records(MemoryFilter(run_id=tag))
        assert sorted(r.text for r in written) == sorted(
            f"lesson {i} from {tag}: unroll the inner loop by {i + 2}" for i in range(count))
        assert_intact(store, written)


def test_a_writer_killed_mid_way_leaves_a_usable_store(store):
    writer = start_writer(store.path, "doomed", 10_000)
    try:
        assert read_line(writer) == "ready"
        done = [int(read_line(writer)) for _ in range(8)]
        time.sleep(0.05)  # now in the middle of a later write
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
    finally:
        writer.kill()
    assert writer.returncode == -signal.SIGKILL
    earlier = [r for r in store.records() if r.tags and int(r.tags[0][1:]) in done]
    assert len(earlier) == len(done) and store.count() >= len(done)
    assert_intact(store, earlier)
    survivor = Insight(run_id="after", text="written after the crash: tile the reduction across two warps")
    assert store.add(survivor)
    assert store.search("written after the crash", k=1)[0].record.id == survivor.id
    total = store.count()
    assert store.forget("doomed") == total - 1 and store.count() == 1
