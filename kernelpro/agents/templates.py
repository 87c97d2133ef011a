"""Prompt templates: ``prompts/<name>.md`` with ``$name`` placeholders (``string.Template``; ``$$`` is a dollar).

A placeholder without a value is an error, never an empty string; values a template does not use are ignored, so
an agent may pass its whole input view.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from string import Template

PROMPTS = Path(__file__).parent / "prompts"


class TemplateError(KeyError):
    """A template is missing, or a placeholder in it has no value."""

    def __str__(self) -> str:
        return str(self.args[0])


@functools.cache
def _template(name: str) -> Template:
    path = PROMPTS / (name if name.endswith(".md") else f"{name}.md")
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in PROMPTS.glob("*.md")))
        raise TemplateError(f"no prompt template {name!r} in {PROMPTS} (known: {known})")
    return Template(path.read_text(encoding="utf-8").rstrip("\n"))  # the file's final newline is no part of it


def variables(name: str) -> set[str]:
    """The placeholders of a template."""
    template = _template(name)
    return {m.group("named") or m.group("braced") for m in template.pattern.finditer(template.template)
            if m.group("named") or m.group("braced")}


def render(name: str, **values: object) -> str:
    """The template ``name`` (with or without ``.md``) with its placeholders filled from ``values``."""
    missing = variables(name) - values.keys()
    if missing:
        raise TemplateError(f"template {name!r} needs values for: {', '.join(sorted(missing))}")
    return _template(name).substitute({key: str(value) for key, value in values.items()})


def fence(text: str, language: str = "python") -> str:
    """``text`` in a fenced block whose fence is longer than any run of backticks inside it, so a source holding
    a triple-backtick line (a docstring with a Markdown example, say) cannot close the block early."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    marks = "`" * max(3, longest + 1)
    return f"{marks}{language}\n{text.rstrip()}\n{marks}"


def template_names() -> list[str]:
    return sorted(p.stem for p in PROMPTS.glob("*.md"))


__all__ = ["TemplateError", "fence", "render", "template_names", "variables"]
