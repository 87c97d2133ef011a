"""Why an Nsight Compute run failed, from its own output, with the fix a person can apply.

The patterns are ncu's message texts (`==ERROR== ...`, `==WARNING== ...`). The most specific cause wins: a
permission error is usually followed by "No kernels were profiled", which is then only its consequence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

COUNTERS_HELP = "https://developer.nvidia.com/ERR_NVGPUCTRPERM"


@dataclass(frozen=True)
class NcuFailure:
    """One recognised failure: a stable kind, what ncu said, and what to do."""

    kind: str
    message: str
    fix: str
    evidence: str = ""  # the ncu line that showed it

    def render(self) -> str:
        shown = f" (ncu: {self.evidence})" if self.evidence else ""
        return f"{self.message}{shown}. Fix: {self.fix}"


# (kind, pattern, message, fix), most specific first.
_CAUSES: list[tuple[str, re.Pattern[str], str, str]] = [
    ("permission", re.compile(r"ERR_NVGPUCTRPERM"),
     "ncu may not read the GPU's performance counters on this machine (they are restricted to administrators)",
     "run as root, or let the administrator allow profiling for all users: add `options nvidia "
     "NVreg_RestrictProfilingToAdminUsers=0` to a file in /etc/modprobe.d/ and reload the driver (or reboot); in a "
     f"container, start it with --cap-add=SYS_ADMIN. Details: {COUNTERS_HELP}"),
    ("counters_busy", re.compile(r"driver resource was unavailable"),
     "another tool holds the GPU's performance counters",
     "stop the other profiler or monitor (DCGM or dcgm-exporter profiling metrics, another ncu or nsys) and retry"),
    ("driver_mismatch", re.compile(r"Failed to initialize the profiler|failed to connect to the CUDA driver"),
     "ncu could not use the CUDA driver (an ncu newer than the driver, or a stub libcuda on the library path)",
     "use the ncu that ships with a CUDA toolkit supported by the installed driver, and keep stub libraries off "
     "LD_LIBRARY_PATH"),
    ("clock_lock", re.compile(r"Cannot lock GPU clock"),
     "ncu tried to lock the GPU clocks",
     "profile with `--clock-control none` (kernelpro always passes it; check the ncu command's extra arguments)"),
    ("device_error", re.compile(r"Unknown Error on device|error was reported by the (driver|counter measurement)",
                                re.IGNORECASE),
     "ncu's measurement failed on the device",
     "check that the target runs without ncu, that ncu supports this GPU and driver, and that no other profiler "
     "is attached; a driver/ncu version mismatch is the usual cause"),
    ("target_failed", re.compile(r"The application returned an error code \((?P<code>\d+)\)"),
     "the profiled program exited with an error",
     "run the same target without ncu and fix its error first (its output is in the log)"),
    ("no_kernels", re.compile(r"No kernels were profiled"),
     "ncu profiled no kernel",
     "check the kernel-name filter (-k regex:...), the NVTX range and --launch-skip/--launch-count against the "
     "kernels the target launches; a kernel that failed to launch is not profiled either"),
]


def diagnose(output: str) -> NcuFailure | None:
    """The first recognised failure in ncu's output, or None when it shows none."""
    for kind, pattern, message, fix in _CAUSES:
        match = pattern.search(output)
        if match:
            line = output[output.rfind("\n", 0, match.start()) + 1:]
            line = line.split("\n", 1)[0].strip()
            return NcuFailure(kind, message, fix, evidence=line[:300])
    return None


MISSING_NCU = NcuFailure(
    "ncu_missing", "Nsight Compute (ncu) was not found",
    "install Nsight Compute (the CUDA toolkit's nsight-compute package, or the standalone installer) and put "
    "`ncu` on PATH, or pass its path")
NO_GPU = NcuFailure(
    "no_gpu", "no CUDA GPU is visible, so there is nothing for ncu to profile",
    "run on a machine with an NVIDIA GPU (check `nvidia-smi` and CUDA_VISIBLE_DEVICES)")
