"""The forecaster: the reference, a candidate and the hardware in; eight class probabilities, the predicted
class and a sentence or three out (one ``final_answer`` tool call, or the text protocol's JSON).

The probabilities are read leniently and renormalised (``forecast.classes.from_probabilities``), their raw sum
kept; a reply with no usable probabilities (a sum of zero, the wrong count, or a reply that stayed malformed
after the repair) is a parse failure, forecast as uniform, never an error that stops the search. The deferring
variant may answer ``measure: true`` instead: the candidate then goes to the GPU.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from kernelpro.agents.protocol import MalformedReply, ask
from kernelpro.agents.templates import fence, render
from kernelpro.forecast.classes import Forecast, from_probabilities, uniform
from kernelpro.forecast.features import Inputs
from kernelpro.profiling.gpu_specs import lookup

log = logging.getLogger(__name__)


class ForecastReply(BaseModel):
    probabilities: list[float] = Field(description="eight probabilities, for classes 1 to 8 in order, summing to 1")
    predicted_class: int | None = Field(None, description="the most likely class, 1 to 8")
    reasoning: str = Field("", description="one to three sentences: why this speedup")


class DeferringReply(ForecastReply):
    measure: bool = Field(False, description="true to decline the forecast and have the GPU measure the candidate")


class ForecasterInput(BaseModel):
    problem_name: str
    problem_source: str
    candidate_source: str
    hardware: str
    """The GPU's specs table (``tools.profiling.gpu_specs``: device, compute capability, SMs, clocks, bandwidth,
    L2...)."""


def system_prompt(defer: bool) -> str:
    return render("forecaster_system", defer_rule=render("forecaster_defer") if defer else "")


def forecast_one(model: BaseChatModel, view: ForecasterInput, *, defer: bool = False, mode: str = "auto",
                 name: str = "llm") -> Forecast:
    values = view.model_dump() | {"problem_source": fence(view.problem_source),
                                  "candidate_source": fence(view.candidate_source)}
    try:
        answer = ask(model, system=system_prompt(defer), prompt=render("forecaster_task", **values),
                     output=DeferringReply if defer else ForecastReply, mode=mode, max_repairs=1)
    except MalformedReply as exc:
        log.info("forecast reply unusable: %s", exc.error)
        return uniform(f"parse failure: {exc.error[:200]}", forecaster=name)
    reply = answer.output
    if defer and getattr(reply, "measure", False):
        return uniform(reply.reasoning, forecaster=name, raw_sum=sum(reply.probabilities), deferred=True)
    return from_probabilities(reply.probabilities, reply.predicted_class, reply.reasoning, forecaster=name)


class LLMForecaster:
    """The agent as a ``Forecaster`` (``forecast.evaluate``) for the gate and ``kernelpro forecast eval``."""

    def __init__(self, model: BaseChatModel, hardware: str, *, defer: bool = False, mode: str = "auto",
                 tool_calling: str = "") -> None:
        self.model, self.hardware, self.defer, self.mode = model, hardware, defer, mode
        self.tool_calling = tool_calling
        """Which tool protocol ``mode`` is and why (``llm_probe.resolve``), for the first lines of a run."""
        self.name = "llm_defer" if defer else "llm"

    def forecast(self, items: Sequence[Inputs]) -> list[Forecast]:
        return [forecast_one(self.model, ForecasterInput(problem_name=item.problem_name,
                                                         problem_source=item.problem_source,
                                                         candidate_source=item.candidate_source,
                                                         hardware=self._table(item.hardware)),
                             defer=self.defer, mode=self.mode, name=self.name) for item in items]

    def _table(self, name: str) -> str:
        """The specs of the GPU a row was judged on where the table knows it, else this forecaster's own."""
        specs = lookup(name) if name and name not in ("cpu", "cuda") else None
        return specs.render() if specs is not None else self.hardware


def messages_for(view: ForecasterInput, defer: bool = False) -> list[dict[str, str]]:
    """The agent's prompt as chat messages (the text protocol's form), for training data."""
    values = view.model_dump() | {"problem_source": fence(view.problem_source),
                                  "candidate_source": fence(view.candidate_source)}
    return [{"role": "system", "content": system_prompt(defer)},
            {"role": "user", "content": render("forecaster_task", **values)}]
