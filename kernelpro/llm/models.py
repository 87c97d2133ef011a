"""Chat models for the agents through LiteLLM, with retries on transient failures, and what they cost.

LiteLLM is imported only when a model is built: importing it costs seconds, and ``kernelpro.config`` has already
pointed it at its bundled price table (``LITELLM_LOCAL_MODEL_COST_MAP``) so that it never fetches one.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.outputs import LLMResult

from kernelpro.config import LLMSettings, Settings
from kernelpro.llm.keys import LLMKeyMissing, key_fix, key_refused

ROLE_KEY = "kernelpro_role"
"""Metadata key naming the agent role of a call; ``chat_model`` sets it, a graph may set it in a run's config."""

HOW_TO_CONFIGURE = """\
Set a LiteLLM model name, in the environment or in kernelpro.toml under [llm]:
  KERNELPRO_LLM__MODEL=anthropic/claude-sonnet-4-5      (and ANTHROPIC_API_KEY)
  KERNELPRO_LLM__MODEL=openai/gpt-5                     (and OPENAI_API_KEY)
  KERNELPRO_LLM__MODEL=ollama/qwen2.5-coder             (a local Ollama server)
  KERNELPRO_LLM__MODEL=openai/<served-model-name>       (any OpenAI-compatible server, e.g. vLLM, with
  KERNELPRO_LLM__API_BASE=http://localhost:8000/v1       its endpoint, and KERNELPRO_LLM__API_KEY if it needs one)
Per agent: KERNELPRO_LLM__PLANNER=..., KERNELPRO_LLM__CODER=..., KERNELPRO_LLM__FORECASTER=... ."""


class LLMNotConfigured(RuntimeError):
    """A model was asked for, but none is configured."""


class BudgetExceeded(RuntimeError):
    """The run's dollar budget for model calls is spent."""

    def __init__(self, spent_usd: float, budget_usd: float) -> None:
        super().__init__(f"model calls cost ${spent_usd:.4f}, reaching the run's budget of ${budget_usd:.4f}")
        self.spent_usd = spent_usd
        self.budget_usd = budget_usd


def _llm(settings: Settings | LLMSettings) -> LLMSettings:
    return settings.llm if isinstance(settings, Settings) else settings


def llm_configured(settings: Settings | LLMSettings) -> bool:
    """Whether a model is configured; without one the tool runs its built-in recipes instead of agents."""
    return bool(_llm(settings).model)


def why_no_llm(settings: Settings | LLMSettings) -> str | None:
    """Why no model will be used and how to configure one; ``None`` when a model is configured."""
    llm = _llm(settings)
    if llm.model:
        return None
    overrides = [role for role in ("planner", "coder", "profiler_interpreter", "critic", "forecaster")
                 if getattr(llm, role)]
    reason = "No default LLM model is configured, so kernelpro runs its built-in recipes without agents."
    if overrides:
        reason += f" (Models are set for {', '.join(overrides)}, but every agent needs one: set the default too.)"
    return f"{reason}\n{HOW_TO_CONFIGURE}"


# ---- the chat model -------------------------------------------------------------------------------------------

def _transient(error: BaseException) -> bool:
    """Worth retrying: rate limits, timeouts, lost connections and server-side (5xx) failures, never a refused key
    (LiteLLM reports a missing key as an internal error)."""
    import litellm

    if key_refused(error):
        return False
    if isinstance(error, (litellm.RateLimitError, litellm.Timeout, litellm.APIConnectionError,
                          litellm.InternalServerError, litellm.ServiceUnavailableError, litellm.BadGatewayError)):
        return True
    status = getattr(error, "status_code", None)
    return isinstance(status, int) and (status >= 500 or status in (408, 429))


