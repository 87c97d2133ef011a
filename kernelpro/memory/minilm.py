"""The bundled all-MiniLM-L6-v2 in plain numpy: the same weights and tokenizer, without torch or transformers.

sentence-transformers runs this model as BERT (6 layers, 12 heads, hidden 384, exact GELU), mean pooling over
the attention mask, then L2 normalisation, on texts stripped and truncated to ``max_seq_length`` (256) tokens.
This module computes exactly that in float32, so its vectors match the ones stored by sentence-transformers
within float rounding (tests/memory/test_minilm.py). Importing sentence-transformers costs a `kernelpro memory
search` process seconds; numpy, ``tokenizers`` and ``safetensors`` cost a fraction of one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

BATCH = 32


class MiniLM:
    """A BERT sentence encoder read from a sentence-transformers directory (config.json, model.safetensors,
    tokenizer.json, sentence_bert_config.json); ``encode`` answers L2-normalised mean-pooled embeddings."""

    def __init__(self, directory: Path) -> None:
        from safetensors.numpy import load_file
        from threadpoolctl import ThreadpoolController
        from tokenizers import Tokenizer

        directory = Path(directory)
        config = json.loads((directory / "config.json").read_text())
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config["layer_norm_eps"])
        max_len = int(json.loads((directory / "sentence_bert_config.json").read_text())["max_seq_length"])
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.no_padding()  # padded per batch below, to the batch's longest text
        self.tokenizer.enable_truncation(max_length=max_len)
        weights = load_file(str(directory / "model.safetensors"))
        self.w = {name.removeprefix("bert."): value for name, value in weights.items()}
        # One BLAS thread: a few sentences gain nothing from more, and on a busy machine (a compile pool, another
        # run) spinning worker threads make a single query many times slower.
        self._threads = ThreadpoolController()
        for name in [k for k in self.w if k.endswith(".weight") and self.w[k].ndim == 2 and "embeddings" not in k]:
            self.w[name] = np.ascontiguousarray(self.w[name].T)  # x @ W.T once, not per call

    def encode(self, texts: Sequence[str], batch_size: int = BATCH) -> np.ndarray:
        """One row per text, in order; texts are batched by length, as sentence-transformers does."""
        if not texts:
            return np.zeros((0, self.w["embeddings.word_embeddings.weight"].shape[1]), dtype=np.float32)
        encodings = self.tokenizer.encode_batch([str(t).strip() for t in texts])
        out = np.empty((len(texts), self.w["embeddings.word_embeddings.weight"].shape[1]), dtype=np.float32)
        with self._threads.limit(limits=1, user_api="blas"):
            for chosen in _batches([len(e.ids) for e in encodings], batch_size):
                out[chosen] = self._embed(*self._padded([encodings[i] for i in chosen]))
        return out

    def _padded(self, encodings: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros_like(ids)
        mask = np.zeros((len(encodings), width), dtype=np.float32)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n], types[row, :n], mask[row, :n] = e.ids, e.type_ids, 1.0
        return ids, types, mask

    def _embed(self, ids: np.ndarray, types: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self.w
        width = ids.shape[1]
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:width]
             + w["embeddings.token_type_embeddings.weight"][types])
        x = self._norm(x, "embeddings.LayerNorm")
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]  # padding never attended to
        for layer in range(self.layers):
            p = f"encoder.layer.{layer}."
            x = self._norm(x + self._linear(self._attention(x, bias, p), p + "attention.output.dense"),
                           p + "attention.output.LayerNorm")
            hidden = _gelu(self._linear(x, p + "intermediate.dense"))
            x = self._norm(x + self._linear(hidden, p + "output.dense"), p + "output.LayerNorm")
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def _attention(self, x: np.ndarray, bias: np.ndarray, p: str) -> np.ndarray:
        batch, width, hidden = x.shape
        size = hidden // self.heads

        def heads(name: str) -> np.ndarray:
            return self._linear(x, p + name).reshape(batch, width, self.heads, size).transpose(0, 2, 1, 3)

        q, k, v = heads("attention.self.query"), heads("attention.self.key"), heads("attention.self.value")
        scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(size)) + bias
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        return (scores @ v).transpose(0, 2, 1, 3).reshape(batch, width, hidden)

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[name + ".weight"] + self.w[name + ".bias"]

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + np.float32(self.eps)) * self.w[name + ".weight"] + self.w[name + ".bias"]


def _batches(lengths: list[int], size: int) -> list[list[int]]:
    """Indices grouped longest first, at most ``size`` a batch, a new batch where a text is under half the
    batch's longest: padding costs little, and masked positions change no result."""
    batches: list[list[int]] = []
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        if not batches or len(batches[-1]) == size or 2 * lengths[i] < lengths[batches[-1][0]]:
            batches.append([])
        batches[-1].append(i)
    return batches


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x * Phi(x), with erf to 1.5e-7 (Abramowitz and Stegun 7.1.26), in place in float32:
    as close to the true value as float32 resolves, at a fraction of a float64 evaluation's cost."""
    z = np.abs(x) * np.float32(0.7071067811865476)
    t = 1.0 / (1.0 + np.float32(0.3275911) * z)
    poly = t * (np.float32(0.254829592) + t * (np.float32(-0.284496736) + t * (
        np.float32(1.421413741) + t * (np.float32(-1.453152027) + t * np.float32(1.061405429)))))
    np.multiply(z, z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    tail = np.multiply(poly, z, out=poly)  # erfc(|x| / sqrt 2) = 1 - erf(|x| / sqrt 2)
    tail *= np.float32(0.5)  # the smaller of Phi(x) and 1 - Phi(x)
    phi = np.where(x >= 0, np.float32(1.0) - tail, tail)
    return np.multiply(x, phi, out=phi)
