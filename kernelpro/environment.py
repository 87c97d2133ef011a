"""What this machine offers kernelpro: GPUs, CUDA tools, Triton, torch and an LLM provider.

Every check returns a :class:`Check` and never raises; subprocesses are time-limited.
Nothing here prints: ``kernelpro doctor`` renders the checks.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import re
import subprocess
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from kernelpro.harness.compile.toolchain import find_tool, search_dirs

if TYPE_CHECKING:
    from kernelpro.config import LLMSettings, Settings

SUBPROCESS_TIMEOUT_S = 5.0

# Provider prefix of a LiteLLM model name -> the variable that provider's key is usually read from.
PROVIDER_KEY_VARS: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "azure": "AZURE_API_KEY",
}

NO_MODEL_DETAIL = (
    "no model configured: kernelpro runs its built-in non-LLM recipes; "
    "set KERNELPRO_LLM__MODEL (e.g. openai/gpt-5) or llm.model in kernelpro.toml"
)


@dataclass(frozen=True)
class Check:
    """One line of ``kernelpro doctor``."""

    name: str
    ok: bool
    detail: str
    required: bool = False


def _text(value: str | bytes) -> str:
    # Older NVML bindings return bytes.
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def check_gpus() -> Check:
    """NVIDIA GPUs and the driver version, via NVML."""
    try:
        import pynvml
    except ImportError as exc:
        return Check("GPU", False, f"NVML bindings unavailable (pip install nvidia-ml-py): {exc}")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return Check("GPU", False, f"no NVIDIA driver (NVML: {exc})")
    try:
        driver = _text(pynvml.nvmlSystemGetDriverVersion())
        devices = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            gib = pynvml.nvmlDeviceGetMemoryInfo(handle).total / 2**30
            devices.append(f"{index}: {_text(pynvml.nvmlDeviceGetName(handle))} ({gib:.0f} GiB)")
    except pynvml.NVMLError as exc:
        return Check("GPU", False, f"NVML query failed: {exc}")
    finally:
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlShutdown()
    if not devices:
        return Check("GPU", False, f"no NVIDIA GPU visible (driver {driver})")
    return Check("GPU", True, f"{', '.join(devices)}; driver {driver}")


def check_tool(name: str) -> Check:
    """A command-line tool (nvcc, ptxas, ncu, ...): where it is and what ``--version`` says."""
    try:
        path = find_tool(name)
        if path is None:
            return Check(name, False, f"not found (looked in PATH, {', '.join(map(str, search_dirs(name)))})")
        try:
            proc = subprocess.run(
                [path, "--version"],
                capture_output=True,
                text=True,
                errors="replace",
                timeout=SUBPROCESS_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return Check(name, False, f"{path} --version timed out after {SUBPROCESS_TIMEOUT_S:g} s")
        lines = [line.strip() for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
        if proc.returncode != 0:
            last = lines[-1] if lines else "no output"
            return Check(name, False, f"{path} --version failed (exit {proc.returncode}): {last}")
        release = re.search(r"release [^\s,]+, V\S+", proc.stdout)
        version = release.group(0) if release else (lines[-1] if lines else "version unknown")
        return Check(name, True, f"{version} ({path})")
    except (OSError, subprocess.SubprocessError) as exc:
        return Check(name, False, f"cannot run {name}: {exc}")


def check_triton() -> Check:
    """Triton's installed version, read from package metadata (importing triton is slow)."""
    for dist in ("triton", "pytorch-triton"):
        try:
            return Check("triton", True, f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    return Check("triton", False, f"not installed ({gpu_extra_install()})")


def editable_checkout() -> Path | None:
    """The source checkout kernelpro is installed from in editable mode (``pip install -e``), else None; read from
    the installation's ``direct_url.json`` (PEP 610)."""
    try:
        text = importlib.metadata.distribution("kernelpro").read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return None
    try:
        found = json.loads(text or "{}")
    except ValueError:
        return None
    url = str(found.get("url", ""))
    if not (found.get("dir_info") or {}).get("editable") or not url.startswith("file://"):
        return None
    return Path(urllib.parse.unquote(urllib.parse.urlparse(url).path))


def gpu_extra_install() -> str:
    """How to install the GPU extra the way kernelpro was installed: from its checkout when editable."""
    checkout = editable_checkout()
    if checkout is None:
        return 'pip install "kernelpro[gpu]"'
    here = Path.cwd().resolve() == checkout.resolve()
    return 'pip install -e ".[gpu]"' if here else f'pip install -e "{checkout}[gpu]"'


def check_torch() -> Check:
    """torch's version, the CUDA it was built for, and the devices it can use."""
    try:
        import torch

        version, cuda = torch.__version__, torch.version.cuda
        if cuda is None:
            return Check("torch", True, f"torch {version}, CPU-only build", required=True)
        if not torch.cuda.is_available():
            return Check("torch", True, f"torch {version}, CUDA {cuda}, no CUDA device available", required=True)
        count = torch.cuda.device_count()
        return Check("torch", True, f"torch {version}, CUDA {cuda}, {count} device(s)", required=True)
    except Exception as exc:  # noqa: BLE001 - a broken torch install fails in many ways
        return Check("torch", False, f"torch unusable: {type(exc).__name__}: {exc}", required=True)


def _redact_url(url: str) -> str:
    # An api_base may carry credentials in its userinfo or query string.
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(unparsable URL)"
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))


def _key_source(llm: LLMSettings) -> tuple[str | None, list[str]]:
    """Where a key comes from (never the key itself), and every place looked in."""
    if llm.api_key is not None and llm.api_key.get_secret_value():
        return "llm.api_key", ["llm.api_key"]
    model = llm.model or ""
    provider = model.partition("/")[0].lower() if "/" in model else ""
    names = [PROVIDER_KEY_VARS[provider]] if provider in PROVIDER_KEY_VARS else list(PROVIDER_KEY_VARS.values())
    found = next((name for name in names if os.environ.get(name)), None)
    return found, ["llm.api_key", *names]


def check_llm(llm: LLMSettings) -> Check:
    """The configured model, its endpoint, and whether a key is available."""
    if not llm.model:
        return Check("llm", False, NO_MODEL_DETAIL)
    parts = [llm.model]
    if llm.api_base:
        parts.append(f"api_base {_redact_url(llm.api_base)}")
    source, looked = _key_source(llm)
    parts.append(f"key set ({source})" if source else f"no key found (looked in {', '.join(looked)})")
    # A local OpenAI-compatible server (api_base) often needs no key.
    return Check("llm", bool(source or llm.api_base), "; ".join(parts))


def check_run_stack(settings: Settings) -> Check:
    """Whether every library a run imports imports here (the model client's too, with a model configured)."""
    from kernelpro.run_stack import MODEL_MODULES, RUN_MODULES, run_stack_problem

    with_model = bool(settings.llm.model)
    if problem := run_stack_problem(with_model=with_model):
        return Check("run libraries", False, problem, required=True)
    names = ("langgraph", "LiteLLM") if with_model else ("langgraph",)
    return Check("run libraries", True, f"{len(RUN_MODULES) + len(MODEL_MODULES) * with_model} modules import "
                 f"({', '.join(names)} among them)", required=True)


def probe_environment(settings: Settings) -> list[Check]:
    """Every check, in the order ``kernelpro doctor`` shows them."""
    return [
        check_gpus(),
        check_tool("nvcc"),
        check_tool("ptxas"),
        check_tool("ncu"),
        check_triton(),
        check_torch(),
        check_llm(settings.llm),
        check_run_stack(settings),
    ]
