"""A separate process that writes into a memory store, for the concurrency and crash tests.

Usage: ``python _worker.py PATH TAG COUNT [GO_FILE]``. Prints ``ready`` once the model is loaded, waits for
GO_FILE to exist when given, then writes COUNT insights one at a time, printing each index once written.
"""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path


def _refuse_network() -> None:
    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: object) -> None:
        if self.family != socket.AF_UNIX:
            raise SystemExit(f"network access attempted: {address}")
        real_connect(self, address)

    socket.socket.connect = connect  # type: ignore[method-assign]


def main() -> None:
    _refuse_network()
    from kernelpro.config import MemorySettings
    from kernelpro.memory import Insight, MemoryStore

    path, tag, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    go = Path(sys.argv[4]) if len(sys.argv) > 4 else None
    store = MemoryStore(MemorySettings(path=path))
    store.embedding.load()
    print("ready", flush=True)
    while go is not None and not go.exists():
        time.sleep(0.01)
    for i in range(count):
        store.add(Insight(run_id=tag, text=f"lesson {i} from {tag}: unroll the inner loop by {i + 2}",
                          tags=[f"n{i}"]))
        print(i, flush=True)


if __name__ == "__main__":
    main()
