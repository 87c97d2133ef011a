"""The search memory: records of every attempt, kept in an embedded, persistent ChromaDB across runs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Union

from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from pydantic import BaseModel, Field

from kernelpro.config import MemorySettings
from kernelpro.harness.result import Status
from kernelpro.memory.connection import connection_for
from kernelpro.memory.embedding import LessonEmbedding
from kernelpro.memory.errors import MemoryStoreError
from kernelpro.memory.records import KINDS, Record, RecordKind, record_from_json
from kernelpro.memory.transfer import read_jsonl, write_jsonl

COLLECTION = "kernelpro-lessons"
_BATCH = 128


class MemoryFilter(BaseModel):
    """Metadata conditions, all of which a record must meet; unset fields do not filter."""

    kind: Union[RecordKind, list[RecordKind], None] = None
    problem: str | None = None
    """A problem's name."""
    problem_hash: str | None = None
    """A problem's source hash (see ProblemSignature), to tell apart problems of the same name."""
    gpu: str | None = None
    outcome: Status | None = None
    run_id: str | None = None

    def where(self) -> dict[str, Any] | None:
        """The condition in Chroma's ``where`` syntax, or None when nothing filters."""
        conditions: list[dict[str, Any]] = []
        for field, value in self.model_dump(exclude_none=True).items():
            conditions.append({field: {"$in": value}} if isinstance(value, list) else {field: value})
        if not conditions:
            return None
        return conditions[0] if len(conditions) == 1 else {"$and": conditions}


class ScoredRecord(BaseModel):
    """A record found by similarity; ``score`` is the similarity unless a ranking adjusted it."""

    record: Record
    similarity: float
    """Cosine similarity between the query and the record's text."""
    score: float
    embedding: list[float] | None = Field(default=None, exclude=True, repr=False)


class MemoryOverview(BaseModel):
    """What ``show`` reports: where the store is, how many records of each kind, the newest ones."""

    path: Path
    embedding_model: str | None
    counts: dict[str, int]
    recent: list[Record]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


class ImportSummary(BaseModel):
    added: int
    already_present: int


