"""Browse the real CUTLASS/CuTe source: find definitions, usages and examples, search, list and read files.

The source is the copy in the ``nvidia-cutlass`` wheel (``pip install nvidia-cutlass``), or a checkout named by
``KERNELPRO_CUTLASS__ROOT``; the CuTe DSL's Python sources join it when ``nvidia-cutlass-dsl`` is installed.
"""

from kernelpro.tools.cutlass.browser import CutlassBrowser
from kernelpro.tools.cutlass.index import IndexStats
from kernelpro.tools.cutlass.results import (
    Definition,
    DefinitionResult,
    DirEntry,
    DirListing,
    ExampleHit,
    ExamplesResult,
    FileSlice,
    FileUsages,
    SearchHit,
    SearchResult,
    UsageResult,
)
from kernelpro.tools.cutlass.sources import CutlassError, CutlassPathError, CutlassSourceNotFound

__all__ = [
    "CutlassBrowser",
    "CutlassError",
    "CutlassPathError",
    "CutlassSourceNotFound",
    "Definition",
    "DefinitionResult",
    "DirEntry",
    "DirListing",
    "ExampleHit",
    "ExamplesResult",
    "FileSlice",
    "FileUsages",
    "IndexStats",
    "SearchHit",
    "SearchResult",
    "UsageResult",
]
