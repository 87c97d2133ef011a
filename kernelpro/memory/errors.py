"""The one exception the search memory raises for problems a user can fix."""

from __future__ import annotations


class MemoryStoreError(RuntimeError):
    """The store or its embedding model cannot be used as configured (the message says why)."""
