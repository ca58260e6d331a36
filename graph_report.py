"""A built GraphRAG graph measured and drawn (week 8; graphrag.py's --stats, --compare-extractors and --png): the
hash of its content that keys the rows answered from it, its size and build cost, how far it reaches the golden
questions, the LLM extractor's graph beside the titles one over the same documents, a PNG of its neighbourhood.

    python graphrag.py --stats --compare-extractors    # the figures, one a line, then the two extractors' table
    python graphrag.py "question" --png results/graph.png

Expected: "docs", "nodes", "edges", "communities", "extracted", "cache_hits", "failed", "dropped" and
"extract_s_per_doc", one a line; then a row per extractor (nodes, edges, golden questions, share with an entity
matched, doc reach) and the names the two graphs share. No model call: the titles graph is built here, in seconds.
"""
import functools
import json
from pathlib import Path

import networkx as nx

import harness
from graph_index import MAX_MATCHED, SEED, build_graph, extract_titles, load, ngram_keys
from lab.cache import Cache
from vector_index import load_documents

PNG_NODES = 40            # nodes drawn at most


@functools.lru_cache(maxsize=8)
def _graph_hash(path, stamp):
    payload = json.loads(Path(path).read_text(encoding="utf-8"))
    return Cache.key(payload.get("graph"), payload.get("communities"))[:16]


def graph_hash(path):
    """A hash of a built graph's nodes, edges and communities (not its build times): rows answered from it are
    keyed by it, so a graph that comes out different recomputes them, and the same graph built again does not."""
    path = Path(path)
    return _graph_hash(str(path), path.stat().st_mtime_ns)


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
    return {"questions": len(items), "matched": matched / max(1, len(items)), "doc_reach": harness.mean(recall)}


def stats(payload):
    """The built graph's size and build cost, as --stats prints them."""
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


def print_stats(corpus, chunker, extractor, golden, compare=False):
    """--stats: the built graph's figures, one a line; with compare (--compare-extractors), the LLM and titles graphs
    side by side, their figures added as "compare_extractors". -> the figures"""
    s = stats(load(corpus, chunker, extractor))
    print("\n".join(f"{k:18} {v:.2f}" if isinstance(v, float) else f"{k:18} {v}" for k, v in s.items()))
    if compare:
        c = compare_extractors(corpus, chunker, golden)
        print(f"\n{'extractor':10}{'nodes':>8}{'edges':>8}{'golden q':>10}{'matched':>9}{'doc reach':>10}")
        for name in ("llm", "titles"):
            r = c[name]
            print(f"{name:10}{r['nodes']:>8}{r['edges']:>8}{r['questions']:>10}{r['matched']:>9.3f}"
                  f"{harness.fmt(r['doc_reach']):>10}")
        print(f"shared names {c['overlap']['shared_names']}  jaccard {c['overlap']['jaccard']:.3f}  "
              f"titles found by llm {c['overlap']['titles_in_llm']:.3f}")
        s["compare_extractors"] = c
    return s


def draw(payload, centre, path, community=None):
    """PNG of the graph around `centre` (node keys: them and their neighbours) or of one community."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    g = payload["G"]
    nodes = list(payload["communities"][community]["nodes"]) if community is not None else \
        list(dict.fromkeys([*centre, *(n for c in centre
                                       for n in sorted(g[c], key=lambda n: -g.edges[c, n]["weight"]))]))
    sub = g.subgraph(nodes[:PNG_NODES])
    pos = nx.spring_layout(sub, seed=SEED, weight="weight")
    fig, ax = plt.subplots(figsize=(11, 8))
    colors = [sub.nodes[n].get("community", 0) for n in sub]
    nx.draw_networkx_edges(sub, pos, ax=ax, alpha=0.4)
    nx.draw_networkx_nodes(sub, pos, ax=ax, node_color=colors, cmap="tab20",
                           node_size=[900 if n in centre else 300 for n in sub])
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
