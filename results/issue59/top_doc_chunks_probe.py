"""TOP_DOC_CHUNKS at 1 and 2 on a folder: supporting-doc and answer-bearing recall@4 of fused retrieval, no model call.
    PYTHONPATH=. python results/issue59/top_doc_chunks_probe.py debian/docs debian/golden.json"""
import sys, json
import retrieve
from pathlib import Path
corpus, golden = Path(sys.argv[1]), Path(sys.argv[2])
items = retrieve.eval_items(golden, 0, corpus)
out = {}
for t in (1, 2):
    retrieve.TOP_DOC_CHUNKS = t
    rep = retrieve.evaluate(items, [4], corpus, methods=("fused",))
    out[t] = {"doc_recall@4": rep["recall"]["fused"]["4"], "answer_recall@4": rep["answer_recall"].get("fused", {}).get("4")}
print(json.dumps(out, indent=1))
