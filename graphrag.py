"""Week 7d: GraphRAG (Edge et al. 2024). Over the entity graph of graph_index.py: local search (entities named in
the question and their neighbours' chunks) and global search (community summaries, map then reduce), each
answer cited [S#] and verified; the command line that builds, inspects, draws and evaluates the graph (its
figures and its picture: graph_report.py).

    python graphrag.py --build --docs 300                   # LLM extractor, golden docs first (seconds per doc on CPU)
    python graphrag.py --build --extractor titles           # whole corpus in seconds: titles + title mentions
    python graphrag.py --stats --compare-extractors         # nodes, edges, communities, s/doc, cache hits;
                                                            # LLM vs titles
    python graphrag.py "In which village was the designer of Ashford Bridge born?" --corpus tests/fixtures/corpus
    python graphrag.py "question" --mode global --png results/graph.png
    python graphrag.py --eval 20 --split multi --json results/graphrag_20.json

Expected output of a question (~15-40 s on the embedded engine): the settings, the mode and why, the matched
entities, the trace (neighbours, chunks or communities and their map points), the answer with each citation's
verdict, the cost. `--eval N`: the common table, graphrag beside generate() and multihop_answer(), then the
auto router's choices. Not handled: questions that need a path of three or more edges (local search looks one
neighbour deep), global questions over documents outside the built subset.
"""
import argparse
import functools
import re
import sys
import time
from pathlib import Path

from pydantic import BaseModel, Field

import citations
import harness
import llm
import pattern_cli
from generate import check_question, generate
from graph_index import EXTRACTORS, MAX_MATCHED, build, cut, graph_path, load, ngram_keys, normalize
from graph_report import draw, graph_hash, print_stats, stats
from lab import cache, steps
from multihop import multihop_answer
from retrieve import CORPUS_DIR, DEFAULT_CHUNKER, get_retriever, load_golden, sample_golden
from vector_index import CorpusError, embed

MODES = ("local", "global", "auto")
LOCAL_K = 4               # chunks in a local answer (generate()'s k)
NEIGHBOURS = 4            # neighbours per matched entity
GLOBAL_K = 3              # communities mapped in a global answer
GLOBAL_WORDS = re.compile(r"\b(main|themes?|overall|summari[sz]e|in general|across|trends?|kinds of|types of|"
                          r"what topics|list (all|the)|compare|common)\b", re.I)

MAP_SYSTEM = """You get a question and a report about a group of related entities. List the facts from the report
that help answer the question (at most 3, each one sentence), with a helpfulness score from 0 to 100.
Give an empty list when nothing helps."""


class Point(BaseModel):
    text: str = Field(max_length=300)
    score: int = Field(ge=0, le=100)


class MapReply(BaseModel):
    points: list[Point] = Field(max_length=3)


MAP_SCHEMA = MapReply.model_json_schema()


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


def best_chunks(question, docs, k, corpus, chunker):
    """The best chunk (BM25 against the question) of each of the first k docs that have chunks -> passages."""
    r = get_retriever(corpus, chunker)
    by_doc, scores, out = r.by_doc, r.bm25.scores(question), []
    for d in docs:
        if d in by_doc and len(out) < k:
            i = max(by_doc[d], key=lambda i: (scores[i], -i))
            out.append({"id": f"S{len(out) + 1}", **r.passage(i, score=float(scores[i]), dense=None,
                                                              bm25=float(scores[i]), found_by=["graph"])})
    return out


def local_answer(question, payload, corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, k=LOCAL_K, trace=None):
    """Entities named in the question, their neighbours, the chunks they came from; one cited answer.
    Each matched entity gets its own document's best chunk first, then the rest go by BM25."""
    question, trace, start, g = check_question(question), steps.trace(trace), time.perf_counter(), payload["G"]
    with llm.counting() as cost:
        matched = match_entities(question, payload)
        trace.append({"step": "match", "entities": [g.nodes[m]["name"] for m in matched]})
        near = {m: sorted(g[m], key=lambda n: (-g.edges[m, n]["weight"], n))[:NEIGHBOURS] for m in matched}
        trace.append({"step": "neighbours", "of": {g.nodes[m]["name"]: [f"{g.nodes[n]['name']} "
                      f"({', '.join(g.edges[m, n]['relations'])})" for n in ns] for m, ns in near.items()}})
        r = get_retriever(corpus, chunker)
        scores, by_doc = r.bm25.scores(question), r.by_doc
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
    return steps.finish(result, "local", trace, passages, cost, start, entities=[g.nodes[m]["name"] for m in matched])


