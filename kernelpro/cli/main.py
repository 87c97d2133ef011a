"""The ``kernelpro`` command: the typer app, with one module per command group registered on it.

The command-line layer is the only one that prints, opens a checkpointer or chooses a run directory. ``run``
maps every way a command can end onto the exit codes of ``exit_codes``.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Sequence
from typing import Annotated

import typer

import kernelpro
from kernelpro.cli import cache, chat, data, doctor, eval, forecast, mcp, memory, model, optimize, profile, suite
from kernelpro.cli.errors import cannot_write, storage_error
from kernelpro.cli.help_format import install as install_help_format
from kernelpro.cli.inputs import spread_option_values
from kernelpro.config import SettingsError
from kernelpro.exit_codes import BAD_INPUT, FAILED, INTERNAL_ERROR, INTERRUPTED, MEANINGS, OK

install_help_format()

EXIT_CODES_HELP = "Exit codes: " + ", ".join(f"{code} {meaning}" for code, meaning in sorted(MEANINGS.items())) + "."

app = typer.Typer(help="kernelpro: make GPU kernels faster, with a judge you can trust.", epilog=EXIT_CODES_HELP,
                  no_args_is_help=True, pretty_exceptions_enable=False)
for group in (eval, doctor, memory, profile, optimize, suite, model, chat, mcp, forecast, data, cache):
    group.register(app)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kernelpro {kernelpro.__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print kernelpro's version and exit.")] = False,
) -> None:
    """kernelpro: make GPU kernels faster, with a judge you can trust (the exit codes close its help)."""


def run(argv: Sequence[str] | None = None, command: typer.Typer = app) -> int:
    """Run one command line; its exit code. Usage errors are bad input, Ctrl-C is an interruption, storage that
    refused a write (full, read-only) is one line and a failure, and any other exception nobody caught is an
    internal error, with its traceback."""
    try:
        args = spread_option_values(list(sys.argv[1:] if argv is None else argv))
        code = command(args=args, prog_name="kernelpro", standalone_mode=False)
    except (typer.Abort, KeyboardInterrupt):  # Ctrl-C (turned into Abort by the parser), or an aborted prompt
        print("\ninterrupted", file=sys.stderr)
        return INTERRUPTED
    except typer.TyperException as error:  # a usage error: an unknown command or option, a bad value
        show = getattr(error, "show", None)
        show() if show else print(f"error: {error.format_message()}", file=sys.stderr)
        return BAD_INPUT
    except SettingsError as error:  # a setting that cannot be used: bad input, whichever command read it
        print(f"error: {error}", file=sys.stderr)
        return BAD_INPUT
    except Exception as error:  # noqa: BLE001 - the one place a bug surfaces: say so, with what a report needs
        if (refused := storage_error(error)) is not None:  # a full disk, a read-only directory: not a bug
            print(f"error: {cannot_write(refused)}", file=sys.stderr)
            return FAILED
        traceback.print_exc()
        print(f"kernelpro {kernelpro.__version__}: internal error (a bug); please report it with the traceback "
              "above", file=sys.stderr)
        return INTERNAL_ERROR
    return code if isinstance(code, int) else OK


def main() -> None:
    from kernelpro.harness.isolation.walls import hide_this_process

    hide_this_process()  # it may hold a provider's key: no other process of this user may read its memory
    sys.exit(run())


if __name__ == "__main__":
    main()
