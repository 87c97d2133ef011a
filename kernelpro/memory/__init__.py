"""The search memory: lessons from every attempt, kept across runs and retrieved for the agents."""

from kernelpro.memory.embedding import BUNDLED_MODEL, LessonEmbedding
from kernelpro.memory.errors import MemoryStoreError
from kernelpro.memory.records import KINDS, Attempt, CompileFix, Insight, ProblemSignature, Record, RecordKind
from kernelpro.memory.retrieve import Boosts, Lesson, Lessons, retrieve
from kernelpro.memory.store import ImportSummary, MemoryFilter, MemoryOverview, MemoryStore, ScoredRecord

__all__ = [
    "BUNDLED_MODEL",
    "KINDS",
    "Attempt",
    "Boosts",
    "CompileFix",
    "ImportSummary",
    "Insight",
    "Lesson",
    "LessonEmbedding",
    "Lessons",
    "MemoryFilter",
    "MemoryOverview",
    "MemoryStore",
    "MemoryStoreError",
    "ProblemSignature",
    "Record",
    "RecordKind",
    "ScoredRecord",
    "retrieve",
]
