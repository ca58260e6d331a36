"""Week 7d: GraphRAG (Edge et al. 2024). Entities and relations per document, a graph, Louvain communities
with summaries, then local search (entities named in the question and their neighbours' chunks) and
global search (community summaries, map then reduce), each answer cited [S#] and verified.

    python graphrag.py --build --docs 300                   # LLM extractor, golden docs first (~5-10 s/doc on 2 cores)
    python graphrag.py --build --extractor titles           # whole corpus in seconds: titles + title mentions
    python graphrag.py --stats --compare-extractors         # nodes, edges, communities, s/doc, cache hits; LLM vs titles
    python graphrag.py "In which village was the designer of Ashford Bridge born?" --corpus tests/fixtures/corpus
    python graphrag.py "question" --mode global --png results/graph.png
    python graphrag.py --eval 20 --split multi --json results/graphrag_20.json

Expected output of a question (~15-40 s on the embedded engine): the settings, the mode and why, the matched
entities, the trace (neighbours, chunks or communities and their map points), the answer with each citation's
verdict, the cost. `--eval N`: the common table, graphrag beside generate() and multihop_answer(), then the
auto router's choices. A rebuild extracts only new or changed documents (cache keyed by content hash and model;
a killed build resumes where it stopped). The graph is stored atomically as
`$RAG_INDEX_DIR/graph-<collection>-<extractor>.json` (networkx node_link_data plus communities and build stats).

Entity names are merged on a normalized key (case, accents, punctuation, a leading "the", possessive 's).
Every document's title is an entity of its own, linked to what the document names ("mentions"), so a document
with an empty or unusable extraction is still reachable. Relations naming an entity the document did not list
and self-loops are dropped; descriptions are cut to MAX_DESC_CHARS. An unparseable reply is retried once on a
shorter text, then cached as a failure (title entity only), so a rerun does not pay for it again.
Not handled: aliases beyond trivial differences ("J. Smith" vs "John Smith"), relation types in the graph's
structure (a relation is edge text), incremental community updates (communities are recomputed each build).
This file is ~620 lines (over the ~300 guide): extraction, graph, two search modes, router, picture, CLI.
"""
import argparse
import json
import os
import re
import sys
import time
import unicodedata
from pathlib import Path

import networkx as nx

import llm
import verify_citations as vc
from cache import Cache
from generate import check_question, generate
from multihop import multihop_answer
from retrieve import CORPUS_DIR, DEFAULT_CHUNKER, get_retriever, load_golden, sample_golden
from vector_index import CorpusError, collection_name, embed, index_dir, load_documents

EXTRACTORS = ("llm", "titles")
MODES = ("local", "global", "auto")
EXTRACT_VERSION = "graph-extract-v1"   # bump when the extraction prompt changes: cached extractions recompute
SUMMARY_VERSION = "graph-summary-v1"
MAX_DOC_CHARS = 1800      # document text shown to the extractor (retry: half)
MAX_ENTITIES = 15         # per document, after cleaning
MAX_RELATIONS = 15
MAX_DESC_CHARS = 160      # entity / relation descriptions are cut here
MAX_NAME_CHARS = 80
MAX_TITLE_WORDS = 8       # longest name looked up as a word n-gram in a question or text
MIN_KEY_CHARS = 3         # shorter normalized names never match inside a question or text
SEED = 42                 # Louvain and the picture's layout
LOCAL_K = 4               # chunks in a local answer (generate()'s k)
NEIGHBOURS = 4            # neighbours per matched entity
MAX_MATCHED = 4           # entities taken from a question
GLOBAL_K = 3              # communities mapped in a global answer
LLM_SUMMARIES = 60        # the largest communities (>= 3 members) get an LLM summary; others an extractive one
GLOBAL_WORDS = re.compile(r"\b(main|themes?|overall|summari[sz]e|in general|across|trends?|kinds of|types of|"
                          r"what topics|list (all|the)|compare|common)\b", re.I)
PNG_NODES = 40

