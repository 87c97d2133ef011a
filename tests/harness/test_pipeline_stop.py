"""A pipeline closed while it judges (the run stopping) gives no verdict on what it cut: the worker's death is the
close's doing, not the candidate's."""

from __future__ import annotations

import secrets
import threading
import time

import pytest

from kernelpro.harness.pipeline import JudgingStopped, Pipeline
from kernelpro.harness.worker.dirs import worker_root
from tests.conftest import candidate, problem


def held(token: str) -> str:
    """The honest candidate, but its import says it is being judged (``judging-<token>`` in its own directory, the
    one place a worker may write) and waits to be released."""
    return (f"import pathlib\nimport time\n\npathlib.Path('judging-{token}').write_text('')\n"
            "while not pathlib.Path('release').exists():\n"
            "    time.sleep(0.05)\n\n") + candidate("honest_scale_relu")


def test_a_close_while_judging_gives_no_verdict_and_says_the_batch_was_stopped(settings):
    token = secrets.token_hex(8)
    handed: list = []
    raised: list[BaseException] = []
    pipeline = Pipeline("cpu", settings)

    def judge() -> None:
        try:
            pipeline.judge([(problem("scale_relu"), held(token))], on_verdict=lambda i, r: handed.append(r))
        except BaseException as error:  # noqa: BLE001 - what the batch ended with is the test's subject
            raised.append(error)

    batch = threading.Thread(target=judge)
    batch.start()
    deadline = time.monotonic() + 120
    while not list(worker_root().glob(f"kernelpro-*/kernelpro-*/judging-{token}")):  # a worker's, then its job's
        assert batch.is_alive() and time.monotonic() < deadline, (handed, raised)
        time.sleep(0.05)
    pipeline.close()  # as the run does on Ctrl-C: the worker is killed under the candidate
    batch.join(timeout=60)
    assert not batch.is_alive()
    assert handed == []  # not "the worker died from SIGKILL": that was the close
    assert len(raised) == 1 and isinstance(raised[0], JudgingStopped), raised
    with pytest.raises(JudgingStopped):
        pipeline.judge([(problem("scale_relu"), candidate("honest_scale_relu"))])
