"""The settings a suite was started with through the environment (``KERNELPRO_*``), kept in its config, so a
resume in another shell judges the rest of its problems the same way: the same lanes, timing budget and
baselines, not whatever that shell happens to set. Credentials are never recorded."""

from __future__ import annotations

import os
from collections.abc import MutableMapping

from kernelpro.harness.worker.sandbox import SECRET_NAME

PREFIX = "KERNELPRO_"


def is_secret(name: str) -> bool:
    """The names the judge keeps from its workers (``sandbox.SECRET_NAME``) are never recorded either."""
    return SECRET_NAME.search(name) is not None


def settings_environment(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """The ``KERNELPRO_*`` variables of ``environ`` (this process's by default), credentials left out."""
    environ = os.environ if environ is None else environ
    return {name: value for name, value in sorted(environ.items())
            if name.startswith(PREFIX) and not is_secret(name)}


def restore(recorded: dict[str, str], environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Set each recorded variable this environment leaves unset; the problem runs inherit them. Returns one line
    per variable this environment sets otherwise (it wins: whoever resumes chose it)."""
    environ = os.environ if environ is None else environ
    differ = []
    for name, value in recorded.items():
        if is_secret(name) or not name.startswith(PREFIX):
            continue
        if name not in environ:
            environ[name] = value
        elif environ[name] != value:
            differ.append(f"{name}={environ[name]} (the suite started with {value})")
    return differ
