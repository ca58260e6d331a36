"""Retrieval speed, measured: index build vs raw embedding, hybrid latency, what approximate search loses.

    python -m experiments.bench_retrieval   # everything below, writes results/bench_retrieval.json
    python -m experiments.bench_retrieval --docs 500 --synthetic 20000 --queries 100   # a quicker run
    python -m experiments.bench_retrieval --ingest-only      # reading PDF/Word/HTML only (~1 min), updates the JSON

Expected output (~8 minutes on 2 cores, most of it embedding and building the 100k-chunk collection,
which is cached under .rag/bench/ for the next run): one table of figures, e.g.
    build chunks/s / raw embed() chunks/s        ratio 0.95
    hybrid p50 / p95 ms at 3,423 chunks ...
What is timed:
- build: `vector_index.build_index` over the first --docs documents of corpus/ into a fresh store, with the
  embedding model already loaded, against `embed()` of exactly the chunks that build made;
- unchanged re-run: `python vector_index.py` in a fresh process on corpus/ (its index must exist);
- hybrid latency: `Retriever.retrieve(method="fused")` with the query vector given, so the query's own
  embedding is timed apart (it is the same at any corpus size); `chain` the same way, after timing its links
  built from an empty names cache and reloaded from it;
- 100k: synthetic chunks made from the corpus (sentences of two real chunks spliced; vectors are a real
  chunk's vector plus noise, renormalised), so BM25 postings and HNSW neighbourhoods look like real data;
- overlap@10: Chroma's HNSW top 10 against exact cosine top 10 over the same vectors;
- ingestion (--ingest DIR, default catalogue/docs): `lab.documents.read_document` over every file of each format,
  best of 3 rounds, in pages/s for PDF and docs/s for the others (reading only: no chunking, no embedding); then the
  whole first build of the folder (read, chunk, embed) into a fresh store, in docs/s and chunks/s.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest.mock import patch

import numpy as np

import vector_index as vi
from lab import links
from layers import links as links_layer
from lab.cache import Cache, index_dir, portable
from retrieve import GOLDEN, Retriever, get_retriever, load_golden

ROOT = Path(__file__).parent.parent   # the repository (this file is in experiments/)
SEED = 0


def pct(values, q):
    return float(np.percentile(values, q)) * 1000


def bench_build(n_docs, rounds=2):
    """Build a fresh store over n_docs documents, then embed the same chunks raw; alternate the two
    `rounds` times and keep each one's best round, so a busy moment on the machine hurts neither."""
    vi.embed(["warm-up"])  # load the model outside both timings
    builds, raws = [], []
    with tempfile.TemporaryDirectory() as tmp:
        sub = Path(tmp) / "docs"
        sub.mkdir()
        for p in sorted(vi.CORPUS_DIR.glob("*.txt"))[:n_docs]:
            shutil.copy(p, sub / p.name)
        for n in range(rounds):
            with patch.dict(os.environ, {"RAG_INDEX_DIR": str(Path(tmp) / f"store{n}")}):
                report = vi.build_index(sub, vi.DEFAULT_CHUNKER, progress=False)
                texts = vi.get_all(vi.get_collection(sub, vi.DEFAULT_CHUNKER), ["documents"])["documents"]
            builds.append(report["embedded"] / report["seconds"])
            t = time.perf_counter()
            vi.embed(texts)
            raws.append(len(texts) / (time.perf_counter() - t))
    return {"docs": n_docs, "chunks": len(texts), "build_chunks_per_s": max(builds),
            "raw_embed_chunks_per_s": max(raws), "ratio": max(builds) / max(raws), "rounds": rounds}


def bench_ingest(folder, rounds=3):
    """Reading files by format (best of `rounds`), then one first build of the whole folder into a fresh store."""
    from lab.documents import EXTENSIONS, read_document
    vi.embed(["warm-up"])
    files = sorted(p for p in Path(folder).rglob("*") if p.is_file() and p.suffix.lower() in EXTENSIONS)
    out = {"folder": portable(str(Path(folder).resolve())), "rounds": rounds}
    for kind in ("pdf", "docx", "html", "md", "txt"):
        group = [p for p in files if {"htm": "html"}.get(p.suffix.lower()[1:], p.suffix.lower()[1:]) == kind]
        if not group:
            continue
        docs, best = [read_document(p) for p in group], float("inf")
        for _ in range(rounds):
            t = time.perf_counter()
            for p in group:
                read_document(p)
            best = min(best, time.perf_counter() - t)
        pages = sum(max((b.breaks[-1][1] if b.breaks else b.page for b in d.blocks), default=0) for d in docs)
        out[kind] = {"files": len(group), "pages": pages, "mb": sum(p.stat().st_size for p in group) / 2**20,
                     "seconds": best, "docs_per_s": len(group) / best, "pages_per_s": pages / best if pages else None}
    with tempfile.TemporaryDirectory() as tmp, patch.dict(os.environ, {"RAG_INDEX_DIR": tmp}):
        report = vi.build_index(Path(folder), vi.DEFAULT_CHUNKER, progress=False)
    out["build"] = {"docs": report["docs"], "chunks": report["embedded"], "seconds": report["seconds"],
                    "chunks_per_s": report["embedded"] / report["seconds"]}
    return out


