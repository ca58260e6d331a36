"""Week 1 baseline: BM25 keyword search, over whole documents (the lab's) and over chunks (for fusion).

    python bm25_baseline.py "Who was the first president of the American Psychological Association?"
    python bm25_baseline.py --corpus DIR --k 10 "question"

Expected output (under a second, no model): the resolved settings, then one row per document:
    rank  score  doc
       1  14.21  american-psychological-association_1d2c3b4a
BM25 is the safety net of dense retrieval: exact names, numbers and rare words that an embedding blurs.
`BM25` below is the reusable piece: build it over any list of texts, ask for scores or the top k.
Not handled: stemming (\"publishes\" does not match \"published\") and phrase queries.
"""
import argparse
import re
import sys
from pathlib import Path

import numpy as np

from vector_index import CORPUS_DIR, DEMO_QUESTION, CorpusError, load_documents

TOKEN = re.compile(r"\w+")
K1, B = 1.5, 0.75        # the usual Okapi settings
_STOPWORDS = None
_DOC_INDEXES = {}        # corpus path -> (documents, doc ids, BM25): built once per process


def tokenize(text):
    """'The Eiffel Tower, in 1889!' -> ['eiffel', 'tower', '1889'] (lower-case words, no stopwords)."""
    global _STOPWORDS
    if _STOPWORDS is None:
        from bm25s.tokenization import STOPWORDS_EN
        _STOPWORDS = frozenset(STOPWORDS_EN)
    return [t for t in TOKEN.findall(text.lower()) if t not in _STOPWORDS]


class BM25:
    """Okapi BM25 over a fixed list of texts (bm25s: sparse matrices, fast at 100k texts).

    >>> BM25(["red apple", "green pear"]).top("apple", 1)
    [(0, 0.277...)]
    """

    def __init__(self, texts):
        import bm25s
        self.n = len(texts)
        self.index = bm25s.BM25(k1=K1, b=B)
        # bm25s cannot index an empty corpus or an all-empty text list; a placeholder token keeps shapes right
        self.index.index([tokenize(t) or ["\u2205"] for t in texts] or [["\u2205"]], show_progress=False)

    def scores(self, query):
        """Score of every text for the query, as a float array of length n."""
        tokens = tokenize(query)
        if not tokens or not self.n:
            return np.zeros(self.n, dtype=np.float32)
        return self.index.get_scores(tokens)[:self.n]

    def top(self, query, k):
        """[(text index, score)] of the k best texts with a score above zero, best first."""
        return self.best(self.scores(query), k)

    def best(self, s, k):
        """top() over scores already computed: the k best indexes of s with a score above zero."""
        k = min(k, self.n)
        if k <= 0:
            return []
        best = np.argpartition(-s, k - 1)[:k]
        best = best[np.argsort(-s[best], kind="stable")]
        return [(int(i), float(s[i])) for i in best if s[i] > 0]


def doc_index(corpus=CORPUS_DIR):
    """({doc_id: Doc}, [doc ids], BM25 over title + text) for a corpus folder, loaded once."""
    key = str(Path(corpus).resolve())
    if key not in _DOC_INDEXES:
        docs, _ = load_documents(corpus, quiet=True)
        ids = list(docs)
        _DOC_INDEXES[key] = (docs, ids, BM25([f"{docs[i].title}\n{docs[i].text}" for i in ids]))
    return _DOC_INDEXES[key]


def search(query, k=4, corpus=CORPUS_DIR):
    """The lab's BM25: whole documents. 'Lilu demon' -> [('lilu-mythology_66227a60', 11.9), ...]"""
    _, ids, index = doc_index(corpus)
    return [(ids[i], s) for i, s in index.top(query, k)]


def main():
    ap = argparse.ArgumentParser(description="BM25 search over whole documents of a corpus folder.")
    ap.add_argument("query", nargs="?", default=DEMO_QUESTION, help="the question")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="folder of documents (.txt .md .pdf .docx .html)")
    ap.add_argument("--k", type=int, default=5, help="documents to show")
    args = ap.parse_args()
    print(f"corpus={args.corpus} k={args.k} query={args.query!r}")
    try:
        hits = search(args.query, args.k, args.corpus)
    except CorpusError as e:
        sys.exit(f"bm25_baseline: {e}")
    print(f"{'rank':>4}  {'score':>6}  doc")
    for rank, (doc, score) in enumerate(hits, 1):
        print(f"{rank:>4}  {score:6.2f}  {doc}")


if __name__ == "__main__":
    main()
