"""Finding the compilers, their versions, and the default target."""

from __future__ import annotations

import os

import pytest
import torch

from kernelpro.config import CompileSettings
from kernelpro.harness.compile import toolchain
from tests.compile.conftest import TOOLS, needs_cutlass, needs_nvcc, needs_nvrtc


@needs_nvcc
def test_nvcc_and_ptxas_are_found_with_versions():
    assert os.access(TOOLS.nvcc, os.X_OK) and TOOLS.ptxas is not None
    assert TOOLS.nvcc_version and TOOLS.nvcc_version.count(".") == 2
    assert TOOLS.ptxas_version == TOOLS.nvcc_version
    assert TOOLS.tag("nvcc") == f"nvcc {TOOLS.nvcc_version}"


@needs_nvrtc
def test_nvrtc_version_and_the_headers_it_needs():
    major, _ = TOOLS.nvrtc_version
    assert major >= 12
    assert TOOLS.tag("nvrtc").startswith(f"nvrtc {major}.")
    assert any(os.path.isfile(os.path.join(d, "cuda_fp16.h")) for d in TOOLS.cuda_include_dirs)


def test_explicit_paths_and_missing_tools():
    assert toolchain.find_tool("/nonexistent/nvcc") is None
    assert toolchain.find_tool("no-such-cuda-tool") is None
    assert toolchain.tool_version(None) is None
    missing = toolchain.detect(CompileSettings(nvcc="/nonexistent/nvcc"))
    assert missing.nvcc is None and missing.tag("nvcc") == "nvcc missing"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the fallback without a GPU")
def test_default_arch_without_a_gpu_is_sm_90a():
    assert toolchain.default_arch() == "sm_90a"
    assert toolchain.resolve_arch(None, CompileSettings()) == "sm_90a"


def test_arch_precedence():
    assert toolchain.resolve_arch("sm_80", CompileSettings(arch="sm_100a")) == "sm_80"
    assert toolchain.resolve_arch(None, CompileSettings(arch="sm_100a")) == "sm_100a"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_default_arch_is_the_visible_gpus():
    major, minor = torch.cuda.get_device_capability()
    assert toolchain.default_arch(arch_specific=False) == f"sm_{major}{minor}"
    assert toolchain.default_arch().startswith(f"sm_{major}{minor}")


@needs_cutlass
def test_cutlass_headers_come_from_the_wheel():
    assert os.path.isfile(os.path.join(TOOLS.cutlass_include, "cute", "tensor.hpp"))
    assert TOOLS.cutlass_version


def _executable(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho 'Version 2025.3.1'\n")
    path.chmod(0o755)
    return str(path)


def test_the_compiler_the_profiler_and_doctor_find_each_tool_in_one_search(tmp_path, monkeypatch):
    from kernelpro.environment import check_tool
    from kernelpro.profiling.ncu_command import find_ncu

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    nvcc = _executable(tmp_path / "cuda" / "bin" / "nvcc")
    monkeypatch.setattr(toolchain, "NSIGHT_COMPUTE_INSTALLS", str(tmp_path / "nsight-compute" / "*"))
    for version in ("2024.10.0", "2025.3.1", "2025.2.0"):
        _executable(tmp_path / "nsight-compute" / version / "ncu")
    newest = str(tmp_path / "nsight-compute" / "2025.3.1" / "ncu")  # newest by number, not by text

    assert toolchain.find_tool("nvcc") == nvcc
    assert toolchain.find_tool("ncu") == find_ncu() == newest
    assert check_tool("ncu").ok and newest in check_tool("ncu").detail
    missing = check_tool("no-such-cuda-tool")
    assert not missing.ok and str(tmp_path / "cuda" / "bin") in missing.detail