def ingest_rows(g):
    rate = lambda f: (f"{f['pages_per_s']:.0f} pages/s, " if f["pages_per_s"] else "") + f"{f['docs_per_s']:.0f} docs/s"
    rows = [(f"read {k.upper()}: {g[k]['files']} files" + (f", {g[k]['pages']} pages" if g[k]["pages"] else ""),
             rate(g[k])) for k in ("pdf", "docx", "html", "md", "txt") if k in g]
    b = g["build"]
    return rows + [(f"first build of {Path(g['folder']).name}/ ({b['chunks']} chunks)",
                    f"{b['seconds']:.1f} s, {b['chunks_per_s']:.1f} chunks/s")]


def print_rows(rows):
    print(f"\n{'figure':48} value")
    for name, value in rows:
        print(f"{name:48} {value}")


def bench_rerun():
    t = time.perf_counter()
    out = subprocess.run([sys.executable, str(ROOT / "vector_index.py")], capture_output=True, text=True, check=True)
    return {"seconds": time.perf_counter() - t, "output": out.stdout.strip().splitlines()[-1]}


def latency(retriever, questions, qvecs, repeats=1, method="fused"):
    times = []
    for _ in range(repeats):
        for q, v in zip(questions, qvecs):
            t = time.perf_counter()
            if method == "chain":
                links_layer.chain(retriever, q, 4, v)
            else:
                retriever.retrieve(q, k=4, depth=12, method=method, qvec=v)
            times.append(time.perf_counter() - t)
    return {"p50_ms": pct(times, 50), "p95_ms": pct(times, 95), "n": len(times)}


def chain_figures(retriever, questions, qvecs):
    """The chain method's latency, after timing what its links cost: every chunk's names computed into an
    empty cache, then the same links built again from a fresh read of that cache (an unchanged reload)."""
    with tempfile.TemporaryDirectory() as tmp:  # never the user's cache (synthetic names stay out of it)
        times = []
        for _ in range(2):
            t = time.perf_counter()
            built = links.Links(retriever.texts, retriever.metas, Cache("links", tmp))
            links_layer._LINKS[id(retriever)] = (retriever, built)
            times.append(time.perf_counter() - t)
    latency(retriever, questions[:20], qvecs[:20], method="chain")
    return {"links_build_s": times[0], "links_cached_s": times[1],
            **latency(retriever, questions, qvecs, repeats=2, method="chain")}


def overlap_at_10(collection, vectors, ids, qvecs):
    """Mean share of the exact cosine top 10 that Chroma's approximate top 10 also returns."""
    exact = np.argsort(-(qvecs @ vectors.T), axis=1)[:, :10]
    shares = []
    for q, ex in zip(qvecs, exact):
        got = set(collection.query(query_embeddings=[q], n_results=10, include=[])["ids"][0])
        shares.append(len(got & {ids[i] for i in ex}) / 10)
    return float(np.mean(shares))


def synthetic_collection(base, n, fresh):
    """A cached collection of n synthetic chunks derived from the base retriever's chunks."""
    import chromadb
    from chromadb.config import Settings
    path = index_dir() / "bench" / f"synthetic-{n}"
    if fresh and path.exists():
        shutil.rmtree(path)
    c = chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))
    col = c.get_or_create_collection("synthetic", embedding_function=None, configuration={"hnsw": {"space": "cosine"}})
    rng = np.random.default_rng(SEED)
    base_vecs = np.asarray(vi.get_all(base.collection, ["embeddings"])["embeddings"], dtype=np.float32)
    m = len(base.ids)
    a, b = rng.integers(0, m, n), rng.integers(0, m, n)
    texts = [_splice(base.texts[i], base.texts[j]) for i, j in zip(a, b)]
    vecs = base_vecs[a] + rng.normal(0, 0.02, (n, base_vecs.shape[1])).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    ids = [f"syn{i}#0" for i in range(n)]
    if col.count() != n:
        from tqdm import tqdm
        for s in tqdm(range(0, n, 5000), desc="synthetic collection", unit="batch", file=sys.stderr):
            col.upsert(ids=ids[s:s + 5000], embeddings=vecs[s:s + 5000], documents=texts[s:s + 5000],
                       metadatas=[{"doc": f"syn{i}", "title": "synthetic", "n": 0, "total": 1, "hash": "-"}
                                  for i in range(s, min(n, s + 5000))])
    return col, vecs, ids


