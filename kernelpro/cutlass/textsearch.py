"""Word and regex search over the tree, and whole-word usages of a symbol, ranked for a reader.

Ranking: a line that defines a queried name first, then exact whole-word matches before substrings, all words
on one line before words spread over nearby lines, headers under include/ before the DSL and tools, before
examples and docs; each further hit in the same file ranks lower, so results spread across files.
"""

from __future__ import annotations

import fnmatch
import re
from bisect import bisect_left
from collections.abc import Callable, Iterable

from kernelpro.cutlass.index import CutlassIndex
from kernelpro.cutlass.results import FileUsages, SearchHit, SearchResult, UsageResult

WINDOW = 2
"""Words of a query may be spread over this many lines either side of a hit."""
PER_FILE_PENALTY = 1.5
MAX_HITS_PER_FILE = 200
USAGE_LINES_PER_FILE = 2
_WORD = re.compile(r"\w+")


def area_rank(path: str) -> int:
    """0 for library headers, 1 for the DSL and tool headers, 2 for examples, 3 for docs."""
    if path.endswith((".md", ".rst")) or path.startswith("media/"):
        return 3
    if path.startswith("include/"):
        return 0
    return 2 if path.startswith("examples/") else 1


def path_filter(glob: str | None) -> Callable[[str], bool]:
    """A glob (``*`` crosses directories) or, without wildcards, a directory or file path prefix."""
    if not glob:
        return lambda _: True
    pattern = glob.strip().strip("/")
    if not any(c in pattern for c in "*?["):
        return lambda path: path == pattern or path.startswith(pattern + "/")
    return lambda path: fnmatch.fnmatchcase(path, pattern) or fnmatch.fnmatchcase(path, pattern + "/*")


def _context(lines: list[str], i: int) -> tuple[tuple[int, str], ...]:
    return tuple((j + 1, lines[j]) for j in range(max(0, i - 1), min(len(lines), i + 2)))


def _whole_word(word: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(word) + r"(?!\w)", flags)


