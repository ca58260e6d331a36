r"""Week 2: hybrid retrieval. Dense chunks from Chroma fused with BM25 chunks, labelled S1..Sk.

    python retrieve.py \
        "Who was the first president of the association which published Journal of Psychotherapy Integration?"
    python retrieve.py --eval                      # recall@2,4,10 of every method on golden.json
    python retrieve.py --eval --corpus DIR --golden FILE --k 2,4,10 --json results/retrieval.json

Expected output of a query (about 8 s, most of it loading the embedding model): the settings, then
one row per passage: label, chunk id, found by (dense / bm25), fused and per-retriever scores, a snippet; under it,
where the passage comes from when its file has pages or sections ("handbook.pdf p. 12 · Admissions > Prerequisites").
`--eval` builds or updates the index for the corpus first (kept apart from corpus/'s index), then prints
supporting-doc recall@k per method split single/multi and per source; ~30 s on golden.json once indexed. `--json`
writes the table and the per-question rows it is the mean of (grading/grade.py recomputes the table from them).

The methods (`method=`):
- `dense`: the k nearest chunks by cosine similarity (Chroma, all-MiniLM-L6-v2);
- `bm25`: the k best chunks by BM25;
- `seed_interleave`: the seed code as written, kept as the baseline: dense chunks, then whole BM25
  documents (their first 1,200 characters) that dense did not find, then cut to k. When dense returns k
  chunks the BM25 safety net is cut off, and when it survives it feeds a document prefix, not the passage
  that matched;
- `fused` (default): reciprocal rank fusion at chunk level over both top-`depth` lists, one chunk per
  document (a second chunk of a document already shown adds less than a new document), and a guarantee:
  the best BM25 document (scored by its best chunk) is always represented by that chunk;
`--split dev|test` evaluates one half. Following the links a passage names (hop 2 without a model call) is a layer
on this step: layers/links.py.
`--eval` also prints answer-bearing recall: the share of items whose passages hold the last hop's answer (and, for
items with a decomposition, every hop's): supporting-doc recall counts a document whose shown chunk is the wrong one.
"""
import argparse
import contextlib
import contextvars
import functools
import sys
from pathlib import Path


from golden import split_of
import vector_index
from bm25_baseline import BM25, doc_index, search as bm25_doc_search
from golden import (DRAW_ENV, GOLDEN, GOLDEN_KEYS, LABELS, answer_table, answers_held,  # noqa: F401 (re-exported)
                    doc_recall, draw_seed, golden_problem, hop_answers, labels, load_golden, recall_table,
                    sample_golden)
from lab.documents import where
from lab.cache import portable, ranked, write_json
from vector_index import (CORPUS_DIR, DEFAULT_CHUNKER, CHUNKERS, DEMO_QUESTION, CorpusError, build_index, embed,
                          get_all, get_collection)

METHODS = ("bm25", "dense", "seed_interleave", "fused")
RRF_K = 60                 # the usual reciprocal-rank-fusion constant (Cormack et al. 2009)
SEED_PREFIX_CHARS = 1200   # what the seed code fed of a BM25 document
_RETRIEVERS = {}


