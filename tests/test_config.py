from __future__ import annotations

from kernelpro.config import Settings


def test_defaults_match_kernelbench_tolerances(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = Settings()
    assert (s.harness.tolerances["float32"].atol, s.harness.tolerances["float32"].rtol) == (1e-4, 1e-4)
    assert s.harness.tolerances["bfloat16"].atol == 1e-2 and s.harness.tolerances["float16"].rtol == 1e-2
    assert s.llm.model is None


def test_environment_overrides_toml(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kernelpro.toml").write_text(
        'device = "cpu"\n[harness]\ntimeout_s = 42\n[harness.tolerances.float32]\natol = 1e-3\nrtol = 1e-3\n'
        '[llm]\nmodel = "openai/gpt-5"\n')
    s = Settings()
    assert s.device == "cpu" and s.harness.timeout_s == 42 and s.harness.tolerances["float32"].atol == 1e-3
    assert s.llm.model == "openai/gpt-5"
    monkeypatch.setenv("KERNELPRO_HARNESS__TIMEOUT_S", "7")
    monkeypatch.setenv("KERNELPRO_LLM__API_KEY", "sk-secret-value")
    s = Settings()
    assert s.harness.timeout_s == 7
    assert "sk-secret-value" not in repr(s) and s.llm.api_key.get_secret_value() == "sk-secret-value"


def test_the_finalists_are_timed_to_a_narrower_interval_unless_their_call_is_settled():
    settings = Settings()
    settings.search.finalist_rounds_factor = 3.0
    finals = settings.for_finalists()
    assert finals.harness.speedup_ci_width == settings.harness.speedup_ci_width / 3
    assert finals.harness.timing_budget_s == settings.harness.timing_budget_s * 3
    assert finals.harness.settled_ci_width == settings.harness.speedup_ci_width  # as narrow as a first verdict
    assert settings.harness.settled_ci_width is None  # first verdicts stop at their own width, as before
    settings.search.objective = "energy"  # a best by energy: its timing is not what decides
    assert settings.for_finalists().harness.settled_ci_width is None


def test_the_compile_caches_live_under_the_cache_root_unless_their_own_settings_name_another(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("KERNELPRO_COMPILE__CACHE_DIR", "KERNELPRO_COMPILE__INLINE_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KERNELPRO_CACHE__ROOT", str(tmp_path / "root"))
    s = Settings()
    assert (s.compile.cache_dir, s.compile.inline_cache_dir, s.cache.baselines_dir) == \
        (tmp_path / "root" / "compile", tmp_path / "root" / "load-inline", tmp_path / "root" / "baselines")
    monkeypatch.setenv("KERNELPRO_COMPILE__CACHE_DIR", str(tmp_path / "kept"))  # a setting of its own still holds
    (tmp_path / "kernelpro.toml").write_text(f'[compile]\ninline_cache_dir = "{tmp_path / "inline"}"\n')
    s = Settings()
    assert (s.compile.cache_dir, s.compile.inline_cache_dir) == (tmp_path / "kept", tmp_path / "inline")
    assert s.cache.baselines == "reuse"
