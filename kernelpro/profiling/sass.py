"""A kernel's instruction mix from its SASS (`cuobjdump -sass` on a cubin), without a GPU.

What the machine code shows that no source reading can: whether tensor-core instructions were emitted at all,
how wide the global loads and stores are, FP64 arithmetic where FP32 was meant, spill traffic to local memory
(and whether it sits inside a loop), shared-memory operations and barriers.

cuobjdump disassembles through nvdisasm (the `nvidia-cuda-nvdisasm` wheel, or a CUDA toolkit); both are looked
up like the other CUDA tools.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

from pydantic import BaseModel, Field

from kernelpro.harness.compile.toolchain import find_tool
from kernelpro.profiling.ncu_csv import short_name

FUNCTION = re.compile(r"^\s*Function\s*:\s*(?P<name>\S+)")
# `/*0d30*/   @!P0 BRA 0x540 ;` -> address, optional predicate, opcode with modifiers, operands
INSTRUCTION = re.compile(r"^\s*/\*(?P<addr>[0-9a-f]{4,})\*/\s+(?P<pred>@!?U?P\w+\s+)?(?P<op>[A-Z][A-Z0-9_.]*)"
                         r"(?P<args>[^;]*);")
BRANCH_TARGET = re.compile(r"0x(?P<target>[0-9a-f]+)")

# Tensor-core MMA opcodes: Volta..Ampere HMMA/IMMA/DMMA/BMMA, Hopper warpgroup *GMMA, Blackwell tcgen05 UTC*MMA.
# HFMA2.MMA is not one: it is an FP16 FMA (ptxas uses it to move registers), its base opcode is HFMA2.
TENSOR_BASES = {"HMMA", "IMMA", "DMMA", "BMMA", "HGMMA", "IGMMA", "QGMMA", "BGMMA", "OMMA", "QMMA"}
FP64_BASES = {"DFMA", "DADD", "DMUL", "DSETP", "DMNMX"}
FP32_MATH_BASES = {"FFMA", "FADD", "FMUL"}
GLOBAL_LOADS = {"LDG", "LDGSTS"}  # LDGSTS: cp.async, global -> shared
GLOBAL_STORES = {"STG"}
SHARED_LOADS = {"LDS", "LDSM"}
SHARED_STORES = {"STS"}
BRANCHES = {"BRA", "BRX", "JMP", "JMX"}
WIDTH_MODIFIERS = {"128": 128, "64": 64, "U8": 8, "S8": 8, "U16": 16, "S16": 16}


class SassToolError(RuntimeError):
    """cuobjdump (or the nvdisasm it needs) is missing, or it could not disassemble the binary."""


class KernelSass(BaseModel):
    """The instruction mix of one function in a cubin. Counts are static (instructions in the code, not executed)."""

    name: str
    """The function's name without arguments (demangled where c++filt is available)."""
    mangled: str
    instructions: int = 0
    opcodes: dict[str, int] = Field(default_factory=dict)
    """Base opcode (no modifiers) -> count."""
    tensor_core: dict[str, int] = Field(default_factory=dict)
    """Tensor-core opcodes with modifiers, e.g. ``HMMA.16816.F32``."""
    fp64: dict[str, int] = Field(default_factory=dict)
    fp64_conversions: int = 0
    """F2F conversions to or from FP64: a sign of float values promoted to double."""
    fp32_math: dict[str, int] = Field(default_factory=dict)
    global_load_bits: dict[int, int] = Field(default_factory=dict)
    """Access width in bits -> number of global load instructions (LDG, and LDGSTS for cp.async)."""
    global_store_bits: dict[int, int] = Field(default_factory=dict)
    async_copies: int = 0
    local_loads: int = 0
    local_stores: int = 0
    local_loads_in_loops: int = 0
    local_stores_in_loops: int = 0
    shared_loads: int = 0
    shared_stores: int = 0
    barriers: int = 0
    atomics: int = 0
    loops: int = 0
    """Backward branches: each marks a loop."""

    @property
    def uses_tensor_cores(self) -> bool:
        return bool(self.tensor_core)


def _width(opcode: str) -> int:
    modifiers = opcode.split(".")[1:]
    return next((WIDTH_MODIFIERS[m] for m in modifiers if m in WIDTH_MODIFIERS), 32)


def _demangle(names: list[str]) -> dict[str, str]:
    """Mangled -> readable name without arguments, through c++filt when present."""
    tool = shutil.which("c++filt")
    if not tool or not names:
        return {n: n for n in names}
    try:
        out = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True, timeout=30,
                             check=True).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return {n: n for n in names}
    return {n: short_name(d) if len(out) == len(names) else n for n, d in zip(names, out, strict=False)}


