"""Per-kernel resource usage: registers, spills, stack, shared, local and constant memory.

Two sources, both available without a GPU: ptxas's ``-v`` report (nvcc ``-Xptxas -v``, NVRTC
``--ptxas-options=-v``), the only one that counts spill bytes; and ``cuobjdump --dump-resource-usage`` on a
finished cubin, for binaries whose compile log is gone. cuobjdump's SHARED includes the 1 KB per block that
the driver reserves on sm_80 and newer once a kernel uses shared memory; ptxas's smem does not.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

ENTRY = re.compile(r"Compiling entry function '(?P<name>[^']+)'")
PROPERTIES = re.compile(r"Function properties for (?P<name>\S+)")
FRAME = re.compile(r"(?P<stack>\d+) bytes stack frame, (?P<stores>\d+) bytes spill stores, "
                   r"(?P<loads>\d+) bytes spill loads")
USED = re.compile(r"Used (?P<regs>\d+) registers")
BARRIERS = re.compile(r"used (?P<n>\d+) barriers")
SMEM = re.compile(r"(?P<n>\d+) bytes smem")
CMEM = re.compile(r"(?P<n>\d+) bytes cmem\[0\]")
LMEM = re.compile(r"(?P<n>\d+) bytes lmem")
DUMP_FUNCTION = re.compile(r"^\s*Function (?P<name>\S+?):\s*$")
DUMP_FIELD = re.compile(r"(?P<key>[A-Z]+(?:\[\d+\])?):(?P<value>\d+)")


class KernelResources(BaseModel):
    """What one kernel uses per thread (registers, stack, local) and per block (shared). Sizes in bytes."""

    name: str
    registers: int | None = None
    spill_stores: int | None = None
    spill_loads: int | None = None
    stack_frame: int | None = None
    shared_static: int | None = None
    local: int | None = None
    constant: int | None = None
    """Constant bank 0: the kernel's parameters and the constants the compiler placed there."""
    barriers: int | None = None
    source: Literal["ptxas", "cuobjdump", "both"] = "ptxas"

    @property
    def spills(self) -> bool:
        return bool(self.spill_stores or self.spill_loads)

    def summary(self) -> str:
        """One line for a report, e.g. ``add: 12 registers, no spills, 4288 B static shared``."""
        parts = [f"{self.registers} registers" if self.registers is not None else "registers unknown"]
        if self.spill_stores is not None:
            parts.append(f"spills {self.spill_stores} B stored / {self.spill_loads} B loaded" if self.spills
                         else "no spills")
        if self.stack_frame:
            parts.append(f"{self.stack_frame} B stack")
        if self.local:
            parts.append(f"{self.local} B local")
        if self.shared_static:
            parts.append(f"{self.shared_static} B static shared")
        return f"{self.name}: {', '.join(parts)}"


def _number(pattern: re.Pattern[str], line: str, default: int | None) -> int | None:
    hit = pattern.search(line)
    return int(hit["n"]) if hit else default


def from_ptxas(log: str) -> dict[str, KernelResources]:
    """Entry functions in a ``ptxas -v`` report (device functions' own properties are not kept)."""
    found: dict[str, KernelResources] = {}
    entry: KernelResources | None = None
    described: KernelResources | None = None
    for line in log.replace("\x00", "").splitlines():
        if m := ENTRY.search(line):
            entry = found.setdefault(m["name"], KernelResources(name=m["name"]))
            described = None
        elif m := PROPERTIES.search(line):
            described = found.get(m["name"])
        elif (m := FRAME.search(line)) and described is not None:
            described.stack_frame = int(m["stack"])
            described.spill_stores, described.spill_loads = int(m["stores"]), int(m["loads"])
        elif (m := USED.search(line)) and entry is not None:
            entry.registers = int(m["regs"])
            entry.barriers = _number(BARRIERS, line, 0)
            entry.shared_static = _number(SMEM, line, 0)  # ptxas names only the kinds a kernel uses
            entry.local = _number(LMEM, line, 0)
            entry.constant = _number(CMEM, line, None)  # no longer printed by ptxas 13
    return found


def from_resource_dump(text: str) -> dict[str, KernelResources]:
    """Functions in ``cuobjdump --dump-resource-usage`` output."""
    found: dict[str, KernelResources] = {}
    current: KernelResources | None = None
    for line in text.splitlines():
        if m := DUMP_FUNCTION.match(line):
            current = found.setdefault(m["name"], KernelResources(name=m["name"], source="cuobjdump"))
        elif current is not None and "REG:" in line:
            fields = {m["key"]: int(m["value"]) for m in DUMP_FIELD.finditer(line)}
            current.registers = fields.get("REG")
            current.stack_frame = fields.get("STACK")
            current.shared_static = fields.get("SHARED")
            current.local = fields.get("LOCAL")
            current.constant = fields.get("CONSTANT[0]")
            current = None
    return found


def from_cubin(cubin: bytes | str | Path, cuobjdump: str, timeout_s: float = 60.0) -> dict[str, KernelResources]:
    """Run cuobjdump on a cubin (bytes or a path); empty when the tool fails."""
    with tempfile.TemporaryDirectory(prefix="kernelpro-cuobjdump-") as tmp:
        if isinstance(cubin, bytes):
            path = Path(tmp) / "kernel.cubin"
            path.write_bytes(cubin)
        else:
            path = Path(cubin)
        try:
            proc = subprocess.run([cuobjdump, "--dump-resource-usage", str(path)], capture_output=True, text=True,
                                  timeout=timeout_s, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return {}
    return from_resource_dump(proc.stdout) if proc.returncode == 0 else {}


def merge(ptxas: dict[str, KernelResources], dump: dict[str, KernelResources]) -> dict[str, KernelResources]:
    """ptxas's figures (the only ones with spills), completed with cuobjdump's where ptxas gave none."""
    merged = {name: r.model_copy() for name, r in ptxas.items()}
    for name, other in dump.items():
        mine = merged.get(name)
        if mine is None:
            merged[name] = other.model_copy()
            continue
        for field in ("registers", "stack_frame", "shared_static", "local", "constant"):
            if getattr(mine, field) is None:
                setattr(mine, field, getattr(other, field))
        mine.source = "both"
    return merged
