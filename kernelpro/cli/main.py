"""The ``kernelpro`` command: the typer app, with one module per command group registered on it.

The command-line layer is the only one that prints, opens a checkpointer or chooses a run directory.
"""

from __future__ import annotations

import typer

from kernelpro.cli import data, doctor, eval, forecast, memory, optimize, profile

app = typer.Typer(help="kernelpro: make GPU kernels faster, with a judge you can trust.", no_args_is_help=True,
                  pretty_exceptions_enable=False)
for group in (eval, doctor, memory, profile, optimize, forecast, data):
    group.register(app)


def main() -> None:
    from kernelpro.harness.isolation import hide_this_process

    hide_this_process()  # it may hold a provider's key: no other process of this user may read its memory
    app()


if __name__ == "__main__":
    main()
