from __future__ import annotations

import pytest

from kernelpro.harness.inline_build.spec import build_environment


@pytest.fixture(scope="session")
def environment() -> dict[str, str]:
    return build_environment("9.0")
