"""Layer on week 2's retrieval and week 6's multi-hop answer: follow the links a passage names, with no model call.
HotpotQA and MuSiQue were built along Wikipedia's links, so the passage that answers hop 1 usually names the document
of hop 2, by its title or by a rare name the two share; lab/links.py says what a passage names and ranks the chain
(chain_rank, with its constants and how they were chosen).

    python -m experiments.chain_eval --split test          # recall@k: this chain beside other second hops
    python assembly.py "q" --off links                      # the lab without it: week 6's decomposition for a
                                                            # multi-hop route

- `retrieve_chunks(..., method="chain")`: week 2's retrieve_chunks with one more method, hop 1 fused and hop 2 along
  the links of its top passages; a reached passage carries `via` (the label or chunk id of the chunk that names it,
  the link's kind and name) and "link" in found_by. Any other method is week 2's.
- `chain_answer(question)`: one chain retrieval, one cited answer (generate()): a multi-hop answer at one LLM call,
  the route week 6's smart_answer takes for a multi-hop question when the assembly passes it (multi=chain_answer).
Measured: supporting-doc recall@4 of multi-hop questions, fused -> chain, on the test halves: golden.json and
catalogue/golden.json (results/retrieval_chain_test.txt, results/issue45/chain.txt). The ablation (`python
benchmark.py --ablation`, smart, results/issue59/ablation.txt, embedded 1.5B): F1 +0.044 on golden.json test
(n = 134), +0.055 on debian/ (n = 56), +0.137 on the catalogue test (n = 82), about one call a question fewer.
Not handled: a hop whose link is a phrase no title or rare name carries.
"""
import time
from pathlib import Path

import numpy as np

import llm
import retrieve
from generate import check_question, generate
from lab import links, steps
from multihop import FINAL_K, finish
from retrieve import CORPUS_DIR, DEFAULT_CHUNKER, fuse
from vector_index import embed

_LINKS = {}   # id(retriever) -> (retriever, links.Links): what each chunk names, built on the first chain query


def links_of(retriever):
    """What each chunk of the retriever's collection names (links.Links), built once per retriever."""
    if id(retriever) not in _LINKS or _LINKS[id(retriever)][0] is not retriever:
        _LINKS[id(retriever)] = (retriever, links.Links(retriever.texts, retriever.metas))
    return _LINKS[id(retriever)][1]


def chain(retriever, query, k, qvec):
    """Hop 1 fused, hop 2 along the links of its top passages (links.chain_rank); no model call.
    A reached passage carries `via`: {"from": seed's label or chunk id, "kind": title|name, "name"}."""
    depth = max(links.CHAIN_DEPTH, k)
    dense_hits, bm25 = retriever.dense(qvec, depth), retriever.bm25.scores(query)
    bm25_hits = retriever.bm25.best(bm25, depth)
    dense_score, bm25_score = dict(dense_hits), dict(bm25_hits)
    fused = fuse(dense_hits, bm25_hits, lambda i: retriever.metas[i]["doc"], depth)

    def cosine(chunks):  # hop-1 chunks have theirs; a reached chunk's vector is read from the store
        missing = [retriever.ids[i] for i in chunks if i not in dense_score]
        got = (retriever.collection.get(ids=missing, include=["embeddings"]) if missing
               else {"ids": [], "embeddings": []})
        vecs = dict(zip(got["ids"], got["embeddings"]))
        return {i: dense_score[i] if i in dense_score else float(np.dot(vecs[retriever.ids[i]], qvec)) for i in chunks}

    read = {}   # rest text -> (vector, BM25 scores): chain_rank asks of the same rest to rank and then to show

    def rescore(text, chunks):  # relevance to what the question still asks, as hop 1 scores (links.chain_rank)
        vec, bm = read[text] if text in read else read.setdefault(text, (embed([text])[0], retriever.bm25.scores(text)))
        got = retriever.collection.get(ids=[retriever.ids[i] for i in chunks], include=["embeddings"])
        vecs = dict(zip(got["ids"], got["embeddings"]))
        top = float(bm.max()) or 1.0
        return {i: float(np.dot(vecs[retriever.ids[i]], vec)) + links.REST_BM25 * float(bm[i]) / top for i in chunks}

    ranked = links.chain_rank(fused, cosine, bm25, links_of(retriever), retriever.texts, query, k, rescore)
    out, label = [], {i: f"S{n}" for n, (i, _, _) in enumerate(ranked, 1)}
    for n, (i, score, via) in enumerate(ranked, 1):
        found_by = [name for name, sc in (("dense", dense_score), ("bm25", bm25_score)) if i in sc]
        if via:
            via = {**via, "from": label.get(via["from"], retriever.ids[via["from"]])}
            found_by.append("link")
        out.append({"id": f"S{n}", **retriever.passage(i, score=score, dense=dense_score.get(i),
                                                   bm25=bm25_score.get(i), found_by=found_by, via=via)})
    return out



def retrieve_chunks(query, k=4, depth=12, corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, method="chain", qvec=None):
    """Week 2's retrieve_chunks with method "chain" (the default here); any other method is week 2's own."""
    if method != "chain":
        return retrieve.retrieve_chunks(query, k, depth, corpus, chunker, method, qvec)
    found = chain(retrieve.get_retriever(corpus, chunker), query, k, embed([query])[0] if qvec is None else qvec)
    retrieve.record(query, k, depth, method, corpus, chunker, found)
    return found


def link_line(p):
    """How a chain passage was reached: "S3 reached from S1 via 'Windhoek' (title)"."""
    return f"{p['id']} {links.describe(p['via'])}"


def chain_answer(question, final_k=FINAL_K, corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, trace=None):
    """One `chain` retrieval (hop 2 along the links of hop 1's passages, no model call), one cited answer:
    a multi-hop answer at one LLM call. The trace's retrieve step lists the links taken."""
    question, trace, start = check_question(question), steps.trace(trace), time.perf_counter()
    with llm.counting() as cost:
        passages = [dict(p, hop=0) for p in retrieve_chunks(question, final_k, corpus=corpus, chunker=chunker)]
        trace.append({"step": "retrieve", "hop": 0, "query": question, "chunks": [p["chunk_id"] for p in passages],
                      "method": "chain", "links": [link_line(p) for p in passages if p.get("via")]})
        result = generate(question, passages=passages)
    return finish(result, question, "chain", trace, passages, None, cost, start)




def main():
    import argparse
    import sys
    from vector_index import CorpusError, DEMO_QUESTION
    ap = argparse.ArgumentParser(description="Week 2's retrieval with hop 2 along the links: print the passages and "
                                             "how each reached one was reached.")
    ap.add_argument("query", nargs="?", default=DEMO_QUESTION, help="the question")
    ap.add_argument("--k", type=int, default=4, help="passages to return")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="folder of documents (.txt .md .pdf .docx .html)")
    args = ap.parse_args()
    print(f"corpus={args.corpus} k={args.k} method=chain")
    try:
        found = retrieve_chunks(args.query, args.k, corpus=args.corpus)
    except CorpusError as e:
        sys.exit(f"links: {e}")
    retrieve.print_passages(found)
    for p in found:
        if p.get("via"):
            print(link_line(p))


if __name__ == "__main__":
    main()
