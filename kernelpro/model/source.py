"""What `kernelpro model` optimises: a model and its inputs, read from SOURCE, and the whole model as one
self-contained KernelBench-format problem (the reference its spliced version is judged against).

SOURCE is a problem file (``Model``, ``get_inputs``, ``get_init_inputs``: a KernelBench level-3 problem is a
model), ``FILE.py:factory`` with ``--inputs FILE.py:fn``, or a local Hugging Face ``transformers`` model directory
or ``config.json`` built with random weights (never downloaded). The model's code runs in this process, as the
user's own code; the judge runs the reference source in its worker, where no file of the caller's is readable,
so that source carries everything it needs.
"""

from __future__ import annotations

import json
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelpro.problem import ProblemError, parse_problem, read_source_file


class SourceError(ValueError):
    """SOURCE cannot be read as a model; the message says what to give instead."""


@dataclass(frozen=True)
class ModelSource:
    """A model to profile and optimise: its name and the whole model as a KernelBench-format problem."""

    name: str
    reference_source: str
    """Defines ``Model``, ``get_inputs``, ``get_init_inputs``; needs no file but itself."""
    wrapped: bool = False
    """The user's model is ``Model``'s submodule ``model`` (a factory's, a Hugging Face model): regions are
    counted from it, one level down."""

    def load(self) -> types.ModuleType:
        """The reference source executed as a fresh module (the user's code, in this process)."""
        return execute(self.reference_source, f"kernelpro_model_{self.name}")

    def build(self) -> tuple[Any, list[Any]]:
        """The model, built as the judge builds it (``Model(*get_init_inputs())``, in the mode it sets), and one
        forward call's inputs."""
        module = self.load()
        return module.Model(*module.get_init_inputs()), list(module.get_inputs())


def execute(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    exec(compile(source, module.__file__, "exec"), module.__dict__)  # noqa: S102 - the user's own model code
    return module


def read_source(source: str, inputs: str | None = None, batch: int = 1, seq_len: int = 128) -> ModelSource:
    """SOURCE as given on the command line (``inputs``: ``--inputs FILE.py:fn`` for a factory)."""
    path, _, attribute = source.partition(":") if not Path(source).exists() else (source, "", "")
    target = Path(path)
    if target.is_dir() or target.name == "config.json" or target.suffix == ".json":
        if inputs:
            raise SourceError("--inputs is for FILE.py:factory; a Hugging Face model's inputs are token ids "
                              "(--batch, --seq-len)")
        return _huggingface(target, batch, seq_len)
    if attribute:
        if not inputs:
            raise SourceError(f"{source}: a factory needs its inputs too: --inputs FILE.py:fn (a function that "
                              "returns the list of tensors one forward call takes)")
        return _factory(target, attribute, inputs)
    if inputs:
        raise SourceError("--inputs goes with FILE.py:factory; a problem file has its own get_inputs")
    try:
        problem = parse_problem(read_source_file(target), name=target.stem, path=target)
    except ProblemError as error:
        raise SourceError(f"{error} (or give FILE.py:factory with --inputs FILE.py:fn)") from None
    return ModelSource(name=_identifier(target.stem), reference_source=problem.source)


def _identifier(text: str) -> str:
    cleaned = "".join(c if c.isalnum() else "_" for c in text).strip("_") or "model"
    return cleaned if not cleaned[0].isdigit() else f"m_{cleaned}"


def _function_in(path: Path, name: str, what: str) -> str:
    """``path``'s source, checked to define ``name`` at its top level."""
    import ast

    try:
        text = read_source_file(path)
        tree = ast.parse(text)
    except ProblemError as error:
        raise SourceError(str(error)) from None
    except SyntaxError as error:
        raise SourceError(f"{path}: not valid Python (line {error.lineno}: {error.msg})") from None
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    if name not in defined:
        raise SourceError(f"{path} defines no {what} {name!r} at its top level")
    taken = {"Model", "get_inputs", "get_init_inputs"} & defined
    if taken:
        raise SourceError(f"{path} defines {', '.join(sorted(taken))} itself: give the file as SOURCE, without "
                          ":factory, if it is a KernelBench-format problem")
    return text


def _factory(path: Path, factory: str, inputs: str) -> ModelSource:
    inputs_path, _, inputs_fn = inputs.partition(":")
    if not inputs_fn:
        raise SourceError(f"--inputs {inputs!r}: give FILE.py:fn, a function returning one forward call's inputs")
    parts = [_function_in(path, factory, "factory")]
    if Path(inputs_path).resolve() != path.resolve():
        parts.append(_function_in(Path(inputs_path), inputs_fn, "inputs function"))
    else:
        _function_in(path, inputs_fn, "inputs function")
    body = "import torch\n" + "\n\n".join(parts)
    try:
        count = len(list(getattr(execute(body, "kernelpro_model_inputs"), inputs_fn)()))
    except Exception as error:  # noqa: BLE001 - the user's code failed: say where
        raise SourceError(f"--inputs {inputs}: calling it failed ({type(error).__name__}: {error})") from None
    names = ", ".join(f"input_{i}" for i in range(count))
    wrapper = f'''

class Model(torch.nn.Module):
    """The model {factory}() builds."""

    def __init__(self):
        super().__init__()
        self.model = {factory}()

    def forward(self, {names}):
        return self.model({names})


def get_inputs():
    return list({inputs_fn}())


def get_init_inputs():
    return []
'''
    source = body + wrapper
    return ModelSource(name=_identifier(f"{path.stem}_{factory}"), reference_source=source, wrapped=True)


def _huggingface(path: Path, batch: int, seq_len: int) -> ModelSource:
    config_file = path / "config.json" if path.is_dir() else path
    if not config_file.is_file():
        raise SourceError(f"{path}: no config.json here; a Hugging Face model is given by its local directory "
                          "or its config.json (nothing is downloaded)")
    try:
        import transformers  # noqa: F401
    except ImportError:
        raise SourceError("a Hugging Face model needs the transformers package, which is not installed here: "
                          "pip install transformers") from None
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SourceError(f"{config_file}: not a readable JSON config ({error})") from None
    if not isinstance(config, dict) or "model_type" not in config:
        raise SourceError(f"{config_file}: a transformers config names its model_type; this one does not")
    vocab = int(config.get("vocab_size") or 1000)
    source = f'''import torch
from transformers import AutoConfig, AutoModel

CONFIG = {json.dumps(config, sort_keys=True)!r}


class Model(torch.nn.Module):
    """{config["model_type"]} from {config_file.name}, with random weights."""

    def __init__(self):
        super().__init__()
        import json

        config = AutoConfig.for_model(**json.loads(CONFIG))
        config.use_cache = False  # one forward over the whole sequence: no key-value cache to keep
        self.model = AutoModel.from_config(config).eval()  # no dropout: as it serves

    def forward(self, input_ids):
        return self.model(input_ids=input_ids).last_hidden_state


def get_inputs():
    return [torch.randint(0, {vocab}, ({batch}, {seq_len}))]


def get_init_inputs():
    return []
'''
    return ModelSource(name=_identifier(path.name if path.is_dir() else path.parent.name), reference_source=source,
                       wrapped=True)
