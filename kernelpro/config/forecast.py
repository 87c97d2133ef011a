"""The forecaster, the gate it drives in the search, and the judged-candidate dataset it learns from."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from kernelpro.config.names import named_in
from kernelpro.config.paths import KERNELPRO_HOME
from kernelpro.seams import FORECASTERS, GATES

NOT_FOR_THE_GATE = {"class_prior": "class_prior counts the classes of judged rows, which a run has none of "
                                   "(kernelpro forecast eval --holdout scores it); the gate takes another forecaster"}


class ForecastSettings(BaseModel):
    """Which candidates deserve the GPU, and the record of every judged one."""

    dataset: Path = KERNELPRO_HOME / "judged.jsonl"
    """Every judged candidate (optimize, eval) appends a row here: problem, candidate, hardware, verdict, speedup,
    class. ``kernelpro data export`` turns it into training data; ``kernelpro forecast eval`` scores on it."""
    record: bool = True
    """Append judged candidates to ``dataset``."""
    gate: Annotated[str, named_in(GATES)] = "off"
    """``select``: the ``select_k`` proposals with the highest expected class go to the GPU; ``selective``: a
    proposal whose forecast is confident (``confidence`` at or above ``threshold``) is taken as forecast, not
    measured, and the uncertain ones are measured; ``off``: every proposal is measured; or a gate registered in
    ``kernelpro.seams.GATES``."""
    forecaster: Annotated[str, named_in(FORECASTERS, refused=NOT_FOR_THE_GATE)] = "model_free"
    """Who forecasts for the gate: ``model_free`` (a fitted model on static features, ``model_path``), ``llm``
    (the forecaster agent, model ``llm.forecaster``), ``llm_defer`` (the agent, which may ask for a measurement),
    or a forecaster registered in ``kernelpro.seams.FORECASTERS``."""
    kernel_stats: bool = False
    """The model-free forecaster also reads the kernels' ptxas registers and spills and SASS mix (compiled on the
    CPU ahead of judging, for kernels the source spells out); fit and forecast with the same choice."""
    model_path: Path = KERNELPRO_HOME / "forecaster.json"
    """The model-free forecaster's fitted weights (``kernelpro forecast fit``)."""
    proposals_per_expansion: int = Field(1, ge=1)
    """Candidates the coder writes per expansion when a gate is on; the gate decides which are measured."""
    select_k: int = Field(1, ge=1)
    """``select``: how many of one expansion's proposals are measured."""
    confidence: Literal["max_prob", "neg_entropy", "margin"] = "max_prob"
    """``selective``: which confidence decides (largest probability, negative entropy, top-two margin)."""
    threshold: float = 0.8
    """``selective``: the confidence at or above which a forecast is accepted without measuring (max_prob and
    margin are in [0, 1]; neg_entropy is in [-log 8, 0], e.g. -0.5)."""
