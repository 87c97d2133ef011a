"""Static rules for attempts to get out of the sandbox or into the judge's memory, as syntax shows them.

None of these has an honest use in a kernel: other processes' ``/proc`` files, ``ptrace``, sockets, raw
memory writes through ctypes, ``/proc/self/mem``, the garbage collector's object walks and frame walking
(reached however: ``torch.cuda.graphs.gc``, ``torch.sys.modules``, an exception's traceback). The kernel's
walls and the worker's tripwires (``isolation``, ``walls``) stop what these miss, so the rules stay precise.
"""

from __future__ import annotations

import ast
import re

from kernelpro.harness.result import GuardFinding

NETWORK_IMPORTS = {"socket", "ssl", "http", "urllib", "requests", "httpx", "aiohttp", "ftplib", "smtplib",
                   "socketserver", "xmlrpc", "websocket", "websockets", "paramiko", "telnetlib"}
# A /proc path naming another process (a number, a placeholder, the parent) or a file that shows memory or secrets.
OTHER_PROCESS = re.compile(r"/proc/(\d+|\{\}|%[ds]|\{[^}]*\})(/|$)")
SECRET_FILES = re.compile(r"/proc/[^\s\"']*(environ|cmdline|/mem\b|maps|pagemap|auxv|syscall)")
SELF_MEM = re.compile(r"/proc/(self|thread-self)/(task/[^/]+/)?mem\b")
SNOOP_NAMES = {"ptrace", "process_vm_readv", "process_vm_writev", "getppid", "pidfd_open", "pidfd_getfd"}
RAW_MEMORY = {"memmove", "memset", "pythonapi", "mprotect", "PyFrame_LocalsToFast"}
JUDGE_WALKS = {"get_objects", "get_referrers", "get_referents"}
FRAME_ATTRS = {"tb_frame", "f_back", "f_locals", "f_globals", "f_builtins", "gi_frame", "cr_frame", "ag_frame",
               "__closure__", "__globals__"}


def _literal_text(node: ast.AST) -> str | None:
    """A string literal's text; an f-string's with ``{}`` for each placeholder."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}"
                       for v in node.values)
    return None


def _flag(findings: list[GuardFinding], reason: str, message: str, node: ast.AST) -> None:
    line = getattr(node, "lineno", None)
    if not any(f.reason == reason and f.line == line for f in findings):
        findings.append(GuardFinding(reason=reason, severity="reject", source="static",
                                     message=f"line {line}: {message}" if line else message, line=line))


def escape_findings(tree: ast.AST) -> list[GuardFinding]:
    """Every finding of these rules in a parsed candidate."""
    findings: list[GuardFinding] = []
    inside_fstring = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                if name.split(".")[0] in NETWORK_IMPORTS:
                    _flag(findings, "network_access", f"imports {name}", node)
        elif (text := _literal_text(node)) is not None and id(node) not in inside_fstring:
            if SELF_MEM.search(text):
                _flag(findings, "self_modification", "opens its own memory through /proc/self/mem", node)
            elif OTHER_PROCESS.search(text) or SECRET_FILES.search(text):
                _flag(findings, "process_snooping", f"names another process's /proc files ({text[:60]!r})", node)
        elif isinstance(node, (ast.Attribute, ast.Name)):
            name = node.attr if isinstance(node, ast.Attribute) else node.id
            if name in SNOOP_NAMES:
                _flag(findings, "process_snooping", f"uses {name}", node)
            elif name in RAW_MEMORY:
                _flag(findings, "self_modification", f"uses {name}, which writes memory behind Python's back", node)
            elif name in JUDGE_WALKS:
                _flag(findings, "judge_patch", f"uses {name}, which walks the judge's objects", node)
            elif name in FRAME_ATTRS:
                _flag(findings, "judge_patch", f"uses {name}, which reaches the judge's frames and variables", node)
            elif (isinstance(node, ast.Attribute) and node.attr == "modules" and isinstance(node.value, ast.Attribute)
                  and node.value.attr == "sys"):
                _flag(findings, "judge_patch", "reaches sys.modules through another module", node)
    return findings
