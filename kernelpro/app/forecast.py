"""The composition root's part for the forecasters and the forecast gate: which forecaster a name means, and the
gate ``forecast.gate`` names, with the run's objective. An LLM forecaster's tool protocol is decided here, as the
agents' is in ``app.build_context`` (``llm_probe``: LiteLLM's word, or one probe per model and process), and the
forecaster carries the line that says which and why (``tool_calling``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernelpro.config import Settings
from kernelpro.harness.ports import Gate, MeasureAll

FORECASTERS = ("model_free", "class_prior", "llm", "llm_defer")


def forecaster_by_name(settings: Settings, name: str, train: Sequence[Any] | None = None, gpu: str = "",
                       meter: Any = None) -> Any:
    """A forecaster (``forecast.evaluate.Forecaster``) by name. ``model_free`` and ``class_prior`` are fitted on
    ``train`` (judged rows) when given, else ``model_free`` is loaded from ``forecast.model_path``; ``llm`` and
    ``llm_defer`` are the forecaster agent on the ``llm.forecaster`` model, with the hardware table of ``gpu``."""
    from kernelpro.forecast.evaluate import inputs_for_rows, scored_rows
    from kernelpro.forecast.model_free import ClassPrior, ModelFree

    if name not in FORECASTERS:
        raise ValueError(f"unknown forecaster {name!r}; one of {', '.join(FORECASTERS)}")
    if name in ("model_free", "class_prior"):
        usable = scored_rows(train or [])
        if name == "class_prior":
            if not usable:
                raise ValueError("the class prior needs judged rows to count classes in (use --holdout)")
            return ClassPrior([r.speed_class for r in usable])
        if train:
            return ModelFree.fit(inputs_for_rows(usable, _stats_settings(settings)), [r.speed_class for r in usable])
        return _saved_model_free(settings)
    from kernelpro.agents.forecaster import LLMForecaster
    from kernelpro.llm.models import chat_model, llm_configured, why_no_llm
    from kernelpro.profiling.gpu_specs import lookup

    if not llm_configured(settings):
        raise ValueError(f"the {name} forecaster needs a model: {why_no_llm(settings)}")
    specs = lookup(gpu) if gpu else None
    table = specs.render() if specs else f"GPU: {gpu or 'unknown'}"
    from kernelpro.llm.probe import resolve

    model = chat_model(settings, "forecaster", meter=meter)
    calling = resolve(settings.llm.tool_calling, {"forecaster": model})  # the agents' probe, if any, is reused
    return LLMForecaster(model, table, defer=name == "llm_defer", mode=calling.mode, tool_calling=calling.why)


def _saved_model_free(settings: Settings) -> Any:
    """The user's fit at ``forecast.model_path``; where that is the default path and nothing is fitted there yet,
    the fit shipped with kernelpro (a path the user chose must hold a fit)."""
    from kernelpro.config.forecast import ForecastSettings
    from kernelpro.forecast.model_free import ModelFree

    path = Path(settings.forecast.model_path).expanduser()
    if not path.is_file() and path == Path(ForecastSettings().model_path).expanduser():
        return ModelFree.builtin()
    return ModelFree.load(path)


def _stats_settings(settings: Settings) -> Any:
    """The compile settings for the kernels' statistics, where ``forecast.kernel_stats`` asks for them."""
    return settings.compile if settings.forecast.kernel_stats else None


def build_gate(settings: Settings, gpu: str, meter: Any = None) -> Gate:
    """The gate ``forecast.gate`` names: every proposal measured (``off``), or a forecast gate over the forecaster
    ``forecast.forecaster`` (the model-free one loaded from ``forecast.model_path``, or the agent)."""
    from kernelpro.forecast.gate import ForecastGate
    from kernelpro.profiling.gpu_specs import lookup

    config = settings.forecast
    if config.gate == "off":
        return MeasureAll()
    forecaster = forecaster_by_name(settings, config.forecaster, gpu=gpu, meter=meter)
    specs = lookup(gpu) if gpu and gpu != "cpu" else None
    return ForecastGate(forecaster, config.gate, select_k=config.select_k, confidence=config.confidence,
                        threshold=config.threshold, bandwidth_gbs=specs.memory_bandwidth_gbs if specs else None,
                        compile_settings=settings.compile if config.kernel_stats else None,
                        objective=settings.search.objective)
