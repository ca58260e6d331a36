"""CRAG's outside source: one `search(query, k)` over two backends, results shaped like retrieved passages.

    python web_search.py "Who founded Quillfeather Observatory?"             # the local stand-in (default)
    RAG_WEB=ddgs python web_search.py "Who founded Quillfeather Observatory?"  # the real web, when reachable
    python web_search.py --backend ddgs --k 5 "query"

Expected output (~5 s, most of it loading the embedding model; the first run also indexes the stand-in
folder, ~15 short documents): the resolved settings, then one row per result: label, backend, URL, snippet.

Backends (`backend=`, else RAG_WEB, else "local"):
- `local`: a folder of documents indexed like the corpus (vector_index.build_index, retrieve.retrieve_chunks),
  by default `web_standin/`, which the project ships: short documents written for the project about an
  invented province, so their facts are in no corpus document and in no model's memory. RAG_WEB_DIR or
  `folder=` points it at another folder. Each document's `URL:` line is its provenance (`.invalid` addresses:
  reserved, never real); the folder's README is indexed like any file but never returned.
- `ddgs`: a real web search through the `ddgs` package (imported only here, so the repository works without
  it). Opt in with RAG_WEB=ddgs or `--backend ddgs`. When the package is missing, the network is down or no
  answer comes within TIMEOUT seconds, one notice line goes to stderr and the local backend answers instead:
  never a crash, never a hang (the search runs in a daemon thread that is abandoned after the time-out).
Every result is a passage dict like retrieve_chunks() gives (id S1.., chunk_id, doc, title, text, score,
found_by) plus `url`, `backend` (and `path` for local files), so it is cited and verified like any source.
Web chunk ids and doc ids start with "web:" so they never collide with corpus ids.
Not handled: paging, result de-duplication across backends, fetching whole pages (ddgs gives snippets).
"""
import argparse
import os
import re
import sys
import threading
from pathlib import Path

import vector_index
from retrieve import retrieve_chunks
from vector_index import EXTENSIONS, CorpusError, build_index

HERE = Path(__file__).parent
STANDIN_DIR = HERE / "web_standin"   # the project's offline "web"
BACKENDS = ("local", "ddgs")
DEFAULT_BACKEND = "local"            # offline and in tests; the real web is opt-in
TIMEOUT = 5.0                        # seconds the real web may take before the stand-in answers instead
README_DOC = "README"                # the folder's own note: indexed, never returned
URL_LINE = re.compile(r"^\s*URL:\s*(\S+)", re.M)
URL_IN_CHUNK = re.compile(r"\bURL:\s*\S+\s*")   # the titled chunker joins the URL line to the first sentence
_BUILT = {}        # folder -> vector_index.GENERATION after this process last built it
_NOTICES = set()   # each notice is printed once per process


class WebUnavailable(RuntimeError):
    """The real web did not answer; the message says why in a few words."""


def notice(message):
    """One line on stderr, once per process per message."""
    if message not in _NOTICES:
        _NOTICES.add(message)
        print(f"notice: {message}", file=sys.stderr)


def resolve_backend(backend=None):
    """Argument, else RAG_WEB, else 'local'. ValueError for an unknown name."""
    name = (backend or os.environ.get("RAG_WEB") or DEFAULT_BACKEND).strip().lower()
    if name not in BACKENDS:
        raise ValueError(f"unknown web backend {name!r}: use {' or '.join(BACKENDS)} (RAG_WEB or --web)")
    return name


def standin_dir(folder=None):
    return Path(folder or os.environ.get("RAG_WEB_DIR") or STANDIN_DIR)


def ensure_index(folder):
    """Build or update the folder's index once per process (unchanged files cost a metadata read)."""
    key = str(Path(folder).resolve())
    if _BUILT.get(key) != vector_index.GENERATION:
        build_index(folder, progress=False)
        _BUILT[key] = vector_index.GENERATION


def fingerprint(folder=None):
    """What the stand-in's index holds (vector_index.fingerprint), built or brought up to date first: CRAG's answers
    are keyed by it beside the corpus's."""
    folder = standin_dir(folder)
    ensure_index(folder)
    return vector_index.fingerprint(folder)


