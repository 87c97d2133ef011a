"""The local backend: one thread per busy lane, each waiting on its problem's child processes."""

from __future__ import annotations

import queue
import threading

from kernelpro.config import Settings
from kernelpro.suite.job import JobOutcome, JobSpec, run_job
from kernelpro.suite.lanes import Lane, local_lanes


class LocalBackend:
    """Runs each job in a thread of this process; the work itself is in the job's child processes. A job's
    thread lives as long as its children (they die with it: ``orphan_guard``)."""

    name = "local"

    def __init__(self, lanes: list[Lane]) -> None:
        self.lanes = lanes
        self._done: queue.Queue[tuple[str, JobOutcome]] = queue.Queue()

    def start(self, spec: JobSpec, lane: Lane) -> None:
        def work() -> None:
            try:
                outcome = run_job(spec)
            except Exception as error:  # noqa: BLE001 - the suite goes on; the problem is recorded failed
                outcome = JobOutcome(key=spec.key, ok=False, failure_kind="crash",
                                     failure=f"the job failed to run ({type(error).__name__}: {error})")
            self._done.put((lane.name, outcome))

        threading.Thread(target=work, name=f"suite-{lane.name}", daemon=True).start()

    def wait(self, timeout_s: float) -> list[tuple[str, JobOutcome]]:
        """Jobs that finished: (lane name, outcome); waits up to ``timeout_s`` for the first."""
        try:
            finished = [self._done.get(timeout=timeout_s)]
        except queue.Empty:
            return []
        while True:
            try:
                finished.append(self._done.get_nowait())
            except queue.Empty:
                return finished

    def close(self) -> None:
        return None


def local_backend(address: str | None, device: str, settings: Settings) -> LocalBackend:
    """This machine's lanes (``kernelpro.seams.SUITE_BACKENDS``'s ``local``; it has no address)."""
    return LocalBackend(local_lanes(device, settings))
