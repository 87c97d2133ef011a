"""The one settings object: ``KERNELPRO_*`` environment variables, an optional ``kernelpro.toml``, defaults.

Nested fields use ``__`` in environment variables, e.g. ``KERNELPRO_HARNESS__TIMEOUT_S=60``. Each section lives
in its own module of this package; ``Settings`` gathers them. Offline defaults live here and nowhere else.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

# Offline defaults: nothing may reach the network unless a user configured a provider. Set before the sections
# are imported, so that no import below reads them unset.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from kernelpro.config.chat import ChatSettings  # noqa: E402
from kernelpro.config.compile import CompileSettings, CutlassSettings  # noqa: E402
from kernelpro.config.forecast import ForecastSettings  # noqa: E402
from kernelpro.config.harness import HarnessSettings, Tolerance  # noqa: E402
from kernelpro.config.llm import LLMSettings  # noqa: E402
from kernelpro.config.mcp import McpSettings  # noqa: E402
from kernelpro.config.memory import MemorySettings  # noqa: E402
from kernelpro.config.paths import (  # noqa: E402
    COMPILE_SUBDIR,
    INLINE_SUBDIR,
    KERNELPRO_HOME,
    USER_CACHE_DIR,
    CacheSettings,
)
from kernelpro.config.search import SearchSettings  # noqa: E402
from kernelpro.config.suite import SuiteSettings  # noqa: E402

DeviceChoice = Literal["auto", "cpu", "cuda"]

__all__ = ["KERNELPRO_HOME", "USER_CACHE_DIR", "CacheSettings", "ChatSettings", "CompileSettings", "CutlassSettings",
           "DeviceChoice", "ForecastSettings", "HarnessSettings", "LLMSettings", "McpSettings", "MemorySettings",
           "SearchSettings", "Settings", "SettingsError", "SuiteSettings", "Tolerance", "load_settings"]


class SettingsError(ValueError):
    """A setting that cannot be used (a budget of -1, say), from the environment, ``kernelpro.toml`` or an
    override: each one named with where it is set and what it must be."""

    @classmethod
    def of(cls, error: ValidationError) -> SettingsError:
        lines = []
        for problem in error.errors():
            name = ".".join(str(part) for part in problem["loc"])
            where = f"KERNELPRO_{name.upper().replace('.', '__')} or {name} in kernelpro.toml"
            lines.append(f"the setting {name} = {problem.get('input')!r} ({where}): {problem['msg'].lower()}")
        return cls("; ".join(lines))


class Settings(BaseSettings):
    """Everything kernelpro can be told. Override per command where the CLI offers a flag."""

    model_config = SettingsConfigDict(
        env_prefix="KERNELPRO_",
        env_nested_delimiter="__",
        toml_file="kernelpro.toml",
        extra="ignore",
    )

    device: DeviceChoice = "auto"
    """Where candidates run: ``cuda`` when a GPU is visible and ``auto`` is chosen."""
    runs_dir: Path = Path("kernelpro-runs")
    """Where run directories (checkpoints, candidates, reports) are created."""
    harness: HarnessSettings = Field(default_factory=HarnessSettings)
    compile: CompileSettings = Field(default_factory=CompileSettings)
    cutlass: CutlassSettings = Field(default_factory=CutlassSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    suite: SuiteSettings = Field(default_factory=SuiteSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    chat: ChatSettings = Field(default_factory=ChatSettings)
    forecast: ForecastSettings = Field(default_factory=ForecastSettings)
    cache: CacheSettings = Field(default_factory=CacheSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Precedence: explicit arguments, then environment, then kernelpro.toml.
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls))

    @model_validator(mode="after")
    def _caches_under_their_root(self) -> Settings:
        """The compile caches under ``cache.root`` unless their own settings name other directories."""
        root = self.cache.root.expanduser()
        if "cache_dir" not in self.compile.model_fields_set:
            self.compile.cache_dir = root / COMPILE_SUBDIR
        if "inline_cache_dir" not in self.compile.model_fields_set:
            self.compile.inline_cache_dir = root / INLINE_SUBDIR
        return self

    @model_validator(mode="after")
    def _energy_for_its_objective(self) -> Settings:
        """An energy or EDP objective needs the judge's NVML readings: it turns ``harness.energy`` on."""
        self.apply_objective()
        return self

    def apply_objective(self) -> None:
        """``harness.energy`` on when ``search.objective`` is ``energy`` or ``edp`` (call again after changing it)."""
        if self.search.objective in ("energy", "edp"):
            self.harness.energy = True

    def for_finalists(self) -> Settings:
        """These settings for the finalists' re-judgment: more rounds, a longer time cap, a narrower target
        interval (``search.finalist_rounds_factor``) for a finalist whose call is open (under the time
        objective, one that cannot be called faster, or is faster beyond doubt, stops at a first judgment's
        width: ``harness.settled_ci_width``), one long-lived worker new for them."""
        factor = max(1.0, self.search.finalist_rounds_factor)
        scaled = self.model_copy(deep=True)
        harness = scaled.harness
        harness.timing_trials = int(harness.timing_trials * factor)
        harness.min_timing_trials = int(harness.min_timing_trials * factor)
        harness.timing_budget_s = harness.timing_budget_s * factor
        if self.search.objective == "time":  # a settled call needs no narrower interval
            harness.settled_ci_width = harness.speedup_ci_width
        harness.speedup_ci_width = harness.speedup_ci_width / factor
        harness.worker_mode = "persistent"
        return scaled


def load_settings(**overrides: object) -> Settings:
    """Settings from the environment and ``kernelpro.toml`` in the working directory, with overrides on top; a
    value that cannot be used raises ``SettingsError``, which names it."""
    try:
        return Settings(**overrides)
    except ValidationError as error:
        raise SettingsError.of(error) from None
