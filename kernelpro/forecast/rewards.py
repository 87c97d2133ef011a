"""Rewards for training a forecaster by reinforcement learning (GPU Forecasters): a reply's text in, a number out.

- ``correctness``: 1 if the most probable class is the measured one, else 0;
- ``brier``: correctness + (1 - half-Brier), in [0, 2];
- ``crps``: correctness + (1 - ordinal CRPS), in [0, 2].
A reply without usable probabilities (no JSON, a sum of zero, the wrong count) earns 0 under every reward:
calibration terms keep confidence meaningful, and a parse failure must never pay.
"""

from __future__ import annotations

import json
import re

import numpy as np

from kernelpro.forecast.classes import Forecast, from_probabilities
from kernelpro.forecast.scores import half_brier, ordinal_crps

REWARDS = ("correctness", "brier", "crps")
_JSON_BLOCK = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)


def parse_reply(text: str) -> Forecast:
    """The forecast in a reply: a fenced JSON block, or the outermost JSON object in the text."""
    candidates = [m.group(1) for m in _JSON_BLOCK.finditer(text)]
    if "{" in text and "}" in text:
        candidates.append(text[text.index("{"): text.rindex("}") + 1])
    for chunk in candidates:
        try:
            data = json.loads(chunk)
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("probabilities"), list):
            predicted = data.get("predicted_class")
            return from_probabilities(data["probabilities"], predicted if isinstance(predicted, int) else None,
                                      str(data.get("reasoning", "")))
    return from_probabilities([])


def reward(forecast: Forecast, target_class: int, kind: str = "crps") -> float:
    if kind not in REWARDS:
        raise ValueError(f"unknown reward {kind!r}; one of {', '.join(REWARDS)}")
    if forecast.parse_failure or not 1 <= target_class <= 8:
        return 0.0
    probs, truth = forecast.array[None, :], np.array([target_class])
    correct = float(int(np.argmax(forecast.array)) + 1 == target_class)
    if kind == "correctness":
        return correct
    loss = half_brier(probs, truth)[0] if kind == "brier" else ordinal_crps(probs, truth)[0]
    return correct + 1.0 - float(loss)


def reply_reward(text: str, target_class: int, kind: str = "crps") -> float:
    return reward(parse_reply(text), target_class, kind)
