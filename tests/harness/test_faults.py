"""Broken candidates: each fault comes back classified, with a useful message, and the judge carries on."""

from __future__ import annotations

import re

import pytest

from kernelpro.harness.judge import judge
from tests.conftest import candidate, problem

FAULTS = [
    ("fault_syntax", "compile_error", "not_python", "line 2"),
    ("fault_binary", "compile_error", "not_python", "binary"),
    ("fault_no_model_new", "compile_error", "missing_model_new", "ModelNew"),
    ("fault_bad_signature", "compile_error", "bad_signature", "get_init_inputs"),
    ("fault_import_error", "compile_error", "import_error", "fast_kernels_that_do_not_exist"),
    ("fault_exit_at_import", "compile_error", "exit_at_import", "exit(3)"),
    ("fault_exception", "runtime_error", "exception", "candidate.py:"),
    ("fault_segfault", "runtime_error", "crashed", "SIGSEGV"),
    ("fault_os_exit", "runtime_error", "exited", "code 7"),
    ("fault_sys_exit_forward", "runtime_error", "exit_called", "giving up"),
    ("fault_memory_bomb", "runtime_error", "memory_limit", "memory"),
]


@pytest.mark.parametrize(("name", "status", "reason", "says"), FAULTS, ids=[f[0] for f in FAULTS])
def test_fault_is_classified(name, status, reason, says, settings):
    settings.harness.memory_limit_mb = 2048  # the bomb's cap: reached in seconds, however busy the machine
    result = judge(problem("scale_relu"), candidate(name), device="cpu", settings=settings)
    assert (result.status, result.reason) == (status, reason), result.message
    assert says in result.message


def test_infinite_loop_times_out(settings):
    settings.harness.timeout_s = 8
    result = judge(problem("scale_relu"), candidate("fault_infinite_loop"), device="cpu", settings=settings)
    assert (result.status, result.reason) == ("timeout", "wall_time")
    assert "correctness trial 1" in result.message  # says where it hung
    assert result.elapsed_s < 20


def test_resident_memory_limit_kills_a_slow_creep(settings):
    """Small touched blocks stay under the address-space cap for a while; the resident-memory watch stops them."""
    settings.harness.memory_limit_mb = 1500
    result = judge(problem("scale_relu"), candidate("fault_memory_creep"), device="cpu", settings=settings)
    assert (result.status, result.reason) == ("runtime_error", "memory_limit"), result.message


def test_output_flood_is_truncated_and_the_verdict_stands(settings):
    settings.harness.output_tail_bytes = 4096
    result = judge(problem("scale_relu"), candidate("fault_output_flood"), device="cpu", settings=settings)
    assert result.status == "ok", result.message
    assert result.details["output_bytes"] > 5 * (1 << 20)
    assert len(result.worker_output.encode()) <= 4096


def test_judge_carries_on_after_a_crash(settings):
    crashed = judge(problem("scale_relu"), candidate("fault_segfault"), device="cpu", settings=settings)
    honest = judge(problem("scale_relu"), candidate("honest_scale_relu"), device="cpu", settings=settings)
    assert crashed.reason == "crashed"
    assert honest.status == "ok", honest.message


def test_worker_sees_no_credentials_and_a_fresh_directory(settings, monkeypatch):
    """The candidate itself raises if it can see a secret or an unexpected file."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-must-not-leak")
    monkeypatch.setenv("HF_TOKEN", "hf-must-not-leak")
    monkeypatch.setenv("KERNELPRO_LLM__API_KEY", "must-not-leak")
    result = judge(problem("scale_relu"), candidate("honest_env_probe"), device="cpu", settings=settings)
    assert result.status == "ok", result.message


def test_broken_reference_is_reported_as_such(settings):
    from kernelpro.problem import parse_problem

    broken = parse_problem(
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
        "def get_inputs():\n    raise ValueError('no inputs today')\ndef get_init_inputs():\n    return []\n",
        name="broken")
    result = judge(broken, candidate("honest_flatten_view"), device="cpu", settings=settings)
    assert (result.status, result.reason) == ("runtime_error", "reference_failed")
    assert "no inputs today" in result.message


def test_each_judgment_gets_its_own_extension_build_dir(settings, tmp_path):
    """load_inline builds made in a worker land in its job's own directory: no two judgments share (or race on)
    one, and none is under the shared caches, which are read-only in workers."""
    settings.compile.cache_dir = tmp_path / "cache"
    source = candidate("honest_extensions_dir_probe")
    first = judge(problem("scale_relu"), source, device="cpu", settings=settings, timing=False)
    again = judge(problem("scale_relu"), source, device="cpu", settings=settings, timing=False)
    # The separator is matched loosely: on a loaded machine the printed prefix has twice come back with its space
    # as a NUL byte (the cause is not found); the directories are what this test is about.
    found = [re.findall(r"extensions.dir: (\S+)", r.worker_output) for r in (first, again)]
    for r, lines in zip((first, again), found, strict=True):
        assert (r.status, bool(lines)) == ("ok", True), (r.status, r.reason, r.message, r.worker_output[-2000:])
    dirs = [lines[0] for lines in found]
    assert dirs[0] != dirs[1] and all(d.endswith("/torch_extensions") for d in dirs)
    assert not any(d.startswith(str(tmp_path / "cache")) for d in dirs)
