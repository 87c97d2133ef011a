"""Example files for a topic ("wgmma", "TMA", "tiled copy", "epilogue", "warp specialized", "cluster", ...).

A topic's words are expanded through a small map of synonyms to the names CUTLASS really uses (``tma`` ->
``SM90_TMA_LOAD``, ``make_tma_copy``), each file under ``examples/`` is scored by the (dampened) frequency of
those terms, with a bonus for terms in its path and a penalty for topic words it does not cover at all.
"""

from __future__ import annotations

import math
import re

from kernelpro.cutlass.index import CutlassIndex
from kernelpro.cutlass.results import ExampleHit, ExamplesResult

SYNONYMS: dict[str, tuple[str, ...]] = {
    "tma": ("SM90_TMA_LOAD", "make_tma_copy", "tma_partition", "TMA_LOAD", "tma"),
    "wgmma": ("warpgroup_arrive", "SM90_64x", "MMA_64x", "GMMA", "warpgroup", "wgmma"),
    "tiled copy": ("make_tiled_copy", "TiledCopy", "Copy_Atom", "partition_S", "tiled_copy"),
    "tiled mma": ("make_tiled_mma", "TiledMMA", "MMA_Atom", "partition_fragment", "tiled_mma"),
    "epilogue": ("CollectiveEpilogue", "EpilogueSchedule", "fusion", "epilogue"),
    "warp specialized": ("KernelTmaWarpSpecialized", "WarpSpecialized", "warp_specialized", "producer", "consumer"),
    "cluster": ("ClusterShape", "cluster_launch", "block_rank_in_cluster", "multicast", "cluster"),
    "hopper": ("sm90", "hopper", "GMMA", "TMA"),
    "blackwell": ("sm100", "blackwell", "tcgen05", "UMMA", "tmem"),
    "ampere": ("sm80", "ampere", "cp_async", "SM80"),
    "gemm": ("GemmUniversal", "CollectiveMma", "gemm"),
    "pipeline": ("PipelineTmaAsync", "producer_acquire", "consumer_wait", "pipeline"),
    "swizzle": ("Swizzle", "composition", "swizzle"),
    "mma": ("make_tiled_mma", "TiledMMA", "MMA_Atom", "mma"),
    "cp async": ("SM80_CP_ASYNC", "cp_async", "cp.async"),
    "shared memory": ("SharedStorage", "smem", "__shared__"),
    "fp8": ("float_e4m3_t", "e4m3", "fp8"),
    "layout": ("make_layout", "Layout", "Shape", "Stride"),
    "grouped": ("GroupProblemShape", "grouped"),
    "stream k": ("StreamK", "stream_k", "streamk"),
    "persistent": ("PersistentTileSchedulerSm90", "TileScheduler", "persistent"),
    "attention": ("fmha", "softmax", "attention"),
    "mixed input": ("mixed_input", "mixed_dtype", "MixedInput"),
    "tensor": ("make_tensor", "local_tile", "Tensor"),
}
ALIASES = {"gmma": "wgmma", "tma load": "tma", "sm90": "hopper", "sm100": "blackwell", "sm80": "ampere",
           "warp specialization": "warp specialized", "ws": "warp specialized", "streamk": "stream k",
           "cp.async": "cp async", "cpasync": "cp async", "smem": "shared memory", "fmha": "attention",
           "copy": "tiled copy", "tiledcopy": "tiled copy", "tiledmma": "tiled mma", "clusters": "cluster"}
STOPWORDS = frozenset("a an the with for in of and or how to on example examples using use show me".split())
EXAMPLE_SUFFIXES = (".cu", ".cuh", ".cpp", ".hpp", ".h", ".py", ".md")
MAX_PER_DIRECTORY = 2
"""Files shown per example (a numbered example directory) or per tutorial directory."""
_LICENSE = re.compile(r"Copyright|SPDX-License|Redistribution and use", re.I)
_C_COMMENT = re.compile(r"/\*[\s\S]*?\*/|(?:^[ \t]*//[^\n]*\n?)+", re.M)
_PY_COMMENT = re.compile(r"\"\"\"[\s\S]*?\"\"\"|(?:^[ \t]*#[^\n]*\n?)+", re.M)
# What may stand between a file's header comments: includes, pragmas, imports, "using namespace".
_PREAMBLE = re.compile(r"\s*(?:#.*|using\s+namespace\s+[\w:]+;|import\s.*|from\s.*)?\s*")
_DOC_NOISE = re.compile(r"^[\s/*!#<-]*(?:\\file\b|\\brief\b|@brief\b|@file\b)?\s*")


