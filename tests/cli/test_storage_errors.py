"""Storage that refuses a write (a full disk, a quota, a file-size limit, a path that cannot be a directory) ends a
command with one line that names the path and what the system said, never a traceback; a run that exists says how
to resume it, and no output is left half written.

The refusals are real: the kernel's file-size limit (``RLIMIT_FSIZE``: past it a write fails with EFBIG), SQLite's
own page limit, a runs directory below a plain file."""

from __future__ import annotations

import errno
import os
import resource
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelpro.cli.errors import storage_error
from kernelpro.cli.main import app
from kernelpro.exit_codes import BAD_INPUT, FAILED, NO_IMPROVEMENT, OK
from tests.conftest import DATA

ROOT = Path(__file__).resolve().parents[2]
PROBLEM = DATA / "problems" / "scale_relu.py"
OUTPUTS = ("report.html", "report.md", "speedup.png", "summary.json", "results.jsonl")
runner = CliRunner()


def _file_size_limit(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the limit a write then fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def _environment(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELPRO_")}
    env.update({"HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1",
                "KERNELPRO_MEMORY__PATH": str(tmp_path / "memory"),
                "KERNELPRO_FORECAST__DATASET": str(tmp_path / "judged.jsonl"),
                "KERNELPRO_HARNESS__TIMING_BUDGET_S": "0.3",
                "KERNELPRO_HARNESS__REFEREE": "false", "KERNELPRO_HARNESS__TIMING_TRIALS": "5",
                "KERNELPRO_HARNESS__MIN_TIMING_TRIALS": "5", "KERNELPRO_HARNESS__CPU_CONTENTION_CORES": "1e9",
                "KERNELPRO_HARNESS__CORRECTNESS_TRIALS": "2", "KERNELPRO_SEARCH__FINALISTS": "0"})
    return env


WRITE_PAST_THE_LIMIT = '''
import sys
from pathlib import Path

from kernelpro.atomic_write import write_atomic
from kernelpro.cli.errors import cannot_write_run, storage_error

try:
    write_atomic(Path(sys.argv[1]), b"x" * 65536)
except OSError as error:
    print(cannot_write_run(storage_error(error), "r-1"))
'''


def test_a_write_the_storage_refuses_keeps_the_old_file_and_leaves_no_part_of_the_new(tmp_path):
    target = tmp_path / "outputs" / "speedup.png"
    target.parent.mkdir()
    target.write_bytes(b"the earlier plot")
    proc = subprocess.run([sys.executable, "-c", WRITE_PAST_THE_LIMIT, str(target)], cwd=tmp_path,
                          env=_environment(tmp_path), preexec_fn=_file_size_limit(4096), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == (f"cannot write to {target}: File too large; nothing judged is lost; free space "
                                   "and resume with: kernelpro optimize --resume r-1")
    assert target.read_bytes() == b"the earlier plot"
    assert [p.name for p in target.parent.iterdir()] == ["speedup.png"]  # no temporary file left behind


def test_a_full_database_reads_as_its_disk_full(tmp_path):
    database = tmp_path / "checkpoint.sqlite"
    conn = sqlite3.connect(database)
    conn.execute("create table checkpoints (blob blob)")
    conn.execute("pragma max_page_count = 8")
    with pytest.raises(sqlite3.OperationalError) as raised:
        for _ in range(16):
            conn.execute("insert into checkpoints values (zeroblob(4096))")
    conn.close()
    refused = storage_error(raised.value, database)
    assert refused is not None and (refused.errno, refused.filename) == (errno.ENOSPC, str(database))
    assert storage_error(raised.value) is None  # no database named: not said to be one
    assert storage_error(ValueError("a bug")) is None
    assert storage_error(FileNotFoundError(errno.ENOENT, "No such file or directory", "x")) is None


def test_a_runs_directory_that_cannot_be_made_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = runner.invoke(app, ["optimize", str(PROBLEM), "--device", "cpu", "--runs-dir", str(blocker / "runs")])
    assert result.exit_code == BAD_INPUT, result.output
    assert f"error: cannot write to {blocker / 'runs'}: Not a directory" in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_a_run_the_storage_stops_says_so_in_one_line_and_resumes_whole(tmp_path):
    """Under a 16 KiB file-size limit the checkpoint's first write fails (SQLite's shared memory alone is 32 KiB):
    the run ends resumable, with the path and how to go on; resumed with room, it ends with every output whole."""
    env, runs = _environment(tmp_path), tmp_path / "runs"
    command = [sys.executable, "-m", "kernelpro.cli", "optimize", "--runs-dir", str(runs), "--no-memory"]
    stopped = subprocess.run([*command, str(PROBLEM), "--device", "cpu", "--max-iters", "1"], cwd=tmp_path, env=env,
                             preexec_fn=_file_size_limit(16 << 10), capture_output=True, text=True, timeout=300)
    [run_dir] = runs.iterdir()
    said = " ".join(stopped.stderr.split())
    assert stopped.returncode == FAILED, stopped.stderr[-3000:]
    assert f"error: cannot write to {run_dir / 'checkpoint.sqlite'}: " in said
    assert f"nothing judged is lost; free space or fix the disk and resume with: kernelpro optimize --resume " \
           f"{run_dir.name}" in said
    assert "Traceback" not in stopped.stderr and "internal error" not in stopped.stderr
    resumed = subprocess.run([*command, "--resume", run_dir.name], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=600)
    assert resumed.returncode in (OK, NO_IMPROVEMENT), resumed.stderr[-3000:]
    assert all((run_dir / name).stat().st_size > 0 for name in OUTPUTS)
    assert not [p.name for p in run_dir.rglob("*.tmp")]
