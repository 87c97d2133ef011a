"""ARCHITECTURE.md's layers hold in the code: every module's imports, read from its source (those inside functions
too), point down the diagram's order, and the rules written under it hold."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "kernelpro"
# What knows nothing of LLMs (ARCHITECTURE.md: "harness/ and profiling/ know nothing of LLMs"), and the
# layers below them that the harness builds on
WITHOUT_LLMS = {"harness", "profiling", "search", "memory", "runs"}
LLM_PACKAGE = "llm"
# Layers that drive whole runs as child processes and read their directories (runs/), never the graph or the
# composition root in-process (ARCHITECTURE.md: suite/ and model/ "never import graphs/ or app/")
NEVER = {"suite": {"graphs", "app"}, "model": {"graphs", "app"}}


def diagram_order() -> list[str]:
    """The layers as the diagram lists them, top first: ``cli``, ..., ``tools``, ``profiling``, ..."""
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = text.split("## Layers", 1)[1].split("```", 2)[1]
    order, parent = [], None
    for line in block.splitlines():
        if m := re.match(r"^([a-z_]+)(/|\.py)\s", line):
            parent = m.group(1)
            order.append(parent)
        elif (m := re.match(r"^  ([a-z_]+)/\s", line)) and parent:
            order.append(f"{parent}.{m.group(1)}")
    return order


def unit_of(module: str, layers: set[str]) -> str:
    """The layer a dotted ``kernelpro...`` module belongs to, or ``root`` for the modules at the package's root."""
    parts = module.split(".")[1:]
    if not parts:
        return "root"
    if len(parts) > 1 and f"{parts[0]}.{parts[1]}" in layers:
        return f"{parts[0]}.{parts[1]}"
    return parts[0] if parts[0] in layers else "root"


def imports() -> list[tuple[str, str, int]]:
    """(importing module, imported kernelpro module, line) for every import in the package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            found += [(module, name, node.lineno) for name in names if name.split(".")[0] == "kernelpro"]
    return found


def upward(found: list[tuple[str, str, int]], order: list[str]) -> list[str]:
    """The imports in ``found`` that point up ``order`` or break a NEVER rule (the root modules, the harness's own
    layer: config, problem, environment, runtime, may use only the harness and each other)."""
    layers = set(order)
    rank = {name: i for i, name in enumerate(order)} | {"root": len(order)}
    wrong = []
    for module, name, line in found:
        source, target = unit_of(module, layers), unit_of(name, layers)
        if source == target or target.startswith(source + "."):
            continue
        if target in NEVER.get(source, ()) or not (
                target in {"harness", "root"} if source == "root" else rank[target] > rank[source]):
            wrong.append(f"{module}:{line} imports {name} ({source} -> {target})")
    return wrong


def test_the_diagram_names_every_package():
    order = diagram_order()
    block = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8").split("## Layers", 1)[1].split("```", 2)[1]
    named = set(order) | set(re.findall(r"\b([a-z_]+)/", block))
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert packages <= named, f"packages missing from ARCHITECTURE.md's diagram: {packages - named}"


def test_every_import_points_down_the_layers():
    wrong = upward(imports(), diagram_order())
    assert not wrong, "imports against ARCHITECTURE.md's layers:\n" + "\n".join(wrong)


def test_what_knows_nothing_of_llms_imports_none():
    layers = set(diagram_order())
    found = [f"{module}:{line} imports {name}" for module, name, line in imports()
             if unit_of(module, layers) in WITHOUT_LLMS and name.split(".")[1] == LLM_PACKAGE]
    assert not found, "\n".join(found)


def test_an_import_up_the_diagram_is_reported_with_its_place():
    order = diagram_order()
    found = [("kernelpro.suite.job", "kernelpro.graphs.run_files", 3),  # up: the suite above the graph
             ("kernelpro.harness.judge", "kernelpro.search.tree", 7),  # up: search sits above the harness
             ("kernelpro.environment", "kernelpro.profiling.collect", 9),  # a root module above the harness
             ("kernelpro.graphs.measure", "kernelpro.runs.files", 4),  # down
             ("kernelpro.tools.faces", "kernelpro.profiling.collect", 5),  # down: the tools' faces over it
             ("kernelpro.app.forecast", "kernelpro.app.compose", 6)]  # within the composition root
    assert upward(found, order) == [
        "kernelpro.suite.job:3 imports kernelpro.graphs.run_files (suite -> graphs)",
        "kernelpro.harness.judge:7 imports kernelpro.search.tree (harness -> search)",
        "kernelpro.environment:9 imports kernelpro.profiling.collect (root -> profiling)"]
