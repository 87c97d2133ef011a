"""What the search memory stores: attempts, the critic's insights, and compile errors with their fix.

Every record has a stable id, a hash of its content (not of when it was written), so writing or importing
the same record twice keeps one copy.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timezone
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from kernelpro.harness.result import Status
from kernelpro.harness.timing.stats import CALL_WORDS, speedup_text
from kernelpro.problem import Problem

RecordKind = Literal["attempt", "insight", "compile_fix"]
KINDS: tuple[RecordKind, ...] = ("attempt", "insight", "compile_fix")
MetadataValue = Union[str, int, float, bool]


def _clip(text: str, limit: int) -> str:
    """Whitespace collapsed to single spaces, cut to ``limit`` characters with an ellipsis."""
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)].rstrip() + "…"


class ProblemSignature(BaseModel):
    """A problem's name plus a hash of its reference source: same name and different source are different."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    source_hash: str

    @classmethod
    def of(cls, name: str, source: str) -> ProblemSignature:
        """The signature of a reference source; line endings and surrounding blank space do not matter."""
        normalized = source.replace("\r\n", "\n").strip()
        return cls(name=name, source_hash=hashlib.sha256(normalized.encode()).hexdigest()[:16])

    @classmethod
    def from_problem(cls, problem: Problem) -> ProblemSignature:
        return cls.of(problem.name, problem.source)

    @property
    def key(self) -> str:
        return f"{self.name}@{self.source_hash}"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tags: list[str] = Field(default_factory=list)
    """Technique tags such as ``warp-shuffle`` or ``tiling``; stored lower-case, sorted, without repeats."""
    created_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))
    """When the record was first written; not part of its identity."""

    @field_validator("tags")
    @classmethod
    def _normalize_tags(cls, tags: list[str]) -> list[str]:
        return sorted({t.strip().lower() for t in tags if t.strip()})

    @property
    def id(self) -> str:
        """``<kind>-<hash of the content>``, the same for the same content whenever it was written."""
        content = self.model_dump(mode="json", exclude={"created_at"})
        if content.get("origin", "") is None:  # records written before attempts had an origin keep their ids
            del content["origin"]
        digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:24]
        return f"{content['kind']}-{digest}"

    def document(self) -> str:
        """The text that is embedded for similarity search."""
        raise NotImplementedError

    def summary(self, limit: int = 600) -> str:
        """One concise line for an agent's prompt, at most ``limit`` characters."""
        raise NotImplementedError

    def metadata(self) -> dict[str, MetadataValue]:
        """Flat fields for filtering, plus the whole record as JSON so it can be rebuilt exactly."""
        fields: dict[str, MetadataValue | None] = {
            "kind": self.kind,  # type: ignore[attr-defined]
            "record": self.model_dump_json(),
            "created_at": self.created_at.timestamp(),
            "run_id": getattr(self, "run_id", None),
            "gpu": getattr(self, "gpu", None),
            "tags": ",".join(self.tags),
        }
        problem = getattr(self, "problem", None)
        if problem is not None:
            fields.update(problem=problem.name, problem_hash=problem.source_hash)
        fields.update(self._extra_metadata())
        return {k: v for k, v in fields.items() if v is not None}  # chroma stores no None values

    def _extra_metadata(self) -> dict[str, MetadataValue | None]:
        return {}

    def _tag_text(self) -> str:
        return f" Techniques: {', '.join(self.tags)}." if self.tags else ""


