"""The static checks on source alone: each rule fires on its pattern and stays quiet on honest code."""

from __future__ import annotations

import pytest

from kernelpro.harness.guards.static import scan_source
from tests.conftest import DATA, candidate


def reasons(source: str, severity: str = "reject") -> set[str]:
    return {f.reason for f in scan_source(source) if f.severity == severity}


@pytest.mark.parametrize("path", sorted((DATA / "candidates").glob("honest_*.py")), ids=lambda p: p.stem)
def test_honest_candidates_have_no_rejecting_findings(path):
    assert reasons(path.read_text()) == set()


@pytest.mark.parametrize(("snippet", "reason"), [
    ("class ModelNew(Model):\n    pass\n", "reference_reuse"),
    ("import ref\nclass ModelNew(ref.Model):\n    pass\n", "reference_reuse"),
    ("class ModelNew(nn.Module):\n    def __init__(self):\n        self.m = Model()\n", "reference_reuse"),
    ("def f(self, x):\n    k = x.data_ptr()\n    if k in self.c:\n        return self.c[k]\n", "cached_output"),
    ("def f(self, x):\n    return self.c.get(id(x))\n", "cached_output"),
    ("def f(self, x):\n    self.c = {x.data_ptr(): x}\n", "cached_output"),
    ("import functools\nclass M:\n    @functools.lru_cache(None)\n    def forward(self, x):\n        return x\n",
     "cached_output"),
    ("def f(x):\n    s = torch.initial_seed()\n", "cached_output"),
    ("import threading\n", "background_thread"),
    ("import _thread\n", "background_thread"),
    ("import multiprocessing as mp\n", "background_process"),
    ("import torch.multiprocessing\n", "background_process"),
    ("import os\nos.fork()\n", "background_process"),
    ("import os\nos.system('sleep 10 &')\n", "background_process"),
    ("torch.cuda.set_stream(side)\n", "extra_stream"),
    ("src = 'attr.accessPolicyWindow.num_bytes = n;'\n", "l2_persistence"),
    ("lib.cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 1 << 20)\n", "l2_persistence"),
    ("import time\ntime.perf_counter = lambda: 0.0\n", "timer_patch"),
    ("import time as t\nsetattr(t, 'monotonic', lambda: 0.0)\n", "timer_patch"),
    ("from torch import cuda\ncuda.synchronize = lambda: None\n", "timer_patch"),
    ("torch.cuda.Event.elapsed_time = lambda a, b: 0.001\n", "timer_patch"),
    ("torch.allclose = lambda *a, **k: True\n", "judge_patch"),
    ("torch.Tensor.__eq__ = lambda a, b: True\n", "judge_patch"),
    ("import kernelpro.harness\n", "judge_patch"),
    ("from kernelpro import harness\n", "judge_patch"),
    ("from os import fork\nfork()\n", "background_process"),
    ("from threading import Thread\n", "background_thread"),
    ("import gc\nobjs = gc.get_objects()\n", "judge_patch"),
    ("from gc import get_referrers\n", "judge_patch"),
    ("import gc as g\ng.get_referents(x)\n", "judge_patch"),
    ("import gc\ngc.callbacks.append(f)\n", "judge_patch"),
    ("import gc\nf = getattr(gc, 'get_objects')\n", "judge_patch"),
    ("import sys\nsys.modules['kernelpro']\n", "judge_patch"),
    ("import sys\nf = sys._getframe(1)\n", "judge_patch"),
    ("exec('import threading')\n", "judge_patch"),
    ("m = __import__('threading')\n", "judge_patch"),
    ("__builtins__['len'] = None\n", "judge_patch"),
    ("from kernelpro.runtime import LEDGER\n", "judge_patch"),  # the launch counts the judge reads
    ("import kernelpro.runtime as rt\nrt._Launcher.launch = None\n", "judge_patch"),
])
def test_rule_fires(snippet, reason):
    assert reason in reasons(snippet), scan_source(snippet)


