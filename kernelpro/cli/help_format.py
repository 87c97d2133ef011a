"""How `--help` names the parameters: ``REFERENCE CANDIDATES...`` in usage lines, nothing after a flag or an
argument, and after an option a metavar that names its value (``N``, ``FILE``, ``DIR``, ``DURATION``,
``LEVEL...``), never a Python type.

Typer (0.29) writes a required argument as ``{reference}`` in the usage line and a parameter's type as ``<bool>``,
``<list[int]>`` or ``<path>``, which reads as Python rather than as what to type. ``install`` puts the familiar
forms back by adjusting its two parameter classes; on a typer without these methods it changes nothing, and the
help is typer's own. An option declared with typer's ``metavar=`` keeps it.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any, get_args, get_origin

# What an option's value is, where neither its type nor its name says it (the same flag means the same
# everywhere).
VALUE_NAMES = {
    "--time-budget": "DURATION", "--gpu-budget": "DURATION", "--per-problem-budget": "CAPS",
    "--usd-budget": "DOLLARS", "--timeout": "SECONDS", "--holdout": "SHARE",
    "--resume": "ID", "--run-id": "ID", "--thread": "ID", "--run": "ID", "--retry": "KINDS", "--ray": "WHERE",
}


def _usage_name(argument: Any) -> str:
    """``NAME`` when required, ``[NAME]`` when not, ``...`` after one that takes several."""
    name = str(argument.metavar or argument.name).upper()
    name = name if argument.required else f"[{name}]"
    return name + ("..." if argument.nargs != 1 else "")


def value_name(option: Any) -> str | None:
    """The metavar ``--help`` shows after ``option``: its own when declared, none for a flag, its choices, else
    what its value is by its flag (``VALUE_NAMES``), its type (``N``, ``FILE``, ``DIR``) or its name (``MODEL``);
    ``...`` after one given several times."""
    if option.metavar is not None:
        return str(option.metavar)
    if getattr(option, "is_flag", False) or getattr(option, "count", False):
        return None
    described = getattr(option, "type_descriptor", None)
    annotation = getattr(described, "annotation", None)
    several = get_origin(annotation) is list or bool(getattr(option, "multiple", False))
    if several and get_args(annotation):
        annotation = get_args(annotation)[0]
    longest = max(option.opts, key=len)
    if described is not None and getattr(described, "is_choice", False) and described.choices:
        name = "[" + "|".join(str(getattr(c, "value", c)) for c in described.choices) + "]"
    elif longest in VALUE_NAMES:
        name = VALUE_NAMES[longest]
    elif isinstance(annotation, type) and issubclass(annotation, PurePath):
        name = "DIR" if _a_directory(option, described, longest) else "FILE"
    elif annotation in (int, float) and not several:
        name = "N"
    else:
        name = longest.lstrip("-").upper().replace("-", "_")
    return name + ("..." if several else "")


def _a_directory(option: Any, described: Any, flag: str) -> bool:
    """A path option names a directory when it says so: ``dir_okay`` alone, a ``-dir`` flag, or help that calls it
    a directory."""
    kind = getattr(described, "path_type", "path") if described is not None else "path"
    if kind in ("dir", "file"):
        return kind == "dir"
    return flag.endswith("dir") or "director" in (option.help or "").lower()


def install() -> None:
    """Use these forms in every command's help (idempotent)."""
    from typer import core

    argument, option = getattr(core, "TyperArgument", None), getattr(core, "TyperOption", None)
    if argument is None or option is None or getattr(option, "_kernelpro_help", False):
        return
    if hasattr(argument, "_usage_display_name"):
        argument._usage_display_name = _usage_name
    if hasattr(argument, "display_type_rich"):
        def argument_type(self: Any, ctx: Any) -> str | None:  # its NAME says what it is; <path> adds nothing
            return self.metavar

        argument.display_type_rich = argument_type
    if hasattr(option, "display_type_rich"):
        def display_type_rich(self: Any, ctx: Any) -> str | None:
            return value_name(self)

        option.display_type_rich = display_type_rich
    option._kernelpro_help = True


__all__ = ["VALUE_NAMES", "install", "value_name"]
