"""How `--help` names the parameters: ``REFERENCE CANDIDATES...`` in usage lines, nothing after a flag, ``<path>``
for an argument of several paths.

Typer (0.29) writes a required argument as ``{reference}`` in the usage line and a flag's type as ``<bool>``,
which reads as if the flag took a value. ``install`` puts the familiar forms back by adjusting its two parameter
classes; on a typer without these methods it changes nothing, and the help is typer's own.
"""

from __future__ import annotations

from typing import Any


def _usage_name(argument: Any) -> str:
    """``NAME`` when required, ``[NAME]`` when not, ``...`` after one that takes several."""
    name = str(argument.metavar or argument.name).upper()
    name = name if argument.required else f"[{name}]"
    return name + ("..." if argument.nargs != 1 else "")


def install() -> None:
    """Use these forms in every command's help (idempotent)."""
    from typer import core

    argument, option = getattr(core, "TyperArgument", None), getattr(core, "TyperOption", None)
    if argument is None or option is None or getattr(option, "_kernelpro_help", False):
        return
    if hasattr(argument, "_usage_display_name"):
        argument._usage_display_name = _usage_name
    typed = getattr(argument, "display_type_rich", None)
    if typed is not None:
        def argument_type(self: Any, ctx: Any) -> str | None:  # <list[Path]> -> <path>: "NAME..." says "several"
            shown = typed(self, ctx)
            return f"<{shown[6:-2].lower()}>" if shown and shown.startswith("<list[") else shown

        argument.display_type_rich = argument_type
    shown = getattr(option, "display_type_rich", None)
    if shown is not None:
        def display_type_rich(self: Any, ctx: Any) -> str | None:
            return None if getattr(self, "is_flag", False) and self.metavar is None else shown(self, ctx)

        option.display_type_rich = display_type_rich
    option._kernelpro_help = True


__all__ = ["install"]
