"""Every seam chosen by name, in one place: its registry and its built-in entries.

The built-in entries are ``"module:attribute"`` strings, imported on first use, so this module (and the settings,
which check names against it) imports nothing above it. A new implementation is one file and one line here, or
one ``register`` call at run time (``SEARCH_POLICIES.register("mine", Mine.from_settings)``); ARCHITECTURE.md's
Seams table lists them.
"""

from __future__ import annotations

from kernelpro.registry import Registry

JUDGES = Registry("judge", {
    "local": "kernelpro.harness.judge:PipelineEvaluator",
})
"""``harness.backend``: ``factory(settings, device)`` -> ``harness.ports.Evaluator``."""

AUTO_POLICY = "auto"
SEARCH_POLICIES = Registry("search policy", {
    "greedy": "kernelpro.search.greedy:Greedy.from_settings",
    "beam": "kernelpro.search.greedy:Beam.from_settings",
    "mcts": "kernelpro.search.mcts:MCTS.from_settings",
    "recipes": "kernelpro.recipes.policy:Recipes.from_settings",
}, reserved=(AUTO_POLICY,))
"""``search.policy``, ``--policy``: ``factory(search_settings)`` -> ``search.policy.SearchPolicy``; ``auto`` is
resolved by ``search.policies.resolve_policy_name``."""

SUITE_BACKENDS = Registry("suite backend", {
    "local": "kernelpro.suite.local:local_backend",
    "ray": "kernelpro.suite.ray_backend:RayBackend.connect",
})
"""Where a suite's problems run (``ray`` when ``--ray`` or ``suite.ray_address`` gives an address):
``factory(address, device, settings)`` -> ``suite.driver.Backend``."""

GATES = Registry("gate", {
    "off": "kernelpro.app.forecast:measure_all",
    "select": "kernelpro.app.forecast:forecast_gate",
    "selective": "kernelpro.app.forecast:forecast_gate",
})
"""``forecast.gate``: ``factory(settings, gpu, meter)`` -> ``harness.ports.Gate``."""

FORECASTERS = Registry("forecaster", {
    "model_free": "kernelpro.app.forecast:model_free",
    "class_prior": "kernelpro.app.forecast:class_prior",
    "llm": "kernelpro.app.forecast:llm",
    "llm_defer": "kernelpro.app.forecast:llm_defer",
})
"""``forecast.forecaster``, ``forecast eval --forecaster``: ``factory(settings, train, gpu, meter)`` ->
``forecast.evaluate.Forecaster``."""

__all__ = ["AUTO_POLICY", "FORECASTERS", "GATES", "JUDGES", "SEARCH_POLICIES", "SUITE_BACKENDS"]
