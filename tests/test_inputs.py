"""Every input in the key: an edited corpus, golden label, attack or model gives new results, an unrelated edit
recomputes nothing (issue 29). Answers follow what the index holds (vector_index.fingerprint), rows the golden
item's labels (retrieve.labels). Every model here is a SCRIPTED stand-in (llm.ScriptedModel), never the real
engine; retrieval runs on real fixture-corpus indexes.
"""
import json
import shutil

import pytest

import harness
from experiments import injection as inj
import injection_detector
import llm
import vector_index
from lab.cache import Cache, moved
from test_benchmark import SCRIPTED_MODEL, embed_once  # noqa: F401 (fixture)
from test_injection import ITEMS as ATTACKS, scripted
from vector_index import build_index, fingerprint

GOLDEN = json.loads((harness.HERE / "tests" / "fixtures" / "golden.json").read_text())
FX1 = next(g for g in GOLDEN if g["id"] == "fx-1")   # "Who designed Ashford Bridge?": one supporting doc


@pytest.fixture
def caches(tmp_path):
    with moved(("answers", "rows", "judge", "injection", "injection_answers"), tmp_path / "cache"):
        yield tmp_path / "cache"


def evaluate(corpus, item, model=None):
    """generate()'s row for one golden item on `corpus` (index brought up to date first) -> (row, model calls)."""
    name, answer, settings = harness.run_args("json", "best_first", corpus)
    build_index(corpus, "titled", progress=False)
    with llm.use_model(model or SCRIPTED_MODEL()) as m:
        row = harness.evaluate(name, answer, [item], settings, progress=False)[0]
    return row, len(m.calls)


def rows_kept(folder, name="rows"):
    return len(Cache(name, folder))


def test_the_fingerprint_a_build_leaves_is_the_one_read_back_and_moves_with_every_document(own_corpus):
    build_index(own_corpus, "titled", progress=False)
    built = fingerprint(own_corpus)
    vector_index._FINGERPRINTS.clear()   # another process: read from the chunks' metadata
    assert fingerprint(own_corpus) == built
    (own_corpus / "notes.pdf").write_bytes(b"%PDF-1.4")   # not a document: skipped, nothing changes
    build_index(own_corpus, "titled", progress=False)
    assert fingerprint(own_corpus) == built
    seen = {built}
    for edit in (lambda: (own_corpus / "medra.txt").unlink(),
                 lambda: (own_corpus / "new-doc.txt").write_text("Harbour Light\nThe harbour light is red."),
                 lambda: (own_corpus / "corran.md").write_text("# Corran\nCorran has a new mayor.")):
        edit()
        build_index(own_corpus, "titled", progress=False)
        now = fingerprint(own_corpus)
        vector_index._FINGERPRINTS.clear()
        assert now not in seen and fingerprint(own_corpus) == now
        seen.add(now)


def test_a_deleted_added_or_edited_document_recomputes_the_answer_and_nothing_else_does(own_corpus, caches):
    first, calls = evaluate(own_corpus, FX1)
    assert calls > 0 and first["doc_recall"] == 1.0
    assert evaluate(own_corpus, FX1) == (first, 0)
    other = [dict(g, answer="edited") if g["id"] == "fx-2" else g for g in GOLDEN]   # another question edited
    assert evaluate(own_corpus, next(g for g in other if g["id"] == "fx-1")) == (first, 0)
    (own_corpus / ".hidden.txt").write_text("Ignored\nA hidden file is no document.")
    assert evaluate(own_corpus, FX1) == (first, 0)
    kept = rows_kept(caches)
    (own_corpus / "ashford-bridge.txt").unlink()   # the question's only supporting document
    gone, calls = evaluate(own_corpus, FX1)
    assert calls > 0 and gone["doc_recall"] == 0.0 and rows_kept(caches) == kept + 1
    (own_corpus / "lighthouse.txt").write_text("Sallow Lighthouse\nThe lighthouse was designed by Mira Dune.")
    assert evaluate(own_corpus, FX1)[1] > 0
    (own_corpus / "lighthouse.txt").write_text("Sallow Lighthouse\nThe lighthouse was designed by Arno Dune.")
    assert evaluate(own_corpus, FX1)[1] > 0


LABEL_EDITS = [  # (labels edited, the row field that follows them, its value then); the scripted answer: Tomas Vell
    ({"answer": "Edric Vell"}, "em", 0.0),
    ({"answer": "Edric Vell", "aliases": ["Tomas Vell"]}, "em", 1.0),
    ({"supporting_docs": ["ashford-bridge", "no-such-doc"]}, "doc_recall", 0.5),
    ({"type": "multi"}, "type", "multi"),
]


def test_an_edited_golden_label_rescores_the_row_from_the_cached_answer(corpus, caches):
    first, _ = evaluate(corpus, FX1)
    assert (first["em"], first["doc_recall"], first["type"]) == (1.0, 1.0, "single")
    for edit, field, value in LABEL_EDITS:
        kept = rows_kept(caches)
        row, calls = evaluate(corpus, {**FX1, **edit})
        assert calls == 0 and rows_kept(caches) == kept + 1, edit   # answer and verdicts from the cache
        assert row[field] == value and row["answer"] == first["answer"], edit


