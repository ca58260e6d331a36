"""graph_index.py and graphrag.py: name merging, malformed extraction, cached and resumable builds, local and global
search, the auto router, the picture. Runs on llm.ScriptedModel (a SCRIPTED stand-in, never a language model) over the
fixture corpus; the retrieval index is the real one.

    pytest tests/test_graphrag.py -m "not engine"    # ~20 s (the embedding model loads once)
"""
import json
import re

import pytest

import graph_index as gi
import graphrag as gr
import llm
from generate import JSON_SYSTEM
from layers import spans

GENERATE_SYSTEM = JSON_SYSTEM
ent = lambda name, kind="place", desc="": {"name": name, "type": kind, "description": desc or f"{name}."}
rel = lambda s, t, r: {"source": s, "target": t, "relation": r, "description": f"{s} {r} {t}."}
EXTRACTIONS = {  # what the scripted extractor "finds" per document title; others get an empty list
    "Ashford Bridge": {"entities": [ent("Ashford Bridge", "bridge"), ent("tomas vell.", "person"), ent("River Lente"),
                                    ent("Corran", desc="x" * 5000)],
                       "relations": [rel("Ashford Bridge", "Tomas Vell", "designed by"),
                                     rel("Ashford Bridge", "River Lente", "crosses"),
                                     rel("Ashford Bridge", "ashford  bridge", "is"),
                                     rel("Ashford Bridge", "Nowhere", "near")]},
    "Tomas Vell": {"entities": [ent("Tomas Vell", "person"), ent("Hartmoor"), ent("Edric Vell", "person")],
                   "relations": [rel("Tomas Vell", "Hartmoor", "born in"),
                                 rel("Tomas Vell", "Edric Vell", "brother of")]},
    "Edric Vell": {"entities": [ent("Edric Vell", "person"), ent("Corran"), ent("The Brannock Hills")],
                   "relations": [rel("Edric Vell", "Corran", "lived in"),
                                 rel("Edric Vell", "Brannock Hills", "studied")]},
    "Port Sallow": {"entities": [ent("Port Sallow"), ent("Medra"), ent("River Lente")],
                    "relations": [rel("Port Sallow", "Medra", "ferry to"),
                                  rel("River Lente", "Port Sallow", "flows to")]},
}


def scripted(messages, schema, bad_titles=("Hartmoor",)):
    system, user = messages[0]["content"], messages[-1]["content"]
    if system == gi.EXTRACT_SYSTEM:
        title = re.match(r"Document title: (.*)", user).group(1)
        return ("{not json" if title in bad_titles
                else json.dumps(EXTRACTIONS.get(title, {"entities": [], "relations": []})))
    if system == gi.SUMMARY_SYSTEM:
        return json.dumps({"title": "Group " + user.split(" (")[0], "summary": user.replace("\n", " ")[:200]})
    if system == gr.MAP_SYSTEM:
        return json.dumps({"points": [{"text": "Tomas Vell was born in Hartmoor.", "score": 80}]})
    if system == GENERATE_SYSTEM and "sentences" in json.dumps(schema):   # the answer, not a check of it
        return json.dumps({"sentences": [{"text": "He was born in Hartmoor.", "sources": ["S1"]}],
                           "answer": "Hartmoor"})
    return json.dumps({"verdict": "yes", "supported": "yes"})


def test_normalize_and_trivial_aliases():
    assert gi.normalize("The  Ashford-Bridge's") == "ashford bridge"
    assert gi.normalize("Édric VELL.") == "edric vell"
    assert gi.ngram_keys("Who designed Ashford Bridge?", {"ashford bridge", "bridge"}) == ["ashford bridge"]


def test_clean_extraction_merges_and_drops():
    ex = gi.clean_extraction(EXTRACTIONS["Ashford Bridge"], "Ashford Bridge")
    assert set(ex["entities"]) == {"ashford bridge", "tomas vell", "river lente", "corran"}
    assert ex["entities"]["ashford bridge"]["type"] == "document"  # the title entity, merged with the model's
    assert len(ex["entities"]["corran"]["description"]) <= gi.MAX_DESC_CHARS
    pairs = {(r["source"], r["target"]) for r in ex["relations"]}
    assert pairs == {("ashford bridge", "tomas vell"), ("ashford bridge", "river lente")}  # self-loop, unknown dropped
    assert ex["dropped"] == 2
    for junk in (None, [], {"entities": "x", "relations": [1, {"source": "a"}]}, {"entities": [{"name": "  "}]}):
        assert set(gi.clean_extraction(junk, "Medra")["entities"]) == {"medra"}


def test_bad_json_is_retried_then_a_failure_not_a_crash():
    doc = gi.load_documents(gi.Path(__file__).parent / "fixtures" / "corpus", quiet=True)[0]["hartmoor"]
    with llm.use_model(llm.ScriptedModel(scripted)) as m:
        ex = gi.extract_llm(doc)
    assert len(m.calls) == 2 and "not JSON" in ex["error"]
    assert set(ex["entities"]) == {"hartmoor"} and ex["relations"] == []