class Attempt(_Record):
    """One candidate kernel that was tried, and how the judge saw it."""

    kind: Literal["attempt"] = "attempt"
    run_id: str
    problem: ProblemSignature
    gpu: str
    idea: str
    """What the candidate tried, in the planner's words."""
    outcome: Status
    speedup: float | None = None
    speedup_ci95: list[float] | None = None
    """The speedup's 95% interval, when it was measured with one."""
    speed_verdict: str | None = None
    """``faster``, ``slower``, ``same`` or ``uncertain`` (see ``harness.stats.speed_call``)."""
    diagnosis: str = ""
    """The key finding from profiling or from the failure."""
    candidate_id: str | None = None
    origin: str | None = None
    """Who wrote the candidate: ``llm``, ``user`` (an edit at an interactive prompt) or ``recipe:<names>``."""

    @property
    def succeeded(self) -> bool:
        """Correct and faster than the reference beyond its interval (for records without an interval, above 1)."""
        if self.outcome != "ok" or self.speedup is None:
            return False
        return self.speed_verdict == "faster" if self.speed_verdict else self.speedup > 1.0

    def speed_text(self) -> str:
        """``1.52x [1.49-1.55] faster``, or ``no measurable gain (1.01x [0.99-1.03])`` within the noise."""
        if self.speedup is None:
            return ""
        figure = speedup_text(self.speedup, self.speedup_ci95)
        if self.speed_verdict in ("same", "uncertain"):
            return f"{CALL_WORDS[self.speed_verdict]} ({figure})"
        return figure + (f" {self.speed_verdict}" if self.speed_verdict else "")

    def document(self) -> str:
        result = f"{self.outcome}" + (f", speedup {self.speed_text()}" if self.speedup is not None else "")
        diagnosis = f" Diagnosis: {self.diagnosis}" if self.diagnosis else ""
        by = " Written by the user." if self.origin == "user" else ""
        return f"Problem {self.problem.name}. Idea: {self.idea}.{by}{diagnosis}{self._tag_text()} Outcome: {result}."

    def summary(self, limit: int = 600) -> str:
        speed = f" {self.speed_text()}" if self.speedup is not None else ""
        diagnosis = f" — {self.diagnosis}" if self.diagnosis else ""
        return _clip(f"[{self.problem.name} on {self.gpu}: {self.outcome}{speed}] {self.idea}{diagnosis}", limit)

    def _extra_metadata(self) -> dict[str, MetadataValue | None]:
        return {"outcome": self.outcome, "speedup": self.speedup, "candidate_id": self.candidate_id,
                "succeeded": self.succeeded, "speed_verdict": self.speed_verdict, "origin": self.origin}


class Insight(_Record):
    """A lesson the critic drew from a run."""

    kind: Literal["insight"] = "insight"
    run_id: str
    text: str
    problem: ProblemSignature | None = None
    gpu: str | None = None

    def document(self) -> str:
        where = f"Problem {self.problem.name}. " if self.problem else ""
        return f"{where}Insight: {self.text}{self._tag_text()}"

    def summary(self, limit: int = 600) -> str:
        where = f" ({self.problem.name})" if self.problem else ""
        return _clip(f"[insight{where}] {self.text}", limit)


class CompileFix(_Record):
    """A compile error and the change that made it compile."""

    kind: Literal["compile_fix"] = "compile_fix"
    error: str
    fix: str
    backend: str
    """What compiled it: ``cuda``, ``triton``, ``cute``, ..."""
    run_id: str | None = None
    problem: ProblemSignature | None = None

    def document(self) -> str:
        return f"{self.backend} compile error: {self.error}\nFix: {self.fix}{self._tag_text()}"

    def summary(self, limit: int = 600) -> str:
        error = _clip(self.error, min(200, limit // 2))
        return _clip(f"[{self.backend} compile fix] error: {error} → fix: {self.fix}", limit)

    def _extra_metadata(self) -> dict[str, MetadataValue | None]:
        return {"backend": self.backend}


Record = Annotated[Union[Attempt, Insight, CompileFix], Field(discriminator="kind")]
RECORD_ADAPTER: TypeAdapter[Record] = TypeAdapter(Record)


def record_from_json(text: str | bytes) -> Record:
    """A record from its JSON form (an exported line or the stored metadata)."""
    return RECORD_ADAPTER.validate_json(text)