class MemoryStore:
    """Add, search, list, export, import and forget records in one store directory.

    Embeddings are computed by ``embedding`` (by default the model named in the settings, which it overrides),
    never by Chroma's own default, and outside the store's lock so a slow model load holds up no other process.
    """

    def __init__(self, settings: MemorySettings | None = None, embedding: LessonEmbedding | None = None) -> None:
        self.settings = settings or MemorySettings()
        self.embedding = embedding or LessonEmbedding(self.settings.embedding_model)
        self.path = self.settings.path.expanduser().resolve()
        self._connection = connection_for(self.path)
        self._cached: tuple[int, Collection] | None = None  # (the connection's epoch, its collection)

    # -- writing ---------------------------------------------------------------------------------------------

    def add(self, record: Record) -> bool:
        """Store one record; False when an identical record was already there."""
        return self.add_many([record]) == 1

    def add_many(self, records: Iterable[Record]) -> int:
        """Store records that are not there yet; returns how many were new."""
        unique = {r.id: r for r in records}
        if not unique:
            return 0
        with self._connection.session(write=False) as client:
            collection = self._collection(client, check_model=True)
            present = self._present(collection, list(unique))
        fresh = [r for i, r in unique.items() if i not in present]
        if not fresh:
            return 0
        vectors = self.embedding([r.document() for r in fresh])
        with self._connection.session(write=True) as client:
            collection = self._collection(client, check_model=True)
            present = self._present(collection, [r.id for r in fresh])  # another process may have added some
            new = [(r, v) for r, v in zip(fresh, vectors, strict=True) if r.id not in present]
            for start in range(0, len(new), _BATCH):
                batch = new[start : start + _BATCH]
                collection.add(ids=[r.id for r, _ in batch], embeddings=[v for _, v in batch],
                               documents=[r.document() for r, _ in batch], metadatas=[r.metadata() for r, _ in batch])
        return len(new)

    def forget(self, run_id: str) -> int:
        """Delete every record written by one run; returns how many were deleted."""
        with self._connection.session(write=True) as client:
            collection = self._collection(client)
            ids = collection.get(where={"run_id": run_id}, include=[])["ids"]
            if ids:
                collection.delete(ids=ids)
        return len(ids)

    def import_jsonl(self, file: Path) -> ImportSummary:
        """Add the records of an exported file; importing the same file again adds nothing."""
        records = read_jsonl(file)
        added = self.add_many(records)
        return ImportSummary(added=added, already_present=len({r.id for r in records}) - added)

    # -- reading ---------------------------------------------------------------------------------------------

    def get(self, record_id: str) -> Record | None:
        with self._connection.session(write=False) as client:
            found = self._collection(client).get(ids=[record_id], include=["metadatas"])
        metadatas = found["metadatas"] or []
        return record_from_json(str(metadatas[0]["record"])) if metadatas else None

    def records(self, filters: MemoryFilter | None = None) -> list[Record]:
        """Every record that meets ``filters``, oldest first."""
        with self._connection.session(write=False) as client:
            found = self._collection(client).get(where=filters.where() if filters else None, include=["metadatas"])
        records = [record_from_json(str(m["record"])) for m in found["metadatas"] or []]
        return sorted(records, key=lambda r: (r.created_at, r.id))

    def count(self, filters: MemoryFilter | None = None) -> int:
        if filters is None or filters.where() is None:
            with self._connection.session(write=False) as client:
                return self._collection(client).count()
        return len(self.records(filters))

    def overview(self, limit: int = 20) -> MemoryOverview:
        """Counts by kind and the ``limit`` newest records, newest first."""
        records = self.records()
        counts = Counter(r.kind for r in records)
        with self._connection.session(write=False) as client:
            model = (self._collection(client).metadata or {}).get("embedding_model")
        return MemoryOverview(path=self.path, embedding_model=str(model) if model else None,
                              counts={kind: counts.get(kind, 0) for kind in KINDS},
                              recent=list(reversed(records))[:limit])

    def export_jsonl(self, file: Path) -> int:
        """Write every record, oldest first, one JSON object a line; returns how many."""
        records = self.records()
        write_jsonl(records, file)
        return len(records)

    def search(self, query: str, filters: MemoryFilter | None = None, k: int = 10,
               with_embeddings: bool = False, min_similarity: float | None = None) -> list[ScoredRecord]:
        """The ``k`` records whose text is most similar to ``query``, most similar first, leaving out those less
        similar than ``min_similarity`` (by default the ``memory.min_similarity`` setting): irrelevant records
        are not hits."""
        if k <= 0:
            return []
        floor = self.settings.min_similarity if min_similarity is None else min_similarity
        vector = self.embedding([query])[0]
        include: list[Any] = ["metadatas", "distances"] + (["embeddings"] if with_embeddings else [])
        with self._connection.session(write=False) as client:
            collection = self._collection(client, check_model=True)
            total = collection.count()
            if total == 0:
                return []
            found = collection.query(query_embeddings=[vector], n_results=min(k, total),
                                     where=filters.where() if filters else None, include=include)
        metadatas = (found["metadatas"] or [[]])[0]
        distances = (found["distances"] or [[]])[0]
        embeddings: Sequence[Any] = (found["embeddings"] or [[]])[0] if with_embeddings else [None] * len(metadatas)
        hits = []
        for metadata, distance, embedding in zip(metadatas, distances, embeddings, strict=True):
            similarity = 1.0 - float(distance)  # cosine space: distance = 1 - cosine similarity
            if similarity < floor:
                break  # most similar first: the rest are further still
            hits.append(ScoredRecord(record=record_from_json(str(metadata["record"])), similarity=similarity,
                                     score=similarity, embedding=None if embedding is None else list(embedding)))
        return hits

    def close(self) -> None:
        """Release this process's client for the directory (shared by every store on it)."""
        self._cached = None
        self._connection.close()

    # -- internals -------------------------------------------------------------------------------------------

    def _collection(self, client: ClientAPI, check_model: bool = False) -> Collection:
        if self._cached is None or self._cached[0] != self._connection.epoch:
            # Always our embedding function: Chroma's default would download a model at run time.
            collection = client.get_or_create_collection(
                COLLECTION, embedding_function=self.embedding,  # type: ignore[arg-type]
                configuration={"hnsw": {"space": "cosine"}},
                metadata={"embedding_model": self.embedding.model_name},
            )
            self._cached = (self._connection.epoch, collection)
        collection = self._cached[1]
        if check_model:
            self._check_model(collection)
        return collection

    def _check_model(self, collection: Collection) -> None:
        stored = (collection.metadata or {}).get("embedding_model")
        if stored is not None and stored != self.embedding.model_name:
            raise MemoryStoreError(
                f"the memory at {self.path} was embedded with {stored!r}, not {self.embedding.model_name!r}: "
                "export it with the old model setting and import it into a new store, or use another path"
            )

    @staticmethod
    def _present(collection: Collection, ids: list[str]) -> set[str]:
        present: set[str] = set()
        for start in range(0, len(ids), 512):
            present.update(collection.get(ids=ids[start : start + 512], include=[])["ids"])
        return present
