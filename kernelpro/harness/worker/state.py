"""Inside a long-lived worker: put the process back as it was between candidates, and say if it cannot be.

``capture`` records the worker's state before its first candidate. ``reset`` then runs after every candidate:
it restores what can be restored (torch's global flags, the RNG, the environment, the working directory,
standard streams, candidate modules, the CUDA caching allocator and the persisting-L2 limit) and returns
the problems it found that cannot be (a replaced function, a leftover thread or process, a pushed torch
mode, a trace hook, a changed signal handler, file descriptor or resource limit). Any problem means the
worker is replaced before the next candidate: a process a candidate has touched judges nobody else.
"""

from __future__ import annotations

import gc
import os
import random
import resource
import secrets
import signal
import site
import sys
import sysconfig
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import torch

from kernelpro.harness import cuda_driver
from kernelpro.harness.guards import integrity
from kernelpro.harness.guards.integrity import IntegritySnapshot, real_manual_seed

# Namespaces whose attributes no candidate may leave changed for the next one (on top of the judge's own,
# which integrity.take_snapshot covers).
WATCHED_NAMESPACES: dict[str, Any] = {
    "torch": torch, "torch.Tensor": torch.Tensor, "torch.nn.Module": torch.nn.Module,
    "torch.nn.functional": torch.nn.functional, "torch.cuda": torch.cuda, "torch.cuda.Event": torch.cuda.Event,
    "torch.cuda.Stream": torch.cuda.Stream, "torch.random": torch.random, "torch.autograd": torch.autograd,
    "time": __import__("time"), "math": __import__("math"), "random": random, "json": __import__("json"),
    "os": os, "builtins": __import__("builtins"), "gc": gc, "threading": threading,
}
# Resource limits a candidate could lower to hurt the next one (RLIMIT_AS is the worker's own, set per job).
WATCHED_LIMITS = ("RLIMIT_NOFILE", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NPROC", "RLIMIT_STACK", "RLIMIT_DATA",
                  "RLIMIT_CORE", "RLIMIT_MEMLOCK")
# Where installed code lives: modules loaded from here stay imported between candidates; anything else goes.
INSTALLED_ROOTS = tuple(str(Path(p).resolve()) for p in {
    *(sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")),
    *site.getsitepackages(), site.getusersitepackages(), str(Path(__file__).resolve().parents[2]),
} if p)
# Native threads libraries may start once on first use and keep (compiler and profiler pools); a Python thread
# left running is always a problem, and so is native growth beyond this.
NATIVE_THREAD_ALLOWANCE = 8
# Allocations that may stay behind legitimately (library workspaces such as cuBLAS's); beyond this the
# candidate's objects are still alive somewhere.
GPU_LEAK_BYTES = 256 << 20


@dataclass
class TorchFlags:
    """torch's process-wide settings that a candidate may change (legitimately) and the next must not inherit."""

    values: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls) -> TorchFlags:
        b = torch.backends
        return cls({
            "default_dtype": torch.get_default_dtype(), "grad": torch.is_grad_enabled(),
            "deterministic": torch.are_deterministic_algorithms_enabled(),
            "deterministic_warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
            "matmul_precision": torch.get_float32_matmul_precision(), "num_threads": torch.get_num_threads(),
            "cuda_matmul_tf32": b.cuda.matmul.allow_tf32,
            "fp16_reduction": b.cuda.matmul.allow_fp16_reduced_precision_reduction,
            "bf16_reduction": b.cuda.matmul.allow_bf16_reduced_precision_reduction,
            "cudnn_enabled": b.cudnn.enabled, "cudnn_tf32": b.cudnn.allow_tf32,
            "cudnn_benchmark": b.cudnn.benchmark, "cudnn_deterministic": b.cudnn.deterministic,
            "anomaly": torch.is_anomaly_enabled(),
        })

    def restore(self) -> None:
        """Set back what differs, and only that: some setters have side effects (set_num_threads starts a
        thread pool, use_deterministic_algorithms imports torch._dynamo)."""
        v, b = self.values, torch.backends
        setters = {
            "default_dtype": torch.set_default_dtype, "grad": torch.set_grad_enabled,
            "deterministic": lambda on: torch.use_deterministic_algorithms(on, warn_only=v["deterministic_warn_only"]),
            "deterministic_warn_only": lambda w: torch.use_deterministic_algorithms(v["deterministic"], warn_only=w),
            "matmul_precision": torch.set_float32_matmul_precision, "num_threads": torch.set_num_threads,
            "cuda_matmul_tf32": lambda on: setattr(b.cuda.matmul, "allow_tf32", on),
            "fp16_reduction": lambda on: setattr(b.cuda.matmul, "allow_fp16_reduced_precision_reduction", on),
            "bf16_reduction": lambda on: setattr(b.cuda.matmul, "allow_bf16_reduced_precision_reduction", on),
            "cudnn_enabled": lambda on: setattr(b.cudnn, "enabled", on),
            "cudnn_tf32": lambda on: setattr(b.cudnn, "allow_tf32", on),
            "cudnn_benchmark": lambda on: setattr(b.cudnn, "benchmark", on),
            "cudnn_deterministic": lambda on: setattr(b.cudnn, "deterministic", on),
            "anomaly": torch.set_anomaly_enabled,
        }
        now = TorchFlags.read().values
        for name, value in v.items():
            if now[name] != value:
                setters[name](value)