def global_answer(question, payload, corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, k=GLOBAL_K, trace=None):
    """Community summaries ranked by embedding similarity; map: each of the top k gives scored points from its
    summary and its best chunks; reduce: generate() over one source per community. Each sentence's citations
    are traced to communities and through them to the chunks their points came from."""
    import numpy as np
    question, trace, start, g = check_question(question), steps.trace(trace), time.perf_counter(), payload["G"]
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
                reply = llm.complete_json(f"{report}\n\nQuestion: {question}", MAP_SCHEMA, system=MAP_SYSTEM,
                                          max_tokens=400)
                points = [p for p in reply.get("points", []) if isinstance(p, dict) and str(p.get("text", "")).strip()]
            except llm.ReplyError:
                points = []
            points = sorted(points, key=lambda p: -p["score"] if isinstance(p.get("score"), int) else 0)
            trace.append({"step": "map", "community": c["id"], "title": c["title"],
                          "chunks": [p["chunk_id"] for p in chunks],
                          "points": [{"text": cut(p["text"], 300), "score": p.get("score")} for p in points]})
            used += chunks
            text = " ".join(cut(p["text"], 300) for p in points) or c["summary"]
            sources.append({"id": f"S{len(sources) + 1}", "chunk_id": f"community-{c['id']}",
                            "doc": f"community:{c['id']}",
                            "title": c["title"], "text": text, "score": None, "dense": None, "bm25": None,
                            "found_by": ["community"], "community": c["id"], "chunks": [p["chunk_id"] for p in chunks]})
        result = generate(question, passages=sources, corpus=corpus, chunker=chunker)
        by_id = {p["id"]: p for p in result["passages"]}
        trace.append({"step": "reduce", "claims": [
            {"text": s["text"], "communities": [by_id[c]["community"] for c in s["cites"]],
             "chunks": [x for c in s["cites"] for x in by_id[c]["chunks"]]}
            for s in result["sentences"]]})
    entities = [g.nodes[m]["name"] for m in match_entities(question, payload, fallback=False)]
    return steps.finish(result, "global", trace, used, cost, start, entities=entities)


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
    payload, trace = load(corpus, chunker, extractor), steps.trace()
    if mode == "auto":
        mode, why = route(check_question(question), payload)
        trace.append({"step": "route", "mode": mode, "reason": why})
    fn = local_answer if mode == "local" else global_answer
    return fn(question, payload, corpus, chunker, trace=trace)


# ---- evaluation: the rows' settings, the router check ----

GLOBAL_EXAMPLES = ["What are the main themes of these documents?", "Summarize the kinds of places described.",
                   "What topics do the documents cover overall?", "Compare the people across the corpus."]


def eval_settings(mode, corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, extractor=None):
    """(graph_answer keyword arguments beside mode, cache settings) for a built graph, named in the settings by
    its content, so a rebuilt graph recomputes its rows. extractor None: the graph built, 'llm' preferred.
    CorpusError with the build command when there is none."""
    extractor = extractor or next((e for e in EXTRACTORS if graph_path(corpus, chunker, e).exists()), EXTRACTORS[0])
    path = graph_path(corpus, chunker, extractor)
    if not path.exists():
        load(corpus, chunker, extractor)   # raises CorpusError, with the build command
    kw = {"corpus": corpus, "chunker": chunker, "extractor": extractor}
    return kw, {"mode": mode, **kw, "corpus": str(corpus), "graph": graph_hash(path)}


def router_check(payload, golden):
    """auto's choices: golden questions (all entity questions: local expected) and GLOBAL_EXAMPLES (global)."""
    local = sum(route(x["question"], payload)[0] == "local" for x in golden)
    glob = sum(route(q, payload)[0] == "global" for q in GLOBAL_EXAMPLES)
    return {"golden_local": local / max(1, len(golden)), "examples_global": glob / len(GLOBAL_EXAMPLES),
            "accuracy": (local + glob) / (len(golden) + len(GLOBAL_EXAMPLES))}


# ---- command line ----

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
    pattern_cli.add_pattern_args(ap)
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
            print(f"model: {llm.engine_info()['engine']} {llm.engine_info()['model']}"
                  if args.extractor == "llm" else "")
            b = build(args.corpus, args.chunker, args.extractor, args.docs, golden, args.docs_from_golden)
            print(f"built {graph_path(args.corpus, args.chunker, args.extractor)}: " + "  ".join(
                f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in stats({**b, "G": load(
                    args.corpus, args.chunker, args.extractor)["G"]}).items()))
        if args.stats:
            s = print_stats(args.corpus, args.chunker, args.extractor, golden, args.compare_extractors)
            if args.json:
                cache.write_json(args.json, {"settings": settings, "stats": s})
        if args.build or args.stats:
            return
        kw = dict(mode=args.mode, corpus=args.corpus, chunker=args.chunker, extractor=args.extractor)
        if args.eval:
            items = sample_golden(golden, args.eval)
            graph_kw, graph_settings = eval_settings(args.mode, args.corpus, args.chunker, args.extractor)
            rows = {"generate": harness.run(items, corpus=args.corpus, fresh=args.fresh),
                    "multihop": harness.evaluate("multihop-parallel", functools.partial(
                        multihop_answer, corpus=args.corpus, chunker=args.chunker), items, {"corpus": str(args.corpus)},
                        args.fresh),
                    f"graphrag-{args.mode}": harness.evaluate(f"graphrag-{args.mode}", functools.partial(
                        graph_answer, mode=args.mode, **graph_kw), items, graph_settings, args.fresh)}
            table = harness.compare(rows)
            harness.print_comparison(table)
            router = router_check(load(args.corpus, args.chunker, args.extractor), items)
            print("\nauto router: " + "  ".join(f"{k} {v:.3f}" for k, v in router.items()))
            if args.json:
                cache.write_json(args.json, {"settings": settings, "model": llm.engine_info(), "table": table,
                                          "router": router, "rows": rows})
            return
        question = check_question(args.question)
        print(f"model: {llm.engine_info()['engine']} {llm.engine_info()['model']}")
        r = graph_answer(question, **kw)
        print(f"mode: {r['mode']}\nmatched entities: {', '.join(r['entities']) or '(none)'}\ntrace:")
        steps.print_trace(r["trace"])
        citations.print_checked(r)
        print("\n" + steps.cost_line(r["cost"], "wall_seconds"))
        if args.png:
            payload = load(args.corpus, args.chunker, args.extractor)
            keys = [k for k in payload["G"] if payload["G"].nodes[k]["name"] in r["entities"]]
            print(f"wrote {draw(payload, keys, args.png, args.community)}")
    except (ValueError, CorpusError, llm.LLMError) as e:
        sys.exit(f"graphrag: {e}")


if __name__ == "__main__":
    main()
