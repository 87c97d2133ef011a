"""Whether this Python can run an optimisation at all: the libraries every run imports, tried before anything
is made or measured.

A missing or broken dependency (a package whose own requirement is absent, a wrong package under a right name)
fails every run alike and is the machine's fault, not the problem's: ``optimize`` then exits ``SETUP_FAILED``
before it makes a run directory, and ``suite run`` before it measures a single baseline.
"""

from __future__ import annotations

import importlib

# What ``optimize`` imports to build and drive its graph (``cli.optimize.run_optimize``).
RUN_MODULES = ("langgraph.checkpoint.sqlite", "langgraph.types", "kernelpro.app.compose", "kernelpro.graphs.optimize",
               "kernelpro.graphs.resume", "kernelpro.runs.files", "kernelpro.llm.models")
# What the agents' model client imports, when a model is configured (``llm.chat_model``).
MODEL_MODULES = ("litellm", "langchain_litellm")


def run_stack_problem(with_model: bool = False) -> str | None:
    """Why a run cannot be set up in this Python (the module that fails, what it raised, the fix), or None.
    ``with_model``: a model is configured, so its client's libraries are needed too."""
    for name in RUN_MODULES + (MODEL_MODULES if with_model else ()):
        try:
            importlib.import_module(name)
        except Exception as error:  # noqa: BLE001 - a broken install raises more than ImportError
            missing = getattr(error, "name", None)
            cause = f"{type(error).__name__}: {error}"
            needed = f" (it needs {missing!r}, which this Python lacks)" if missing and missing != name else ""
            return (f"{name} does not import{needed}: {cause}; install kernelpro's dependencies into this Python "
                    "(pip install -e . in a checkout, or pip install kernelpro), then run it again")
    return None