@dataclass
class Baseline:
    """The worker's state before its first candidate."""

    device: torch.device
    home: str
    environ: dict[str, str]
    sys_path: list[str]
    modules: set[str]
    hooks: tuple[int, int]
    stdio: tuple[Any, Any, Any]
    fds: dict[int, tuple[int, int]]
    signals: dict[int, Any]
    limits: dict[str, tuple[int, int]]
    os_threads: int
    python_threads: set[int]
    children: set[int]
    timers: tuple[bool, bool]
    flags: TorchFlags
    snapshot: IntegritySnapshot
    gpu_bytes: int


def _fd_identity(fd: int) -> tuple[int, int]:
    try:
        st = os.fstat(fd)
        return st.st_dev, st.st_ino
    except OSError:
        return -1, -1


def _os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _signals() -> dict[int, Any]:
    handlers = {}
    for sig in signal.valid_signals():
        try:
            handlers[int(sig)] = signal.getsignal(sig)
        except (OSError, ValueError):
            continue
    return handlers


def _timers() -> tuple[bool, bool]:
    return bool(signal.getitimer(signal.ITIMER_REAL)[0]), bool(signal.getitimer(signal.ITIMER_VIRTUAL)[0])


def _limits() -> dict[str, tuple[int, int]]:
    return {name: resource.getrlimit(getattr(resource, name)) for name in WATCHED_LIMITS if hasattr(resource, name)}


def _gpu_bytes(device: torch.device) -> int:
    return torch.cuda.memory_allocated(device) if device.type == "cuda" else 0


def capture(device: torch.device, fds: list[int]) -> Baseline:
    """Record the worker's state; call after its warm-up and before any candidate code runs.

    Everything alive now is the worker's own and never garbage, so it is frozen out of the collector: the full
    collection after every candidate then scans only what candidates made (with torch loaded, 95 ms down to
    3 ms per candidate)."""
    gc.collect()
    gc.freeze()
    snapshot = integrity.take_snapshot()
    for label, owner in WATCHED_NAMESPACES.items():
        snapshot.add_namespace(label, owner, code_only=True)
    return Baseline(
        device=device, home=os.getcwd(), environ=dict(os.environ), sys_path=list(sys.path),
        modules=set(sys.modules), hooks=(len(sys.meta_path), len(sys.path_hooks)),
        stdio=(sys.stdin, sys.stdout, sys.stderr), fds={fd: _fd_identity(fd) for fd in fds}, signals=_signals(),
        limits=_limits(), os_threads=_os_threads(), python_threads=set(sys._current_frames()),
        children={p.pid for p in psutil.Process().children(recursive=True)}, timers=_timers(),
        flags=TorchFlags.read(), snapshot=snapshot, gpu_bytes=_gpu_bytes(device),
    )


def _installed(module: Any) -> bool:
    path = getattr(module, "__file__", None)
    return isinstance(path, str) and os.path.realpath(path).startswith(INSTALLED_ROOTS)


