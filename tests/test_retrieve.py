"""bm25_baseline.py and retrieve.py: known answers on the fixture corpus, fusion rules, golden loading, CLI."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

import retrieve
from bm25_baseline import BM25, search, tokenize
from vector_index import CorpusError

ROOT = Path(__file__).parent.parent


def test_tokenize_drops_stopwords_and_case():
    assert tokenize("The Eiffel Tower, in 1889!") == ["eiffel", "tower", "1889"]


def test_bm25_ranks_the_matching_text_first():
    index = BM25(["red apple pie", "green pear", "apple apple tree"])
    assert [i for i, _ in index.top("apple", 3)] == [2, 0]  # no zero-score hits
    assert index.top("", 3) == [] and BM25([]).top("apple", 2) == []


def test_bm25_document_search(corpus):
    assert search("Which island has no cars?", 2, corpus)[0][0] == "medra"


def test_fuse_rrf_one_chunk_per_document_and_bm25_guarantee():
    doc = {1: "a", 2: "a", 3: "b", 4: "c", 5: "d", 9: "z"}.get
    dense = [(1, .9), (2, .8), (3, .7), (4, .6)]
    bm25 = [(9, 20.0), (3, 5.0)]
    top = retrieve.fuse(dense, bm25, doc, 3)
    assert [i for i, _ in top] == [3, 1, 9]  # 3 is in both lists; 2 repeats doc a; 9 is BM25's best
    assert [i for i, _ in retrieve.fuse(dense, [], doc, 3)] == [1, 3, 4]
    # with k=2, fusion alone gives [3, 1]; BM25's best document (z) must still get the last slot
    assert [i for i, _ in retrieve.fuse(dense, bm25, doc, 2)] == [3, 9]
    assert retrieve.fuse([], [], doc, 3) == []


def test_retrieve_chunks_labels_and_provenance(corpus):
    ps = retrieve.retrieve_chunks("Who designed Ashford Bridge?", k=3, corpus=corpus)
    assert [p["id"] for p in ps] == ["S1", "S2", "S3"]
    assert ps[0]["doc"] == "ashford-bridge" and ps[0]["chunk_id"] == "ashford-bridge#0"
    assert ps[0]["found_by"] == ["dense", "bm25"] and ps[0]["dense"] > 0.4 and ps[0]["bm25"] > 0
    assert "Tomas Vell" in ps[0]["text"] and ps[0]["text"].startswith("Ashford Bridge\n")
    assert len({p["doc"] for p in ps}) == 3


def test_every_method_returns_k_passages(corpus):
    for method in retrieve.METHODS:
        ps = retrieve.retrieve_chunks("Edric Vell botanist mosses", k=2, corpus=corpus, method=method)
        assert len(ps) == 2 and ps[0]["doc"] == "edric-vell", method
    with pytest.raises(ValueError, match="unknown method"):
        retrieve.retrieve_chunks("x", corpus=corpus, method="magic")


def test_seed_interleave_drops_the_bm25_net_when_dense_fills_k(corpus):
    """The seed's flaw, kept on purpose: with k dense chunks, BM25 never gets a slot."""
    q = "Carn Dall 612 metres"
    dense = retrieve.retrieve_chunks(q, k=3, corpus=corpus, method="dense")
    seed = retrieve.retrieve_chunks(q, k=3, corpus=corpus, method="seed_interleave")
    assert [p["chunk_id"] for p in seed] == [p["chunk_id"] for p in dense]
    assert all(p["found_by"] == ["dense"] for p in seed)


def test_seed_interleave_feeds_a_document_prefix():
    r = retrieve.Retriever.__new__(retrieve.Retriever)
    r.corpus = Path(ROOT / "tests" / "fixtures" / "corpus")
    r.ids, r.texts, r.metas = [], [], []
    ps = r.seed_interleave("Carn Dall highest summit", [], 1)
    assert ps[0]["doc"] == "brannock-hills" and ps[0]["found_by"] == ["bm25"]
    assert len(ps[0]["text"]) == retrieve.SEED_PREFIX_CHARS and "Carn Dall" in ps[0]["text"]