class TextSearch:
    """Searches of one index; keeps a lower-cased vocabulary for substring lookups of identifiers."""

    def __init__(self, index: CutlassIndex) -> None:
        self.index = index
        self._vocabulary: list[tuple[str, str]] | None = None
        self._definition_lines: set[tuple[int, int]] | None = None

    def files_with(self, token: str) -> set[int]:
        """Files holding an identifier that contains ``token`` (case-insensitive)."""
        if self._vocabulary is None:
            self._vocabulary = [(ident.lower(), ident) for ident in self.index.postings]
        needle = token.lower()
        found: set[int] = set()
        for lower, ident in self._vocabulary:
            if needle in lower:
                found.update(self.index.postings[ident])
        return found

    def _candidates(self, words: Iterable[str], keep: Callable[[str], bool]) -> list[int]:
        fids = {fid for fid in self.index.searchable if keep(self.index.paths[fid])}
        for word in words:
            for token in _WORD.findall(word):
                if len(token) > 1 and not token.isdigit():  # numbers are not in the word index
                    fids &= self.files_with(token)
        return sorted(fids)

    def search(self, query: str, regex: bool, path_glob: str | None, limit: int) -> SearchResult:
        """Lines matching a regex, or holding all words of ``query`` within a few lines of each other."""
        mode = "regex" if regex else "words"
        if not query.strip():
            return SearchResult(query, mode, (), 0, 0, "Empty query: give words or a regular expression.")
        keep = path_filter(path_glob)
        if regex:
            try:
                pattern = re.compile(query, re.M)
            except re.error as error:
                return SearchResult(query, mode, (), 0, 0, f"Invalid regular expression: {error}.")
            scored = self._regex_hits(pattern, keep)
        else:
            scored = self._word_hits(query.split(), keep)
        if not scored:
            where = f" under {path_glob!r}" if path_glob else ""
            hint = "" if regex else " Try fewer or shorter words, or regex=True."
            return SearchResult(query, mode, (), 0, 0, f"No matches for {query!r}{where}.{hint}")
        # Spread across files: the n-th hit of a file loses n * PER_FILE_PENALTY.
        by_file: dict[int, list[tuple[float, int]]] = {}
        for fid, line, score in scored:
            by_file.setdefault(fid, []).append((score, line))
        ranked: list[tuple[float, int, str, int]] = []
        for fid, hits in by_file.items():
            hits.sort(key=lambda h: (-h[0], h[1]))
            ranked += [(s - n * PER_FILE_PENALTY, fid, self.index.paths[fid], line) for n, (s, line) in enumerate(hits)]
        ranked.sort(key=lambda r: (-r[0], area_rank(r[2]), r[2], r[3]))
        top = ranked[:limit]
        # Show the kept hits grouped by file, files in the order of their best hit.
        order = {fid: i for i, (_, fid, _, _) in reversed(list(enumerate(top)))}
        top.sort(key=lambda r: (order[r[1]], r[3]))
        hits = tuple(SearchHit(path, line, _context(self.index.lines(fid), line - 1), round(score, 2))
                     for score, fid, path, line in top)
        return SearchResult(query, mode, hits, len(scored), len(by_file))

    def _regex_hits(self, pattern: re.Pattern[str], keep: Callable[[str], bool]) -> list[tuple[int, int, float]]:
        if self._definition_lines is None:
            self._definition_lines = self.index.symbols.locations(skip_local=True)
        definition_lines = self._definition_lines
        scored: list[tuple[int, int, float]] = []
        for fid in self.index.searchable:
            path = self.index.paths[fid]
            if not keep(path):
                continue
            text = self.index.text(fid)
            line, last, seen = 1, 0, 0
            for m in pattern.finditer(text):
                line += text.count("\n", last, m.start())
                last = m.start()
                if seen and scored[-1][1] == line:
                    continue
                seen += 1
                if seen > MAX_HITS_PER_FILE:
                    break
                score = 3.0 - area_rank(path) + (4.0 if (fid, line) in definition_lines else 0.0)
                scored.append((fid, line, score))
        return scored

    def _word_hits(self, words: list[str], keep: Callable[[str], bool]) -> list[tuple[int, int, float]]:
        lowered = [w.lower() for w in words]
        exact = [_whole_word(w) for w in words]
        folded = [_whole_word(w, re.I) for w in words]
        defined = self.index.symbols.locations(w.split("::")[-1] for w in words)
        scored: list[tuple[int, int, float]] = []
        for fid in self._candidates(lowered, keep):
            path = self.index.paths[fid]
            lower = self.index.text(fid).lower().split("\n")
            found = [[i for i, text in enumerate(lower) if w in text] for w in lowered]
            if not all(found):
                continue
            lines = self.index.lines(fid)
            anchor = min(range(len(found)), key=lambda k: len(found[k]))
            for i in found[anchor][:MAX_HITS_PER_FILE * 5]:
                near = [self._nearest(found[k], i) for k in range(len(found))]
                if any(j is None for j in near):
                    continue
                window = [lines[j] for j in set(near) if j is not None]
                score = 3.0 - area_rank(path)
                if all(any(p.search(t) for t in window) for p in exact):
                    score += 4.0
                elif all(any(p.search(t) for t in window) for p in folded):
                    score += 2.0
                if len(set(near)) == 1:
                    score += 2.0
                if (fid, i + 1) in defined:
                    score += 8.0
                if lines[i].lstrip().startswith(("//", "*", "/*", "#")):
                    score -= 1.0
                scored.append((fid, i + 1, score))
        return scored

    @staticmethod
    def _nearest(positions: list[int], i: int) -> int | None:
        """The line in ``positions`` nearest to ``i`` if within WINDOW, preferring ``i`` itself."""
        k = bisect_left(positions, i - WINDOW)
        best = None
        while k < len(positions) and positions[k] <= i + WINDOW:
            if best is None or abs(positions[k] - i) < abs(best - i):
                best = positions[k]
            k += 1
        return best

    def usages(self, name: str, limit: int) -> UsageResult:
        """Whole-word, case-sensitive occurrences of ``name`` outside the lines that define it."""
        pattern = _whole_word(name)
        definitions = self.index.symbols.locations([name])
        groups: list[tuple[int, str, int, list[tuple[int, str]]]] = []
        for fid in self.index.postings.get(name, ()):
            path = self.index.paths[fid]
            text = self.index.text(fid)
            line, last, count, shown, previous = 1, 0, 0, [], 0
            for m in pattern.finditer(text):
                line += text.count("\n", last, m.start())
                last = m.start()
                if line == previous or (fid, line) in definitions:
                    continue
                previous = line
                count += 1
                if len(shown) < USAGE_LINES_PER_FILE:
                    begin = text.rfind("\n", 0, m.start()) + 1
                    end = text.find("\n", m.start())
                    shown.append((line, text[begin: end if end >= 0 else len(text)]))
            if count:
                groups.append((area_rank(path), path, count, shown))
        if not groups:
            return UsageResult(name, (), 0, 0, f"No uses of {name!r} found outside its definitions.")
        groups.sort(key=lambda g: (g[0], -g[2], g[1]))
        files: list[FileUsages] = []
        budget = limit
        for _, path, count, shown in groups:
            if budget <= 0:
                break
            files.append(FileUsages(path, count, tuple(shown[:budget])))
            budget -= len(shown)
        return UsageResult(name, tuple(files), sum(g[2] for g in groups), len(groups))
