"""Lessons for the planner and the coder: what earlier attempts on related problems taught.

The query is the problem's description plus the current diagnosis. Records on the same problem and the same
GPU, and attempts that beat the reference, rank higher; near-identical lessons are given once; the rendered
text stays within the memory's character budget.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from kernelpro.memory.records import Attempt, CompileFix, ProblemSignature, Record, RecordKind
from kernelpro.memory.store import MemoryFilter, MemoryStore, ScoredRecord

HEADER = "Lessons from earlier attempts (most relevant first):"


class Boosts(BaseModel):
    """What is added to a record's cosine similarity (between -1 and 1) to rank it."""

    same_problem: float = 0.15
    """Same problem name and reference source."""
    same_problem_name: float = 0.08
    """Same problem name, different reference source."""
    same_gpu: float = 0.05
    successful: float = 0.10
    """An attempt that was correct and faster than the reference."""
    duplicate_similarity: float = 0.95
    """Lessons at least this similar to a better-ranked one are left out."""


class Lesson(BaseModel):
    record: Record
    similarity: float
    score: float
    text: str
    """The record's one-line summary, as rendered."""


class Lessons(BaseModel):
    """Ranked lessons that fit the budget; ``render()`` is the text handed to an agent."""

    items: list[Lesson]
    budget_chars: int

    def render(self) -> str:
        """A header and one line per lesson, or an empty string when there is none."""
        if not self.items:
            return ""
        return "\n".join([HEADER, *(f"- {lesson.text}" for lesson in self.items)])


def retrieve(
    store: MemoryStore,
    description: str,
    diagnosis: str = "",
    *,
    problem: ProblemSignature | None = None,
    gpu: str | None = None,
    kinds: Sequence[RecordKind] | None = None,
    budget_chars: int | None = None,
    pool: int = 40,
    boosts: Boosts | None = None,
) -> Lessons:
    """Lessons related to a problem (``description``) and what is known about it so far (``diagnosis``).

    ``pool`` records are drawn by similarity alone, plus as many again from the same problem when it is given,
    so a lesson on this very problem is considered even when worded differently.
    """
    boosts = boosts or Boosts()
    budget = store.settings.retrieval_budget_chars if budget_chars is None else budget_chars
    query = "\n".join(part for part in (description.strip(), diagnosis.strip()) if part)
    base = MemoryFilter(kind=list(kinds)) if kinds else MemoryFilter()
    # No relevance floor here: the pool is re-ranked (problem, GPU, outcome) and cut to the budget below, and a
    # lesson on this very problem counts however it is worded.
    candidates = {hit.record.id: hit for hit in store.search(query, base, k=pool, with_embeddings=True,
                                                             min_similarity=-1.0)}
    if problem is not None:
        same = base.model_copy(update={"problem": problem.name})
        for hit in store.search(query, same, k=pool, with_embeddings=True, min_similarity=-1.0):
            candidates.setdefault(hit.record.id, hit)
    ranked = sorted((_rescore(hit, problem, gpu, boosts) for hit in candidates.values()),
                    key=lambda hit: (-hit.score, hit.record.id))
    return _fit(_distinct(ranked, boosts.duplicate_similarity), budget)


def _rescore(hit: ScoredRecord, problem: ProblemSignature | None, gpu: str | None, boosts: Boosts) -> ScoredRecord:
    record = hit.record
    score = hit.similarity
    record_problem = getattr(record, "problem", None)
    if problem is not None and record_problem is not None and record_problem.name == problem.name:
        score += boosts.same_problem if record_problem == problem else boosts.same_problem_name
    if gpu is not None and getattr(record, "gpu", None) == gpu:
        score += boosts.same_gpu
    if isinstance(record, Attempt) and record.succeeded:
        score += boosts.successful
    return hit.model_copy(update={"score": score})


def _distinct(ranked: list[ScoredRecord], threshold: float) -> list[ScoredRecord]:
    """Best-ranked first, without lessons whose text or embedding repeats one already kept."""
    kept: list[ScoredRecord] = []
    texts: set[str] = set()
    vectors: list[np.ndarray] = []
    for hit in ranked:
        text = _key(hit.record)
        vector = np.asarray(hit.embedding, dtype=np.float32) if hit.embedding is not None else None
        if text in texts:
            continue
        if vector is not None and any(float(vector @ other) > threshold for other in vectors):
            continue  # embeddings are unit length, so the dot product is the cosine
        kept.append(hit)
        texts.add(text)
        if vector is not None:
            vectors.append(vector)
    return kept


def _key(record: Record) -> str:
    """The lesson itself, without where it was learnt: the same idea from two problems is one lesson."""
    if isinstance(record, Attempt):
        text = f"{record.idea} {record.diagnosis}"
    elif isinstance(record, CompileFix):
        text = f"{record.backend} {record.error} {record.fix}"
    else:
        text = record.text
    return " ".join(text.lower().split())


def _fit(ranked: list[ScoredRecord], budget: int) -> Lessons:
    """As many lessons, in rank order, as the rendered text fits in ``budget`` characters."""
    items: list[Lesson] = []
    used = len(HEADER)
    line_limit = max(min(600, budget - len(HEADER) - 3), 0)
    for hit in ranked:
        text = hit.record.summary(limit=line_limit)
        cost = len(text) + 3  # newline and "- "
        if not text or used + cost > budget:
            break
        items.append(Lesson(record=hit.record, similarity=hit.similarity, score=hit.score, text=text))
        used += cost
    return Lessons(items=items, budget_chars=budget)
