from __future__ import annotations

import pytest

from tests.chat.helpers import OPEN_SESSIONS


@pytest.fixture(autouse=True)
def _close_judging_workers():
    """A session keeps its judging worker alive for the whole chat; stop it when the test ends."""
    yield
    while OPEN_SESSIONS:
        OPEN_SESSIONS.pop().close()