class Retriever:
    """One collection in memory: Chroma for the vectors, the chunk texts and a BM25 index over them."""

    def __init__(self, corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, collection=None):
        self.corpus = Path(corpus)
        self.collection = collection or get_collection(corpus, chunker)
        data = get_all(self.collection, ["documents", "metadatas"])
        self.ids, self.texts, self.metas = data["ids"], data["documents"], data["metadatas"]
        self.pos = {cid: i for i, cid in enumerate(self.ids)}
        self.bm25 = BM25(self.texts)

    @functools.cached_property
    def by_doc(self):
        """{doc: [chunk positions, in index order]}: a document's chunks (GraphRAG's passages of an entity's docs)."""
        out = {}
        for i, m in enumerate(self.metas):
            out.setdefault(m["doc"], []).append(i)
        return out

    def dense(self, qvec, depth):
        """[(chunk index, cosine)] of the depth nearest chunks (Chroma's approximate search; lab.cache.ranked keeps
        each ranking, so an index built again answers a query as the one it was first asked of)."""
        r = ranked(self.collection, self.ids, self.metas, qvec, min(depth, len(self.ids)))
        return [(self.pos[c], 1.0 - d) for c, d in zip(r["ids"], r["distances"]) if c in self.pos]

    def passage(self, i, **scores):
        """A chunk as a passage; "where" ('handbook.pdf p. 12 · Admissions') only when it has a page or section."""
        m = self.metas[i]
        shown = {"where": where(m)} if m.get("page") or m.get("section") else {}
        return {"chunk_id": self.ids[i], "doc": m["doc"], "title": m["title"], "text": self.texts[i], **shown, **scores}

    def retrieve(self, query, k=4, depth=12, method="fused", qvec=None):
        """See retrieve_chunks()."""
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}: choose one of {', '.join(METHODS)}")
        depth = max(depth, k)
        dense_hits = self.dense(embed([query])[0] if qvec is None else qvec, depth) if method != "bm25" else []
        bm25_hits = self.bm25.top(query, depth) if method in ("bm25", "fused") else []
        dense_score, bm25_score = dict(dense_hits), dict(bm25_hits)
        if method == "seed_interleave":
            return self.seed_interleave(query, dense_hits[:k], k)
        if method == "fused":
            chosen = fuse(dense_hits, bm25_hits, lambda i: self.metas[i]["doc"], k)
        else:
            chosen = (dense_hits if method == "dense" else bm25_hits)[:k]
        out = []
        for n, (i, score) in enumerate(chosen, 1):
            found_by = [name for name, s in (("dense", dense_score), ("bm25", bm25_score)) if i in s]
            out.append({"id": f"S{n}", **self.passage(i, score=score, dense=dense_score.get(i),
                                                       bm25=bm25_score.get(i), found_by=found_by)})
        return out

    def seed_interleave(self, query, dense_hits, k):
        """The seed code's fusion, kept as written: dense chunks, then BM25 documents' prefixes, cut to k."""
        docs = doc_index(self.corpus)[0]
        out = [self.passage(i, score=s, dense=s, bm25=None, found_by=["dense"]) for i, s in dense_hits]
        shown = {p["doc"] for p in out}
        for doc, s in bm25_doc_search(query, k, self.corpus):
            if doc not in shown and doc in docs:
                d = docs[doc]
                out.append({"chunk_id": f"{doc}#0", "doc": doc, "title": d.title, "score": s, "dense": None,
                            "bm25": s, "found_by": ["bm25"], "text": f"{d.title}\n{d.text}"[:SEED_PREFIX_CHARS]})
        return [{"id": f"S{n}", **p} for n, p in enumerate(out[:k], 1)]


def get_retriever(corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER):
    """The Retriever for (corpus, chunker), reloaded after this process rebuilt an index."""
    key = (str(Path(corpus).resolve()), chunker, vector_index.GENERATION)
    if key not in _RETRIEVERS:
        for stale in [k for k in _RETRIEVERS if k[2] != vector_index.GENERATION]:
            del _RETRIEVERS[stale]
        _RETRIEVERS[key] = Retriever(corpus, chunker)
    return _RETRIEVERS[key]


def rrf(dense_hits, bm25_hits, keep=lambda i: True):
    """{chunk: reciprocal-rank-fusion score} over both ranked lists, for the chunks `keep` accepts."""
    fused = {}
    for hits in (dense_hits, bm25_hits):
        for rank, (i, _) in enumerate(hits):
            if keep(i):
                fused[i] = fused.get(i, 0.0) + 1.0 / (RRF_K + rank + 1)
    return fused


def fuse(dense_hits, bm25_hits, doc_of, k):
    """Reciprocal rank fusion of two ranked lists of chunk indexes, one chunk per document, with the
    top BM25 chunk guaranteed a place. ([(3, .9), (5, .8)], [(5, 12.), (7, 9.)]) -> [(5, .0328..), ...]"""
    fused = rrf(dense_hits, bm25_hits)
    ranked, seen = [], set()
    for i in sorted(fused, key=lambda i: (-fused[i], i)):
        if doc_of(i) not in seen:
            seen.add(doc_of(i))
            ranked.append((i, fused[i]))
    top = ranked[:k]
    if bm25_hits and k > 0:
        best = bm25_hits[0][0]  # the best BM25 chunk stands for the best BM25 document
        if all(doc_of(i) != doc_of(best) for i, _ in top):
            top = top[:k - 1] + [(best, fused[best])]
    return top


