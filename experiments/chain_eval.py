"""Week 6: which second hop helps? Link-following against an MDR-style second query, on a half of the golden file.

    python -m experiments.chain_eval --split dev   # the half the chain constants were chosen on
    python -m experiments.chain_eval --split test --json results/chain_test.json
    python -m experiments.chain_eval --corpus DIR --golden FILE   # any corpus (all its items unless --split)

Expected output (~20 s once the corpus is indexed): one row per variant, supporting-doc recall@k on multi
questions per source and on single questions, then answer-bearing recall@k (the last hop's answer in a passage,
retrieve.answers_held; not for mdr, which returns documents). No model call anywhere. The variants:
- `fused`: hop 1 alone (retrieve.py's default);
- `chain` (shipped, lab/links.py): one score over hop-1 and linked candidates, titles and shared names;
- `chain titles only` / `chain names only`: the same with NAME_BONUS / TITLE_BONUS set to 0;
- `mdr`: the second query is the question plus a hop-1 passage (multi-hop dense retrieval's idea): dense
  with the sum of the two vectors, BM25 with the two texts, fused by RRF; each of the top CHAIN_SEEDS
  passages is followed by its best second-hop chunk, then the fused list fills the rest.
"""
import argparse
import sys
from pathlib import Path
from golden import split_of
from unittest.mock import patch

import numpy as np

from lab import cache, links
from layers import links as links_layer
from retrieve import (CORPUS_DIR, DEFAULT_CHUNKER, GOLDEN, RRF_K, answers_held, doc_recall, eval_items, fuse,
                      get_retriever, hop_answers)
from vector_index import CorpusError, embed


def mdr(r, question, qvec, k):
    """The MDR-style variant's k passages (dicts with 'doc')."""
    depth = links.CHAIN_DEPTH
    doc = lambda i: r.metas[i]["doc"]
    fused = [i for i, _ in fuse(r.dense(qvec, depth), r.bm25.top(question, depth), doc, depth)]
    seeds = fused[:links.CHAIN_SEEDS]
    got = r.collection.get(ids=[r.ids[s] for s in seeds], include=["embeddings"])
    vecs = dict(zip(got["ids"], got["embeddings"]))
    order = []
    for s in seeds:
        v = qvec + np.asarray(vecs[r.ids[s]])
        score = {}
        for hits in (r.dense(v / np.linalg.norm(v), depth), r.bm25.top(f"{question} {r.texts[s]}", depth)):
            for rank, (i, _) in enumerate(hits):
                score[i] = score.get(i, 0.0) + 1.0 / (RRF_K + rank + 1)
        order += [s] + [i for i in sorted(score, key=lambda i: -score[i]) if doc(i) != doc(s)][:1]
    out, seen = [], set()
    for i in order + fused:
        if doc(i) not in seen:
            seen.add(doc(i))
            out.append({"doc": doc(i)})
    return out[:k]


VARIANTS = {
    "fused": lambda r, q, v, k: r.retrieve(q, k, method="fused", qvec=v),
    "chain": lambda r, q, v, k: links_layer.chain(r, q, k, v),
    "chain titles only": lambda r, q, v, k: _with(r, q, v, k, NAME_BONUS=0.0),
    "chain names only": lambda r, q, v, k: _with(r, q, v, k, TITLE_BONUS=0.0),
    "mdr": mdr,
}


def _with(r, q, v, k, **constants):
    with patch.multiple(links, **constants):
        return links_layer.chain(r, q, k, v)


def evaluate(items, ks, corpus, chunker):
    from tqdm import tqdm
    r, qvecs, sums, held = get_retriever(corpus, chunker), embed([g["question"] for g in items]), {}, {}
    for g, v in tqdm(list(zip(items, qvecs)), desc="chain_eval", unit="q", file=sys.stderr):
        split, hops = (f"{g['source']}/multi" if g["type"] == "multi" else "single"), hop_answers(g)
        for name, fn in VARIANTS.items():
            for k in ks:
                got = fn(r, g["question"], v, k)
                for s in {split, g["type"]}:
                    sums.setdefault(name, {}).setdefault(str(k), {}).setdefault(s, []).append(
                        doc_recall(got, g["supporting_docs"]))
                    if hops and name != "mdr":   # mdr's passages are documents, not chunks
                        held.setdefault(name, {}).setdefault(str(k), {}).setdefault(s, []).append(
                            answers_held(got, hops)[0])
    n = {s: len(v) for s, v in sums["fused"][str(ks[0])].items()}
    mean = lambda table: {m: {k: {s: float(np.mean(v)) for s, v in by.items()} for k, by in bk.items()}
                          for m, bk in table.items()}
    return {"recall": mean(sums), "n": n, "answer_recall": mean(held)}


def main():
    ap = argparse.ArgumentParser(description="Chain variants (links vs an MDR-style second query): recall@k, no "
                                 "model call.")
    ap.add_argument("--split", choices=("dev", "test"),
                    help="one half of the golden file (golden.split_of); default all")
    ap.add_argument("--k", default="2,4", help="passages per question, comma list (default 2,4)")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="folder of documents (.txt .md .pdf .docx .html)")
    ap.add_argument("--chunker", default=DEFAULT_CHUNKER, help="which collection")
    ap.add_argument("--golden", type=Path, default=GOLDEN, help="golden questions")
    ap.add_argument("--json", type=Path, help="write the report here")
    args = ap.parse_args()
    try:
        ks = [int(x) for x in args.k.split(",")]
        items = [g for g in eval_items(args.golden, 0, args.corpus, args.chunker)
                 if args.split in (None, split_of(g))]
        report = {**evaluate(items, ks, args.corpus, args.chunker), "split": args.split, "corpus": str(args.corpus)}
    except ValueError:
        sys.exit(f"chain_eval: --k must be integers separated by commas, got {args.k!r}")
    except CorpusError as e:
        sys.exit(f"chain_eval: {e}")
    cols = [(k, s) for k in map(str, ks) for s in sorted(report["n"], key=lambda s: (s == "single", s))]
    print(f"split={args.split or 'all'} corpus={args.corpus} n: "
          + ", ".join(f"{s} {v}" for s, v in report["n"].items()))
    print(f"{'variant':20}" + "".join(f"{s + '@' + k:>18}" for k, s in cols))
    for name, by_k in report["recall"].items():
        print(f"{name:20}" + "".join(f"{by_k[k][s]:18.3f}" for k, s in cols))
    print("answer-bearing recall (the last hop's answer in a passage)")
    for name, by_k in report["answer_recall"].items():
        print(f"{name:20}" + "".join(f"{by_k[k][s]:18.3f}" if s in by_k[k] else f"{'-':>18}" for k, s in cols))
    if args.json:
        cache.write_json(args.json, report)


if __name__ == "__main__":
    main()
