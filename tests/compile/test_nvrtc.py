"""NVRTC: cubins and PTX, options, name expressions, failures as results."""

from __future__ import annotations

from kernelpro.config import CompileSettings
from kernelpro.harness.compile.nvrtc import compile_nvrtc, options
from kernelpro.harness.compile.result import CompileRequest
from tests.compile import kernels
from tests.compile.conftest import needs_nvrtc

ELF_MAGIC = b"\x7fELF"


@needs_nvrtc
def test_add_kernel_to_a_cubin(compile_settings):
    result = compile_nvrtc(CompileRequest(source=kernels.ADD), compile_settings)
    assert result.ok and result.failure is None and result.message == ""
    assert result.kind == "cubin" and result.binary.startswith(ELF_MAGIC)
    assert result.arch == "sm_90a" and result.toolchain.startswith("nvrtc ")
    assert result.kernels == ["add_kernel"] and result.resources["add_kernel"].registers > 0
    assert result.elapsed_s > 0


@needs_nvrtc
def test_ptx_output(compile_settings):
    result = compile_nvrtc(CompileRequest(source=kernels.ADD, output="ptx"), compile_settings)
    assert result.ok and result.kind == "ptx"
    text = result.binary.rstrip(b"\x00").decode()
    assert ".target sm_90a" in text and ".entry add_kernel" in text and result.binary.endswith(b"\x00")


@needs_nvrtc
def test_name_expressions_give_lowered_names(compile_settings):
    request = CompileRequest(source=kernels.TEMPLATED, name_expressions=["fill<float, 128>", "fill<int, 4>"])
    result = compile_nvrtc(request, compile_settings)
    assert result.ok, result.message
    assert result.lowered_names == {"fill<float, 128>": "_Z4fillIfLi128EEvPT_S0_",
                                    "fill<int, 4>": "_Z4fillIiLi4EEvPT_S0_"}
    assert set(result.kernels) == set(result.lowered_names.values())


@needs_nvrtc
def test_include_dirs_defines_and_fp16_headers(tmp_path, compile_settings):
    (tmp_path / "scale.h").write_text("#define SCALE_BY 3.0f\n")
    source = "#include <cuda_fp16.h>\n#include \"scale.h\"\n" \
             "extern \"C\" __global__ void k(__half* out, float x) { out[0] = __float2half(x * SCALE_BY * FACTOR); }\n"
    request = CompileRequest(source=source, include_dirs=[str(tmp_path)], defines={"FACTOR": "2.0f"})
    assert compile_nvrtc(request, compile_settings).ok
    assert not compile_nvrtc(request.model_copy(update={"defines": {}}), compile_settings).ok


def test_options_reflect_the_request():
    request = CompileRequest(source="", defines={"B": None, "A": "1"}, extra_flags=["-use_fast_math"], lineinfo=False)
    opts = options(request, "sm_90a", ["/inc"])
    assert opts == ["--gpu-architecture=sm_90a", "-std=c++17", "--ptxas-options=-v", "-I/inc", "-DA=1", "-DB",
                    "-use_fast_math"]
    ptx = options(request.model_copy(update={"output": "ptx"}), "sm_90a", [])
    assert ptx[0] == "--gpu-architecture=compute_90a" and "--ptxas-options=-v" not in ptx


@needs_nvrtc
def test_compile_error_is_a_result_not_an_exception(compile_settings):
    result = compile_nvrtc(CompileRequest(source=kernels.UNDEFINED), compile_settings)
    assert not result.ok and result.failure == "compile" and result.binary == b""
    assert "undefined_thing" in result.message and result.diagnostics


@needs_nvrtc
def test_invalid_arch_is_a_compile_failure(tmp_path):
    settings = CompileSettings(arch="sm_99", cache_dir=tmp_path)
    result = compile_nvrtc(CompileRequest(source=kernels.ADD), settings)
    assert not result.ok and result.failure == "compile"
    assert "gpu-architecture" in result.message


@needs_nvrtc
def test_results_serialise_without_the_binary(compile_settings):
    result = compile_nvrtc(CompileRequest(source=kernels.SPILL), compile_settings)
    data = result.model_dump(mode="json")
    assert "binary" not in data and data["resources"]["spill"]["spill_stores"] > 0
    assert result.model_dump_json()  # a cubin is not UTF-8; it must not reach JSON
