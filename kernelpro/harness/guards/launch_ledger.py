"""The custom kernels a candidate built through ``kernelpro.runtime`` in this process, and how often each launched.

The runtime writes here; the judge reads it to tell a candidate that launches its kernels from one that builds
them and then does the work some other way (``ghost_kernel``). The ledger is one object for the life of the
process (the integrity check watches the identity of module attributes); the judge clears it per candidate.
"""

from __future__ import annotations


class LaunchLedger:
    """Launches by kernel label (the name the candidate gave), since the last ``clear``."""

    def __init__(self) -> None:
        self.kernels: dict[str, int] = {}

    def built(self, label: str) -> None:
        self.kernels.setdefault(label, 0)

    def launched(self, label: str) -> None:
        self.kernels[label] = self.kernels.get(label, 0) + 1

    def total(self) -> int:
        return sum(self.kernels.values())

    def clear(self) -> None:
        self.kernels.clear()


LEDGER = LaunchLedger()