@pytest.mark.parametrize("snippet", [
    "try:\n    import triton\nexcept ImportError:\n    triton = None\n",  # optional import at module level
    "def f(x):\n    try:\n        y = k(x)\n    except RuntimeError:\n        raise ValueError('bad shape')\n",
    "torch.backends.cudnn.benchmark = True\n",
    "def f(x, kernel):\n    ptr = x.data_ptr()\n    kernel(ptr, x.numel())\n",  # pointers passed to a kernel
    "stream = torch.cuda.current_stream().cuda_stream\n",
    "import time\nstart = time.perf_counter()\n",  # reading a clock is fine
    "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.cache = {}\n",
    "import torch.nn.functional as F\ny = F.relu(x)\n",
    "self.scale = 2.0\nModelNew.count = 0\n",
    "from kernelpro.runtime import CudaKernel\n",  # the kernel launcher candidates are meant to use
    "from kernelpro import runtime\n",
    "import gc\ngc.collect()\n",  # freeing memory between steps reaches nothing of the judge's
    "import gc\ngc.disable()\ngc.enable()\n",
    # A thread pool joined before forward returns: the thread check after each call decides, not syntax.
    "from concurrent.futures import ThreadPoolExecutor\nwith ThreadPoolExecutor(2) as pool:\n    pool.map(f, xs)\n",
    # Side streams joined to the caller's, and the documented CUDA-graph capture: the run decides, not syntax.
    "side = torch.cuda.Stream()\nside.wait_stream(torch.cuda.current_stream())\nwith torch.cuda.stream(side):\n"
    "    y = f(x)\ntorch.cuda.current_stream().wait_stream(side)\ny.record_stream(torch.cuda.current_stream())\n",
    "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    out = f(x)\n",
    "src = 'cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);'\n",
    # A memoised helper that builds a kernel once per dtype is not a memoised forward.
    "import functools\n@functools.lru_cache(None)\ndef kernel_for(dtype):\n    return build(dtype)\n",
    # A handler around graph capture is a warning; whether it runs while judged decides (handler_probe).
    "def f(self, x):\n    try:\n        self.capture(x)\n    except RuntimeError:\n        self.graph = None\n",
])
def test_rule_stays_quiet_on_legitimate_code(snippet):
    assert reasons(snippet) == set(), scan_source(snippet)


@pytest.mark.parametrize("snippet", [
    "def f(x):\n    try:\n        return k(x)\n    except Exception:\n        return torch.relu(x)\n",
    "def f(x):\n    try:\n        y = k(x)\n    except RuntimeError:\n        y = F.relu(x)\n    return y\n",
])
def test_fallback_handler_is_a_warning_decided_at_run_time(snippet):
    findings = scan_source(snippet)
    assert [(f.reason, f.severity) for f in findings] == [("try_except_fallback", "warn")]
    assert "if it runs while judged" in findings[0].message


def test_tf32_is_a_warning_not_a_rejection():
    findings = scan_source("torch.backends.cuda.matmul.allow_tf32 = True\n")
    assert [(f.reason, f.severity) for f in findings] == [("precision_downgrade", "warn")]


def test_findings_carry_line_numbers():
    findings = scan_source(candidate("cheat_try_except_fallback"))
    assert [f.line for f in findings] == [17]
    assert findings[0].message.startswith("line 17:")


def test_bad_python_raises_syntax_error():
    with pytest.raises(SyntaxError):
        scan_source("def broken(:\n")


@pytest.mark.parametrize("name", ["honest_cuda_scale_relu", "honest_cubin_scale_relu", "honest_triton_scale_relu",
                                  "honest_load_inline_scale_relu", "honest_cute_scale_relu"])
def test_every_kernel_backend_is_allowed(name):
    """The imports and calls each backend needs (kernelpro.runtime, triton, cutlass.cute, load_inline) pass."""
    assert [f for f in scan_source(candidate(name)) if f.severity == "reject"] == []


def test_the_runtimes_public_names_are_what_candidates_may_import():
    import kernelpro.runtime
    from kernelpro.harness.guards.static_rules import RUNTIME_PUBLIC

    assert set(kernelpro.runtime.__all__) == RUNTIME_PUBLIC
