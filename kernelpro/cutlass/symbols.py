"""The symbol table: every definition of the tree, stored by column so that the cache loads fast.

Kinds, namespaces, enclosing classes and scopes repeat across thousands of rows; they are stored once in a
string table and referenced by number. Rows are appended file by file, so the file-id column is sorted.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from kernelpro.cutlass.scanner import Symbol

_INTERNED = ("kind", "namespace", "parent", "scope")


class SymbolEntry(NamedTuple):
    """A definition: a scanner Symbol plus the id of its file."""

    name: str
    kind: str
    fid: int
    line: int
    namespace: str
    parent: str
    scope: str
    specialization: int


class SymbolTable:
    """Definitions by column, with an index by name; ``table[i]`` builds row ``i``."""

    def __init__(self, columns: dict[str, list]) -> None:
        self.names: list[str] = columns["name"]
        self.kinds: list[str] = columns["kind"]
        self.fids: list[int] = columns["fid"]
        self.lines: list[int] = columns["line"]
        self.namespaces: list[str] = columns["namespace"]
        self.parents: list[str] = columns["parent"]
        self.scopes: list[str] = columns["scope"]
        self.specializations: list[int] = columns["specialization"]
        self.by_name: dict[str, list[int]] = {}
        for i, name in enumerate(self.names):
            self.by_name.setdefault(name, []).append(i)

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, i: int) -> SymbolEntry:
        return SymbolEntry(self.names[i], self.kinds[i], self.fids[i], self.lines[i], self.namespaces[i],
                           self.parents[i], self.scopes[i], self.specializations[i])

    def __iter__(self) -> Iterator[SymbolEntry]:
        return (self[i] for i in range(len(self)))

    def named(self, name: str) -> list[SymbolEntry]:
        """Every definition of exactly ``name``."""
        return [self[i] for i in self.by_name.get(name, ())]

    def in_file(self, fid: int) -> list[SymbolEntry]:
        """The definitions of one file, in line order."""
        return [self[i] for i in range(bisect_left(self.fids, fid), bisect_right(self.fids, fid))]

    def locations(self, names: Iterable[str] | None = None, skip_local: bool = False) -> set[tuple[int, int]]:
        """(file id, line) of the definitions of ``names`` (all names when None)."""
        rows = range(len(self)) if names is None else [i for n in names for i in self.by_name.get(n, ())]
        return {(self.fids[i], self.lines[i]) for i in rows if not (skip_local and self.scopes[i] == "local")}

    @staticmethod
    def encode(found: list[tuple[int, Symbol]]) -> dict[str, list]:
        """Columns for the cache from (file id, symbol) pairs in file order; repeated strings as numbers."""
        strings: dict[str, int] = {}
        transposed = zip(*(s for _, s in found), strict=True)  # Symbol rows -> one tuple per field
        columns = {key: list(values) for key, values in zip(Symbol._fields, transposed, strict=False)}
        columns.update({key: [] for key in Symbol._fields if key not in columns})  # no symbols at all
        for key in _INTERNED:
            columns[key] = [strings.setdefault(value, len(strings)) for value in columns[key]]
        columns["specialization"] = [int(value) for value in columns["specialization"]]
        columns["fid"] = [fid for fid, _ in found]
        columns["strings"] = list(strings)
        return columns

    @classmethod
    def decode(cls, columns: dict[str, list]) -> SymbolTable:
        """The table from its cached columns."""
        strings = columns["strings"]
        decoded = {key: value for key, value in columns.items() if key != "strings"}
        for key in _INTERNED:
            decoded[key] = [strings[i] for i in columns[key]]
        return cls(decoded)
