"""A seccomp filter that leaves a worker no socket but those its network namespace walls in.

A network namespace covers IP sockets, not Unix ones: a filesystem socket (a terminal multiplexer's under
/tmp, a desktop bus, an SSH agent) or an abstract one reaches a process outside the sandbox, with the user's
keys and network, whatever the namespaces. So, for the worker and every process it starts, the kernel refuses
with ``EPERM``:

- ``socket`` of any family but IPv4, IPv6 (the namespace's loopback, which is down) and netlink (scoped to the
  namespace too): no Unix, vsock, packet or other socket to connect with;
- ``socketpair`` but a connected Unix stream or seqpacket pair, which reaches nothing outside (thread pools,
  event loops and multiprocessing's pipes use it); a datagram pair could be pointed at another socket;
- io_uring, whose operations would open and connect sockets past this filter;
- every system call of another ABI (32-bit x86 or x32), which the numbers here do not cover.

The filter is a hand-written classic BPF program, installed with ``SECCOMP_FILTER_FLAG_TSYNC`` so every thread
of the worker gets it; it cannot be removed, and it is inherited across fork and exec.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform

PR_SET_NO_NEW_PRIVS = 38
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC = 1, 1
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
SOCK_STREAM, SOCK_SEQPACKET, SOCK_TYPE_MASK = 1, 5, 0xF
X32_SYSCALL_BIT = 0x40000000
# Per machine: the audit architecture, seccomp, socket and socketpair's numbers; io_uring is 425-427 on both.
ABIS = {
    "x86_64": {"arch": 0xC000003E, "seccomp": 317, "socket": 41, "socketpair": 53},
    "aarch64": {"arch": 0xC00000B7, "seccomp": 277, "socket": 198, "socketpair": 199},
}
IO_URING = (425, 426, 427)
# Classic BPF opcodes.
LD_W_ABS, JEQ_K, JGE_K, AND_K, RET_K = 0x20, 0x15, 0x35, 0x54, 0x06
OFFSET_NR, OFFSET_ARCH, OFFSET_ARG0, OFFSET_ARG1 = 0, 4, 16, 24  # struct seccomp_data (low words, little-endian)


class _Instruction(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Instruction))]


def _assemble(lines: list[tuple]) -> list[tuple[int, int, int, int]]:
    """Classic BPF from lines ``(label,)`` or ``(code, k)`` or ``(code, k, true_label, false_label)``, where a
    label of None means the next instruction."""
    labels, position = {}, 0
    for line in lines:
        if len(line) == 1:
            labels[line[0]] = position
        else:
            position += 1
    program, position = [], 0
    for line in lines:
        if len(line) == 1:
            continue
        code, k, *jumps = line
        offsets = [0 if label is None else labels[label] - position - 1 for label in jumps] or [0, 0]
        program.append((code, offsets[0], offsets[1], k))
        position += 1
    return program


def socket_filter(machine: str | None = None) -> list[tuple[int, int, int, int]]:
    """The filter's instructions for ``machine`` (this one's by default)."""
    abi = ABIS[machine or platform.machine()]
    refuse = SECCOMP_RET_ERRNO | errno.EPERM
    lines: list[tuple] = [
        (LD_W_ABS, OFFSET_ARCH), (JEQ_K, abi["arch"], None, "refuse"),
        (LD_W_ABS, OFFSET_NR),
    ]
    if abi["arch"] == ABIS["x86_64"]["arch"]:
        lines.append((JGE_K, X32_SYSCALL_BIT, "refuse", None))
    lines += [(JEQ_K, abi["socket"], "socket", None), (JEQ_K, abi["socketpair"], "socketpair", None)]
    lines += [(JEQ_K, number, "refuse", None) for number in IO_URING]
    lines += [
        (RET_K, SECCOMP_RET_ALLOW),
        ("socket",), (LD_W_ABS, OFFSET_ARG0),
        (JEQ_K, AF_INET, "allow", None), (JEQ_K, AF_INET6, "allow", None), (JEQ_K, AF_NETLINK, "allow", "refuse"),
        ("socketpair",), (LD_W_ABS, OFFSET_ARG0), (JEQ_K, AF_UNIX, None, "refuse"),
        (LD_W_ABS, OFFSET_ARG1), (AND_K, SOCK_TYPE_MASK),
        (JEQ_K, SOCK_STREAM, "allow", None), (JEQ_K, SOCK_SEQPACKET, "allow", "refuse"),
        ("allow",), (RET_K, SECCOMP_RET_ALLOW),
        ("refuse",), (RET_K, refuse),
    ]
    return _assemble(lines)


def refuse_foreign_sockets() -> str | None:
    """Install the filter on every thread of this process. Returns None, or why it could not be."""
    machine = platform.machine()
    if machine not in ABIS:
        return f"no filter is written for this machine ({machine})"
    instructions = socket_filter(machine)
    array = (_Instruction * len(instructions))(*[_Instruction(*i) for i in instructions])
    program = _Program(len(instructions), array)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"prctl(PR_SET_NO_NEW_PRIVS) failed: {os.strerror(ctypes.get_errno())}"
    if libc.syscall(ABIS[machine]["seccomp"], SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC,
                    ctypes.byref(program)) != 0:
        return f"seccomp(SECCOMP_SET_MODE_FILTER) failed: {os.strerror(ctypes.get_errno())}"
    return None
