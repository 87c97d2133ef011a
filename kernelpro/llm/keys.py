"""A provider that refuses a call for its API key: how to tell (LiteLLM names a missing key an internal error),
and the fix to say. Such a failure is never retried: only the settings can mend it."""

from __future__ import annotations


class LLMKeyMissing(RuntimeError):
    """The provider refused the call for its key (missing or wrong): retrying cannot help, the settings can."""


KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY",
                 "mistral": "MISTRAL_API_KEY", "groq": "GROQ_API_KEY", "deepseek": "DEEPSEEK_API_KEY",
                 "openrouter": "OPENROUTER_API_KEY", "together_ai": "TOGETHERAI_API_KEY", "xai": "XAI_API_KEY"}
"""The provider's own key variable by LiteLLM prefix, for the fix a refused key gets."""

_KEY_WORDS = ("api key", "api_key", "apikey", "credentials", "authentication", "unauthorized", "x-api-key")


def key_refused(error: BaseException) -> bool:
    """Whether the provider refused the call for its key: LiteLLM's AuthenticationError, a 401, or (a missing key
    in the OpenAI client, which LiteLLM reports as an internal error) an error whose message is about the key."""
    import litellm

    if isinstance(error, litellm.AuthenticationError) or getattr(error, "status_code", None) == 401:
        return True
    return isinstance(error, litellm.InternalServerError) and any(w in str(error).lower() for w in _KEY_WORDS)


def key_fix(model: str, api_base: str | None, error: BaseException) -> str:
    """What to set so that ``model``'s calls are accepted, after the provider's own words."""
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    variable = KEY_VARIABLES.get(provider)
    own = f" or {variable}" if variable else ""
    said = " ".join(str(error).split())[:300]
    fix = (f"the provider refused the call to {model} for its API key ({said}). Set KERNELPRO_LLM__API_KEY{own} "
           "(or api_key under [llm] in kernelpro.toml)")
    if api_base:
        fix += (f"; a server at {api_base} that checks no key still needs one sent: any value will do, e.g. "
                "KERNELPRO_LLM__API_KEY=none")
    return fix + ". Nothing was retried."


__all__ = ["KEY_VARIABLES", "LLMKeyMissing", "key_fix", "key_refused"]
