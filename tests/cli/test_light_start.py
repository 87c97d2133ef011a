"""The command line starts without torch: its quick commands (help, suite status, memory, cache) never judge, and
torch's import is most of a second on a quiet machine, seconds on a busy one."""

from __future__ import annotations

import subprocess
import sys


def test_the_command_line_and_the_verdicts_model_import_no_torch():
    probe = ("import sys; import kernelpro.cli.main, kernelpro.harness.result, kernelpro.harness.cpu_load; "
             "print('torch' in sys.modules)")
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert (found.returncode, found.stdout.strip()) == (0, "False"), found.stderr