def _drop_candidate_modules(baseline: Baseline) -> None:
    """Forget modules the candidate brought (its own files, extensions it built); installed packages stay."""
    for name in set(sys.modules) - baseline.modules:
        module = sys.modules.get(name)
        if module is not None and _installed(module):
            baseline.modules.add(name)
            if name.split(".")[0] in ("kernelpro",) or "." not in name:
                # watched from now on; a library's plain values may change lazily, so only its code is
                baseline.snapshot.add_namespace(name, module, code_only=not name.startswith("kernelpro"))
        else:
            sys.modules.pop(name, None)


def _restore_process(baseline: Baseline) -> None:
    sys.stdin, sys.stdout, sys.stderr = baseline.stdio
    os.chdir(baseline.home)
    os.environ.clear()
    os.environ.update(baseline.environ)
    sys.path[:] = baseline.sys_path
    _drop_candidate_modules(baseline)
    if "torch._dynamo" in sys.modules:
        torch._dynamo.reset()
    gc.collect()
    baseline.flags.restore()
    real_manual_seed(secrets.randbits(62))
    random.seed(secrets.randbits(62))


def _reset_cuda(baseline: Baseline) -> list[str]:
    """Wait for the GPU, empty the caching allocator, zero the persisting-L2 limit; a failure is sticky."""
    if baseline.device.type != "cuda":
        return []
    try:
        torch.cuda.synchronize(baseline.device)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(baseline.device)
    except Exception as exc:  # noqa: BLE001 - a context an illegal access poisoned fails here
        return [f"the CUDA context is unusable: {type(exc).__name__}: {str(exc)[:200]}"]
    problems = []
    if not cuda_driver.reset_persisting_l2():
        problems.append("the persisting-L2 limit could not be reset")
    leaked = _gpu_bytes(baseline.device) - baseline.gpu_bytes
    if leaked > GPU_LEAK_BYTES:
        problems.append(f"{leaked} bytes of GPU memory are still held by the candidate's objects")
    return problems


def _problems(baseline: Baseline) -> list[str]:
    """What a candidate left behind that no reset can undo with certainty."""
    problems = [f"{what} was replaced" for _, what in integrity.verify(baseline.snapshot)]
    if torch._C._len_torch_function_stack() or torch._C._len_torch_dispatch_stack():
        problems.append("a torch function or dispatch mode is still active")
    if sys.gettrace() is not None or sys.getprofile() is not None:
        problems.append("a trace or profile hook is set")
    if (len(sys.meta_path), len(sys.path_hooks)) != baseline.hooks:
        problems.append("the import system's hooks changed")
    threads = set(sys._current_frames()) - baseline.python_threads
    if threads or _os_threads() > baseline.os_threads + NATIVE_THREAD_ALLOWANCE:
        problems.append(f"threads are still running ({_os_threads()} vs {baseline.os_threads} at start)")
    if children := [p for p in psutil.Process().children(recursive=True) if p.pid not in baseline.children]:
        for child in children:
            child.kill()
        problems.append(f"{len(children)} child process(es) were left running")
    if changed := [fd for fd, identity in baseline.fds.items() if _fd_identity(fd) != identity]:
        problems.append(f"file descriptor(s) {changed} were replaced or closed")
    if changed := [signal.Signals(s).name for s, h in _signals().items() if baseline.signals.get(s) != h]:
        problems.append(f"signal handler(s) changed: {', '.join(changed)}")
    if _timers() != baseline.timers:
        problems.append("an interval timer was armed or disarmed")
    if changed := [name for name, value in _limits().items() if baseline.limits.get(name) != value]:
        problems.append(f"resource limit(s) changed: {', '.join(changed)}")
    return problems


def reset(baseline: Baseline) -> list[str]:
    """Undo one candidate's effects on this process; the problems returned mean the worker must be replaced."""
    try:
        _restore_process(baseline)
    except Exception as exc:  # noqa: BLE001 - whatever breaks the reset is itself a reason to replace
        return [f"the reset failed: {type(exc).__name__}: {exc}"]
    return _reset_cuda(baseline) + _problems(baseline)
