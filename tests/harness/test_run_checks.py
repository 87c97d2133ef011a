"""The run-time checks beside correctness, each on its own: exception handlers, side-stream ordering, ghost kernels,
reused outputs, constant problems and the memory floor."""

from __future__ import annotations

import traceback

import pytest
import torch

from kernelpro.config import HarnessSettings
from kernelpro.harness.guards import kernel_checks, memory_floor, problem_checks
from kernelpro.harness.guards.call_trace import parse_trace
from kernelpro.harness.guards.handler_probe import HandlerProbe
from kernelpro.harness.guards.launch_ledger import LEDGER, LaunchLedger
from kernelpro.harness.guards.output_checks import OutputHistory

HANDLERS = '''import torch

try:
    import not_a_module
except ImportError:
    not_a_module = None


def fallback(x):
    try:
        raise RuntimeError("kernel failed")
    except RuntimeError:
        return torch.relu(x)


def flag(state):
    try:
        state["n"] += 1
    except KeyError:
        state["n"] = 1


def quiet(x):
    try:
        return x + 1
    except RuntimeError:
        return torch.relu(x)


def broken():
    try:
        pass
    except ValueError:
        pass
    raise ZeroDivisionError("here")
'''


def probed(source: str = HANDLERS) -> tuple[HandlerProbe, dict]:
    probe = HandlerProbe()
    namespace: dict = {"__name__": "candidate"}
    probe.install(namespace)
    exec(probe.compile(source, "candidate.py"), namespace)
    return probe, namespace


def test_a_fallback_handler_that_runs_rejects():
    probe, ns = probed()
    probe.skip()  # the import-time handler is not a judged call
    ns["fallback"](torch.ones(2))
    findings: list = []
    rejects = probe.check(findings)
    assert [(f.reason, f.severity, f.line) for f in rejects] == [("try_except_fallback", "reject", 12)]
    assert "returns a result computed another way" in rejects[0].message and findings == []


def test_a_handler_that_computes_nothing_is_a_warning_once():
    probe, ns = probed()
    probe.skip()
    state: dict = {}
    ns["flag"](state)
    findings: list = []
    assert probe.check(findings) == []
    ns["flag"]({})
    assert probe.check(findings) == []
    assert [(f.reason, f.severity, f.line) for f in findings] == [("try_except_fallback", "warn", 19)]


def test_handlers_that_do_not_run_and_import_time_ones_are_silent():
    probe, ns = probed()
    probe.skip()
    assert ns["quiet"](torch.ones(1)).item() == 2.0
    findings: list = []
    assert probe.check(findings) == [] and findings == []


def test_without_skip_the_import_time_handler_is_seen():
    probe, _ = probed()
    findings: list = []
    assert probe.check(findings) == []  # module level: not a fallback
    assert [f.line for f in findings] == [5]


def test_instrumented_code_keeps_its_line_numbers():
    _, ns = probed()
    with pytest.raises(ZeroDivisionError) as caught:
        ns["broken"]()
    line = HANDLERS.splitlines().index('    raise ZeroDivisionError("here")') + 1
    assert traceback.extract_tb(caught.value.__traceback__)[-1].lineno == line


def test_a_replaced_recorder_is_a_judge_patch():
    probe, ns = probed()
    ns[probe.name] = lambda line: None
    assert [f.reason for f in probe.check([])] == ["judge_patch"]


def marker(stream: int, ts: float, dur: float = 1.0, name: str = "fill") -> dict:
    return {"cat": "kernel", "name": name, "ts": ts, "dur": dur, "args": {"stream": stream}}


