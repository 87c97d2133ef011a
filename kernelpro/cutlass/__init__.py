"""Browse the real CUTLASS/CuTe source: find definitions, usages and examples, search, list and read files.

The source is the copy in the ``nvidia-cutlass`` wheel (``pip install nvidia-cutlass``), or a checkout named by
``KERNELPRO_CUTLASS__ROOT``; the CuTe DSL's Python sources join it when ``nvidia-cutlass-dsl`` is installed.
"""

from kernelpro.cutlass.browser import CutlassBrowser
from kernelpro.cutlass.index import IndexStats
from kernelpro.cutlass.results import (
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
from kernelpro.cutlass.sources import CutlassError, CutlassPathError, CutlassSourceNotFound

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
