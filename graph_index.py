"""GraphRAG's index: entities and relations per document (LLM with a JSON schema, or titles and their mentions
without one), merged names, a networkx graph, seeded Louvain communities with summaries, stored next to the
vector index. graphrag.py searches it and is the command line (`python graphrag.py --build --docs 300`);
graph_report.py measures it (`--stats`) and draws it (`--png`).

A rebuild extracts only new or changed documents (cache keyed by content hash, title, model and this file's code);
a killed build resumes where it stopped, because each extraction is cached the moment it is made. The graph is
stored atomically as `$RAG_INDEX_DIR/graph-<collection>-<extractor>.json` (networkx node_link_data plus
communities and build stats).

Entity names are merged on a normalized key (case, accents, punctuation, a leading "the", possessive 's).
Every document's title is an entity of its own, linked to what the document names ("mentions"), so a document
with an empty or unusable extraction is still reachable. Relations naming an entity the document did not list
and self-loops are dropped; descriptions are cut to MAX_DESC_CHARS. An unparseable reply is retried once on a
shorter text, then cached as a failure (title entity only), so a rerun does not pay for it again.
Not handled: aliases beyond trivial differences ("J. Smith" vs "John Smith"), relation types in the graph's
structure (a relation is edge text), incremental community updates (communities are recomputed each build).
"""
import json
import os
import sys
import time
from pathlib import Path

import networkx as nx
from pydantic import BaseModel, Field

import llm
from lab.cache import ROOT, Cache, code_key, index_dir, keyed
from lab.links import ngram_keys, normalize  # one definition of a name key, shared with retrieval
from retrieve import CORPUS_DIR, DEFAULT_CHUNKER, sample_golden
from vector_index import CorpusError, collection_name, load_documents

EXTRACTORS = ("llm", "titles")
MAX_DOC_CHARS = 1800      # document text shown to the extractor (retry: half)
MAX_ENTITIES = 10         # per document, after cleaning; with 10 relations this caps the reply (CPU seconds per doc)
MAX_RELATIONS = 10
MAX_DESC_CHARS = 120      # entity / relation descriptions are cut here
MAX_NAME_CHARS = 80
MAX_MATCHED = 4           # entities taken from a question
SEED = 42                 # Louvain's seed
LLM_SUMMARIES = 60        # the largest communities (>= 3 members) get an LLM summary; others an extractive one

EXTRACT_SYSTEM = """You extract a knowledge graph from one document. List the named entities (people, places,
organisations, works, events, dates of note) with a type and a one-sentence description taken from the text,
and the relations between them (source and target must be names from your entity list). Be brief.
Example: {"entities": [{"name": "Ashford Bridge", "type": "bridge", "description": "Stone bridge in Corran."},
{"name": "Tomas Vell", "type": "person", "description": "Engineer who designed Ashford Bridge."}],
"relations": [{"source": "Ashford Bridge", "target": "Tomas Vell", "relation": "designed by",
"description": "Tomas Vell designed Ashford Bridge."}]}"""


class Entity(BaseModel):
    name: str = Field(max_length=MAX_NAME_CHARS)
    type: str = Field(max_length=24)
    description: str = Field(max_length=MAX_DESC_CHARS)


class Relation(BaseModel):
    source: str = Field(max_length=MAX_NAME_CHARS)
    target: str = Field(max_length=MAX_NAME_CHARS)
    relation: str = Field(max_length=40)
    description: str = Field(max_length=MAX_DESC_CHARS)


class Extraction(BaseModel):
    entities: list[Entity] = Field(max_length=MAX_ENTITIES)
    relations: list[Relation] = Field(max_length=MAX_RELATIONS)


class Summary(BaseModel):
    title: str = Field(max_length=80)
    summary: str = Field(max_length=600)


EXTRACT_SCHEMA = Extraction.model_json_schema()
SUMMARY_SYSTEM = ("You summarize a group of related entities from a knowledge graph in a title and 2-4 factual "
                  "sentences.")
SUMMARY_SCHEMA = Summary.model_json_schema()


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
        old = entities.setdefault(key, {"name": cut(e["name"], MAX_NAME_CHARS),
                                        "type": cut(e.get("type") or "other", 24), "description": ""})
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
    """{doc id: extraction} over ids, LLM results cached per (code, model, content hash): a rerun or a resumed
    build extracts only what is missing. -> (extractions, {"extracted", "cache_hits", "failed"})"""
    from tqdm import tqdm
    if extractor == "titles":
        return extract_titles({i: docs[i] for i in ids}), {"extracted": len(ids), "cache_hits": 0, "failed": 0}
    if extractor != "llm":
        raise ValueError(f"unknown extractor {extractor!r}: choose one of {', '.join(EXTRACTORS)}")
    store, model, out, counts = (Cache("graph_extract"), llm.engine_info()["model"], {},
                                 {"extracted": 0, "cache_hits": 0})
    for i in tqdm(ids, desc="extract", unit="doc", file=sys.stderr, disable=not progress):
        key = keyed("graph_index", "extract", model, docs[i].hash, docs[i].title)
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
            if (len(node["description"]) < MAX_DESC_CHARS and e["description"]
                    and e["description"] not in node["description"]):
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


def community_facts(g, nodes, top=12):
    """What a community summary is written from: its `top` nodes and up to `top` edges among them, in an order
    fixed by `nodes` (g.subgraph() iterates a set for small node lists: its order changed with the hash seed
    of each process, so the summary cache missed on every rebuild)."""
    head = nodes[:top]
    facts = [f"{g.nodes[k]['name']} ({g.nodes[k]['type']}): {g.nodes[k]['description']}" for k in head]
    return facts + [f"{g.nodes[s]['name']} -[{', '.join(g.edges[s, t]['relations'])}]- {g.nodes[t]['name']}"
                    for i, s in enumerate(head) for t in head[i + 1:] if g.has_edge(s, t)][:top]


def communities(g, progress=True, use_llm=True):
    """Louvain communities (seeded), largest first, each with a summary: LLM (cached) for the LLM_SUMMARIES
    largest of 3+ members, extractive otherwise
    (always extractive with use_llm=False: the titles extractor builds without any LLM call).
    -> [{"id", "nodes", "docs", "title", "summary"}]"""
    from tqdm import tqdm
    parts = sorted(nx.community.louvain_communities(g, weight="weight", seed=SEED), key=lambda c: (-len(c), min(c)))
    store, model, out = Cache("graph_summaries"), llm.engine_info()["model"], []
    for n, members in enumerate(tqdm(parts, desc="summaries", unit="community", file=sys.stderr, disable=not progress)):
        nodes = sorted(members, key=lambda k: (-g.degree(k, weight="weight"), k))
        facts = community_facts(g, nodes)
        title, summary = g.nodes[nodes[0]]["name"], cut("; ".join(facts), 600)
        if use_llm and len(nodes) >= 3 and n < LLM_SUMMARIES:
            key = keyed("graph_index", "summary", model, facts)
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
    payload = {"code": code_key("graph_index"), "extractor": extractor, "corpus": str(corpus), "chunker": chunker,
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
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path   # no machine's path in a message
        raise CorpusError(f"no graph at {shown}: build it with python graphrag.py --build --extractor {extractor}"
                          + ("" if Path(corpus) == CORPUS_DIR else f" --corpus {corpus}"))
    stamp = (str(path), path.stat().st_mtime_ns)
    if stamp not in _LOADED:
        payload = json.loads(path.read_text(encoding="utf-8"))
        payload["G"] = nx.node_link_graph(payload["graph"], edges="edges")
        _LOADED[stamp] = payload
    return _LOADED[stamp]
