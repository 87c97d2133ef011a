"""The composition root's part for the forecasters and the forecast gate: the factories that
``kernelpro.seams.FORECASTERS`` and ``GATES`` name, the forecaster a name means, and the gate ``forecast.gate``
names, with the run's objective. An LLM forecaster's tool protocol is decided here, as the agents' is in
``app.build_context`` (``llm_probe``: LiteLLM's word, or one probe per model and process), and the forecaster
carries the line that says which and why (``tool_calling``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernelpro.config import Settings
from kernelpro.harness.ports import Gate, MeasureAll
from kernelpro.seams import FORECASTERS, GATES


def forecaster_by_name(settings: Settings, name: str, train: Sequence[Any] | None = None, gpu: str = "",
                       meter: Any = None) -> Any:
    """A forecaster (``forecast.evaluate.Forecaster``) by name, from ``kernelpro.seams.FORECASTERS``:
    ``model_free`` and ``class_prior`` are fitted on ``train`` (judged rows) when given, else ``model_free`` is
    loaded from ``forecast.model_path``; ``llm`` and ``llm_defer`` are the forecaster agent on the
    ``llm.forecaster`` model, with the hardware table of ``gpu``."""
    return FORECASTERS.build(name, settings, train, gpu, meter)


def model_free(settings: Settings, train: Sequence[Any] | None = None, gpu: str = "", meter: Any = None) -> Any:
    """Softmax regression on static features: fitted on ``train``, else the saved fit."""
    from kernelpro.forecast.evaluate import inputs_for_rows, scored_rows
    from kernelpro.forecast.model_free import ModelFree

    if train:
        usable = scored_rows(train)
        return ModelFree.fit(inputs_for_rows(usable, _stats_settings(settings)), [r.speed_class for r in usable])
    return _saved_model_free(settings)


def class_prior(settings: Settings, train: Sequence[Any] | None = None, gpu: str = "", meter: Any = None) -> Any:
    """The classes' frequencies in ``train``."""
    from kernelpro.forecast.evaluate import scored_rows
    from kernelpro.forecast.model_free import ClassPrior

    usable = scored_rows(train or [])
    if not usable:
        raise ValueError("the class prior needs judged rows to count classes in (use --holdout)")
    return ClassPrior([r.speed_class for r in usable])


def llm(settings: Settings, train: Sequence[Any] | None = None, gpu: str = "", meter: Any = None) -> Any:
    """The forecaster agent."""
    return _agent(settings, "llm", gpu, meter, defer=False)


def llm_defer(settings: Settings, train: Sequence[Any] | None = None, gpu: str = "", meter: Any = None) -> Any:
    """The forecaster agent, which may defer to a measurement."""
    return _agent(settings, "llm_defer", gpu, meter, defer=True)


def _agent(settings: Settings, name: str, gpu: str, meter: Any, defer: bool) -> Any:
    from kernelpro.agents.forecaster import LLMForecaster
    from kernelpro.llm.models import chat_model, llm_configured, why_no_llm
    from kernelpro.llm.probe import resolve
    from kernelpro.profiling.gpu_specs import lookup

    if not llm_configured(settings):
        raise ValueError(f"the {name} forecaster needs a model: {why_no_llm(settings)}")
    specs = lookup(gpu) if gpu else None
    table = specs.render() if specs else f"GPU: {gpu or 'unknown'}"
    model = chat_model(settings, "forecaster", meter=meter)
    calling = resolve(settings.llm.tool_calling, {"forecaster": model})  # the agents' probe, if any, is reused
    return LLMForecaster(model, table, defer=defer, mode=calling.mode, tool_calling=calling.why)


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
    """The gate ``forecast.gate`` names (``kernelpro.seams.GATES``)."""
    return GATES.build(settings.forecast.gate, settings, gpu, meter)


def measure_all(settings: Settings, gpu: str, meter: Any = None) -> Gate:
    """``off``: every proposal measured."""
    return MeasureAll()


def forecast_gate(settings: Settings, gpu: str, meter: Any = None) -> Gate:
    """``select`` or ``selective``: a forecast gate over the forecaster ``forecast.forecaster`` (the model-free one
    loaded from ``forecast.model_path``, or the agent), ranking by the run's objective."""
    from kernelpro.forecast.gate import ForecastGate
    from kernelpro.profiling.gpu_specs import lookup

    config = settings.forecast
    forecaster = forecaster_by_name(settings, config.forecaster, gpu=gpu, meter=meter)
    specs = lookup(gpu) if gpu and gpu != "cpu" else None
    return ForecastGate(forecaster, config.gate, select_k=config.select_k, confidence=config.confidence,
                        threshold=config.threshold, bandwidth_gbs=specs.memory_bandwidth_gbs if specs else None,
                        compile_settings=settings.compile if config.kernel_stats else None,
                        objective=settings.search.objective)