@functools.cache
def _chat_class() -> type[BaseChatModel]:
    """``ChatLiteLLM`` with retries of our own (defined here so that importing this module imports no LiteLLM)."""
    import litellm
    from langchain_litellm import ChatLiteLLM
    from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

    litellm.suppress_debug_info = True  # LiteLLM otherwise prints help banners on every error

    class RetryingChatLiteLLM(ChatLiteLLM):
        """Retries transient failures ``max_retries`` times after the first attempt, waits doubling from
        ``retry_backoff_s``. LiteLLM's and the OpenAI client's own retries are off (``max_retries=0`` is sent
        with each call), so this is the one place that retries and the count is what the settings say."""

        retry_backoff_s: float = 1.0

        def _retrying(self, **extra: Any) -> Retrying:
            return Retrying(stop=stop_after_attempt(self.max_retries + 1), reraise=True,
                            wait=wait_exponential(multiplier=self.retry_backoff_s, max=60),
                            retry=retry_if_exception(_transient), **extra)

        def _key_missing(self, error: Exception) -> LLMKeyMissing | None:
            return LLMKeyMissing(key_fix(self.model, self.api_base, error)) if key_refused(error) else None

        def completion_with_retry(self, run_manager: Any = None, **kwargs: Any) -> Any:
            try:
                for attempt in self._retrying():
                    with attempt:
                        return self.client.completion(**kwargs)
            except Exception as error:
                raise self._key_missing(error) or error from error

        async def acompletion_with_retry(self, run_manager: Any = None, **kwargs: Any) -> Any:
            from tenacity import AsyncRetrying

            retrying = self._retrying()
            try:
                async for attempt in AsyncRetrying(stop=retrying.stop, wait=retrying.wait, retry=retrying.retry,
                                                   reraise=True):
                    with attempt:
                        return await self.client.acompletion(**kwargs)
            except Exception as error:
                raise self._key_missing(error) or error from error

    return RetryingChatLiteLLM


def chat_model(settings: Settings | LLMSettings, role: str = "default", *,
               meter: UsageMeter | None = None) -> BaseChatModel:
    """The chat model of an agent role (``planner``, ``coder``, ...; others use the default model).

    Any provider LiteLLM supports, or any OpenAI-compatible server through ``api_base``. Calls are tagged with the
    role (metadata ``kernelpro_role``), and ``meter``, when given, records their tokens and cost.
    """
    llm = _llm(settings)
    name = llm.model_for(role)
    if not name:
        raise LLMNotConfigured(why_no_llm(llm) or "no model configured")
    return _chat_class()(
        model=name, api_base=llm.api_base, temperature=llm.temperature, request_timeout=llm.timeout_s,
        api_key=llm.api_key.get_secret_value() if llm.api_key else None,
        max_retries=llm.max_retries, retry_backoff_s=llm.retry_backoff_s,
        model_kwargs={"max_retries": 0},  # no retries below ours
        metadata={ROLE_KEY: role}, tags=[f"role:{role}"], callbacks=[meter] if meter else None)


def supports_native_tools(model: BaseChatModel) -> bool | None:
    """LiteLLM's word on whether the model calls tools natively; ``None`` for a model not served by LiteLLM."""
    if "langchain_litellm" not in sys.modules or not isinstance(model, sys.modules["langchain_litellm"].ChatLiteLLM):
        return None
    import litellm

    try:
        return bool(litellm.supports_function_calling(model=model.model))
    except Exception:  # noqa: BLE001 - an unmapped model is one LiteLLM knows nothing about
        return False


# ---- usage and cost -------------------------------------------------------------------------------------------

