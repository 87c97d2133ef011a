"""Condensed diagnostics from real compiler output: broken kernels compiled here by NVRTC and nvcc."""

from __future__ import annotations

import pytest

from kernelpro.harness.compile import diagnostics
from kernelpro.harness.compile.dispatch import compile_source
from kernelpro.harness.compile.result import CompileRequest
from tests.compile import kernels
from tests.compile.conftest import needs_cutlass, needs_nvcc, needs_nvrtc


def failing(source: str, settings, backend: str = "nvrtc", **options):
    result = compile_source(CompileRequest(source=source, backend=backend, **options), settings)
    assert not result.ok and result.failure == "compile", result.log
    return result


@pytest.mark.parametrize("backend", [pytest.param("nvrtc", marks=needs_nvrtc), pytest.param("nvcc", marks=needs_nvcc)])
def test_undefined_identifier_points_at_the_line_with_a_caret(backend, compile_settings):
    result = failing(kernels.UNDEFINED, compile_settings, backend)
    lines = result.message.splitlines()
    assert lines[0] == 'kernel.cu:5:32: error: identifier "undefined_thing" is undefined'
    assert lines[1] == "    5 |     if (i < n) out[i] = x[i] + undefined_thing;"
    assert lines[2].index("^") == lines[1].index("undefined_thing")
    assert "warning" not in result.message  # the unused variable is only a warning
    assert [d.severity for d in result.diagnostics] == ["error", "warning"]


@needs_nvrtc
def test_warnings_are_kept_when_asked(compile_settings):
    result = failing(kernels.UNDEFINED, compile_settings, warnings=True)
    assert 'kernel.cu:4:9: warning: variable "unused" was declared but never referenced' in result.message


@pytest.mark.parametrize("backend", [pytest.param("nvrtc", marks=needs_nvrtc), pytest.param("nvcc", marks=needs_nvcc)])
def test_template_error_names_the_users_line_not_the_instantiation_chain(backend, compile_settings):
    result = failing(kernels.TEMPLATE_ERROR, compile_settings, backend)
    assert "detected during" in result.log and "detected during" not in result.message
    assert "[with" not in result.message
    assert result.message.startswith("kernel.cu:4")
    assert "instantiated from kernel.cu:13 via reduce -> Acc::zero" in result.message
    assert "   13 |     out[0] = reduce<float, 4>(x);" in result.message
    # nvcc echoes the preprocessed line (__attribute__((device))); the message shows the author's own.
    assert "__device__ static T zero()" in result.message and "__attribute__" not in result.message


@pytest.mark.parametrize("backend", [pytest.param("nvrtc", marks=needs_nvrtc), pytest.param("nvcc", marks=needs_nvcc)])
def test_ptxas_error_is_reported_in_decimal(backend, compile_settings):
    result = failing(kernels.TOO_MUCH_SHARED, compile_settings, backend)
    assert result.message.startswith("ptxas: error: Entry function 'big' uses too much shared data (262144 bytes")
    assert "stack frame" not in result.message and "ptxas info" not in result.message


@needs_nvcc
def test_host_compiler_format_from_nvcc(compile_settings):
    result = failing(kernels.MISSING_HEADER, compile_settings, "nvcc")
    lines = result.message.splitlines()
    assert lines[0] == "kernel.cu:2:10: error: not_a_header.h: No such file or directory"
    assert lines[1] == "    2 | #include <not_a_header.h>" and lines[2] == "      |          ^"


@needs_nvrtc
def test_many_errors_are_capped_in_count_and_size(compile_settings):
    result = failing(kernels.MANY_ERRORS, compile_settings)
    assert len(result.diagnostics) == 30
    message = diagnostics.condense(result.log, kernels.MANY_ERRORS, max_messages=5)
    assert message.count(": error: ") == 5 and message.endswith("... and 25 more messages")
    small = diagnostics.condense(result.log, kernels.MANY_ERRORS, max_chars=400)
    assert len(small) < 600 and small.count(": error: ") < 5


@needs_nvrtc
def test_unknown_kernel_name_expression_is_explained(compile_settings):
    result = failing(kernels.ADD, compile_settings, name_expressions=["no_such_kernel"])
    assert result.message == ('nvrtc: error: no kernel named "no_such_kernel" in the source '
                              "(NVRTC could not resolve that name)")
    assert "__nv_name_map" in result.log


@needs_nvrtc
def test_bad_option_falls_back_to_the_log(compile_settings):
    result = failing(kernels.ADD, compile_settings, extra_flags=["-Wno-such-flag"])
    assert "nvrtc: error: unrecognized option -Wno-such-flag" in result.log
    assert result.message == "nvrtc: error: unrecognized option -Wno-such-flag found"


@needs_nvcc
@needs_cutlass
def test_cute_static_assert_is_condensed(compile_settings):
    result = failing(kernels.CUTE_ERROR, compile_settings, "nvcc")
    first = result.message.splitlines()[0]
    assert first == "cute/algorithm/tuple_algorithms.hpp:787:7: error: static assertion failed"
    chain = "instantiated from kernel.cu:8 via cute::local_tile -> cute::inner_partition -> cute::append"
    assert result.message.count(chain) == 3  # every error, the one after a note included
    assert "site-packages" not in result.message and "[with" not in result.message
    assert len(result.message) < len(result.log) / 2 and len(result.message) <= 3200


@needs_nvcc
def test_nvcc_driver_errors(compile_settings):
    result = failing(kernels.ADD, compile_settings, "nvcc", extra_flags=["--no-such-option"])
    assert result.message == "nvcc: error: Unknown option '--no-such-option'"
