"""Issue 60: is a Chroma index built twice from the same embeddings the same? Default config, one thread and a
wider search, then a search that visits every node of this 3,423-chunk index. Reads the corpus/ index's embeddings,
builds two fresh collections each way in temp folders, and asks 400 jittered chunk vectors for their top 12.
`python results/issue60/hnsw_probe.py` (~3 min; no model). The counts move a little from run to run."""
import sys
import tempfile
from pathlib import Path

import chromadb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import vector_index as vi  # noqa: E402

data = vi.get_all(vi.get_collection(vi.CORPUS_DIR, "titled"), ["embeddings"])
order = np.argsort(data["ids"])              # one fixed insertion order
ids = [data["ids"][i] for i in order]
emb = np.array(data["embeddings"], dtype=np.float32)[order]
rng = np.random.default_rng(0)
queries = emb[rng.choice(len(emb), 400, replace=False)] + rng.normal(0, 0.02, (400, emb.shape[1])).astype(np.float32)
unit = emb / np.linalg.norm(emb, axis=1, keepdims=True)
exact = np.argsort(-(queries / np.linalg.norm(queries, axis=1, keepdims=True)) @ unit.T, axis=1)[:, :12]


def build(cfg):
    """A fresh collection with this HNSW configuration, filled in batches of 256 -> each query's top-12 ids."""
    col = chromadb.PersistentClient(path=tempfile.mkdtemp()).create_collection(
        "probe", embedding_function=None, configuration={"hnsw": cfg})
    for i in range(0, len(ids), 256):
        col.add(ids=ids[i:i + 256], embeddings=emb[i:i + 256])
    return [tuple(x) for x in col.query(query_embeddings=queries, n_results=12)["ids"]]


for name, cfg in [("default", {"space": "cosine"}),
                  ("1 thread, ef 100", {"space": "cosine", "num_threads": 1, "ef_search": 100}),
                  ("ef 4000 (every node)", {"space": "cosine", "ef_search": 4000, "ef_construction": 400})]:
    a, b = build(cfg), build(cfg)
    same = sum(x == y for x, y in zip(a, b))
    recall = np.mean([len(set(x) & {ids[j] for j in e}) / 12 for x, e in zip(a, exact)])
    print(f"{name:21} two builds give the same top-12 for {same}/400 queries; recall@12 of exact {recall:.4f}")