def test_build_is_cached_and_resumes(own_corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_INDEX_DIR", str(tmp_path / "idx"))
    with llm.use_model(llm.ScriptedModel(scripted)) as m:
        first = gi.build(own_corpus, progress=False)
        assert first["build"]["extracted"] == 9 and first["build"]["failed"] == 1
        calls = len(m.calls)
        second = gi.build(own_corpus, progress=False)
    assert second["build"]["extracted"] == 0 and second["build"]["cache_hits"] == 9
    assert len(m.calls) == calls  # no extraction and no summary call the second time
    g = gi.load(own_corpus)["G"]
    assert not any(s == t for s, t in g.edges) and g.has_edge("ashford bridge", "tomas vell")
    assert g.nodes["corran"]["docs"] == ["ashford-bridge", "corran", "edric-vell"]  # merged across documents
    (own_corpus / "medra.txt").write_text("Medra\nMedra is an island.\n")  # one changed document
    monkeypatch.setenv("RAG_INDEX_DIR", str(tmp_path / "idx2"))  # a fresh cache for the interruption
    seen = []

    def dies_after_four(messages, schema):
        if messages[0]["content"] == gi.EXTRACT_SYSTEM:
            seen.append(1)
            if len(seen) == 5:
                raise KeyboardInterrupt  # killed midway
        return scripted(messages, schema)
    with llm.use_model(llm.ScriptedModel(dies_after_four)), pytest.raises(KeyboardInterrupt):
        gi.build(own_corpus, progress=False)
    with llm.use_model(llm.ScriptedModel(scripted)):
        resumed = gi.build(own_corpus, progress=False)
    assert resumed["build"]["cache_hits"] == 4 and resumed["build"]["extracted"] == 5


def test_select_docs_golden_first():
    docs = dict.fromkeys(["a", "b", "c", "d"])
    golden = [{"id": "1", "question": "q", "type": "single", "source": "s", "supporting_docs": ["c", "zz"]}]
    assert gi.select_docs(docs, 2, golden) == ["c", "a"]
    assert gi.select_docs(docs, 0, golden, golden_only=True) == ["c"]


@pytest.fixture(scope="module")
def graph(corpus):
    with llm.use_model(llm.ScriptedModel(scripted)):
        return gi.build(corpus, progress=False)


def test_titles_extractor_links_mentions(corpus):
    docs = gi.load_documents(corpus, quiet=True)[0]
    g = gi.build_graph(gi.extract_titles(docs))
    assert g.has_edge("ashford bridge", "tomas vell") and g.has_edge("port sallow", "medra")
    assert not g.has_edge("hartmoor", "medra")


def test_local_cites_the_matched_entity_document(graph, corpus):
    with llm.use_model(llm.ScriptedModel(scripted)):
        r = spans.finish(gr.graph_answer("In which village was the designer of Ashford Bridge born?", "auto", corpus))
    assert r["mode"] == "local" and r["entities"] == ["Ashford Bridge"]
    assert r["passages"][0]["doc"] == "ashford-bridge"
    # the scripted reply cites S1 for "He was born in Hartmoor."; the span layer cites the passage that states it
    stating = next(p["id"] for p in r["passages"] if p["doc"] == "tomas-vell")
    assert r["sentences"][0]["cites"] == [stating]
    assert r["recited"] == [{"sentence": 0, "from": ["S1"], "to": [stating]}]
    assert "tomas-vell" in {p["doc"] for p in r["retrieved"]}  # reached through the "designed by" neighbour
    assert [t["step"] for t in r["trace"]] == ["route", "match", "neighbours", "chunks"]


def test_global_map_reduce_traces_claims_to_chunks(graph, corpus):
    with llm.use_model(llm.ScriptedModel(scripted)) as m:
        r = gr.graph_answer("What are the main themes of these documents?", "auto", corpus)
    assert r["mode"] == "global"
    maps = [t for t in r["trace"] if t["step"] == "map"]
    assert len(maps) == min(gr.GLOBAL_K, len(graph["communities"])) and all(t["points"] for t in maps)
    claim = next(t for t in r["trace"] if t["step"] == "reduce")["claims"][0]
    assert claim["communities"] == [maps[0]["community"]] and claim["chunks"] == maps[0]["chunks"]
    assert all("#" in p["chunk_id"] for p in r["retrieved"]) and r["passages"][0]["doc"].startswith("community:")
    assert sum(msgs[0]["content"] == gr.MAP_SYSTEM for msgs, _ in m.calls) == len(maps)


def test_router_and_png(graph, corpus, tmp_path):
    payload = gi.load(corpus)
    assert gr.route("Who designed Ashford Bridge?", payload)[0] == "local"
    assert gr.route("Summarize the kinds of places described.", payload)[0] == "global"
    assert gr.route("Who wrote Hamlet?", payload)[0] == "global"  # no entity of the graph
    png = gr.draw(payload, ["ashford bridge"], tmp_path / "g.png")
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert gr.draw(payload, [], tmp_path / "c.png", community=0).stat().st_size > 1000


def test_community_facts_do_not_depend_on_the_hash_seed():
    """A summary is cached by its facts: they must come out the same in every process (PYTHONHASHSEED differs)."""
    import os
    import subprocess
    import sys
    code = ("import json, networkx as nx, graph_index as gi\n"
            "g = nx.Graph()\n"
            "names = [f'entity {i}' for i in range(40)]\n"
            "for n in names: g.add_node(n, name=n.title(), type='thing', description='d')\n"
            "for i in range(12):\n"
            "    for j in range(i + 1, 12): g.add_edge(names[i], names[j], relations=[f'r{i}{j}'])\n"
            "print(json.dumps(gi.community_facts(g, names[:12])))")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")}
    assert len(outs) == 1
    facts = json.loads(outs.pop())
    assert len(facts) == 24 and facts[12] == "Entity 0 -[r01]- Entity 1"  # 12 nodes, then edges in node order
