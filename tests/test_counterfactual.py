"""experiments/counterfactual.py on the fixture corpus: false copies of the documents that state each answer, in
the ratios of RGB's counterfactual set (no model)."""
import json
from pathlib import Path

from experiments import counterfactual
from lab.answers import normalize_answer

FIXTURES = Path(__file__).parent / "fixtures"


def built(tmp_path, ratio):
    out = tmp_path / ratio.replace(":", "to")
    counterfactual.main(["--corpus", str(FIXTURES / "corpus"), "--golden", str(FIXTURES / "golden.json"),
                         "--ratio", ratio, "--out", str(out)])
    return json.loads((out / "golden.json").read_text()), out / "corpus"


def text(folder, doc):
    return next(folder.glob(f"{doc}.*")).read_text()


def test_a_false_copy_states_another_value_of_the_same_kind_and_the_true_document_stays(tmp_path, capsys):
    items, corpus = built(tmp_path, "1:1")
    assert "question(s) kept" in capsys.readouterr().out
    first = next(i for i in items if i["id"] == "fx-1")   # Who designed Ashford Bridge? Tomas Vell
    assert first["true_docs"] == ["ashford-bridge"] and first["false_docs"] == ["ashford-bridge--copy-1"]
    wrong = first["false_answer"]
    assert wrong and normalize_answer(wrong) != "tomas vell" and wrong[0].isupper()   # a name for a name
    false = text(corpus, "ashford-bridge--copy-1")
    assert wrong in false and "Tomas Vell" not in false and false.splitlines()[0] == "Ashford Bridge"
    assert "Tomas Vell" in text(corpus, "ashford-bridge")   # the true page is still there
    assert (corpus / "medra.txt").is_symlink()   # the rest of the corpus linked, not copied
    height = next(i for i in items if i["id"] == "fx-3")["false_answer"]   # 612 metres: a number for a number
    assert counterfactual.shape(height) == "number" and normalize_answer(height) != "612 metres"


def test_the_ratios_put_all_false_one_to_one_and_one_false_of_four_in_the_corpus(tmp_path):
    items, corpus = built(tmp_path, "all")
    first = next(i for i in items if i["id"] == "fx-1")
    assert first["false_docs"] == ["ashford-bridge"] and not (corpus / "ashford-bridge.txt").is_symlink()
    assert "Tomas Vell" not in text(corpus, "ashford-bridge")   # only the false page
    items, corpus = built(tmp_path, "1:3")
    first = next(i for i in items if i["id"] == "fx-1")
    pages = [text(corpus, d) for d in ("ashford-bridge", "ashford-bridge--copy-1", "ashford-bridge--copy-2",
                                       "ashford-bridge--copy-3")]
    assert sum("Tomas Vell" in p for p in pages) == 3 and first["false_docs"] == ["ashford-bridge--copy-3"]
    assert first["false_answer"] in pages[3]
    items, corpus = built(tmp_path, "3:1")   # the true page beside three false copies
    first = next(i for i in items if i["id"] == "fx-1")
    assert first["false_docs"] == [f"ashford-bridge--copy-{n}" for n in (1, 2, 3)]
    assert "Tomas Vell" in text(corpus, "ashford-bridge")
    assert all(first["false_answer"] in text(corpus, d) for d in first["false_docs"])


def test_a_false_value_is_never_one_the_question_or_its_own_documents_name():
    pool = [{"id": "a", "question": "Who designed the Ashford Bridge?", "answer": "Tomas Vell", "aliases": []},
            {"id": "b", "question": "Who built Medra Hall?", "answer": "Corran Smith", "aliases": []},
            {"id": "c", "question": "Who founded Lente Mill?", "answer": "Ada Pike", "aliases": []}]
    texts = ["Ashford Bridge was designed by Tomas Vell; Corran Smith laid its stones."]
    assert counterfactual.false_answer(pool[0], pool, texts) == "Ada Pike"   # not Corran Smith, named for another role
    assert counterfactual.false_answer(pool[0], pool[:2], texts) is None


def test_a_false_value_answers_a_question_with_the_same_noun_else_of_the_same_class():
    q = lambda i, question, answer: {"id": i, "question": question, "answer": answer, "aliases": []}
    pool = [q("a", "Which country was Liang Ji in?", "China"), q("b", "Izgoy >> performer", "Alisa"),
            q("c", "Baure >> country", "Nigeria"), q("d", "Meehan Bonnar >> place of birth", "Fredericton"),
            q("e", "Who founded Lente Mill?", "Ada Pike"), q("f", "What do A and B have in common?", "American")]
    assert counterfactual.noun("Izgoy >> performer") == "performer"
    assert counterfactual.noun("What company published it?") == "company" and counterfactual.noun("What is it?") is None
    assert counterfactual.kind(pool[0])[:2] == ("place", "country") and counterfactual.kind(pool[1])[0] == "person"
    assert counterfactual.false_answer(pool[0], pool) == "Nigeria"            # a country for a country
    assert counterfactual.false_answer(pool[2], pool[1:]) == "Fredericton"   # no other country: a place, not Alisa
    assert counterfactual.false_answer(pool[1], pool) == "Ada Pike"           # a person ('who') for a performer
    # a catch-all question takes no answer another class's question gives: no country, person or place
    assert counterfactual.false_answer(pool[5], pool + [q("g", "What is X known for?", "Danish")]) == "Danish"