def expand(topic: str) -> list[tuple[str, list[str]]]:
    """Topic -> groups (one per concept in it), each a list of lower-cased search terms."""
    words = [w for w in re.findall(r"[\w.]+", topic.lower().replace("-", " ")) if w not in STOPWORDS]
    groups: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(words):
        for size in (2, 1):
            phrase = " ".join(words[i:i + size])
            key = ALIASES.get(phrase, phrase)
            if len(words[i:i + size]) == size and key in SYNONYMS:
                terms = [t.lower() for t in SYNONYMS[key]] + [key.replace(" ", "_"), key.replace(" ", "")]
                groups.append((key, list(dict.fromkeys(terms))))
                i += size
                break
        else:
            if len(words[i]) > 1:
                groups.append((words[i], [words[i]]))
            i += 1
    return groups


def summary(text: str, path: str) -> str:
    """The first line of the file's header comment (or docstring, or markdown heading) that is not the license."""
    head = text[:16000]
    if path.endswith(".md"):
        return next((line.lstrip("# ").strip() for line in head.splitlines() if line.startswith("#")), "")
    pattern = _PY_COMMENT if path.endswith(".py") else _C_COMMENT
    pos = 0
    for m in pattern.finditer(head):
        if not all(_PREAMBLE.fullmatch(line) for line in head[pos:m.start()].splitlines()):
            break  # past the header: comments inside code describe the code, not the file
        pos = m.end()
        if _LICENSE.search(m.group()):
            continue
        for raw in m.group().replace('"""', "\n").splitlines():
            line = _DOC_NOISE.sub("", raw).strip(" */")
            if sum(c.isalpha() for c in line) >= 8:
                return line
    return ""


def _example_group(path: str) -> str:
    """A numbered example (``examples/77_blackwell_fmha``) with its sub-directories, else the file's directory."""
    parts = path.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 and parts[1][:1].isdigit() else path.rsplit("/", 1)[0]


class ExampleFinder:
    """Ranks the example files of one index for topics; keeps their lower-cased text after the first call."""

    def __init__(self, index: CutlassIndex) -> None:
        self.index = index
        self._lower: dict[int, str] | None = None

    def _texts(self) -> dict[int, str]:
        if self._lower is None:
            self._lower = {fid: self.index.text(fid).lower() for fid, path in enumerate(self.index.paths)
                           if path.startswith("examples/") and path.endswith(EXAMPLE_SUFFIXES)}
        return self._lower

    def find(self, topic: str, limit: int) -> ExamplesResult:
        """The best example files for ``topic``, each with a summary and the lines that show the topic."""
        groups = expand(topic)
        terms = tuple(dict.fromkeys(t for _, ts in groups for t in ts))
        if not groups:
            return ExamplesResult(topic, (), (), "Empty topic: try e.g. 'wgmma', 'tma', 'tiled copy', 'epilogue'.")
        scored: list[tuple[float, int]] = []
        for fid, lower in self._texts().items():
            path = self.index.paths[fid].lower()
            covered, score = 0, 0.0
            for _, group_terms in groups:
                group_score = 0.0
                for term in group_terms:
                    weight = 1.0 + min(len(term), 12) / 12
                    group_score += weight * math.log1p(lower.count(term)) + (3.0 if term in path else 0.0)
                covered += group_score > 0
                score += group_score
            if covered:
                runnable = 1.2 if path.endswith((".cu", ".py")) else 1.0  # a whole program beats a helper header
                scored.append((score * runnable * covered / len(groups), fid))
        scored.sort(key=lambda s: (-s[0], self.index.paths[s[1]]))
        hits: list[ExampleHit] = []
        per_dir: dict[str, int] = {}
        for score, fid in scored:
            path = self.index.paths[fid]
            directory = _example_group(path)
            if per_dir.get(directory, 0) >= MAX_PER_DIRECTORY:
                continue
            per_dir[directory] = per_dir.get(directory, 0) + 1
            hits.append(ExampleHit(path, summary(self.index.text(fid), path) or self._defines(fid), round(score, 1),
                                   self._key_lines(fid, terms)))
            if len(hits) >= limit:
                break
        if not hits:
            return ExamplesResult(topic, terms, (), f"No example mentions {topic!r}; try search({topic!r}).")
        return ExamplesResult(topic, terms, tuple(hits))

    def _key_lines(self, fid: int, terms: tuple[str, ...], count: int = 3) -> tuple[tuple[int, str], ...]:
        """The lines holding the most (and the most specific) terms; code before comments."""
        ranked: list[tuple[float, int]] = []
        lines = self.index.lines(fid)
        for i, line in enumerate(lines):
            lower = line.lower()
            score = sum(len(t) for t in terms if t in lower)
            if not score or lower.lstrip().startswith("#include"):
                continue
            if lower.lstrip().startswith(("//", "*", "/*", "#")):
                score *= 0.5
            ranked.append((score, i))
        ranked.sort(key=lambda r: (-r[0], r[1]))
        return tuple((i + 1, lines[i].strip()) for _, i in sorted(ranked[:count], key=lambda r: r[1]))

    def _defines(self, fid: int) -> str:
        names = [s.name for s in self.index.symbols.in_file(fid) if s.scope == "namespace"][:5]
        return "defines " + ", ".join(names) if names else ""