def test_side_stream_work_joined_before_the_closing_marker_is_legitimate():
    events = [marker(7, 0.0), marker(7, 2.0, 10.0, "main_gemm"), marker(13, 2.5, 12.0, "side_gemm"),
              marker(7, 15.0), {"cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1.0, "args": {}}]
    trace = parse_trace(events)
    assert trace.current == 7 and trace.finished_us == 15.0
    assert trace.side_streams() == {13} and trace.unjoined() == []
    assert trace.kernel_names() == ["main_gemm", "side_gemm"]


def test_side_stream_work_still_running_after_the_call_is_unjoined():
    trace = parse_trace([marker(7, 0.0), marker(13, 1.0, 40.0, "void side_relu(float*)"), marker(7, 3.0)])
    assert [a.name for a in trace.unjoined()] == ["void side_relu(float*)"]
    message = trace.describe_unjoined()
    assert "stream(s) [13]" in message and "38.0 us" in message and "wait_stream" in message


def test_an_empty_trace_has_nothing_to_say():
    assert parse_trace([]).unjoined() == [] and parse_trace([marker(7, 0.0)]).finished_us is None


LOAD_INLINE = '''from torch.utils.cpp_extension import load_inline
SRC = """
__global__ void __launch_bounds__(256) fused_gelu(float* y) {}
extern "C" __global__ void other_kernel(const float* x) {}
"""
'''
TRITON = '''import triton
from triton import jit
import cutlass.cute as cute

@triton.autotune(configs=[], key=[])
@triton.jit
def tuned(x_ptr):
    pass

@jit
def plain(x_ptr):
    pass

@cute.kernel
def cute_kernel(a):
    pass

@torch.jit.script
def not_a_kernel(x):
    return x
'''


def test_declared_kernels_of_each_backend():
    assert kernel_checks.declared_kernels(LOAD_INLINE) == {"fused_gelu", "other_kernel"}
    assert kernel_checks.declared_kernels(TRITON) == {"tuned", "plain", "cute_kernel"}
    assert kernel_checks.declared_kernels('DOC = "__global__ void k(float* x) {}"\n') == set()  # never compiled


def test_ghost_kernel_from_the_ledger():
    ledger = LaunchLedger()
    ledger.built("scale_relu")
    found = kernel_checks.ghost_kernel(ledger, 0, set(), None, rejects=False)
    assert (found.reason, found.severity) == ("ghost_kernel", "warn") and "scale_relu" in found.message
    assert kernel_checks.ghost_kernel(ledger, 0, set(), None, rejects=True).severity == "reject"
    ledger.launched("scale_relu")
    assert kernel_checks.ghost_kernel(ledger, 0, set(), None, rejects=False) is None
    assert kernel_checks.ghost_kernel(ledger, 1, set(), None, rejects=False) is not None  # launched in __init__


def test_ghost_kernel_from_the_profilers_kernel_names():
    empty = LaunchLedger()
    ran = ["void at::native::fill_kernel<float>()", "fused_gelu(float*)"]
    assert kernel_checks.ghost_kernel(empty, 0, {"fused_gelu"}, ran, rejects=False) is None
    found = kernel_checks.ghost_kernel(empty, 0, {"fused_gelu"}, ["void at::native::gelu_kernel()"], rejects=False)
    assert found is not None and "fused_gelu" in found.message
    assert kernel_checks.ghost_kernel(empty, 0, {"fused_gelu"}, None, rejects=False) is None  # no trace: unknown
    assert kernel_checks.ghost_kernel(empty, 0, set(), [], rejects=False) is None  # nothing built


def test_the_runtime_records_kernels_it_builds_and_never_counts_a_failed_launch():
    runtime = pytest.importorskip("kernelpro.runtime")
    pytest.importorskip("cuda.bindings.nvrtc")
    LEDGER.clear()
    kernel = runtime.CudaKernel('extern "C" __global__ void twice(float* x, int n) { x[0] *= 2; }', "twice")
    assert LEDGER.kernels == {"twice": 0}
    if not torch.cuda.is_available():
        with pytest.raises(runtime.KernelLaunchError):
            kernel(grid=1, block=1, args=(torch.ones(1), 1))
        assert LEDGER.total() == 0
    LEDGER.clear()


def test_the_same_live_storage_returned_twice_is_noticed():
    history = OutputHistory()
    buffer = torch.zeros(4)
    history.record(buffer)
    history.record((torch.ones(2), buffer[1:]))  # a view of it counts too
    assert history.reused == ["output[1]"]
    found = history.finding()
    assert (found.reason, found.severity) == ("output_reused", "warn") and "clone()" in found.message


def test_fresh_outputs_are_not_reused_even_at_a_freed_address():
    history = OutputHistory()
    for _ in range(4):
        history.record(torch.empty(1024))  # each is freed before the next is allocated
    assert history.reused == [] and history.finding() is None


def test_a_constant_reference_is_a_problem_finding():
    settings = HarnessSettings()
    zeros = lambda seed, scale=None: torch.zeros(8)  # noqa: E731
    found, reuses = problem_checks.check_reference(torch.zeros(8), zeros, [(1, None), (2, 8.0)], settings)
    assert [f.reason for f in found] == ["constant_output"] and "3 input sets" in found[0].message
    assert not reuses


def test_nearly_constant_within_tolerance_counts_and_varying_does_not():
    settings = HarnessSettings()
    near = problem_checks.check_reference(torch.full((4,), 1e3), lambda s, scale=None: torch.full((4,), 1e3 + 1e-3),
                                          [(1, None)], settings)[0]
    assert [f.reason for f in near] == ["constant_output"]

    def varying(seed, scale=None):
        return torch.randn(4, generator=torch.Generator().manual_seed(seed))

    assert problem_checks.check_reference(varying(0), varying, [(1, None), (2, None)], settings)[0] == []


def test_a_reference_returning_its_own_buffer_may_be_copied():
    buffer = torch.arange(4.0)
    found, reuses = problem_checks.check_reference(buffer, lambda s, scale=None: buffer, [(1, None)], HarnessSettings())
    assert reuses and [f.reason for f in found] == ["constant_output"]


def test_non_finite_reference_outputs_are_not_compared():
    nan = torch.full((2,), float("nan"))
    assert problem_checks.check_reference(nan, lambda s, scale=None: nan, [(1, None)], HarnessSettings())[0] == []


def test_memory_floor():
    x = torch.empty(1 << 20)  # 4 MiB
    assert memory_floor.compulsory_bytes([x, x[10:], 3], (x, torch.empty(1 << 18))) == (4 << 20) + (1 << 20)
    assert memory_floor.floor_ms(4_800_000_000, 4800.0) == pytest.approx(1.0)  # 4.8 GB at 4.8 TB/s: 1 ms
    nbytes = 48_000_000  # 10 us at 4.8 TB/s
    found = memory_floor.below_floor(0.004, nbytes, 4800.0)
    assert (found.reason, found.severity) == ("below_memory_floor", "warn") and "10.00 us" in found.message
    assert memory_floor.below_floor(0.011, nbytes, 4800.0) is None
    assert memory_floor.below_floor(0.0001, 4_800, 4800.0) is None  # a floor under the clock's resolution
    assert memory_floor.below_floor(0.004, nbytes, None) is None