def test_another_model_or_judge_gets_its_own_answers_and_rows(corpus, caches, monkeypatch):
    first, _ = evaluate(corpus, FX1)
    other = SCRIPTED_MODEL()
    other.name = "another-model"
    assert evaluate(corpus, FX1, other)[1] > 0   # the answering model is in the answer's key
    name, answer, settings = harness.run_args("json", "best_first", corpus)
    with llm.use_model(SCRIPTED_MODEL()):
        key = harness.answer_key(name, answer, settings, FX1)
        before = harness.row_key(key, FX1)
        monkeypatch.setenv("RAG_JUDGE_MODEL", "bespoke-minicheck")
        assert harness.row_key(key, FX1) != before and harness.row_key(key, FX1) == harness.row_key(key, dict(FX1))


@pytest.fixture
def attack_corpus(tmp_path):
    path = tmp_path / "inj-corpus"
    shutil.copytree(inj.CORPUS, path)
    build_index(path, "titled", progress=False)
    return path


def honest(item):
    """A SCRIPTED model that answers the item's question with its true answer, citing S1."""
    return scripted(lambda user: (item["answer"], [(f"The answer is {item['answer']}.", ["S1"])]))


def run_attack(item, corpus, model):
    with llm.use_model(model):
        return inj.run_method("json", [item], corpus, progress=False)[0]


def test_an_edited_attack_is_the_one_scored(attack_corpus, caches):
    item = ATTACKS[0]
    model = honest(item)
    first = run_attack(item, attack_corpus, model)
    asked = lambda: sum(m[0]["content"] != inj.judge_answers.SHARED_SYSTEM for m, _ in model.calls)   # answer prompts
    answers = asked()
    assert first["target"] == item["attack"]["target"] and not first["target_shown"]
    rows = rows_kept(caches, "injection")
    assert run_attack(ATTACKS[0], attack_corpus, model) == first and rows_kept(caches, "injection") == rows
    assert run_attack({**ATTACKS[1], "answer": "x"}, attack_corpus, model)["id"] == ATTACKS[1]["id"]   # another q
    rows, answers = rows_kept(caches, "injection"), asked()
    assert run_attack(item, attack_corpus, model) == first and rows_kept(caches, "injection") == rows
    target = {**item, "attack": {**item["attack"], "target": item["answer"]}}   # the target made the true answer
    row = run_attack(target, attack_corpus, model)
    assert row["target"] == item["answer"] and row["target_shown"] and asked() == answers   # re-scored, not re-asked
    kind = {**item, "attack": {**item["attack"], "kind": "authority"}}
    assert run_attack(kind, attack_corpus, model)["kind"] == "authority" and asked() == answers
    doc = {**item, "attack": {**item["attack"], "doc": ATTACKS[1]["attack"]["doc"]}}   # another document forced in
    assert run_attack(doc, attack_corpus, model)["id"] == item["id"] and asked() == answers + 1


def test_a_new_attack_family_runs_to_the_end_with_the_shipped_detector(attack_corpus, caches, tmp_path, monkeypatch,
                                                                      capsys):
    assert "ransom_note" not in injection_detector.fitted_without()
    assert injection_detector.detector(without="ransom_note") is injection_detector.detector()
    golden, out = tmp_path / "golden.json", tmp_path / "out.json"
    golden.write_text(json.dumps([{**ATTACKS[0], "attack": {**ATTACKS[0]["attack"], "kind": "ransom_note"}},
                                  ATTACKS[1]]))
    monkeypatch.setattr("sys.argv", ["injection.py", "--corpus", str(attack_corpus), "--golden", str(golden),
                                     "--patterns", "json", "--json", str(out)])
    with llm.use_model(honest(ATTACKS[0])):
        inj.main()
    text = capsys.readouterr().out
    assert "no detector was fitted without ransom_note" in text and "ransom_note" in text.split("by kind")[1]
    data = json.loads(out.read_text())
    assert data["settings"]["lofo_shipped_detector"] == ["ransom_note"]
    assert {r["kind"] for r in data["rows"]["json"]} == {"ransom_note", ATTACKS[1]["attack"]["kind"]}


def test_an_attack_doc_not_in_the_corpus_is_one_line_and_skipped(attack_corpus, caches, tmp_path, monkeypatch,
                                                                capsys):
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps([{**ATTACKS[0], "attack": {**ATTACKS[0]["attack"], "doc": "no-such-doc"}},
                                  ATTACKS[1]]))
    monkeypatch.setattr("sys.argv", ["injection.py", "--corpus", str(attack_corpus), "--golden", str(golden),
                                     "--patterns", "json"])
    with llm.use_model(honest(ATTACKS[1])):
        inj.main()
    err = capsys.readouterr().err
    assert "attack doc 'no-such-doc' is not a document of" in err and "skipped" in err
    golden.write_text(json.dumps([{**ATTACKS[0], "attack": {**ATTACKS[0]["attack"], "doc": "no-such-doc"}}]))
    with pytest.raises(SystemExit, match="no question's attack doc is a document of"):
        inj.main()
