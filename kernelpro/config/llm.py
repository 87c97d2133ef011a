"""Which language models the agents use, what they may spend, and how calls are retried."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, SecretStr


class LLMSettings(BaseModel):
    """The model provider. Nothing here is used until a model is configured; without one, built-in recipes run."""

    model: str | None = None
    """A LiteLLM model name, e.g. ``anthropic/claude-sonnet-4-5``, ``openai/gpt-5``, ``ollama/qwen2.5-coder``, or
    ``openai/<served-name>`` with ``api_base`` for any OpenAI-compatible server; unset means no LLM."""
    planner: str | None = None
    """The planner's model (worth the strongest); unset means ``model``."""
    coder: str | None = None
    """The coder's model; unset means ``model``."""
    profiler_interpreter: str | None = None
    """The profiler-interpreter's model; unset means ``model``."""
    critic: str | None = None
    """The critic's model; unset means ``model``."""
    forecaster: str | None = None
    """The forecaster's model (called often, so a cheap one fits); unset means ``model``."""
    api_base: str | None = None
    """An OpenAI-compatible endpoint, e.g. ``http://localhost:8000/v1`` for vLLM; unset means the provider's own."""
    api_key: SecretStr | None = None
    """Key for the provider; unset means the provider's own variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...)."""
    temperature: float | None = None
    """Sampling temperature; unset means the provider's default (some reasoning models accept no other)."""
    max_retries: int = 4
    """Retries of one call after a rate limit, a timeout, a lost connection or a 5xx, with exponential backoff."""
    retry_backoff_s: float = 1.0
    """The first wait before a retry; each further wait doubles, up to 60 s."""
    timeout_s: float = 600.0
    """Wall-time limit for one model call (long answers with code take minutes)."""
    budget_usd: float | None = Field(None, gt=0)
    """Most dollars one run may spend on model calls, above 0; unset means no limit. A resumed run keeps its
    spend."""
    prices: dict[str, dict[Literal["input_per_mtok", "output_per_mtok"], float]] = Field(default_factory=dict)
    """Dollars per million tokens by model name, for models LiteLLM does not price (local ones), e.g.
    ``{"openai/my-local": {"input_per_mtok": 0.0, "output_per_mtok": 0.0}}``; a listed model's price wins."""
    tool_calling: Literal["auto", "native", "text"] = "auto"
    """How agents call tools: ``native`` (the provider's tool calling), ``text`` (fenced blocks in plain text, for
    models without it), or ``auto``: native where LiteLLM says the model supports it, text where it says not. A
    model LiteLLM does not know (``openai/<served-name>`` on vLLM, SGLang, ...) gets one tiny probe request with a
    tool at the start of a run: a proper tool call back means native, anything else text (vLLM without
    ``--enable-auto-tool-choice`` refuses tools). The run's first lines say which and why."""

    def model_for(self, role: str) -> str | None:
        """The model of an agent role (``planner``, ``coder``, ...); other roles use the default."""
        roles = ("planner", "coder", "profiler_interpreter", "critic", "forecaster")
        return (getattr(self, role) if role in roles else None) or self.model