def test_retriever_reloads_after_a_rebuild(own_corpus):
    from vector_index import build_index
    build_index(own_corpus, "titled", progress=False)
    before = retrieve.get_retriever(own_corpus)
    (own_corpus / "medra.txt").write_text("Medra\nMedra has a lighthouse keeper named Olwen Tarr.\n")
    build_index(own_corpus, "titled", progress=False)
    after = retrieve.get_retriever(own_corpus)
    assert after is not before
    assert retrieve.retrieve_chunks("Olwen Tarr", k=1, corpus=own_corpus)[0]["doc"] == "medra"


def test_doc_recall():
    assert retrieve.doc_recall([{"doc": "a"}, {"doc": "c"}], ["a", "b"]) == 0.5


def test_load_golden_skips_malformed_entries(tmp_path, golden_path, capsys):
    items = json.loads(golden_path.read_text())
    bad = [dict(items[0], id="no-q"), dict(items[1], type="double"), "not an object", dict(items[2], hops="2")]
    del bad[0]["question"]
    path = tmp_path / "g.json"
    path.write_text(json.dumps(items + bad))
    good = retrieve.load_golden(path)
    assert [g["id"] for g in good] == [g["id"] for g in items]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4
    assert "entry 6 (id 'no-q'): missing key 'question'" in err[0]
    assert "type must be 'single' or 'multi'" in err[1] and "expected an object" in err[2]
    assert "'hops' should be int" in err[3]
    path.write_text("{not json")
    with pytest.raises(CorpusError, match="cannot read golden file"):
        retrieve.load_golden(path)


def test_eval_cli_writes_the_documented_json(corpus, golden_path, tmp_path, monkeypatch, capsys):
    out = tmp_path / "r.json"  # `python retrieve.py --eval ...`, in this process: the embedder is loaded once
    monkeypatch.setattr(sys, "argv", ["retrieve.py", "--eval", "--corpus", str(corpus), "--golden", str(golden_path),
                                      "--k", "1,4", "--json", str(out)])
    retrieve.main()
    stdout = capsys.readouterr().out
    report = json.loads(out.read_text())
    assert set(report["recall"]) == set(retrieve.METHODS)
    assert set(report["recall"]["fused"]) == {"1", "4"}
    assert report["n"]["single"] == 3 and report["n"]["multi"] == 3 and report["n"]["all"] == 6
    assert report["recall"]["fused"]["4"]["single"] == 1.0  # one-document questions on a tiny corpus
    assert report["recall"]["fused"]["4"]["multi"] >= report["recall"]["fused"]["1"]["multi"]
    assert "supporting-doc recall" in stdout


def test_cli_without_index_says_how_to_build_it(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.txt").write_text("A\nsome text\n")
    r = subprocess.run([sys.executable, str(ROOT / "retrieve.py"), "--corpus", str(tmp_path / "c"), "q"],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1].startswith("retrieve: no index for")
    assert "python vector_index.py --corpus" in r.stderr


def test_a_ranking_is_kept_so_an_index_built_again_ranks_as_the_first(corpus, monkeypatch):
    """Issue 60: Chroma's HNSW search is approximate and two builds of one index rank a few queries otherwise, so a
    dense ranking is kept (lab.cache.ranked) by what the index holds and the query: a replay on a fresh clone reads
    the ranking its table was made with. Another depth, or an index holding other chunks or an edited document, asks
    Chroma again."""
    from vector_index import embed
    r = retrieve.Retriever(corpus)
    qvec = embed(["Who designed Ashford Bridge?"])[0]
    first = r.dense(qvec, 3)
    assert len(first) == 3 and first == sorted(first, key=lambda x: -x[1])

    def other_graph(query_embeddings, n_results, include):   # a rebuilt index that ranks this query otherwise
        return {"ids": [list(reversed(r.ids[:n_results]))], "distances": [[0.5] * n_results]}
    monkeypatch.setattr(r.collection, "query", other_graph)
    assert r.dense(qvec, 3) == first                             # the kept ranking, not the new graph's
    assert r.dense(qvec, 2) == [(r.pos[c], 0.5) for c in reversed(r.ids[:2])]   # another depth: asked again
    r.metas = [{**m, "hash": "edited"} if i == 0 else m for i, m in enumerate(r.metas)]   # a document edited
    assert r.dense(qvec, 3) != first                             # its index is another: asked again