@dataclass
class Usage:
    """Tokens and dollars of some calls; ``priced`` is False when any of them had no known price (counted as 0)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    priced: bool = True

    def add(self, other: Usage) -> None:
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cost_usd += other.cost_usd
        self.priced = self.priced and other.priced


def _litellm_cost(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    # A model not served through LiteLLM has no LiteLLM price, and importing LiteLLM for it would cost seconds.
    if "litellm" not in sys.modules:
        return None
    import litellm

    try:
        prompt_cost, completion_cost = litellm.cost_per_token(model=model, prompt_tokens=prompt_tokens,
                                                              completion_tokens=completion_tokens)
    except Exception:  # noqa: BLE001 - LiteLLM raises for models it does not price
        return None
    return prompt_cost + completion_cost


class UsageMeter(BaseCallbackHandler):
    """Records each model call's tokens and cost per agent role, and stops the run when the budget is spent.

    Attach it with ``chat_model(..., meter=meter)`` or a run's ``config={"callbacks": [meter]}``. The role comes
    from the call's metadata (``kernelpro_role``). Prices: the settings' ``prices`` first, then the cost LiteLLM
    reported for the response, then LiteLLM's price table; a model none of them prices costs 0, ``priced=False``.
    ``BudgetExceeded`` is raised after the call that spends the budget, and before any later call is sent.
    """

    raise_error = True  # a budget stop must reach the run, not be logged and swallowed
    run_inline = True

    def __init__(self, settings: Settings | LLMSettings | None = None) -> None:
        llm = _llm(settings) if settings is not None else LLMSettings()
        self.prices: Mapping[str, Mapping[str, float]] = llm.prices
        self.budget_usd = llm.budget_usd
        self.by_role: dict[str, Usage] = {}
        self._pending: dict[UUID, tuple[str, str | None]] = {}
        self._lock = threading.Lock()

    @property
    def total(self) -> Usage:
        total = Usage()
        for usage in list(self.by_role.values()):
            total.add(usage)
        return total

    @property
    def spent_usd(self) -> float:
        return self.total.cost_usd

    def check_budget(self) -> None:
        spent = self.spent_usd
        if self.budget_usd is not None and spent >= self.budget_usd:
            raise BudgetExceeded(spent, self.budget_usd)

    def on_chat_model_start(self, serialized: dict[str, Any], messages: Any, *, run_id: UUID,
                            metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        self.check_budget()
        model = (kwargs.get("invocation_params") or {}).get("model")
        with self._lock:
            self._pending[run_id] = ((metadata or {}).get(ROLE_KEY) or "unknown", model)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            self._pending.pop(run_id, None)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            role, model = self._pending.pop(run_id, ("unknown", None))
        usage = self._usage(response, model)
        with self._lock:
            self.by_role.setdefault(role, Usage()).add(usage)
        self.check_budget()

    def _usage(self, response: LLMResult, model: str | None) -> Usage:
        message = getattr(response.generations[0][0], "message", None) if response.generations else None
        metadata = getattr(message, "response_metadata", None) or {}
        tokens = getattr(message, "usage_metadata", None) or {}
        prompt, completion = int(tokens.get("input_tokens", 0)), int(tokens.get("output_tokens", 0))
        model = model or metadata.get("model_name") or (response.llm_output or {}).get("model") or ""
        usage = Usage(calls=1, prompt_tokens=prompt, completion_tokens=completion)
        if model in self.prices:
            price = self.prices[model]
            usage.cost_usd = (prompt * price.get("input_per_mtok", 0.0)
                              + completion * price.get("output_per_mtok", 0.0)) / 1e6
        elif metadata.get("response_cost") is not None:
            usage.cost_usd = float(metadata["response_cost"])
        else:
            cost = _litellm_cost(model, prompt, completion)
            usage.cost_usd, usage.priced = (cost, True) if cost is not None else (0.0, False)
        return usage

    def to_dict(self) -> dict[str, Any]:
        return {"by_role": {role: asdict(usage) for role, usage in self.by_role.items()},
                "total": asdict(self.total), "budget_usd": self.budget_usd}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], settings: Settings | LLMSettings | None = None) -> UsageMeter:
        """A meter that continues from ``to_dict()``'s record; prices and budget come from ``settings``."""
        meter = cls(settings)
        meter.by_role = {role: Usage(**usage) for role, usage in data.get("by_role", {}).items()}
        return meter


__all__ = ["BudgetExceeded", "HOW_TO_CONFIGURE", "LLMKeyMissing", "LLMNotConfigured", "ROLE_KEY", "Usage", "UsageMeter",
           "chat_model", "llm_configured", "supports_native_tools", "why_no_llm"]
