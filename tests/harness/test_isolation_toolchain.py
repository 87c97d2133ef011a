"""What a worker may run: the toolchain found as the worker finds it, ninja and the shell its build steps run
through included, a script only when its interpreter is allowed too, and a program outside it to try."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from kernelpro.harness.isolation.toolchain import foreign_program, toolchain_executables

PYTHON = os.path.realpath(sys.executable)


def script(path, interpreter: str) -> str:
    path.write_text(f"#!{interpreter}\nimport sys\nsys.exit(0)\n")
    path.chmod(0o755)
    return os.path.realpath(path)


def path_with(directory) -> dict[str, str]:
    return {**os.environ, "PATH": os.pathsep.join([str(directory), os.environ.get("PATH", "")])}


@pytest.mark.skipif(not os.path.isfile("/bin/sh"), reason="this machine has no /bin/sh")
def test_the_shell_ninja_runs_build_steps_through_is_allowed_by_its_real_path():
    allowed = toolchain_executables()
    assert os.path.realpath("/bin/sh") in allowed


@pytest.mark.skipif(shutil.which("ninja") is None, reason="no ninja on PATH (torch could build nothing)")
def test_the_ninja_torch_would_run_is_allowed():
    assert os.path.realpath(shutil.which("ninja")) in toolchain_executables()


def test_a_console_script_of_this_python_is_allowed_one_through_env_is_not(tmp_path):
    allowed = tmp_path / "allowed"
    refused = tmp_path / "refused"
    allowed.mkdir()
    refused.mkdir()
    console = script(allowed / "ninja", sys.executable)
    through_env = script(refused / "ninja", "/usr/bin/env python3")
    assert console in toolchain_executables(path_with(allowed))
    found = toolchain_executables(path_with(refused))
    assert through_env not in found and PYTHON in found


def test_the_real_binary_behind_pip_ninjas_console_script_is_allowed(tmp_path, monkeypatch):
    """Older releases of the ``ninja`` package install ``bin/ninja`` as a script that runs ``ninja/data/bin/ninja``;
    it is found without importing the package."""
    data = tmp_path / "site" / "ninja" / "data" / "bin"
    data.mkdir(parents=True)
    (tmp_path / "site" / "ninja" / "__init__.py").write_text("raise RuntimeError('imported')\n")
    binary = data / "ninja"
    binary.write_bytes(b"\x7fELF")
    binary.chmod(0o755)
    monkeypatch.delitem(sys.modules, "ninja", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert os.path.realpath(binary) in toolchain_executables()
    assert "ninja" not in sys.modules


def test_a_program_outside_the_toolchain_is_one_it_neither_names_nor_holds(tmp_path):
    program = foreign_program(toolchain_executables())
    if program is None:
        pytest.skip("every program tried is part of the toolchain on this machine")
    assert os.path.isabs(program) and os.path.isfile(program) and program == os.path.realpath(program)
    assert program not in toolchain_executables()
    assert foreign_program([program]) != program
    assert foreign_program([os.path.dirname(program)]) != program
