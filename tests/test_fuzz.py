"""Fuzzing (hypothesis) of what reads outside input: corpus files, golden files, citations, model JSON.

The property everywhere: no crash other than the module's own one-line error that names the input.
"""
import json

from hypothesis import HealthCheck, given, settings, strategies as st

import generate as g
import llm
import vector_index as vi
from retrieve import golden_problem, load_golden
from vector_index import CorpusError

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                           max_leaves=12)


@FAST
@given(st.binary(max_size=2000))
def test_any_bytes_load_or_give_a_reason(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("f") / "doc.txt"
    path.write_bytes(data)
    try:
        doc = vi.read_document(path)
    except ValueError as e:
        assert str(e) and "\n" not in str(e)
    else:
        assert doc.id == "doc" and doc.title and doc.text and len(doc.hash) == 16
        assert all(c.strip() for c in vi.chunk(doc, "titled"))


@FAST
@given(st.text(max_size=3000))
def test_chunkers_never_lose_words(text):
    doc = vi.Doc("d", "T", text, "h")
    for chunker in ("sentence", "fixed"):
        pieces = vi.chunk(doc, chunker)
        words = " ".join(pieces).split()
        assert set(words) == set(text.split())


@FAST
@given(json_values)
def test_any_golden_entry_is_accepted_or_named(item):
    problem = golden_problem(item)
    assert problem is None or (isinstance(problem, str) and problem)


@FAST
@given(st.lists(json_values, max_size=6))
def test_any_golden_file_loads_or_errors_in_one_line(tmp_path_factory, items):
    path = tmp_path_factory.mktemp("g") / "golden.json"
    path.write_text(json.dumps(items))
    try:
        good = load_golden(path)
    except CorpusError as e:
        assert str(path) in str(e)
    else:
        assert good and all(golden_problem(x) is None for x in good)


@FAST
@given(st.text(max_size=400))
def test_citation_parsing_never_crashes(text):
    ids = g.cited_ids(text)
    assert all(i.startswith("S") and i[1:].isdigit() for i in ids)
    for sentence, cites in g.split_cited(text):
        assert sentence and set(cites) <= set(ids)
        assert g.CITE_GROUP.search(sentence) is None


@FAST
@given(st.one_of(st.text(max_size=300), json_values.map(json.dumps)))
def test_any_model_reply_becomes_an_answer_or_a_failed_answer(reply):
    passages = [{"id": "S1", "chunk_id": "a#0", "doc": "a", "title": "A", "text": "alpha"}]
    for style in g.STYLES:
        with llm.use_model(llm.ScriptedModel(lambda m, s: reply)):
            r = g.generate("q", passages=passages, style=style)
        assert isinstance(r["answer"], str) and r["answer"]
        assert all(set(s["cites"]) <= {"S1"} for s in r["sentences"])
        assert r["error"] is None or style == "json"
