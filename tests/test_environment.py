"""Environment checks against the real machine: real subprocesses, real NVML, real torch."""

from __future__ import annotations

import glob
import re
import shutil
from pathlib import Path

import pytest
from pydantic import SecretStr

from kernelpro import environment
from kernelpro.config import LLMSettings, Settings
from kernelpro.environment import (
    PROVIDER_KEY_VARS,
    Check,
    check_gpus,
    check_llm,
    check_tool,
    probe_environment,
)

SECRET = "SECRET123"
HAS_GPU = bool(glob.glob("/dev/nvidia[0-9]*"))


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No provider keys, no KERNELPRO_LLM__* variables, no kernelpro.toml in the working directory."""
    for name in PROVIDER_KEY_VARS.values():
        monkeypatch.delenv(name, raising=False)
    for field in ("MODEL", "API_BASE", "API_KEY"):
        monkeypatch.delenv(f"KERNELPRO_LLM__{field}", raising=False)
    monkeypatch.chdir(tmp_path)


def _settings(**llm: object) -> Settings:
    return Settings(llm=LLMSettings(**llm))


@pytest.mark.parametrize("tool", ["nvcc", "ptxas"])
def test_cuda_tool_found_with_release(tool: str) -> None:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} not on PATH")
    check = check_tool(tool)
    assert check.name == tool
    assert check.ok, check.detail
    assert re.search(r"release \d+\.\d+, V\d+\.\d+\.\d+", check.detail), check.detail
    assert path in check.detail


def test_missing_tool_is_reported() -> None:
    check = check_tool("kernelpro-no-such-tool")
    assert check.name == "kernelpro-no-such-tool"
    assert not check.ok
    assert "not found" in check.detail


def _fake_tool(bin_dir: Path, name: str, body: str) -> Path:
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def test_tool_found_in_cuda_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _fake_tool(tmp_path / "bin", "kp-fake-tool", "echo 'Fake Tool'\necho 'Version 1.2.3'")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    check = check_tool("kp-fake-tool")
    assert check.ok, check.detail
    assert check.detail == f"Version 1.2.3 ({path})"


def test_tool_failing_version_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_tool(tmp_path / "bin", "kp-fake-tool", "echo boom >&2\nexit 3")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    check = check_tool("kp-fake-tool")
    assert not check.ok
    assert "exit 3" in check.detail and "boom" in check.detail


def test_tool_hanging_is_time_limited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_tool(tmp_path / "bin", "kp-fake-tool", "exec sleep 30")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    monkeypatch.setattr(environment, "SUBPROCESS_TIMEOUT_S", 0.5)
    check = check_tool("kp-fake-tool")
    assert not check.ok
    assert "timed out" in check.detail


@pytest.mark.skipif(HAS_GPU, reason="an NVIDIA GPU is present")
def test_gpu_absent_gives_reason() -> None:
    check = check_gpus()
    assert check.name == "GPU"
    assert not check.ok
    assert "NVML" in check.detail or "nvidia-ml-py" in check.detail


@pytest.mark.skipif(not HAS_GPU, reason="no NVIDIA GPU")
def test_gpu_present_lists_devices() -> None:
    check = check_gpus()
    assert check.ok, check.detail
    assert "GiB" in check.detail and "driver" in check.detail


@pytest.mark.usefixtures("clean_env")
def test_key_from_settings_never_shown() -> None:
    settings = _settings(model="openai/gpt-5", api_key=SecretStr(f"sk-test-{SECRET}"))
    checks = probe_environment(settings)
    assert all(SECRET not in check.detail for check in checks)
    llm = next(check for check in checks if check.name == "llm")
    assert llm.ok
    assert "openai/gpt-5" in llm.detail and "key set (llm.api_key)" in llm.detail


@pytest.mark.usefixtures("clean_env")
def test_key_from_provider_variable_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", f"sk-test-{SECRET}")
    checks = probe_environment(_settings(model="openai/gpt-5"))
    assert all(SECRET not in check.detail for check in checks)
    llm = next(check for check in checks if check.name == "llm")
    assert llm.ok
    assert "key set (OPENAI_API_KEY)" in llm.detail


@pytest.mark.usefixtures("clean_env")
def test_key_variable_follows_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", f"sk-test-{SECRET}")
    check = check_llm(LLMSettings(model="anthropic/claude-sonnet-4"))
    assert not check.ok
    assert "no key found" in check.detail and "ANTHROPIC_API_KEY" in check.detail
    # An unknown provider accepts any of the usual variables.
    check = check_llm(LLMSettings(model="somehost/some-model"))
    assert check.ok and "key set (OPENAI_API_KEY)" in check.detail


@pytest.mark.usefixtures("clean_env")
def test_api_base_credentials_not_shown() -> None:
    check = check_llm(
        LLMSettings(model="openai/local", api_base=f"http://user:{SECRET}@localhost:8000/v1?key={SECRET}")
    )
    assert SECRET not in check.detail
    assert "api_base http://localhost:8000/v1" in check.detail
    assert check.ok  # a local server may need no key


@pytest.mark.usefixtures("clean_env")
def test_no_model_configured() -> None:
    check = check_llm(LLMSettings())
    assert not check.ok
    assert check.detail.startswith("no model configured")
    assert "KERNELPRO_LLM__MODEL" in check.detail


@pytest.mark.usefixtures("clean_env")
def test_probe_environment_checks() -> None:
    checks = probe_environment(_settings())
    assert all(isinstance(check, Check) and check.detail for check in checks)
    names = [check.name for check in checks]
    assert len(names) == len(set(names))
    assert {"GPU", "nvcc", "ptxas", "ncu", "triton", "torch", "llm"} <= set(names)
    required = {check.name for check in checks if check.required}
    assert required == {"torch", "run libraries"}  # nothing runs without either