EXTRACT_SYSTEM = """You extract a knowledge graph from one document. List the named entities (people, places,
organisations, works, events, dates of note) with a type and a one-sentence description taken from the text,
and the relations between them (source and target must be names from your entity list). Be brief.
Example: {"entities": [{"name": "Ashford Bridge", "type": "bridge", "description": "Stone bridge in Corran."},
{"name": "Tomas Vell", "type": "person", "description": "Engineer who designed Ashford Bridge."}],
"relations": [{"source": "Ashford Bridge", "target": "Tomas Vell", "relation": "designed by",
"description": "Tomas Vell designed Ashford Bridge."}]}"""
_STR = lambda n: {"type": "string", "maxLength": n}
EXTRACT_SCHEMA = {"type": "object", "required": ["entities", "relations"], "properties": {
    "entities": {"type": "array", "maxItems": MAX_ENTITIES, "items": {
        "type": "object", "required": ["name", "type", "description"],
        "properties": {"name": _STR(MAX_NAME_CHARS), "type": _STR(24), "description": _STR(MAX_DESC_CHARS)}}},
    "relations": {"type": "array", "maxItems": MAX_RELATIONS, "items": {
        "type": "object", "required": ["source", "target", "relation", "description"],
        "properties": {"source": _STR(MAX_NAME_CHARS), "target": _STR(MAX_NAME_CHARS), "relation": _STR(40),
                       "description": _STR(MAX_DESC_CHARS)}}}}}
SUMMARY_SYSTEM = "You summarize a group of related entities from a knowledge graph in a title and 2-4 factual sentences."
SUMMARY_SCHEMA = {"type": "object", "required": ["title", "summary"],
                  "properties": {"title": _STR(80), "summary": _STR(600)}}
MAP_SYSTEM = """You get a question and a report about a group of related entities. List the facts from the report
that help answer the question (at most 3, each one sentence), with a helpfulness score from 0 to 100.
Give an empty list when nothing helps."""
MAP_SCHEMA = {"type": "object", "required": ["points"], "properties": {"points": {"type": "array", "maxItems": 3, "items": {
    "type": "object", "required": ["text", "score"],
    "properties": {"text": _STR(300), "score": {"type": "integer", "minimum": 0, "maximum": 100}}}}}}


# ---- names ----

def normalize(name):
    """The merge key of a name: "The  Ashford-Bridge's" -> 'ashford bridge'; 'Édric Vell.' -> 'edric vell'."""
    s = unicodedata.normalize("NFKD", str(name)).encode("ascii", "ignore").decode().lower()
    s = re.sub(r"['\u2019]s\b", "", s)
    s = " ".join(re.sub(r"[^a-z0-9]+", " ", s).split())
    return s[4:] if s.startswith("the ") else s


def ngram_keys(text, keys):
    """Normalized word n-grams of text that are keys, longest first, none inside a longer one found.
    ('Who designed Ashford Bridge?', {'ashford bridge', 'bridge'}) -> ['ashford bridge']"""
    words, found = normalize(text).split(), []
    spans = sorted(((i, n) for n in range(min(MAX_TITLE_WORDS, len(words)), 0, -1) for i in range(len(words) - n + 1)),
                   key=lambda s: -s[1])
    taken = set()
    for i, n in spans:
        key = " ".join(words[i:i + n])
        if key in keys and len(key) >= MIN_KEY_CHARS and not taken & set(range(i, i + n)):
            taken |= set(range(i, i + n))
            found.append(key)
    return list(dict.fromkeys(found))


def cut(text, limit=MAX_DESC_CHARS):
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "\u2026"


# ---- extraction ----

def clean_extraction(reply, title):
    """A model reply -> {"entities", "relations", "dropped"}: names merged per document, the title entity
    added, self-loops, relations to unknown entities and malformed items dropped, descriptions cut."""
    reply = reply if isinstance(reply, dict) else {}
    as_list = lambda x: [i for i in x if isinstance(i, dict)] if isinstance(x, list) else []
    entities, dropped = {normalize(title): {"name": cut(title, MAX_NAME_CHARS), "type": "document",
                                            "description": cut(title)}}, 0
    for e in as_list(reply.get("entities")):
        key = normalize(e.get("name", ""))
        if not key or len(entities) > MAX_ENTITIES:
            dropped += 1
            continue
        old = entities.setdefault(key, {"name": cut(e["name"], MAX_NAME_CHARS), "type": cut(e.get("type") or "other", 24),
                                        "description": ""})
        old["description"] = old["description"] or cut(e.get("description"))
    relations, seen = [], set()
    for r in as_list(reply.get("relations")):
        s, t = normalize(r.get("source", "")), normalize(r.get("target", ""))
        if s not in entities or t not in entities or s == t or (s, t) in seen or len(relations) >= MAX_RELATIONS:
            dropped += 1
            continue
        seen.add((s, t))
        relations.append({"source": s, "target": t, "relation": cut(r.get("relation") or "related to", 40),
                          "description": cut(r.get("description"))})
    return {"entities": entities, "relations": relations, "dropped": dropped}


