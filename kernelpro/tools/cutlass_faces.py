"""The CUTLASS/CuTe source browsing tools, as ``(content, artifact)`` replies over one browser per run.
Entries of ``faces.CATALOGUE``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernelpro.tools import schemas as s
from kernelpro.tools.context import Reply, ToolContext


def _browser(context: ToolContext) -> Any:
    from kernelpro.cutlass import CutlassBrowser

    return context.backend("cutlass", lambda: CutlassBrowser(context.settings.cutlass))


def _rendered(result: Any) -> Reply:
    return result.render(), result


def cutlass_search(context: ToolContext) -> Callable[..., Reply]:
    return lambda **kw: _rendered(_browser(context).search(**s.CutlassSearchArgs(**kw).model_dump()))


def cutlass_definition(context: ToolContext) -> Callable[..., Reply]:
    return lambda **kw: _rendered(_browser(context).find_definition(s.CutlassSymbolArgs(**kw).symbol))


def cutlass_usages(context: ToolContext) -> Callable[..., Reply]:
    return lambda **kw: _rendered(_browser(context).find_usages(s.CutlassSymbolArgs(**kw).symbol))


def cutlass_read(context: ToolContext) -> Callable[..., Reply]:
    return lambda **kw: _rendered(_browser(context).read_file(**s.CutlassReadArgs(**kw).model_dump()))


def cutlass_list(context: ToolContext) -> Callable[..., Reply]:
    return lambda **kw: _rendered(_browser(context).list_dir(s.CutlassListArgs(**kw).path))


def cutlass_examples(context: ToolContext) -> Callable[..., Reply]:
    return lambda **kw: _rendered(_browser(context).examples(s.CutlassExamplesArgs(**kw).topic))
