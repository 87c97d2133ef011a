"""Memory tests: a real ChromaDB in ``tmp_path`` and the real embedding model, loaded once per session.

Nothing here may reach the network: sockets that would leave the machine and Chroma's own default
embedding function (which downloads a model) are both made to fail the test that touches them.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from kernelpro.config import MemorySettings
from kernelpro.memory import Attempt, CompileFix, Insight, LessonEmbedding, MemoryStore, ProblemSignature
from kernelpro.memory.connection import close_all

SOFTMAX = ProblemSignature.of("softmax_rows", "class Model: softmax over dim=-1")
GEMM = ProblemSignature.of("gemm_fp16", "class Model: a @ b")
NETWORK_ATTEMPTS: list[str] = []


@pytest.fixture(scope="package", autouse=True)
def _no_network() -> Iterator[None]:
    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: object) -> None:
        if self.family == socket.AF_UNIX:
            return real_connect(self, address)
        NETWORK_ATTEMPTS.append(f"connect {address}")
        raise OSError("network access is not allowed in the memory tests")

    def refuse(what: str):
        def refused(*args: object, **kwargs: object) -> None:
            NETWORK_ATTEMPTS.append(f"{what} {args}")
            raise OSError(f"{what} is not allowed in the memory tests")
        return refused

    from chromadb.utils.embedding_functions import DefaultEmbeddingFunction, ONNXMiniLM_L6_V2

    patch = pytest.MonkeyPatch()
    patch.setenv("HF_HUB_OFFLINE", "1")
    patch.setattr(socket.socket, "connect", connect)
    patch.setattr(socket, "getaddrinfo", refuse("getaddrinfo"))
    patch.setattr(DefaultEmbeddingFunction, "__call__", refuse("chroma's default embedding"))
    patch.setattr(ONNXMiniLM_L6_V2, "_download_model_if_not_exists", refuse("chroma's model download"))
    yield
    patch.undo()


@pytest.fixture(autouse=True)
def _nothing_reached_the_network() -> Iterator[None]:
    before = len(NETWORK_ATTEMPTS)
    yield
    assert NETWORK_ATTEMPTS[before:] == [], "the test tried to reach the network"


@pytest.fixture(scope="package")
def embedding() -> LessonEmbedding:
    """The bundled all-MiniLM-L6-v2, loaded once for these tests (and kept by the process after)."""
    model = LessonEmbedding()
    model.load()
    return model


@pytest.fixture
def memory_settings(tmp_path) -> MemorySettings:
    return MemorySettings(path=tmp_path / "memory", retrieval_budget_chars=4000)


@pytest.fixture
def store(memory_settings, embedding) -> Iterator[MemoryStore]:
    store = MemoryStore(memory_settings, embedding)
    yield store
    close_all()


def lessons() -> list[Attempt | Insight | CompileFix]:
    """A small memory: reductions, GEMM tiling, and a compile fix, from two runs on one GPU."""
    return [
        Attempt(run_id="run-1", problem=SOFTMAX, gpu="H100", outcome="ok", speedup=2.4, candidate_id="c1",
                idea="one warp per row; max and sum reduced with warp shuffles (__shfl_xor_sync)",
                diagnosis="softmax row reduction was bound by shared-memory round trips",
                tags=["warp-shuffle", "row-reduction"]),
        Insight(run_id="run-1", problem=SOFTMAX, tags=["row-reduction"],
                text="Row-wise reductions are fastest with one warp per row reducing in registers via warp "
                     "shuffles; shared memory is only needed across warps."),
        Attempt(run_id="run-2", problem=GEMM, gpu="H100", outcome="ok", speedup=1.3, candidate_id="c7",
                idea="GEMM with 128x256x64 CTA tile sizes and a 4-stage cp.async pipeline",
                diagnosis="GEMM tile sizes too small: low arithmetic intensity, tensor cores idle",
                tags=["tiling", "tensor-cores"]),
        Insight(run_id="run-2", problem=GEMM, tags=["tiling"],
                text="For GEMM, pick tile sizes so the CTA tile plus double buffering fits shared memory."),
        Attempt(run_id="run-2", problem=GEMM, gpu="A100", outcome="incorrect", candidate_id="c8",
                idea="GEMM with swizzled shared-memory tiles", diagnosis="wrong results from a bad swizzle",
                tags=["tiling"]),
        CompileFix(run_id="run-2", backend="cuda", error="error: identifier \"__shfl_xor\" is undefined",
                   fix="use __shfl_xor_sync(0xffffffff, value, lane_mask)", tags=["warp-shuffle"]),
    ]
