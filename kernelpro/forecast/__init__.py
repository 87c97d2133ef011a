"""Forecasting a candidate's speedup class before (or instead of) measuring it: the class definition, the scores,
the judged-candidate dataset, a model-free forecaster on static features, and the gate the search asks."""
