"""The static rules for sandbox escapes: each fires on its pattern and stays quiet on honest code."""

from __future__ import annotations

import pytest

from kernelpro.harness.guards.static import scan_source


def reasons(source: str) -> set[str]:
    return {f.reason for f in scan_source(source) if f.severity == "reject"}


@pytest.mark.parametrize(("snippet", "reason"), [
    ('open(f"/proc/{pid}/environ").read()\n', "process_snooping"),
    ('open("/proc/%d/cmdline" % pid)\n', "process_snooping"),
    ('path = "/proc/1/maps"\n', "process_snooping"),
    ("import os\nparent = os.getppid()\n", "process_snooping"),
    ("libc.ptrace(16, pid, None, None)\n", "process_snooping"),
    ("import socket\n", "network_access"),
    ("from urllib.request import urlopen\n", "network_access"),
    ("import http.client\n", "network_access"),
    ('open("/proc/self/mem", "r+b")\n', "self_modification"),
    ("import ctypes\nctypes.memmove(dst, src, 8)\n", "self_modification"),
    ("import ctypes\nctypes.pythonapi.PyFrame_LocalsToFast(f, 0)\n", "self_modification"),
    ("libc.mprotect(page, 4096, 7)\n", "self_modification"),
    ("import torch\nobjs = torch.cuda.graphs.gc.get_objects()\n", "judge_patch"),
    ("refs = g.get_referrers(x)\n", "judge_patch"),
    ("import torch\nmods = torch.sys.modules\n", "judge_patch"),
    ("try:\n    raise ValueError\nexcept ValueError as e:\n    f = e.__traceback__.tb_frame\n", "judge_patch"),
    ("def f(frame):\n    return frame.f_back.f_locals\n", "judge_patch"),
    ("def f(fn):\n    return fn.__globals__\n", "judge_patch"),
], ids=lambda value: value if value in ("process_snooping", "network_access", "self_modification",
                                         "judge_patch") else None)
def test_escape_rule_fires(snippet, reason):
    assert reason in reasons(snippet), scan_source(snippet)


@pytest.mark.parametrize("snippet", [
    'open("/proc/self/status").read()\n',  # a process may read its own status (memory use)
    'open("/proc/cpuinfo").read()\n',
    "import os\nn = os.cpu_count()\npid = os.getpid()\n",
    "import ctypes\nlib = ctypes.CDLL('libcuda.so')\nlib.cuInit(0)\nbuf = ctypes.c_int(0)\n",
    "import ctypes\nn = ctypes.sizeof(ctypes.c_void_p)\n",
    "import gc\n",  # flagged by its own rule (judge_patch) only: see test_static_guards
    "modules = [m for m in self.modules()]\n",
    "x = frame_count + f_backward\n",
])
def test_escape_rules_stay_quiet_on_legitimate_code(snippet):
    found = {f.reason for f in scan_source(snippet) if f.severity == "reject"}
    assert not found & {"process_snooping", "network_access", "self_modification"}, scan_source(snippet)
    if "import gc" not in snippet:
        assert not found, scan_source(snippet)
