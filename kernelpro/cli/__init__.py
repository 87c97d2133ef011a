"""The command-line layer: ``app`` (the typer app) and ``main`` (the console entry point)."""

from kernelpro.cli.main import app, main

__all__ = ["app", "main"]
