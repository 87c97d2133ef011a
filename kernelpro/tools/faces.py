"""What each agent tool does, as ``(content, artifact)`` replies over the real backends.

``CATALOGUE`` lists every tool: name, description for the model, argument schema, and a binder that takes
the run's ``ToolContext`` and returns the function the tool calls.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelpro.seams import JUDGES
from kernelpro.tools import schemas as s
from kernelpro.tools.context import Reply, ToolContext
from kernelpro.tools.cutlass_faces import (
    cutlass_definition,
    cutlass_examples,
    cutlass_list,
    cutlass_read,
    cutlass_search,
    cutlass_usages,
)
from kernelpro.tools.ncu_faces import ncu_rules, ncu_sections, report_details

Binder = Callable[[ToolContext], Callable[..., Reply]]


def _gpu_specs(context: ToolContext, name: str | None = None) -> Any:
    from kernelpro.profiling.gpu_specs import detect, lookup

    if name:
        specs = lookup(name) or lookup(f"NVIDIA {name}")
        if specs is None:
            raise ValueError(f"no specs known for {name!r}; known: H200, H100, H100 PCIe, A100, L40S, RTX 4090")
        return specs
    import torch

    if context.device != "cpu" and torch.cuda.is_available():
        return detect()
    named = lookup(context.gpu) if context.gpu and context.device != "cpu" else None
    if named is None:  # never a made-up GPU: the agents must know their candidates run on the CPU
        raise ValueError("no GPU here: the candidates run on the CPU. Name a GPU (name='H200') to read that GPU's "
                         "figures")
    return named


def _compile(context: ToolContext, args: s.CompileCheckArgs) -> Any:
    from kernelpro.harness.compile import CompileRequest, compile_cached

    request = CompileRequest(source=args.source, backend=args.backend, arch=args.arch,
                             name_expressions=args.name_expressions)
    return compile_cached(request, context.settings.compile)


def compile_check(context: ToolContext) -> Callable[..., Reply]:
    def run(**kwargs: Any) -> Reply:
        result = _compile(context, s.CompileCheckArgs(**kwargs))
        if not result.ok:
            return f"compile failed ({result.backend}, {result.failure}):\n{result.message}", result.model_dump()
        lines = [f"compiled for {result.arch} with {result.toolchain} in {result.elapsed_s:.2f} s"
                 f"{' (cached)' if result.cached else ''}"]
        lines += [r.summary() for r in result.resources.values()]
        return "\n".join(lines), result.model_dump()
    return run


def resource_report(context: ToolContext) -> Callable[..., Reply]:
    def run(**kwargs: Any) -> Reply:
        from kernelpro.profiling.occupancy import theoretical_occupancy

        args = s.ResourceReportArgs(**kwargs)
        result = _compile(context, args)
        if not result.ok:
            return f"compile failed ({result.backend}):\n{result.message}", result.model_dump()
        gpu = _gpu_specs(context, args.gpu)
        lines, occupancy = [f"on {gpu.name}, {args.block_size} threads per block:"], {}
        for name, usage in result.resources.items():
            shared = (usage.shared_static or 0) + args.dynamic_shared_bytes
            occ = theoretical_occupancy(gpu, args.block_size, usage.registers or 0, shared)
            occupancy[name] = {"fraction": occ.fraction, "limiter": occ.limiter, "blocks_per_sm": occ.blocks_per_sm}
            lines += [usage.summary(), f"  {occ.render()}"]
        return "\n".join(lines), {"compile": result.model_dump(), "occupancy": occupancy}
    return run


def judge_candidate(context: ToolContext) -> Callable[..., Reply]:
    def run(**kwargs: Any) -> Reply:
        args = s.JudgeArgs(**kwargs)
        if context.problem is None:
            raise ValueError("no problem is loaded in this session, so there is nothing to judge against")
        # The session's judge, its workers already up; without one, the judge harness.backend names, for this call
        evaluator = context.evaluator if context.evaluator is not None else JUDGES.build(
            context.settings.harness.backend, context.settings, context.device)
        try:
            judged = evaluator.judge_many if args.timing else evaluator.check_many
            result = judged(context.problem, [args.source])[0]
        finally:
            if evaluator is not context.evaluator:
                evaluator.close()
        head = f"{result.status}" + (f" ({result.reason})" if result.reason else "")
        lines = [f"{head}: {result.message}"]
        lines += [f"guard {g.severity} {g.reason}: {g.message}" for g in result.guards]
        if result.status not in ("ok", "incorrect") and result.worker_output:
            lines.append("last output:\n" + result.worker_output[-1500:])
        return "\n".join(lines), result.to_json_dict()
    return run


def gpu_specs(context: ToolContext) -> Callable[..., Reply]:
    def run(**kwargs: Any) -> Reply:
        specs = _gpu_specs(context, s.GpuSpecsArgs(**kwargs).name)
        return specs.render(), {"name": specs.name, "sm_count": specs.sm_count, "peaks": specs.peak_tflops,
                                "bandwidth_gbs": specs.memory_bandwidth_gbs, "source": specs.source}
    return run


def _memory(context: ToolContext) -> Any:
    from kernelpro.memory import MemoryStore

    return context.backend("memory", lambda: MemoryStore(context.settings.memory))


def _signature(context: ToolContext) -> Any:
    from kernelpro.memory import ProblemSignature

    return ProblemSignature.from_problem(context.problem) if context.problem else None


def memory_search(context: ToolContext) -> Callable[..., Reply]:
    def run(**kwargs: Any) -> Reply:
        from kernelpro.memory import retrieve

        args = s.MemorySearchArgs(**kwargs)
        lessons = retrieve(_memory(context), args.query, args.diagnosis, problem=_signature(context),
                           gpu=context.gpu)
        return lessons.render() or "no related lessons in memory yet", lessons.model_dump(mode="json")
    return run


def memory_write(context: ToolContext) -> Callable[..., Reply]:
    def run(**kwargs: Any) -> Reply:
        from kernelpro.memory import Insight

        args = s.MemoryWriteArgs(**kwargs)
        insight = Insight(run_id=context.run_id, text=args.text, tags=args.tags, problem=_signature(context),
                          gpu=context.gpu)
        added = _memory(context).add(insight)
        return ("lesson saved" if added else "already in memory"), {"id": insight.id, "added": added}
    return run


def _profile_dir(context: ToolContext) -> Any:
    import tempfile
    from pathlib import Path

    return context.backend("profile_dir", lambda: Path(tempfile.mkdtemp(prefix="kernelpro-profiles-")))


def _profile_count(context: ToolContext) -> Any:
    import itertools

    return context.backend("profile_count", lambda: itertools.count(1))  # each profile its own directory


def profile(context: ToolContext) -> Callable[..., Reply]:
    def run(**kwargs: Any) -> Reply:
        from kernelpro.profiling.ncu_command import NcuOptions
        from kernelpro.profiling.service import profile_and_diagnose

        args = s.ProfileArgs(**kwargs)
        if context.problem is None:
            raise ValueError("no problem is loaded in this session, so there is nothing to profile")
        options = NcuOptions(stage=2 if args.full else 1, kernel_regex=args.kernel_regex)
        workdir = _profile_dir(context) / f"p{next(_profile_count(context))}"
        profiled = profile_and_diagnose(context.problem.source, args.source, device=context.device,
                                        options=options, workdir=workdir, lock=context.settings.harness)
        if profiled.profile.csv_path:
            context.latest_profile = Path(profiled.profile.csv_path)
        return profiled.render(), profiled.model_dump(mode="json", exclude={"profile": {"kernels"}})
    return run


def diagnose(context: ToolContext) -> Callable[..., Reply]:
    def run(**kwargs: Any) -> Reply:
        from kernelpro.profiling.service import diagnose_saved

        args = s.DiagnoseArgs(**kwargs)
        diagnosis, gpu = diagnose_saved(Path(args.ncu_csv) if args.ncu_csv else None,
                                        Path(args.ncu_rep) if args.ncu_rep else None, args.gpu)
        return f"on {gpu.name}:\n{diagnosis.render()}", diagnosis.to_dict()
    return run


def read_metrics(context: ToolContext) -> Callable[..., Reply]:
    def run(**kwargs: Any) -> Reply:
        from kernelpro.profiling.service import read_saved_profile

        args = s.ReadMetricsArgs(**kwargs)
        path = Path(args.profile) if args.profile else context.latest_profile
        if path is None:
            raise ValueError("no profile taken in this run yet; call profile first or give a saved profile path")
        kernels = read_saved_profile(ncu_rep=path) if path.suffix == ".ncu-rep" else read_saved_profile(ncu_csv=path)
        if args.kernel:
            kernels = [k for k in kernels if args.kernel in k.name]
            if not kernels:
                raise ValueError(f"no kernel matching {args.kernel!r} in {path.name}")
        kernel = max(kernels, key=lambda k: k.duration_ns or 0.0)
        found = {name: value for name, value in sorted(kernel.values.items())
                 if any(name.startswith(m) for m in args.metrics)}
        text = {name: value for name, value in sorted(kernel.text.items())
                if any(name.startswith(m) for m in args.metrics)}
        if not found and not text:
            raise ValueError(f"none of {args.metrics} was collected for {kernel.name}; names look like "
                             "dram__throughput.avg.pct_of_peak_sustained_elapsed")
        shown = list(found.items())[:60]
        lines = [f"{kernel.name} (launch {kernel.launch}):"]
        lines += [f"{name} = {value:,.6g} {kernel.units.get(name, '')}".rstrip() for name, value in shown]
        lines += [f"{name} = {value}" for name, value in list(text.items())[:20]]
        if len(found) > len(shown):
            lines.append(f"... {len(found) - len(shown)} more; ask for longer prefixes")
        return "\n".join(lines), {"kernel": kernel.name, "launch": kernel.launch, "values": found, "text": text}
    return run


def static_report(context: ToolContext) -> Callable[..., Reply]:
    def run(**kwargs: Any) -> Reply:
        from kernelpro.profiling.static_report import static_report as report

        args = s.StaticReportArgs(**kwargs)
        result = _compile(context, args)
        if not result.ok:
            return f"compile failed ({result.backend}):\n{result.message}", result.model_dump()
        gpu = _gpu_specs(context, None)
        static = report(result.binary, result.log or "", block_size=args.block_size, gpu=gpu,
                        dynamic_smem_bytes=args.dynamic_shared_bytes)
        return static.render(), static.model_dump(mode="json")
    return run


CATALOGUE: list[tuple[str, str, type, Binder]] = [
    ("compile_check", "Compile CUDA C++ without running it: errors with line numbers, or registers, spills and "
     "shared memory per kernel.", s.CompileCheckArgs, compile_check),
    ("resource_report", "Compile and report each kernel's registers, spills and shared memory, and the "
     "theoretical occupancy they allow for a block size.", s.ResourceReportArgs, resource_report),
    ("judge_candidate", "Judge a complete candidate file (ModelNew) against the reference: correctness on fresh "
     "inputs, timing, and reward-hack guards.", s.JudgeArgs, judge_candidate),
    ("gpu_specs", "The GPU's SM count, clocks, bandwidth, on-chip limits, peak FLOP/s and ridge points.",
     s.GpuSpecsArgs, gpu_specs),
    ("cutlass_search", "Search the CUTLASS/CuTe source (headers and examples) by words or regex.",
     s.CutlassSearchArgs, cutlass_search),
    ("cutlass_definition", "Where a CUTLASS/CuTe symbol is defined, with its declaration.", s.CutlassSymbolArgs,
     cutlass_definition),
    ("cutlass_usages", "Where a CUTLASS/CuTe symbol is used, grouped by file.", s.CutlassSymbolArgs, cutlass_usages),
    ("cutlass_read", "Read lines of a CUTLASS/CuTe file.", s.CutlassReadArgs, cutlass_read),
    ("cutlass_list", "List a directory of the CUTLASS/CuTe tree.", s.CutlassListArgs, cutlass_list),
    ("cutlass_examples", "CUTLASS/CuTe examples and tutorials for a topic.", s.CutlassExamplesArgs, cutlass_examples),
    ("memory_search", "Lessons from earlier attempts related to a problem or a bottleneck.", s.MemorySearchArgs,
     memory_search),
    ("memory_write", "Save a lesson for later runs.", s.MemoryWriteArgs, memory_write),
    ("profile", "Profile one call of the reference or a candidate with Nsight Compute on the GPU, then classify "
     "each kernel on the roofline and diagnose what limits it (evidence and remedies).", s.ProfileArgs, profile),
    ("diagnose", "Diagnose a saved Nsight Compute profile (raw CSV or .ncu-rep): roofline class and ranked "
     "findings per kernel.", s.DiagnoseArgs, diagnose),
    ("read_metrics", "Read raw Nsight Compute metrics of a kernel from the latest profile (or a saved one), by "
     "name prefix.", s.ReadMetricsArgs, read_metrics),
    ("static_report", "Compile CUDA C++ and report, without running it: registers, spills, shared memory, the "
     "occupancy they allow, and the SASS instruction mix (tensor cores, vector widths, FP64, local memory).",
     s.StaticReportArgs, static_report),
    ("ncu_sections", "Nsight Compute's sections and section sets (what `ncu --section`/`--set` collect), or the "
     "sections a saved report holds.", s.NcuListArgs, ncu_sections),
    ("ncu_rules", "Nsight Compute's guided-analysis rules, or the rules whose results a saved report holds.",
     s.NcuListArgs, ncu_rules),
    ("report_details", "A saved .ncu-rep's details page: per kernel, each section's metrics by ncu's labels and "
     "its rule results (what ncu's own analysis advises).", s.ReportDetailsArgs, report_details),
]

# Tools that only make sense where CUDA candidates run: not offered when the run's device is the CPU, where the
# agents write PyTorch (a CUDA compile or a CUTLASS search there would only mislead them).
GPU_ONLY = frozenset({"compile_check", "resource_report", "static_report", "profile", "read_metrics",
                      "cutlass_search", "cutlass_definition", "cutlass_usages", "cutlass_read", "cutlass_list",
                      "cutlass_examples"})
