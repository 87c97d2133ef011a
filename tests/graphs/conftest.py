from __future__ import annotations

import pytest

from tests.graphs.helpers import OPEN_CONTEXTS


@pytest.fixture(autouse=True)
def _close_judging_workers():
    """Each test's run keeps a judging worker alive; stop it when the test ends."""
    yield
    while OPEN_CONTEXTS:
        OPEN_CONTEXTS.pop().evaluate.close()