def _splice(x, y):
    """Two chunks -> one: the first half of x's sentences with the second half of y's."""
    sx, sy = vi.split_sentences(x), vi.split_sentences(y)
    return " ".join(sx[:max(1, len(sx) // 2)] + sy[len(sy) // 2:])


def main():
    os.environ.setdefault("RAG_EMBED_THREADS", str(os.cpu_count() or 1))   # no model runs here: every core embeds
    ap = argparse.ArgumentParser(description="Benchmark index build, hybrid retrieval latency and ANN loss.")
    ap.add_argument("--docs", type=int, default=1000, help="documents for the build-throughput figure")
    ap.add_argument("--synthetic", type=int, default=100_000, help="chunks in the synthetic collection")
    ap.add_argument("--queries", type=int, default=300, help="golden questions used as queries")
    ap.add_argument("--fresh", action="store_true", help="rebuild the cached synthetic collection")
    ap.add_argument("--json", type=Path, default=ROOT / "results" / "bench_retrieval.json", help="where to write")
    ap.add_argument("--ingest", type=Path, default=ROOT / "catalogue" / "docs",
                    help="folder of PDF/Word/HTML/Markdown files whose reading is timed (default catalogue/docs)")
    ap.add_argument("--ingest-only", action="store_true",
                    help="measure reading --ingest only; the JSON's other figures stay as they are")
    args = ap.parse_args()
    if not args.ingest.is_dir():
        sys.exit(f"bench_retrieval: --ingest folder {args.ingest} does not exist")
    if args.ingest_only:
        res = json.loads(args.json.read_text()) if args.json.exists() else {}
        res["ingest"] = bench_ingest(args.ingest)
        print_rows(ingest_rows(res["ingest"]))
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(res, indent=1) + "\n")
        return print(f"\nwrote {args.json}")
    print(f"docs={args.docs} synthetic={args.synthetic} queries={args.queries} store={index_dir()}")
    try:
        base = get_retriever()
    except vi.CorpusError as e:
        sys.exit(f"bench_retrieval: {e}")
    questions = [g["question"] for g in load_golden(GOLDEN)][:args.queries]
    res = {"build": bench_build(args.docs), "rerun": bench_rerun()}
    t = time.perf_counter()
    qvecs = np.stack([vi.embed([q])[0] for q in questions])  # one at a time, as a user's query is
    res["query_embedding_ms"] = (time.perf_counter() - t) / len(questions) * 1000
    latency(base, questions[:20], qvecs[:20])  # warm caches
    base_vecs = np.asarray(vi.get_all(base.collection, ["embeddings"])["embeddings"], dtype=np.float32)
    res["corpus"] = {"chunks": len(base.ids), **latency(base, questions, qvecs, repeats=2),
                     "overlap_at_10": overlap_at_10(base.collection, base_vecs, base.ids, qvecs)}
    res["corpus"]["chain"] = chain_figures(base, questions, qvecs)
    col, vecs, ids = synthetic_collection(base, args.synthetic, args.fresh)
    big = Retriever(collection=col)
    latency(big, questions[:20], qvecs[:20])
    res["synthetic"] = {"chunks": len(big.ids), **latency(big, questions, qvecs, repeats=2),
                        "overlap_at_10": overlap_at_10(col, vecs, ids, qvecs)}
    res["synthetic"]["chain"] = chain_figures(big, questions, qvecs)
    res["ingest"] = bench_ingest(args.ingest)
    b = res["build"]
    rows = [("build chunks/s (titled, model loaded)", f"{b['build_chunks_per_s']:.1f}"),
            ("raw embed() chunks/s, same chunks", f"{b['raw_embed_chunks_per_s']:.1f}"),
            ("build / raw ratio", f"{b['ratio']:.2f}"),
            ("unchanged re-run of vector_index.py, s", f"{res['rerun']['seconds']:.1f}"),
            ("query embedding, ms", f"{res['query_embedding_ms']:.1f}")]
    for name in ("corpus", "synthetic"):
        r = res[name]
        rows += [(f"hybrid p50 / p95 ms at {r['chunks']:,} chunks", f"{r['p50_ms']:.1f} / {r['p95_ms']:.1f}"),
                 (f"chain p50 / p95 ms at {r['chunks']:,} chunks",
                  f"{r['chain']['p50_ms']:.1f} / {r['chain']['p95_ms']:.1f}"),
                 (f"chain links built / reloaded s at {r['chunks']:,} chunks",
                  f"{r['chain']['links_build_s']:.1f} / {r['chain']['links_cached_s']:.1f}"),
                 (f"HNSW overlap@10 vs exact at {r['chunks']:,} chunks", f"{r['overlap_at_10']:.3f}")]
    print_rows(rows + ingest_rows(res["ingest"]))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(res, indent=1) + "\n")
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