def _kernel(mangled: str, lines: list[tuple[int, str, str]]) -> KernelSass:
    bases = Counter(op.split(".")[0] for _, op, _ in lines)
    loops = []
    for addr, op, args in lines:
        if op.split(".")[0] in BRANCHES and (target := BRANCH_TARGET.search(args)):
            start = int(target["target"], 16)
            if start < addr:  # a backward branch closes a loop; a branch to itself is the trap after EXIT
                loops.append((start, addr))

    def in_loop(addr: int) -> bool:
        return any(start <= addr <= end for start, end in loops)

    k = KernelSass(name=mangled, mangled=mangled, instructions=len(lines), opcodes=dict(bases), loops=len(loops))
    for addr, op, _ in lines:
        base = op.split(".")[0]
        if base in TENSOR_BASES or (base.startswith("UTC") and "MMA" in base):
            k.tensor_core[op] = k.tensor_core.get(op, 0) + 1
        elif base in FP64_BASES:
            k.fp64[op] = k.fp64.get(op, 0) + 1
        elif base == "F2F" and ".F64" in op:
            k.fp64_conversions += 1
        elif base in FP32_MATH_BASES:
            k.fp32_math[base] = k.fp32_math.get(base, 0) + 1
        elif base in GLOBAL_LOADS:
            k.global_load_bits[_width(op)] = k.global_load_bits.get(_width(op), 0) + 1
            k.async_copies += base == "LDGSTS"
        elif base in GLOBAL_STORES:
            k.global_store_bits[_width(op)] = k.global_store_bits.get(_width(op), 0) + 1
        elif base == "LDL":
            k.local_loads += 1
            k.local_loads_in_loops += in_loop(addr)
        elif base == "STL":
            k.local_stores += 1
            k.local_stores_in_loops += in_loop(addr)
        elif base in SHARED_LOADS:
            k.shared_loads += 1
        elif base in SHARED_STORES:
            k.shared_stores += 1
        elif base == "BAR":
            k.barriers += 1
        elif base in ("ATOM", "ATOMG", "ATOMS", "RED", "REDG"):
            k.atomics += 1
    return k


def parse_sass(text: str) -> dict[str, KernelSass]:
    """Every function in `cuobjdump -sass` output, keyed by its mangled name."""
    functions: dict[str, list[tuple[int, str, str]]] = {}
    current: list[tuple[int, str, str]] | None = None
    for line in text.splitlines():
        if m := FUNCTION.match(line):
            current = functions.setdefault(m["name"], [])
        elif current is not None and (m := INSTRUCTION.match(line)):
            current.append((int(m["addr"], 16), m["op"], m["args"]))
    names = _demangle(list(functions))
    kernels = {}
    for mangled, lines in functions.items():
        kernel = _kernel(mangled, lines)
        kernel.name = names[mangled]
        kernels[mangled] = kernel
    return kernels


def _disassembler_env() -> dict[str, str]:
    """cuobjdump finds nvdisasm through PATH or NVDISASM_PATH; the wheel's copy is on neither."""
    env = dict(os.environ)
    nvdisasm = find_tool("nvdisasm")
    if nvdisasm:
        folder = str(Path(nvdisasm).parent)
        env["PATH"] = os.pathsep.join(filter(None, [folder, env.get("PATH", "")]))
        env["NVDISASM_PATH"] = folder
    return env


def disassemble(cubin: bytes | str | Path, cuobjdump: str | None = None, timeout_s: float = 60.0) -> str:
    """`cuobjdump -sass` of a cubin (bytes or a path) or of an executable with embedded cubins."""
    tool = cuobjdump or find_tool("cuobjdump")
    if tool is None:
        raise SassToolError("cuobjdump not found: install the CUDA toolkit or `pip install nvidia-cuda-cuobjdump`")
    with tempfile.TemporaryDirectory(prefix="kernelpro-sass-") as tmp:
        path = Path(cubin) if not isinstance(cubin, bytes) else Path(tmp) / "kernel.cubin"
        if isinstance(cubin, bytes):
            path.write_bytes(cubin)
        try:
            proc = subprocess.run([tool, "-sass", str(path)], capture_output=True, text=True, timeout=timeout_s,
                                  check=False, env=_disassembler_env())
        except subprocess.TimeoutExpired:
            raise SassToolError(f"cuobjdump -sass did not finish within {timeout_s:g} s") from None
        except OSError as error:
            raise SassToolError(f"cannot run {tool}: {error.strerror}") from None
    if proc.returncode != 0:
        message = (proc.stderr or proc.stdout).strip()
        if "nvdisasm" in message:
            message += " (`pip install nvidia-cuda-nvdisasm` provides it)"
        raise SassToolError(f"cuobjdump -sass failed: {message}")
    return proc.stdout


def analyze_cubin(cubin: bytes | str | Path, cuobjdump: str | None = None) -> dict[str, KernelSass]:
    """The instruction mix of every function in a cubin, keyed by mangled name."""
    return parse_sass(disassemble(cubin, cuobjdump))
