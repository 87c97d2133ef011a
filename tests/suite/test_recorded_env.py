"""A suite keeps the settings its shell gave it, never a credential, and a resume restores what it lacks."""

from kernelpro.suite.recorded_env import restore, settings_environment


def test_settings_are_recorded_without_credentials():
    environ = {"KERNELPRO_SUITE__LANES_PER_GPU": "6", "KERNELPRO_LLM__API_KEY": "sk-secret",
               "KERNELPRO_MCP__TOKEN": "t", "OPENAI_API_KEY": "sk-other", "PATH": "/bin"}
    assert settings_environment(environ) == {"KERNELPRO_SUITE__LANES_PER_GPU": "6"}


def test_a_resume_restores_what_its_shell_leaves_unset_and_names_what_it_sets_otherwise():
    recorded = {"KERNELPRO_SUITE__LANES_PER_GPU": "6", "KERNELPRO_HARNESS__TIMING_BUDGET_S": "3.0",
                "KERNELPRO_LLM__API_KEY": "planted"}
    environ = {"KERNELPRO_HARNESS__TIMING_BUDGET_S": "1.0"}
    differ = restore(recorded, environ)
    assert environ == {"KERNELPRO_SUITE__LANES_PER_GPU": "6", "KERNELPRO_HARNESS__TIMING_BUDGET_S": "1.0"}
    assert differ == ["KERNELPRO_HARNESS__TIMING_BUDGET_S=1.0 (the suite started with 3.0)"]
