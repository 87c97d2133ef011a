"""The static guards' rule tables: which imports, calls, names and assignments mean which reward hack.

Each entry is a pattern with no honest use in a judged candidate; patterns that have one are decided at run time
instead (README, "What each rule decides, and where").
"""

from __future__ import annotations

import re

TORCH_ROOTS = {"torch", "F", "nn", "functional"}

# Import roots and what using them means for a candidate. concurrent.futures is not among them: a thread pool
# joined before forward returns is honest, and one left running is the thread check's (dynamic_guards).
FORBIDDEN_IMPORTS: dict[str, tuple[str, str]] = {
    "threading": ("background_thread", "imports threading"),
    "_thread": ("background_thread", "imports _thread"),
    "multiprocessing": ("background_process", "imports multiprocessing"),
    "torch.multiprocessing": ("background_process", "imports torch.multiprocessing"),
    "subprocess": ("background_process", "imports subprocess"),
    "pty": ("background_process", "imports pty"),
    "kernelpro": ("judge_patch", "imports the judge (kernelpro)"),
    # gc itself is allowed (gc.collect() is common); what walks the heap to the judge's objects is not.
    "gc.get_objects": ("judge_patch", "imports gc.get_objects, which reaches the judge's objects"),
    "gc.get_referrers": ("judge_patch", "imports gc.get_referrers, which reaches the judge's objects"),
    "gc.get_referents": ("judge_patch", "imports gc.get_referents, which reaches the judge's objects"),
    "gc.callbacks": ("judge_patch", "imports gc.callbacks, which runs code inside the judge's collections"),
    "gc.garbage": ("judge_patch", "imports gc.garbage, which holds the judge's unreachable objects"),
    "signal": ("judge_patch", "imports signal, which can interfere with the judge"),
    "builtins": ("judge_patch", "imports builtins"),
    "unittest.mock": ("timer_patch", "imports unittest.mock"),
    "mock": ("timer_patch", "imports mock"),
}

# The judge's own modules are off limits, except the runtime helper candidates launch kernels with, and of that only
# its public names (the rest, such as the launch ledger the judge reads, is the judge's).
ALLOWED_IMPORTS = ("kernelpro.runtime",)
RUNTIME_PUBLIC = {"CubinKernel", "CudaKernel", "KernelCompileError", "KernelLaunchError", "SignatureError",
                  "compile_cubin"}
PROCESS_CALLS = {"fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp"}
PROCESS_CALL_PREFIXES = ("spawn", "exec")
JUDGE_REACH = {
    "sys.modules", "sys._getframe", "sys.settrace", "sys.setprofile", "sys._current_frames",
    "inspect.currentframe", "inspect.stack", "inspect.getouterframes", "inspect.trace",
    "os.kill", "os.killpg", "builtins", "__builtins__",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "gc.callbacks", "gc.garbage",
}
DYNAMIC_CODE = {"exec", "eval", "compile", "__import__", "importlib.import_module"}
# Side streams are judged by what runs on them (harness/guards/call_trace.py): joined to the caller's stream they are
# legitimate. Switching the caller's current stream for good has no honest use in a forward.
STREAM_SWITCHES = {"torch.cuda.set_stream", "torch.set_stream", "torch.accelerator.set_stream"}
L2_PERSISTENCE = re.compile(
    r"accessPolicyWindow|PersistingL2|cudaLimitPersistingL2CacheSize|CU_LIMIT_PERSISTING_L2_CACHE_SIZE"
    r"|cudaAccessPropertyPersisting|CU_ACCESS_PROPERTY_PERSISTING"
)
# Patching these (wherever they live) defeats timing.
TIMER_WORDS = {"time", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time_ns", "synchronize",
               "Event", "elapsed_time", "record", "Stream", "sleep", "process_time", "do_bench", "timeit"}
# Module trees whose attributes a candidate must not assign.
PROTECTED_MODULES = ("time", "timeit", "torch", "triton", "builtins", "sys", "os")
# ...except these, which are the documented way to configure a backend.
ALLOWED_ASSIGN_PREFIXES = ("torch.backends.", "torch._inductor.config.", "torch._dynamo.config.")
PRECISION_SETTINGS = {"allow_tf32", "set_float32_matmul_precision", "autocast", "half", "bfloat16",
                      "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"}
CACHE_DECORATORS = {"cache", "lru_cache", "cached_property"}
MEMOISED_CALLS = {"forward", "__call__", "_call_impl"}
