"""debian/, real manuals no one on the project wrote (the debian-policy package's HTML, copied by
experiments/make_debian.py) and hand-written golden questions about them: every file loads as the lab's reader reads
it, the golden file has the catalogue's shape, every answer (or an alias) is in a document the item names, every
hop's answer is in that hop's document, and the split follows the document a question starts from. No model, no
embedding, no network: the files are read as committed.
"""
import json
from collections import Counter
from pathlib import Path

import pytest

import retrieve
import vector_index as vi

ROOT = Path(__file__).resolve().parent.parent
DEBIAN = ROOT / "debian"
norm = lambda s: " ".join(s.split()).lower()
says = lambda doc, answers: any(norm(a) in norm(doc.text) for a in answers)


@pytest.fixture(scope="module")
def docs():
    loaded, failed = vi.load_documents(DEBIAN / "docs", quiet=True)
    assert not failed, failed
    return loaded


@pytest.fixture(scope="module")
def golden():
    return json.loads((DEBIAN / "golden.json").read_text(encoding="utf-8"))


def test_every_file_loads_as_html_with_its_sections(docs):
    files = sorted((DEBIAN / "docs").iterdir())
    assert len(files) >= 20 and len(docs) == len(files)                 # none skipped, no two with one id
    assert {f.suffix for f in files} == {".html"}
    assert all(len(d.text.split()) >= 80 for d in docs.values())
    assert sum(len(d.blocks) >= 5 for d in docs.values()) >= 15           # h2-h6 read as sections
    assert "5.6.31. Rules-Requires-Root" in " ".join(b.section for b in docs["ch-controlfields-html"].blocks)
    assert "Navigation" not in docs["ch-archive-html"].text                # Sphinx's sidebar is dropped
    assert (DEBIAN / "copyright").is_file() and "GPL-2+" in (DEBIAN / "copyright").read_text(encoding="utf-8")
    assert {f"{f.stem}.rst.txt" for f in files if f.name.startswith(("ch-", "ap-"))} <= {
        f.name for f in (DEBIAN / "sources").iterdir()}                     # the manual's source, as its GPL asks


def test_the_golden_file_has_the_catalogue_shape(golden):
    keys = set(json.loads((ROOT / "catalogue" / "golden.json").read_text(encoding="utf-8"))[0])
    assert len(golden) >= 40 and all(set(item) == keys for item in golden)
    assert not [item["id"] for item in golden if retrieve.golden_problem(item)]
    assert len({item["id"] for item in golden}) == len(golden)
    assert len({norm(item["question"]) for item in golden}) == len(golden)
    assert {item["source"] for item in golden} == {"debian"}
    counts = Counter((item["type"], item["split"]) for item in golden)
    assert set(counts) == {(t, s) for t in ("single", "multi") for s in ("dev", "test")}, counts
    assert all(n >= 8 for n in counts.values()), counts
    for item in golden:
        hops = item["decomposition"]
        assert item["hops"] == len(hops) and item["type"] == ("single" if len(hops) == 1 else "multi"), item["id"]
        assert item["supporting_docs"] == list(dict.fromkeys(h["doc"] for h in hops)), item["id"]
        assert hops[-1]["answer"] == item["answer"] and item["entities"], item["id"]


def test_every_supporting_doc_exists(docs, golden):
    missing = sorted({(item["id"], d) for item in golden for d in item["supporting_docs"] if d not in docs})
    assert not missing, missing


def test_every_answer_is_stated_in_a_document_the_item_names(docs, golden):
    """The answer or an alias, case and whitespace aside, is in a supporting document, and in the last hop's."""
    absent = [item["id"] for item in golden
              if not any(says(docs[d], [item["answer"], *item["aliases"]]) for d in item["supporting_docs"])
              or not says(docs[item["decomposition"][-1]["doc"]], [item["answer"], *item["aliases"]])]
    assert not absent, absent


def test_every_hop_is_answered_by_its_own_document(docs, golden):
    """Each hop's answer is in its document ('A and B': both are), and a two-hop question uses two documents."""
    bad = [(item["id"], h["answer"]) for item in golden for h in item["decomposition"]
           if not says(docs[h["doc"]], [h["answer"]]) and not all(says(docs[h["doc"]], [p])
                                                                 for p in h["answer"].split(" and "))]
    assert not bad, bad
    assert all(len(item["supporting_docs"]) == 2 for item in golden if item["type"] == "multi")


def test_the_split_follows_the_document_a_question_starts_from(golden):
    """No document is the first hop of a dev question and of a test question: the halves ask about different
    chapters (dev: 1-3, 5, 7, 8 and the documents beside them; test: 4, 6, 9-12, the Perl policy)."""
    first = {s: {item["decomposition"][0]["doc"] for item in golden if item["split"] == s} for s in ("dev", "test")}
    assert not first["dev"] & first["test"], first["dev"] & first["test"]
