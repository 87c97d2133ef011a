"""The bundled model in numpy gives the vectors sentence-transformers gave, so stores written before keep working.

``tests/data/memory/minilm_reference.json`` holds texts and the vectors sentence-transformers computed for them
(``tests/data/memory/minilm_reference.py`` wrote it); ``test_a_local_sentence_transformers_directory`` in
test_embedding.py compares against sentence-transformers live.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from kernelpro.memory import Insight, LessonEmbedding, MemoryStore
from kernelpro.memory.connection import close_all
from kernelpro.memory.embedding import load_model
from kernelpro.memory.minilm import MiniLM, _batches

REFERENCE = json.loads((Path(__file__).parents[1] / "data" / "memory" / "minilm_reference.json").read_text())
STORED = np.asarray(REFERENCE["vectors"], dtype=np.float32)


def test_the_bundled_model_gives_the_vectors_sentence_transformers_stored(embedding):
    assert isinstance(load_model(embedding.model_name), MiniLM)
    vectors = np.asarray(embedding(REFERENCE["texts"]))
    assert vectors.shape == STORED.shape == (len(REFERENCE["texts"]), 384)
    assert np.abs(vectors - STORED).max() < 1e-5  # float rounding: about 2e-7 on x86_64
    assert (vectors * STORED).sum(axis=1).min() > 0.99999


def test_a_text_gets_the_same_vector_alone_and_in_any_batch(embedding):
    texts = [t for t in REFERENCE["texts"] if len(t) < 1000]  # the long one costs seconds; the test above has it
    model = load_model(embedding.model_name)
    alone = np.stack([model.encode([t])[0] for t in texts])
    assert np.abs(model.encode(texts, batch_size=3) - alone).max() < 1e-6
    assert np.abs(model.encode(texts[::-1])[::-1] - alone).max() < 1e-6
    assert _batches([5, 300, 40, 290, 7, 6], 2) == [[1, 3], [2], [4, 5], [0]]


class StoredVectors(LessonEmbedding):
    """The vectors sentence-transformers wrote, as an earlier kernelpro stored them (same model, same name)."""

    def __call__(self, input):
        return [STORED[REFERENCE["texts"].index(text)] for text in input]


def test_a_store_written_by_sentence_transformers_is_searched_alike(memory_settings):
    records = [Insight(run_id="r", text=text) for text in REFERENCE["insights"]]
    MemoryStore(memory_settings, StoredVectors()).add_many(records)
    close_all()
    reader = MemoryStore(memory_settings)  # the bundled model in numpy embeds the queries
    try:
        for record in records:
            hits = reader.search(record.document(), k=3)
            assert hits[0].record.id == record.id and hits[0].similarity > 0.9999
        query = REFERENCE["texts"].index("GEMM tile sizes")
        expected = {r.id: float(STORED[REFERENCE["texts"].index(r.document())] @ STORED[query]) for r in records}
        for hit in reader.search("GEMM tile sizes", k=3):
            assert abs(hit.similarity - expected[hit.record.id]) < 1e-4
    finally:
        close_all()