def retrieve_chunks(query, k=4, depth=12, corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, method="fused", qvec=None):
    """Question -> k passages, each {id: 'S1', chunk_id, doc, title, text, score, dense, bm25, found_by}, and
    where ('handbook.pdf p. 12 · Admissions') when the chunk has a page or a section.

    `qvec` is the query's embedding when the caller has it already (batch evaluation). Inside recording(), the
    call and the chunks it found are logged."""
    found = get_retriever(corpus, chunker).retrieve(query, k, depth, method, qvec)
    record(query, k, depth, method, corpus, chunker, found)
    return found


def record(query, k, depth, method, corpus, chunker, found):
    """Inside recording(), log one retrieval and the chunks it found (a layer's retrieval logs itself too)."""
    if (log := _RECORDING.get()) is not None:
        log.append({"query": query, "k": k, "depth": depth, "method": method, "chunker": chunker,
                    "corpus": portable(str(corpus)), "chunks": [p["chunk_id"] for p in found]})


_RECORDING = contextvars.ContextVar("retrievals", default=None)


@contextlib.contextmanager
def recording():
    """Every retrieve_chunks() call made in the block (this thread), logged: {query, k, depth, method, chunker,
    corpus (relative inside the repository), chunks: [chunk ids]}. What a pattern that writes its own queries
    retrieved, so a grader can re-run each query (grading/drift.py).
        with recording() as log:
            answer = flare_answer(question)   # log: [{"query": question, "k": 4, ...}, {"query": "...", ...}]"""
    log, outer = [], _RECORDING.get()
    token = _RECORDING.set(log)
    try:
        yield log
    finally:
        _RECORDING.reset(token)
        if outer is not None:   # a block inside another: the outer one sees its retrievals too
            outer.extend(log)


def eval_items(golden_path, n, corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, split=None):
    """What every evaluation starts with: the corpus index built or brought up to date (incremental, a
    couple of seconds when nothing changed), then n golden items from sample_golden (n <= 0: all), of one
    half (golden.split_of) when split is 'dev' or 'test'."""
    golden = [g for g in load_golden(golden_path) if split in (None, split_of(g))]
    if not golden:
        raise CorpusError(f"golden file {golden_path} has no {split} questions")
    r = build_index(corpus, chunker)
    if r["embedded"] or r["deleted"]:
        print(f"index: {r['chunks']} chunks, {r['embedded']} embedded now, {r['deleted']} deleted")
    return sample_golden(golden, n)


def evaluate(golden, ks, corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, depth=12, methods=METHODS):
    """Supporting-doc recall@k per method, split by type and by source/type, and the per-question rows it is the
    mean of ("rows": [{"id", "type", "source", "recall": {method: {k: recall}}}]). Items also get
    "answers": {method: {k: [last hop's answer held, every hop's held]}} (answers_held), tabled under
    "answer_recall" (last / hops: hops on items with a decomposition only)."""
    from tqdm import tqdm
    qvecs, rows = embed([g["question"] for g in golden]), []
    for g, qvec in tqdm(list(zip(golden, qvecs)), desc="eval", unit="q", file=sys.stderr):
        got = {m: {str(k): retrieve_chunks(g["question"], k, depth, corpus, chunker, m, qvec) for k in ks}
               for m in methods}
        recall = {m: {k: doc_recall(ps, g["supporting_docs"]) for k, ps in by.items()} for m, by in got.items()}
        row = {"id": g["id"], "type": g["type"], "source": g["source"], "recall": recall}
        if hops := hop_answers(g):
            row["answers"] = {m: {k: answers_held(ps, hops) for k, ps in by.items()} for m, by in got.items()}
            row["decomposed"] = len(hops) > 1
        rows.append(row)
    return {**recall_table(rows, methods, ks), **answer_table(rows, methods, ks), "corpus": str(corpus),
            "chunker": chunker, "depth": depth, "rows": rows}


