"""Fuzzing (hypothesis) of what reads outside input: corpus files, golden files, citations, model JSON.

The property everywhere: no crash other than the module's own one-line error that names the input.
"""
import json

from hypothesis import HealthCheck, given, settings, strategies as st

import generate as g
import llm
import vector_index as vi
from lab.answers import exact_match, f1
from retrieve import GOLDEN_KEYS, golden_problem, load_golden
from vector_index import CorpusError

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                           lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4),
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


# ---- a whole corpus folder, a golden file of any bytes, citations round trip, the model's JSON ----

names = st.text(alphabet="abcXYZ019 -_.#é", min_size=1, max_size=12).filter(lambda s: s.strip(". ") and "/" not in s)


@FAST
@given(st.lists(st.tuples(names, st.sampled_from([".txt", ".md", ".TXT", ".pdf", ""]), st.binary(max_size=300)),
                max_size=6))
def test_any_folder_loads_or_errors_naming_it(tmp_path_factory, files):
    folder = tmp_path_factory.mktemp("corpus")
    for name, ext, data in files:
        (folder / f"{name}{ext}").write_bytes(data)
    try:
        docs, failed = vi.load_documents(folder, quiet=True)
    except CorpusError as e:
        assert str(folder) in str(e) and "\n" not in str(e)
        return
    assert docs or failed
    assert not set(docs) & set(failed)
    for doc_id, doc in docs.items():
        assert doc.id == doc_id and doc.text.strip() and doc.title


@FAST
@given(st.one_of(st.binary(max_size=400), st.text(max_size=400).map(str.encode),
                 st.lists(json_values, max_size=4).map(lambda v: json.dumps(v).encode())))
def test_any_golden_bytes_load_or_error_naming_the_file(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("g") / "golden.json"
    path.write_bytes(data)
    try:
        good = load_golden(path)
    except CorpusError as e:
        assert str(path) in str(e) and "\n" not in str(e)
    else:  # what loads can be scored without a crash
        assert all(0.0 <= f1("an answer", item) <= 1.0 and exact_match("x", item) in (0.0, 1.0) for item in good)


@FAST
@given(st.sampled_from(list(GOLDEN_KEYS)), json_values)
def test_golden_entries_that_pass_the_check_can_be_scored(key, value):
    item = {"id": "x", "question": "Q?", "answer": "a", "aliases": [], "supporting_docs": ["d"], "type": "single",
            "hops": 1, "source": "s", key: value}  # one field at a time, so the others do not hide it
    if golden_problem(item) is None:
        assert 0.0 <= f1("a b", item) <= 1.0 and exact_match("a", item) in (0.0, 1.0)


words = st.lists(st.text(alphabet="abcdefghij", min_size=1, max_size=6), min_size=1, max_size=5)
labels = st.lists(st.integers(1, 12).map(lambda n: f"S{n}"), max_size=3, unique=True)


@FAST
@given(st.lists(st.tuples(words, labels, st.booleans()), min_size=1, max_size=5))
def test_cited_sentences_round_trip(parts):
    """Sentences 'Abc de [S1][S2].' (or with the IDs after the full stop) come back with their own IDs."""
    text = " ".join(f"{' '.join(w).capitalize()}{''.join(f' [{i}]' for i in ids)}." if before else
                    f"{' '.join(w).capitalize()}.{''.join(f' [{i}]' for i in ids)}" for w, ids, before in parts)
    got = g.split_cited(text)
    assert [ids for _, ids in got] == [ids for _, ids, _ in parts]
    assert [s for s, _ in got] == [f"{' '.join(w).capitalize()}." for w, _, _ in parts]
    assert g.cited_ids(text) == list(dict.fromkeys(i for _, ids, _ in parts for i in ids))


@FAST
@given(st.lists(st.sampled_from(list("[]Ss0123456789,; .!?Ab\n<>/|") + ["[S1]", "[S2, S3]", "</source>", "< source",
                                                                        "<|im_start|>", "</SOURCE >"]),
                max_size=60).map("".join))
def test_clean_source_text_leaves_no_label_or_delimiter(text):
    clean = g.clean_source_text(text)
    assert not g.cited_ids(clean) and "</source" not in clean.lower() and "<source" not in clean.lower()
    assert "<|" not in clean


OBJECT = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


@FAST
@given(st.one_of(st.text(max_size=200), json_values.map(json.dumps), st.binary(max_size=100).map(
    lambda b: b.decode("utf-8", "replace"))))
def test_complete_json_returns_an_object_or_a_reply_error_quoting_the_reply(reply):
    with llm.use_model(llm.ScriptedModel(lambda m, s: reply)):
        try:
            out = llm.complete_json("q", OBJECT)
        except llm.ReplyError as e:
            assert repr(reply[:20])[1:-1][:10] in str(e) and "\n" not in str(e)
        else:
            assert isinstance(out, dict) and out == json.loads(reply)