def extract_llm(doc):
    """Doc -> cleaned extraction plus seconds and error (None, or why the reply was unusable after a retry)."""
    start, error = time.perf_counter(), None
    for limit in (MAX_DOC_CHARS, MAX_DOC_CHARS // 2):
        try:
            reply = llm.complete_json(f"Document title: {doc.title}\n\n{doc.text[:limit]}", EXTRACT_SCHEMA,
                                      system=EXTRACT_SYSTEM, max_tokens=1024)
            error = None
            break
        except llm.ReplyError as e:
            reply, error = {}, str(e)
    return {**clean_extraction(reply, doc.title), "seconds": time.perf_counter() - start, "error": error}


def extract_titles(docs):
    """{id: Doc} -> {id: extraction}: each title an entity, an edge when a text names another document's title."""
    keys = {}
    for d in docs.values():
        keys.setdefault(normalize(d.title), d.title)
    out = {}
    for d in docs.values():
        start, own = time.perf_counter(), normalize(d.title)
        named = [k for k in ngram_keys(d.text, keys) if k != own]
        reply = {"entities": [{"name": keys[k], "type": "document", "description": ""} for k in named],
                 "relations": [{"source": d.title, "target": keys[k], "relation": "mentions", "description": ""}
                               for k in named]}
        out[d.id] = {**clean_extraction(reply, d.title), "seconds": time.perf_counter() - start, "error": None}
    return out


def select_docs(docs, n=0, golden=None, golden_only=False):
    """Document ids to build over: the golden items' supporting docs first (in sample_golden's balanced order,
    so any --eval prefix is covered), then the rest by id; n <= 0 -> all of them."""
    order = []
    if golden:
        items = sample_golden(golden, len(golden) - 1) if len(golden) > 1 else list(golden)
        items += [g for g in golden if g not in items]
        order = [d for g in items for d in g["supporting_docs"] if d in docs]
    order = list(dict.fromkeys(order if golden_only else order + sorted(docs)))
    return order[:n] if n > 0 else order


def graph_path(corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, extractor="llm"):
    return index_dir() / f"graph-{collection_name(corpus, chunker)}-{extractor}.json"


def extract_all(docs, ids, extractor, progress=True):
    """{doc id: extraction} over ids, LLM results cached per (version, model, content hash): a rerun or a resumed
    build extracts only what is missing. -> (extractions, {"extracted", "cache_hits", "failed"})"""
    from tqdm import tqdm
    if extractor == "titles":
        return extract_titles({i: docs[i] for i in ids}), {"extracted": len(ids), "cache_hits": 0, "failed": 0}
    if extractor != "llm":
        raise ValueError(f"unknown extractor {extractor!r}: choose one of {', '.join(EXTRACTORS)}")
    store, model, out, counts = Cache("graph_extract"), llm.engine_info()["model"], {}, {"extracted": 0, "cache_hits": 0}
    for i in tqdm(ids, desc="extract", unit="doc", file=sys.stderr, disable=not progress):
        key = Cache.key(EXTRACT_VERSION, model, docs[i].hash, docs[i].title)
        if key in store:
            out[i], counts["cache_hits"] = store.get(key), counts["cache_hits"] + 1
        else:
            out[i], counts["extracted"] = store.put(key, extract_llm(docs[i])), counts["extracted"] + 1
    return out, {**counts, "failed": sum(bool(e["error"]) for e in out.values())}


# ---- graph and communities ----

def build_graph(extractions):
    """{doc id: extraction} -> nx.Graph: nodes are merged names (attrs name, type, description, docs), edges
    carry relations, docs and a weight; each title node is linked to the entities its document names."""
    g = nx.Graph()
    for doc, ex in extractions.items():
        ents = ex["entities"]
        for key, e in ents.items():
            if key not in g:
                g.add_node(key, name=e["name"], type=e["type"], description=e["description"], docs=[])
            node = g.nodes[key]
            node["docs"] = list(dict.fromkeys(node["docs"] + [doc]))
            if e["type"] == "document" and node["type"] != "document":
                node["type"], node["name"] = "document", e["name"]
            if len(node["description"]) < MAX_DESC_CHARS and e["description"] and e["description"] not in node["description"]:
                node["description"] = cut(f"{node['description']} {e['description']}")
        title = next((k for k, e in ents.items() if e["type"] == "document"), None)
        links = [(title, k, "mentions", 0.5) for k in ents if title and k != title]
        links += [(r["source"], r["target"], r["relation"], 1.0) for r in ex["relations"]]
        for s, t, rel, w in links:
            if s == t:
                continue
            if not g.has_edge(s, t):
                g.add_edge(s, t, relations=[], docs=[], weight=0.0)
            edge = g.edges[s, t]
            edge["weight"] += w
            edge["docs"] = list(dict.fromkeys(edge["docs"] + [doc]))
            if rel not in edge["relations"] and len(edge["relations"]) < 5:
                edge["relations"].append(rel)
    return g


def communities(g, progress=True, use_llm=True):
    """Louvain communities (seeded), largest first, each with a summary: LLM (cached) for the LLM_SUMMARIES
    largest of 3+ members, extractive otherwise
    (always extractive with use_llm=False: the titles extractor builds without any LLM call). -> [{"id", "nodes", "docs", "title", "summary"}]"""
    from tqdm import tqdm
    parts = sorted(nx.community.louvain_communities(g, weight="weight", seed=SEED), key=lambda c: (-len(c), min(c)))
    store, model, out = Cache("graph_summaries"), llm.engine_info()["model"], []
    for n, members in enumerate(tqdm(parts, desc="summaries", unit="community", file=sys.stderr, disable=not progress)):
        nodes = sorted(members, key=lambda k: (-g.degree(k, weight="weight"), k))
        facts = [f"{g.nodes[k]['name']} ({g.nodes[k]['type']}): {g.nodes[k]['description']}" for k in nodes[:12]]
        facts += [f"{g.nodes[s]['name']} -[{', '.join(d['relations'])}]- {g.nodes[t]['name']}"
                  for s, t, d in g.subgraph(nodes[:12]).edges(data=True)][:12]
        title, summary = g.nodes[nodes[0]]["name"], cut("; ".join(facts), 600)
        if use_llm and len(nodes) >= 3 and n < LLM_SUMMARIES:
            key = Cache.key(SUMMARY_VERSION, model, facts)
            if key not in store:
                try:
                    reply = llm.complete_json("\n".join(facts), SUMMARY_SCHEMA, system=SUMMARY_SYSTEM, max_tokens=300)
                    store.put(key, {"title": cut(reply.get("title"), 80), "summary": cut(reply.get("summary"), 600)})
                except llm.ReplyError:
                    store.put(key, {"title": "", "summary": ""})  # the extractive summary stands in
            s = store.get(key)
            title, summary = s["title"] or title, s["summary"] or summary
        docs = list(dict.fromkeys(d for k in nodes for d in g.nodes[k]["docs"]))
        out.append({"id": n, "nodes": nodes, "docs": docs, "title": title, "summary": summary})
    return out


def build(corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, extractor="llm", n=0, golden=None, golden_only=False,
          progress=True):
    """Extract (cached), build the graph and communities, write it atomically. -> the stored payload."""
    docs, _ = load_documents(corpus, quiet=True)
    ids = select_docs(docs, n, golden, golden_only)
    start = time.perf_counter()
    extractions, counts = extract_all(docs, ids, extractor, progress)
    g = build_graph(extractions)
    for k, c in enumerate(comms := communities(g, progress, use_llm=extractor == "llm")):
        for node in c["nodes"]:
            g.nodes[node]["community"] = k
    seconds = [e["seconds"] for e in extractions.values()]
    payload = {"version": EXTRACT_VERSION, "extractor": extractor, "corpus": str(corpus), "chunker": chunker,
               "model": llm.engine_info()["model"] if extractor == "llm" else None,
               "docs": {i: docs[i].hash for i in ids},
               "build": {**counts, "docs": len(ids), "seconds": time.perf_counter() - start,
                         "extract_seconds_per_doc": sum(seconds) / max(1, len(seconds)),
                         "dropped": sum(e["dropped"] for e in extractions.values())},
               "graph": nx.node_link_data(g, edges="edges"), "communities": comms}
    path = graph_path(corpus, chunker, extractor)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(payload, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)  # a reader never sees half a graph
    return payload


_LOADED = {}


def load(corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, extractor="llm"):
    """The stored payload with "G" (the nx.Graph) added; CorpusError with the build command when missing."""
    path = graph_path(corpus, chunker, extractor)
    if not path.exists():
        raise CorpusError(f"no graph at {path}: build it with python graphrag.py --build --extractor {extractor}"
                          + ("" if Path(corpus) == CORPUS_DIR else f" --corpus {corpus}"))
    stamp = (str(path), path.stat().st_mtime_ns)
    if stamp not in _LOADED:
        payload = json.loads(path.read_text(encoding="utf-8"))
        payload["G"] = nx.node_link_graph(payload["graph"], edges="edges")
        _LOADED[stamp] = payload
    return _LOADED[stamp]


# ---- search ----

def match_entities(question, payload, fallback=True):
    """Graph nodes named in the question (longest names first); with none, the nearest node names by
    embedding when fallback is set. -> [node key]"""
    g = payload["G"]
    found = ngram_keys(question, set(g.nodes))[:MAX_MATCHED]
    if found or not fallback or not len(g):
        return found
    import numpy as np
    if "_name_vecs" not in payload:
        payload["_keys"] = list(g.nodes)
        payload["_name_vecs"] = np.asarray(embed([g.nodes[k]["name"] for k in payload["_keys"]]))
    return [payload["_keys"][i] for i in _nearest(payload["_name_vecs"], question, 2)]


def _nearest(vecs, text, k):
    import numpy as np
    q = np.asarray(embed([text])[0])
    sims = vecs @ q / (np.linalg.norm(vecs, axis=1) * np.linalg.norm(q) + 1e-9)
    return [int(i) for i in np.argsort(-sims, kind="stable")[:k]]


def _chunks_by_doc(retriever):
    if not hasattr(retriever, "_graph_docs"):
        retriever._graph_docs = {}
        for i, m in enumerate(retriever.metas):
            retriever._graph_docs.setdefault(m["doc"], []).append(i)
    return retriever._graph_docs


def best_chunks(question, docs, k, corpus, chunker):
    """The best chunk (BM25 against the question) of each of the first k docs that have chunks -> passages."""
    r = get_retriever(corpus, chunker)
    by_doc, scores, out = _chunks_by_doc(r), r.bm25.scores(question), []
    for d in docs:
        if d in by_doc and len(out) < k:
            i = max(by_doc[d], key=lambda i: (scores[i], -i))
            out.append({"id": f"S{len(out) + 1}", **r.passage(i, score=float(scores[i]), dense=None,
                                                              bm25=float(scores[i]), found_by=["graph"])})
    return out


def _result(result, mode, trace, retrieved, entities, cost, start):
    result.update(mode=mode, trace=trace, entities=entities, cost={**cost, "wall_seconds": time.perf_counter() - start},
                  retrieved=[{"chunk_id": p["chunk_id"], "doc": p["doc"]} for p in retrieved])
    return result


def local_answer(question, payload, corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, k=LOCAL_K, trace=None):
    """Entities named in the question, their neighbours, the chunks they came from; one cited answer.
    Each matched entity gets its own document's best chunk first, then the rest go by BM25."""
    question, trace, start, g = check_question(question), trace or [], time.perf_counter(), payload["G"]
    with llm.counting() as cost:
        matched = match_entities(question, payload)
        trace.append({"step": "match", "entities": [g.nodes[m]["name"] for m in matched]})
        near = {m: sorted(g[m], key=lambda n: (-g.edges[m, n]["weight"], n))[:NEIGHBOURS] for m in matched}
        trace.append({"step": "neighbours", "of": {g.nodes[m]["name"]: [f"{g.nodes[n]['name']} "
                      f"({', '.join(g.edges[m, n]['relations'])})" for n in ns] for m, ns in near.items()}})
        r = get_retriever(corpus, chunker)
        scores, by_doc = r.bm25.scores(question), _chunks_by_doc(r)
        doc_score = lambda d: max((scores[i] for i in by_doc.get(d, [])), default=-1.0)
        own = []  # each matched entity's own document: the one it is the title of, else its best by BM25
        for m in matched:
            mine = [d for d in g.nodes[m]["docs"] if d in by_doc]
            if mine:
                own.append(next((d for d in mine if normalize(r.metas[by_doc[d][0]]["title"]) == m),
                                max(mine, key=doc_score)))
        rest = {d for n in [*matched, *(x for ns in near.values() for x in ns)] for d in g.nodes[n]["docs"]}
        docs = list(dict.fromkeys(own + sorted(rest, key=lambda d: (-doc_score(d), d))))
        passages = best_chunks(question, docs, k, corpus, chunker)
        trace.append({"step": "chunks", "chunks": [p["chunk_id"] for p in passages]})
        result = generate(question, passages=passages, corpus=corpus, chunker=chunker)
    return _result(result, "local", trace, passages, [g.nodes[m]["name"] for m in matched], cost, start)


def global_answer(question, payload, corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, k=GLOBAL_K, trace=None):
    """Community summaries ranked by embedding similarity; map: each of the top k gives scored points from its
    summary and its best chunks; reduce: generate() over one source per community. Each sentence's citations
    are traced to communities and through them to the chunks their points came from."""
    import numpy as np
    question, trace, start, g = check_question(question), trace or [], time.perf_counter(), payload["G"]
    comms = payload["communities"]
    with llm.counting() as cost:
        if "_comm_vecs" not in payload:
            payload["_comm_vecs"] = np.asarray(embed([f"{c['title']}. {c['summary']}" for c in comms]))
        top = [comms[i] for i in _nearest(payload["_comm_vecs"], question, k)] if comms else []
        sources, used = [], []
        for c in top:
            chunks = best_chunks(question, c["docs"], 2, corpus, chunker)
            report = f"Report: {c['title']}\n{c['summary']}\n" + "\n".join(cut(p["text"], 600) for p in chunks)
            try:
                reply = llm.complete_json(f"{report}\n\nQuestion: {question}", MAP_SCHEMA, system=MAP_SYSTEM, max_tokens=400)
                points = [p for p in reply.get("points", []) if isinstance(p, dict) and str(p.get("text", "")).strip()]
            except llm.ReplyError:
                points = []
            points = sorted(points, key=lambda p: -p["score"] if isinstance(p.get("score"), int) else 0)
            trace.append({"step": "map", "community": c["id"], "title": c["title"], "chunks": [p["chunk_id"] for p in chunks],
                          "points": [{"text": cut(p["text"], 300), "score": p.get("score")} for p in points]})
            used += chunks
            text = " ".join(cut(p["text"], 300) for p in points) or c["summary"]
            sources.append({"id": f"S{len(sources) + 1}", "chunk_id": f"community-{c['id']}", "doc": f"community:{c['id']}",
                            "title": c["title"], "text": text, "score": None, "dense": None, "bm25": None,
                            "found_by": ["community"], "community": c["id"], "chunks": [p["chunk_id"] for p in chunks]})
        result = generate(question, passages=sources, corpus=corpus, chunker=chunker)
        by_id = {p["id"]: p for p in result["passages"]}
        trace.append({"step": "reduce", "claims": [{"text": s["text"], "communities": [by_id[c]["community"] for c in s["cites"]],
                                                    "chunks": [x for c in s["cites"] for x in by_id[c]["chunks"]]}
                                                   for s in result["sentences"]]})
    entities = [g.nodes[m]["name"] for m in match_entities(question, payload, fallback=False)]
    return _result(result, "global", trace, used, entities, cost, start)


def route(question, payload):
    """auto's classifier (no LLM): global when the question asks for themes or an overview, or names no
    entity of the graph; local otherwise. -> (mode, reason)"""
    if GLOBAL_WORDS.search(question):
        return "global", f"overview wording: {GLOBAL_WORDS.search(question).group(0)!r}"
    if not match_entities(question, payload, fallback=False):
        return "global", "no entity of the graph named"
    return "local", "names an entity of the graph"


def graph_answer(question, mode="auto", corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, extractor="llm"):
    """Question -> generate()-shaped dict plus mode, trace, retrieved, entities."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}: choose one of {', '.join(MODES)}")
    payload, trace = load(corpus, chunker, extractor), []
    if mode == "auto":
        mode, why = route(check_question(question), payload)
        trace.append({"step": "route", "mode": mode, "reason": why})
    fn = local_answer if mode == "local" else global_answer
    return fn(question, payload, corpus, chunker, trace=trace)


# ---- picture, stats, comparison ----

def draw(payload, centre, path, community=None):
    """PNG of the graph around `centre` (node keys: them and their neighbours) or of one community."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    g = payload["G"]
    nodes = list(payload["communities"][community]["nodes"]) if community is not None else \
        list(dict.fromkeys([*centre, *(n for c in centre for n in sorted(g[c], key=lambda n: -g.edges[c, n]["weight"]))]))
    sub = g.subgraph(nodes[:PNG_NODES])
    pos = nx.spring_layout(sub, seed=SEED, weight="weight")
    fig, ax = plt.subplots(figsize=(11, 8))
    colors = [sub.nodes[n].get("community", 0) for n in sub]
    nx.draw_networkx_edges(sub, pos, ax=ax, alpha=0.4)
    nx.draw_networkx_nodes(sub, pos, ax=ax, node_color=colors, cmap="tab20", node_size=[900 if n in centre else 300 for n in sub])
    nx.draw_networkx_labels(sub, pos, {n: sub.nodes[n]["name"][:28] for n in sub}, ax=ax, font_size=8)
    nx.draw_networkx_edge_labels(sub, pos, {(s, t): d["relations"][0][:20] for s, t, d in sub.edges(data=True)
                                            if d["relations"] and d["relations"][0] != "mentions"}, ax=ax, font_size=6)
    ax.set_title(f"GraphRAG ({payload['extractor']} extractor): " + (f"community {community}" if community is not None
                 else ", ".join(g.nodes[c]["name"] for c in centre)))
    ax.axis("off")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return Path(path)


def reach(payload, golden):
    """Over golden items whose supporting docs are all in the graph: share with an entity matched, and the mean
    share of supporting docs among the docs of matched entities and their neighbours."""
    g, have = payload["G"], set(payload["docs"])
    items = [x for x in golden if set(x["supporting_docs"]) <= have]
    matched, recall = 0, []
    for x in items:
        keys = ngram_keys(x["question"], set(g.nodes))[:MAX_MATCHED]
        docs = {d for k in keys for n in [k, *g[k]] for d in g.nodes[n]["docs"]}
        matched += bool(keys)
        recall.append(sum(d in docs for d in x["supporting_docs"]) / len(x["supporting_docs"]))
    return {"questions": len(items), "matched": matched / max(1, len(items)), "doc_reach": vc.mean(recall)}


def stats(payload):
    g, b = payload["G"], payload["build"]
    return {"docs": len(payload["docs"]), "nodes": g.number_of_nodes(), "edges": g.number_of_edges(),
            "communities": len(payload["communities"]), "extracted": b["extracted"], "cache_hits": b["cache_hits"],
            "failed": b["failed"], "dropped": b["dropped"], "extract_s_per_doc": b["extract_seconds_per_doc"]}


def compare_extractors(corpus, chunker, golden):
    """The LLM graph beside a titles graph over the same documents: size, name overlap, golden reach."""
    llm_graph = load(corpus, chunker, "llm")
    docs, _ = load_documents(corpus, quiet=True)
    ex = extract_titles({i: docs[i] for i in llm_graph["docs"] if i in docs})
    g = build_graph(ex)
    titles = {"G": g, "docs": llm_graph["docs"], "communities": [], "build": {}}
    a, b = set(llm_graph["G"].nodes), set(g.nodes)
    out = {}
    for name, p in (("llm", llm_graph), ("titles", titles)):
        out[name] = {"nodes": p["G"].number_of_nodes(), "edges": p["G"].number_of_edges(), **reach(p, golden)}
    out["overlap"] = {"shared_names": len(a & b), "jaccard": len(a & b) / max(1, len(a | b)),
                      "titles_in_llm": len(a & b) / max(1, len(b))}
    return out


GLOBAL_EXAMPLES = ["What are the main themes of these documents?", "Summarize the kinds of places described.",
                   "What topics do the documents cover overall?", "Compare the people across the corpus."]


def router_check(payload, golden):
    """auto's choices: golden questions (all entity questions: local expected) and GLOBAL_EXAMPLES (global)."""
    local = sum(route(x["question"], payload)[0] == "local" for x in golden)
    glob = sum(route(q, payload)[0] == "global" for q in GLOBAL_EXAMPLES)
    return {"golden_local": local / max(1, len(golden)), "examples_global": glob / len(GLOBAL_EXAMPLES),
            "accuracy": (local + glob) / (len(golden) + len(GLOBAL_EXAMPLES))}


# ---- command line ----

def print_trace(trace):
    for t in trace:
        print("  " + t["step"] + ": " + json.dumps({k: v for k, v in t.items() if k != "step"}, ensure_ascii=False)[:400])


def main():
    ap = argparse.ArgumentParser(description="GraphRAG: entity graph, communities, local and global search.")
    ap.add_argument("question", nargs="?", default="In which village was the designer of Ashford Bridge born?")
    ap.add_argument("--mode", choices=MODES, default="auto", help="local, global, or auto (a classifier picks)")
    ap.add_argument("--extractor", choices=EXTRACTORS, default="llm", help="llm (JSON schema) or titles (no LLM)")
    ap.add_argument("--build", action="store_true", help="build/update the graph (only new/changed docs extracted)")
    ap.add_argument("--docs", type=int, default=0, help="build over N docs, golden questions' docs first (0: all)")
    ap.add_argument("--docs-from-golden", action="store_true", help="build over the golden questions' docs only")
    ap.add_argument("--stats", action="store_true", help="print graph size, extraction cost and cache hits")
    ap.add_argument("--compare-extractors", action="store_true", help="with --stats: llm vs titles on the same docs")
    ap.add_argument("--png", type=Path, help="draw the graph around the question's entities (or --community) here")
    ap.add_argument("--community", type=int, help="with --png: draw this community instead")
    ap.add_argument("--split", choices=("all", "single", "multi"), default="all", help="--eval on these golden items")
    vc.add_pattern_args(ap)
    args = ap.parse_args()
    settings = {"mode": args.mode, "extractor": args.extractor, "corpus": str(args.corpus), "chunker": args.chunker,
                "golden": str(args.golden), "docs": args.docs, "docs_from_golden": args.docs_from_golden,
                "graph": str(graph_path(args.corpus, args.chunker, args.extractor))}
    print(" ".join(f"{k}={v}" for k, v in settings.items()))
    try:
        golden = load_golden(args.golden) if args.golden.exists() else []
        if args.split != "all":
            golden = [g for g in golden if g["type"] == args.split]
        if args.build:
            print(f"model: {llm.engine_info()['engine']} {llm.engine_info()['model']}" if args.extractor == "llm" else "")
            b = build(args.corpus, args.chunker, args.extractor, args.docs, golden, args.docs_from_golden)
            print(f"built {graph_path(args.corpus, args.chunker, args.extractor)}: " + "  ".join(
                f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in stats({**b, "G": load(
                    args.corpus, args.chunker, args.extractor)["G"]}).items()))
        if args.stats:
            s = stats(load(args.corpus, args.chunker, args.extractor))
            print("\n".join(f"{k:18} {v:.2f}" if isinstance(v, float) else f"{k:18} {v}" for k, v in s.items()))
            if args.compare_extractors:
                c = compare_extractors(args.corpus, args.chunker, golden)
                print(f"\n{'extractor':10}{'nodes':>8}{'edges':>8}{'golden q':>10}{'matched':>9}{'doc reach':>10}")
                for name in ("llm", "titles"):
                    r = c[name]
                    print(f"{name:10}{r['nodes']:>8}{r['edges']:>8}{r['questions']:>10}{r['matched']:>9.3f}{vc.fmt(r['doc_reach']):>10}")
                print(f"shared names {c['overlap']['shared_names']}  jaccard {c['overlap']['jaccard']:.3f}  "
                      f"titles found by llm {c['overlap']['titles_in_llm']:.3f}")
                s["compare_extractors"] = c
            if args.json:
                vc.write_json(args.json, {"settings": settings, "stats": s})
        if args.build or args.stats:
            return
        kw = dict(mode=args.mode, corpus=args.corpus, chunker=args.chunker, extractor=args.extractor)
        if args.eval:
            items = sample_golden(golden, args.eval)
            rows = {"generate": vc.run(items, corpus=args.corpus, fresh=args.fresh),
                    "multihop": vc.evaluate("multihop-parallel", lambda q: multihop_answer(q, corpus=args.corpus,
                                            chunker=args.chunker), items, {"corpus": str(args.corpus)}, args.fresh),
                    f"graphrag-{args.mode}": vc.evaluate(f"graphrag-{args.mode}", lambda q: graph_answer(q, **kw), items,
                                                         {**settings, "version": EXTRACT_VERSION}, args.fresh)}
            table = vc.compare(rows)
            vc.print_comparison(table)
            router = router_check(load(args.corpus, args.chunker, args.extractor), items)
            print("\nauto router: " + "  ".join(f"{k} {v:.3f}" for k, v in router.items()))
            if args.json:
                vc.write_json(args.json, {"settings": settings, "model": llm.engine_info(), "table": table,
                                          "router": router, "rows": rows})
            return
        question = check_question(args.question)
        print(f"model: {llm.engine_info()['engine']} {llm.engine_info()['model']}")
        r = graph_answer(question, **kw)
        print(f"mode: {r['mode']}\nmatched entities: {', '.join(r['entities']) or '(none)'}\ntrace:")
        print_trace(r["trace"])
        vc.print_answer(r, vc.verify(r))
        c = r["cost"]
        print(f"\nllm calls {c['calls']}  prompt tokens {c['prompt_tokens']}  completion tokens "
              f"{c['completion_tokens']}  {c['wall_seconds']:.1f} s")
        if args.png:
            payload = load(args.corpus, args.chunker, args.extractor)
            keys = [k for k in payload["G"] if payload["G"].nodes[k]["name"] in r["entities"]]
            print(f"wrote {draw(payload, keys, args.png, args.community)}")
    except (ValueError, CorpusError, llm.LLMError) as e:
        sys.exit(f"graphrag: {e}")


if __name__ == "__main__":
    main()