def print_eval(report, ks):
    splits = [s for s in ("single", "multi", "all") if s in report["n"]]
    extra = [s for s in report["n"] if "/" in s]
    cols = [f"{s}@{k}" for k in ks for s in splits]
    print(f"\nsupporting-doc recall (n: {', '.join(f'{s} {v}' for s, v in report['n'].items())})")
    print(f"{'method':16}" + "".join(f"{c:>12}" for c in cols))
    for m, by_k in report["recall"].items():
        print(f"{m:16}" + "".join(f"{by_k[str(k)][s]:12.3f}" for k in ks for s in splits))
    print(f"\nby source, recall@{ks[len(ks) // 2]}")
    print(f"{'method':16}" + "".join(f"{s:>18}" for s in extra))
    for m, by_k in report["recall"].items():
        print(f"{m:16}" + "".join(f"{by_k[str(ks[len(ks) // 2])][s]:18.3f}" for s in extra))
    if report.get("answer_recall"):
        cols = [(k, w, s) for k in map(str, ks) for w in ("last", "hops") for s in splits + extra
                if f"{w}/{s}" in report["answer_n"] and (len(extra) > 2 or "/" not in s)]
        print("\nanswer-bearing recall: the last hop's answer (last), every hop's (hops) in a passage (n: "
              + ", ".join(f"{s} {v}" for s, v in report["answer_n"].items()) + ")")
        print(f"{'method':16}" + "".join(f"{w + '/' + s + '@' + k:>22}" for k, w, s in cols))
        for m, by_k in report["answer_recall"].items():
            print(f"{m:16}" + "".join(f"{by_k[k][w][s]:22.3f}" for k, w, s in cols))


def print_passages(passages):
    print(f"{'id':4} {'chunk':52} {'found by':11} {'score':>7} {'dense':>6} {'bm25':>6}  text")
    for p in passages:
        fmt = lambda v: f"{v:6.2f}" if v is not None else f"{'-':>6}"
        snippet = " ".join(p["text"].split())[:70]
        print(f"{p['id']:4} {p['chunk_id'][:52]:52} {'+'.join(p['found_by']):11} {p['score']:7.4f} "
              f"{fmt(p['dense'])} {fmt(p['bm25'])}  {snippet}")
        if p.get("where"):
            print(f"{'':4} {p['where']}")


def main():
    ap = argparse.ArgumentParser(description="Hybrid retrieval: print passages for a question, or --eval recall.")
    ap.add_argument("query", nargs="?", default=DEMO_QUESTION, help="the question")
    ap.add_argument("--k", help="passages to return (default 4); with --eval a list (default 2,4,10)")
    ap.add_argument("--depth", type=int, default=12, help="candidates taken from each retriever before fusion")
    ap.add_argument("--method", choices=METHODS, default="fused", help="retrieval method for a query")
    ap.add_argument("--chunker", choices=CHUNKERS, default=DEFAULT_CHUNKER, help="which collection")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="folder of documents (.txt .md .pdf .docx .html)")
    ap.add_argument("--golden", type=Path, default=GOLDEN, help="golden questions for --eval")
    ap.add_argument("--eval", action="store_true", help="recall@k of every method on the golden file")
    ap.add_argument("--limit", type=int, default=0, help="evaluate only the first N golden questions")
    ap.add_argument("--split", choices=("dev", "test"),
                    help="only the dev or test half of the golden file (golden.split_of)")
    ap.add_argument("--json", type=Path, help="write the --eval report here")
    args = ap.parse_args()
    try:
        ks = [int(x) for x in (args.k or ("2,4,10" if args.eval else "4")).split(",")]
    except ValueError:
        sys.exit(f"retrieve: --k must be integers separated by commas, got {args.k!r}")
    print(f"corpus={args.corpus} chunker={args.chunker} k={ks} depth={args.depth}"
          + (f" golden={args.golden}" if args.eval else f" method={args.method}"))
    try:
        if not args.eval:
            print_passages(retrieve_chunks(args.query, ks[0], args.depth, args.corpus, args.chunker, args.method))
            return
        golden = [g for g in eval_items(args.golden, 0, args.corpus, args.chunker)  # file order
                  if args.split in (None, split_of(g))][:args.limit or None]
        report = evaluate(golden, ks, args.corpus, args.chunker, args.depth)
    except CorpusError as e:
        sys.exit(f"retrieve: {e}")
    print_eval(report, ks)
    if args.json:
        print()
        write_json(args.json, report)


if __name__ == "__main__":
    main()
