"""The test session keeps kernelpro's files out of the developer's home: in this process, in a subprocess that
keeps this environment, drops its KERNELPRO_ variables (as the CLI tests do) or is built from nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from kernelpro.config import KERNELPRO_HOME, USER_CACHE_DIR, Settings
from tests.conftest import DATA, SESSION
from tests.support import session_home

ROOT = Path(__file__).resolve().parents[1]
PATHS = ("import json; from kernelpro.config import KERNELPRO_HOME, USER_CACHE_DIR, Settings; s = Settings(); "
         "print(json.dumps([str(p) for p in (KERNELPRO_HOME, USER_CACHE_DIR, s.forecast.dataset, s.memory.path, "
         "s.compile.cache_dir, s.compile.inline_cache_dir, s.cutlass.index_dir, s.forecast.model_path, "
         "s.cache.root)]))")


def inside(path: Path | str, root: Path) -> bool:
    return Path(path).expanduser().resolve().is_relative_to(root.resolve())


def test_this_process_keeps_every_data_path_in_the_session():
    assert not inside(SESSION.root, SESSION.real_home)
    assert Path.home() == SESSION.home and inside(os.environ["XDG_CACHE_HOME"], SESSION.root)
    settings = Settings()
    for path in (KERNELPRO_HOME, USER_CACHE_DIR, settings.forecast.dataset, settings.memory.path,
                 settings.compile.cache_dir, settings.compile.inline_cache_dir, settings.cutlass.index_dir,
                 settings.forecast.model_path, settings.runs_dir, settings.chat.dir, settings.cache.root):
        assert inside(path, SESSION.root), path


def test_a_subprocess_without_the_sessions_settings_or_built_from_nothing_keeps_them_there_too():
    stripped = {k: v for k, v in os.environ.items() if not k.startswith("KERNELPRO_")}
    for env in (stripped, session_home.environment(PYTHONPATH=str(ROOT))):
        done = subprocess.run([sys.executable, "-c", PATHS], env=env, cwd=ROOT, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        assert all(inside(p, SESSION.home) for p in json.loads(done.stdout)), done.stdout


def test_a_cli_run_records_its_judgment_in_the_session_home_only(tmp_path):
    """`kernelpro eval` appends to the judged-candidate dataset at its default path: the session's HOME, never the
    real one (the candidate carries a mark of its own, so another kernelpro at work beside this one cannot
    confuse the check)."""
    mark = f"session-home-probe-{uuid.uuid4().hex}"
    probe = tmp_path / "probe.py"
    probe.write_text((DATA / "candidates" / "honest_scale_relu.py").read_text() + f"\n# {mark}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELPRO_")}  # as the CLI tests build it
    env.update({"PYTHONPATH": str(ROOT), "KERNELPRO_HARNESS__TIMING_BUDGET_S": "0.3",
                "KERNELPRO_HARNESS__REFEREE": "false",
                "KERNELPRO_HARNESS__TIMING_TRIALS": "5", "KERNELPRO_HARNESS__MIN_TIMING_TRIALS": "5"})
    done = subprocess.run([sys.executable, "-m", "kernelpro.cli", "eval", str(DATA / "problems" / "scale_relu.py"),
                           str(probe), "--device", "cpu", "--json"], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert mark in (SESSION.home / ".kernelpro" / "judged.jsonl").read_text()
    real = SESSION.real_home / ".kernelpro"
    written = [p for p in real.rglob("*") if p.is_file() and mark.encode() in p.read_bytes()] if real.is_dir() else []
    assert written == []
