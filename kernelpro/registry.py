"""A seam chosen by name: a table of name -> factory.

A built-in entry may be a ``"module:attribute"`` string (``"kernelpro.search.greedy:Greedy.from_settings"``),
imported on first use, so the table itself imports nothing: the settings can check a name against it without
pulling in the layers that implement it. ``register`` adds an entry at run time, and every place that takes a
name (the settings, the command line, the factory) then accepts it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

Factory = Callable[..., Any]


class UnknownName(ValueError):
    """A name no entry of a registry has; its message lists the choices."""


class Registry(Mapping[str, Factory]):
    """Name -> factory for one seam (``kind`` names it in errors: "search policy", "judge", ...).

    ``reserved`` are names accepted as choices that the caller resolves before building (a search policy's
    ``auto``): they are listed first among the choices and cannot be registered.
    """

    def __init__(self, kind: str, entries: Mapping[str, Factory | str], *, reserved: Sequence[str] = ()) -> None:
        self.kind = kind
        self.reserved = tuple(reserved)
        self._entries: dict[str, Factory | str] = dict(entries)

    def register(self, name: str, factory: Factory | str, *, replace: bool = False) -> None:
        """Add ``name`` (a factory, or a ``"module:attribute"`` string); an existing name only with ``replace``."""
        if not name or name in self.reserved:
            raise ValueError(f"{name!r} cannot name a {self.kind}")
        if name in self._entries and not replace:
            raise ValueError(f"a {self.kind} named {name!r} is registered already")
        self._entries[name] = factory

    def unregister(self, name: str) -> None:
        """Remove ``name``; a name that is not there is left alone."""
        self._entries.pop(name, None)

    def names(self) -> tuple[str, ...]:
        """The registered names, built-in ones first, in the order they were added."""
        return tuple(self._entries)

    def choices(self) -> tuple[str, ...]:
        """Every name accepted where this seam is chosen: the reserved ones, then the registered ones."""
        return (*self.reserved, *self._entries)

    def unknown(self, name: str) -> str:
        """The one error line for a name that is not a choice."""
        return f"unknown {self.kind} {name!r}; choose one of {', '.join(self.choices())}"

    def refusal(self, name: str | None, option: str) -> str | None:
        """The command line's error for ``option`` given ``name``, or None when ``name`` is a choice (or not
        given)."""
        if name is None or name in self.choices():
            return None
        return f"{option} must be one of {', '.join(self.choices())}, not {name!r}"

    def check(self, name: str) -> str:
        """``name`` when it is a choice; raises ``UnknownName`` listing the choices otherwise."""
        if name not in self.choices():
            raise UnknownName(self.unknown(name))
        return name

    def factory(self, name: str) -> Factory:
        """The factory of ``name``, imported on first use; raises ``UnknownName`` for anything else."""
        if name not in self._entries:
            raise UnknownName(self.unknown(name))
        entry = self._entries[name]
        if isinstance(entry, str):
            entry = self._entries[name] = _resolve(entry)
        return entry

    def build(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """What the factory of ``name`` makes of ``args``."""
        return self.factory(name)(*args, **kwargs)

    def __getitem__(self, name: str) -> Factory:
        if name not in self._entries:
            raise KeyError(name)
        return self.factory(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self.choices())})"


def _resolve(path: str) -> Factory:
    """``"package.module:Name.attribute"`` imported and looked up."""
    module, _, attribute = path.partition(":")
    if not attribute:
        raise ValueError(f"{path!r} is not 'module:attribute'")
    found: Any = importlib.import_module(module)
    for part in attribute.split("."):
        found = getattr(found, part)
    return found
