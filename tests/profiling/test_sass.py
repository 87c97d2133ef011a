"""The SASS instruction mix and the static report, on planted kernels compiled here with nvcc."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernelpro.config import CompileSettings
from kernelpro.harness.compile.nvcc import compile_nvcc
from kernelpro.harness.compile.result import CompileRequest
from kernelpro.harness.compile.toolchain import detect, find_tool
from kernelpro.profiling.gpu_specs import lookup
from kernelpro.profiling.sass import KernelSass, SassToolError, analyze_cubin, disassemble, parse_sass
from kernelpro.profiling.static_report import static_report

PLANTED = Path(__file__).parents[2] / "benchmarks" / "profiling" / "planted"
H200 = lookup("H200")

pytestmark = [
    pytest.mark.skipif(detect().nvcc is None, reason="nvcc not found (CUDA toolkit)"),
    pytest.mark.skipif(find_tool("cuobjdump") is None or find_tool("nvdisasm") is None,
                       reason="cuobjdump -sass needs cuobjdump and nvdisasm (pip install nvidia-cuda-nvdisasm)"),
]


def _compile(tmp_path_factory, planted_id: str) -> tuple[Path, str]:
    """A planted kernel built as build_planted.sh builds it (its `// nvcc-flags:` line), as a cubin."""
    source = (PLANTED / f"{planted_id}.cu").read_text()
    flags = re.search(r"^// nvcc-flags:(.*)$", source, re.MULTILINE)
    settings = CompileSettings(arch="sm_90a", cache_dir=tmp_path_factory.mktemp("cache"), timeout_s=180)
    request = CompileRequest(source=source, backend="nvcc", filename=f"{planted_id}.cu", arch="sm_90a",
                             include_dirs=[str(PLANTED)], extra_flags=["-O3", *(flags[1].split() if flags else [])])
    result = compile_nvcc(request, settings)
    assert result.ok, result.message
    path = tmp_path_factory.mktemp(planted_id) / f"{planted_id}.cubin"
    path.write_bytes(result.binary)
    return path, result.log


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    built: dict[str, tuple[Path, str]] = {}

    def get(planted_id: str) -> tuple[Path, str]:
        if planted_id not in built:
            built[planted_id] = _compile(tmp_path_factory, planted_id)
        return built[planted_id]

    return get


def _kernel(cubin: Path, planted_id: str) -> KernelSass:
    return next(k for k in analyze_cubin(cubin).values() if k.name == f"planted_{planted_id}")


def test_register_spills_show_local_traffic_inside_the_loop(planted):
    cubin, _ = planted("register_spills")
    k = _kernel(cubin, "register_spills")
    assert k.local_loads_in_loops == 38 and k.local_stores_in_loops == 38  # the header's observed SASS
    assert k.local_loads >= k.local_loads_in_loops and k.loops >= 1
    assert not k.uses_tensor_cores


def test_wmma_gemm_uses_hmma_and_cp_async(planted):
    cubin, _ = planted("healthy_wmma_gemm")
    k = _kernel(cubin, "healthy_wmma_gemm")
    assert k.uses_tensor_cores and all(op.startswith("HMMA") for op in k.tensor_core)
    assert k.async_copies > 0 and k.global_load_bits.get(128, 0) > 0
    assert k.barriers > 0 and k.shared_loads > 0
    assert k.local_loads == k.local_stores == 0


def test_fp16_gemm_on_cuda_cores_has_no_tensor_core_instruction(planted):
    cubin, _ = planted("tensor_cores_unused")
    k = _kernel(cubin, "tensor_cores_unused")
    assert not k.uses_tensor_cores  # HFMA2.MMA (a register move) must not count
    assert k.fp32_math["FFMA"] >= 512


def test_memory_bound_triad_uses_128_bit_accesses(planted):
    cubin, _ = planted("memory_bound")
    k = _kernel(cubin, "memory_bound")
    assert set(k.global_load_bits) == {128} and set(k.global_store_bits) == {128}
    assert not k.fp64 and k.fp64_conversions == 0


def test_static_report_for_spills_names_the_bytes_and_the_loop(planted):
    cubin, log = planted("register_spills")
    report = static_report(cubin, log, block_size=256, gpu=H200, kernel="^planted_")
    (kernel,) = report.kernels
    assert kernel.resources.registers == 32 and kernel.resources.spill_stores > 0
    text = report.render()
    assert f"spills {kernel.resources.spill_stores} B stored" in text
    assert "38 STL / 38 LDL inside loops" in text
    assert kernel.occupancy_fraction == 1.0  # 32 registers x 256 threads: registers do not limit


def test_static_report_for_tensor_cores_and_occupancy(planted):
    unused, log = planted("tensor_cores_unused")
    text = static_report(unused, log, block_size=256, gpu=H200, kernel="^planted_").render()
    assert "no tensor-core instructions" in text and "FFMA" in text
    assert "limited by registers" in text
    wmma, log = planted("healthy_wmma_gemm")
    text = static_report(wmma, log, block_size=128, gpu=H200, kernel="^planted_").render()
    assert re.search(r"tensor-core instructions: \d+ HMMA", text)
    assert "no tensor-core" not in text


def test_static_report_without_ptxas_log_uses_cuobjdump_resources(planted):
    cubin, _ = planted("memory_bound")
    (kernel,) = static_report(cubin, block_size=256, gpu=H200, kernel="planted_").kernels
    assert kernel.resources is not None and kernel.resources.source == "cuobjdump"
    assert kernel.resources.registers and kernel.occupancy_fraction == 1.0
    assert "global loads 2 x 128-bit" in kernel.render()


def test_fp64_where_float_was_meant(tmp_path):
    source = ("extern \"C\" __global__ void scale(float* x, int n) {\n"
              "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
              "  if (i < n) x[i] = x[i] * 0.5 + 1.0;  // double literals promote the math to FP64\n}\n")
    result = compile_nvcc(CompileRequest(source=source, backend="nvcc", arch="sm_90a"),
                          CompileSettings(arch="sm_90a", cache_dir=tmp_path / "cache"))
    assert result.ok, result.message
    (k,) = analyze_cubin(result.binary).values()
    assert k.name == "scale" and k.fp64 and k.fp64_conversions >= 2
    text = static_report(result.binary, result.log).render()
    assert "FP64 instructions" in text and "1.0f" in text
    assert "every global access is 32-bit" in text


def test_parse_sass_reads_predicated_branches_and_ignores_the_exit_trap():
    text = """
        Function : _Z4loopPfi
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   LDL R2, [R1] ;
        /*0020*/                   STL [R1+0x4], R2 ;
        /*0030*/              @!P0 BRA 0x10 ;
        /*0040*/                   STL [R1+0x8], R2 ;
        /*0050*/                   EXIT ;
        /*0060*/                   BRA 0x60;
    """
    (k,) = parse_sass(text).values()
    assert k.mangled == "_Z4loopPfi" and k.instructions == 7
    assert k.loops == 1  # the branch to itself after EXIT is not a loop
    assert (k.local_loads_in_loops, k.local_stores_in_loops, k.local_stores) == (1, 1, 2)


def test_missing_cubin_is_a_tool_error(tmp_path):
    with pytest.raises(SassToolError, match="cuobjdump -sass failed"):
        disassemble(tmp_path / "absent.cubin")