def provenance(folder):
    """{doc id: (url or None, path relative to the repository when inside it)} from each file's URL: line."""
    out = {}
    for path in sorted(Path(folder).rglob("*")):
        if path.is_file() and path.suffix.lower() in EXTENSIONS:
            m = URL_LINE.search(path.read_text(encoding="utf-8", errors="replace")[:2000])
            rel = path.resolve().relative_to(HERE.resolve()) if path.resolve().is_relative_to(HERE.resolve()) else path
            out.setdefault(path.stem, (m.group(1) if m else None, str(rel)))
    return out


def local_search(query, k=3, folder=None):
    """Top-k chunks of the stand-in folder for the query, as web results with their URL or path."""
    folder = standin_dir(folder)
    ensure_index(folder)
    where = provenance(folder)
    hits = [p for p in retrieve_chunks(query, k + 1, corpus=folder) if p["doc"] != README_DOC][:k]
    out = []
    for n, p in enumerate(hits, 1):
        url, path = where.get(p["doc"], (None, str(folder / p["doc"])))
        out.append({**p, "id": f"S{n}", "chunk_id": f"web:{p['chunk_id']}", "doc": f"web:{p['doc']}",
                    "text": URL_IN_CHUNK.sub("", p["text"]).strip(), "url": url or path, "path": path,
                    "found_by": ["web-standin"], "backend": "local"})
    return out


def ddgs_search(query, k=3, timeout=None):
    """Top-k results of a real web search (ddgs). WebUnavailable when it cannot answer within `timeout`
    seconds (default TIMEOUT, read at call time)."""
    timeout = TIMEOUT if timeout is None else timeout
    try:
        from ddgs import DDGS  # optional: only the online path needs it
    except ImportError:
        raise WebUnavailable("the ddgs package is not installed (pip install ddgs==9.16.1)") from None
    box = {}

    def work():
        try:
            box["hits"] = DDGS(timeout=max(1, round(timeout))).text(query, max_results=k)
        except Exception as e:  # ddgs and its HTTP stack raise many kinds: any of them means "no web"
            box["error"] = e

    thread = threading.Thread(target=work, daemon=True)  # abandoned, not joined, when it hangs
    thread.start()
    thread.join(timeout + 1.0)
    if thread.is_alive():
        raise WebUnavailable(f"no answer within {timeout:.0f} s")
    if "error" in box:
        e = box["error"]
        raise WebUnavailable(f"{type(e).__name__}: {' '.join(str(e).split())[:100]}")
    hits = [h for h in box.get("hits") or [] if isinstance(h, dict) and h.get("href")][:k]
    if not hits:
        raise WebUnavailable("no results")
    return [{"id": f"S{n}", "chunk_id": h["href"], "doc": h["href"], "title": str(h.get("title") or h["href"]),
             "text": " ".join(str(h.get("body") or "").split()), "url": h["href"], "score": 1.0 / n,
             "dense": None, "bm25": None, "found_by": ["ddgs"], "backend": "ddgs"} for n, h in enumerate(hits, 1)]


def search(query, k=3, backend=None, folder=None):
    """Query -> up to k web results as passages (see the module docstring). The real web when asked for
    and reachable, else the local stand-in, with one notice line saying why."""
    if not query or not query.strip():
        raise ValueError("the web query is empty")
    if resolve_backend(backend) == "ddgs":
        try:
            return ddgs_search(query, k)
        except WebUnavailable as e:
            notice(f"web search unavailable ({e}); using the local stand-in {standin_dir(folder)}")
    return local_search(query, k, folder)


def main():
    ap = argparse.ArgumentParser(description="Search the web (ddgs) or its local stand-in; print the results.")
    ap.add_argument("query", nargs="?", default="Who founded Quillfeather Observatory?", help="the search query")
    ap.add_argument("--k", type=int, default=3, help="results to return")
    ap.add_argument("--backend", choices=BACKENDS, help="default: RAG_WEB, else local")
    ap.add_argument("--folder", type=Path, help="stand-in folder (default: RAG_WEB_DIR, else web_standin/)")
    args = ap.parse_args()
    try:
        backend = resolve_backend(args.backend)
        print(f"query={args.query!r} k={args.k} backend={backend} folder={standin_dir(args.folder)} "
              f"timeout={TIMEOUT:.0f}s")
        results = search(args.query, args.k, backend, args.folder)
    except (ValueError, CorpusError) as e:
        sys.exit(f"web_search: {e}")
    for p in results:
        print(f"{p['id']:4} {p['backend']:6} {p['url'][:60]:60} {' '.join(p['text'].split())[:60]}")


if __name__ == "__main__":
    main()
