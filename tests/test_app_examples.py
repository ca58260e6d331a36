"""app.py's example questions speak of the folder on the page (issue 61 item 5): golden.json's Wikipedia questions
for corpus/, the folder's own golden file when one sits in it or beside it, else none. Offline, no model is called.
"""
import json

import app
import llm
from retrieve import CORPUS_DIR, GOLDEN


def examples_of(demo):
    """The questions of the page's Examples block, [] when it has none."""
    import gradio as gr
    return [row[0] for block in demo.blocks.values() if isinstance(block, gr.Dataset) for row in block.samples]


def own_golden(folder, questions):
    items = [{"id": f"own-{n}", "question": q, "answer": "x", "aliases": [], "supporting_docs": ["notes"],
              "type": "single", "hops": 1, "source": "own"} for n, q in enumerate(questions)]
    (folder / "golden.json").write_text(json.dumps(items))


def test_whose_questions(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    assert app.golden_for(CORPUS_DIR) == GOLDEN
    assert app.golden_for(docs) is None                                  # no golden file: no examples
    own_golden(tmp_path, ["Beside?"])
    assert app.golden_for(docs) == tmp_path / "golden.json"              # beside the folder (make app CORPUS=DIR)
    own_golden(docs, ["Inside?"])
    assert app.golden_for(docs) == docs / "golden.json"                  # in it wins
    assert app.golden_for(docs, GOLDEN) == GOLDEN                        # --golden says so


def test_the_page_on_your_folder_offers_its_own_questions_or_none(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.txt").write_text("Notes\nThe ferry leaves at nine.")
    with llm.use_model(llm.ScriptedModel(lambda *a, **k: "")):
        bare = examples_of(app.build(docs))
        own_golden(tmp_path, ["When does the ferry leave?", "Where does it go?"])
        own = examples_of(app.build(docs))
    assert bare == []
    assert own == ["When does the ferry leave?", "Where does it go?"]
    wikipedia = [g["question"] for g in json.loads(GOLDEN.read_text())]
    assert not set(own) & set(wikipedia)
