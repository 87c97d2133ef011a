"""The patched model: the original model's code, each region's best ``ModelNew`` spliced in, as one importable
file that is itself a KernelBench-format candidate (``ModelNew``) of the whole model.

Its ``ModelNew`` builds the original model with the same arguments (so, under the judge's seed, the same
weights), traces it with torch.fx, gives each winner its region's weights and puts it in the region's place
(``splice_runtime``, pasted in whole). A model ``splice_runtime`` exports instead (a ``transformers`` model) is
traced and spliced at its first call, at that call's inputs, on the device they are on. Each winner's code keeps
its own names behind a prefix, so two winners' ``ModelNew`` (and their helpers) do not collide; the original
``Model`` is renamed, as the judge wants of a candidate.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

from kernelpro.model.regions import Region
from kernelpro.search.module_copy import CopyError, copy_class

ORIGINAL = "OriginalModel"


class SpliceError(ValueError):
    """A winner or the model's code cannot be put into the patched model; the message says which and why."""


@dataclass(frozen=True)
class Winner:
    """A region and the source of its best ``ModelNew``."""

    region: Region
    source: str


def top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


class _Prefix(ast.NodeTransformer):
    def __init__(self, names: set[str], prefix: str) -> None:
        self.names, self.prefix = names, prefix

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id in self.names:
            node.id = self.prefix + node.id
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.ClassDef:
        if node.name in self.names:
            node.name = self.prefix + node.name
        return self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        if node.name in self.names:
            node.name = self.prefix + node.name
        return self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> ast.Global:
        node.names = [self.prefix + n if n in self.names else n for n in node.names]
        return node


def prefixed(source: str, prefix: str) -> str:
    """``source`` with every name it defines at its top level renamed ``prefix + name``; its ``from __future__``
    imports dropped (the patched file has them at its top)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise SpliceError(f"not valid Python: line {error.lineno}: {error.msg}") from None
    if "ModelNew" not in top_level_names(tree):
        raise SpliceError("defines no ModelNew at its top level")
    tree.body = [s for s in tree.body if not (isinstance(s, ast.ImportFrom) and s.module == "__future__")]
    return ast.unparse(_Prefix(top_level_names(tree), prefix).visit(tree))


def _without_future(source: str) -> tuple[str, list[str]]:
    tree = ast.parse(source)
    futures = [ast.unparse(s) for s in tree.body if isinstance(s, ast.ImportFrom) and s.module == "__future__"]
    lines = source.splitlines(keepends=True)
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
            for index in range(statement.lineno - 1, statement.end_lineno or statement.lineno):
                lines[index] = ""
    return "".join(lines), futures


def patched_source(model_name: str, reference_source: str, winners: list[Winner]) -> str:
    """The patched model's whole source."""
    try:
        original = copy_class(reference_source, "Model", ORIGINAL)
    except CopyError as error:
        raise SpliceError(f"the model's code: {error}") from None
    original_code, futures = _without_future(original.code)
    parts, pairs = [], []
    for index, winner in enumerate(winners):
        prefix = f"region{index}_"
        try:
            code = prefixed(winner.source, prefix)
        except SpliceError as error:
            raise SpliceError(f"the best candidate of {winner.region.name}: {error}") from None
        parts.append(f"# ---- region {winner.region.name}: its best ModelNew\n\n{code}\n")
        pairs.append(f"(REGIONS[{index}], {prefix}ModelNew())")
    runtime = (Path(__file__).parent / "splice_runtime.py").read_text(encoding="utf-8")
    regions = json.dumps([w.region.to_dict() for w in winners], indent=1)
    params = f", {original.init_parameters}" if original.init_parameters else ""
    header = "\n".join(dict.fromkeys(futures)) + "\n" if futures else ""
    pairs_text = ", ".join(pairs)
    return f'''{header}"""{model_name}, with {len(winners)} region(s) replaced by faster code (kernelpro model).

Import it and build ModelNew with the original model's arguments: it builds the original model, then splices
each region's faster module in, with the region's own weights.
"""

# ---- the original model (its Model class renamed {original.class_name})

{original_code}

{chr(10).join(parts)}
# ---- splicing (kernelpro/model/splice_runtime.py)

{runtime}

REGIONS = {regions}


class ModelNew(torch.nn.Module):
    """{model_name} with its regions spliced."""

    def __init__(self{params}):
        super().__init__()
        original = {original.class_name}({original.init_arguments})
        winners = [{pairs_text}]
        if traced_by_export(original):  # traced at the first call's inputs, on their device
            self.original, self.winners, self.spliced = original, torch.nn.ModuleList(m for _, m in winners), None
        else:
            self.spliced = splice_all(original, winners)

    def forward(self, *inputs):
        if self.spliced is None:
            self.spliced = splice_all(self.original, list(zip(REGIONS, self.winners)), inputs)
        return self.spliced(*inputs)
'''
