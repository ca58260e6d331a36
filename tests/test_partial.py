"""lab/partial.py and generate's streaming: the sentences of a JSON reply as it is written.

Control flow runs on llm.ScriptedModel (a scripted stand-in, not a language model)."""
import json

import generate as g
import llm
from lab.partial import Watcher, so_far

REPLY = {"sentences": [{"text": "Ashford Bridge was designed by the engineer Tomas Vell.", "sources": ["S1"]},
                       {"text": "Vell was born in Corran.", "sources": ["S2"]}], "answer": "Corran"}


def test_a_sentence_counts_once_the_next_has_begun_or_the_list_has_closed():
    text = json.dumps(REPLY)
    cut = lambda marker: so_far(text[:text.index(marker)])
    assert cut("engineer") == ([], None)                                  # the first sentence is being written
    assert cut("Vell was") == ([(REPLY["sentences"][0]["text"], ["S1"])], None)
    assert cut("Corran.") == ([(REPLY["sentences"][0]["text"], ["S1"])], None)   # mid-sentence: not yet
    assert len(cut('"answer"')[0]) == 2 and cut('"answer"')[1] is None   # the list closed: both sentences
    both = [(s["text"], s["sources"]) for s in REPLY["sentences"]]
    assert so_far(text[:-1]) == (both, "Corran")   # the answer is whole once its quote closes
    assert so_far(text[:-2])[1] is None
    assert so_far("") == so_far("not json") == so_far("[1, 2") == ([], None)


def test_the_watcher_reports_each_sentence_and_the_answer_once():
    text, seen = json.dumps(REPLY), []
    w = Watcher(lambda n, t, ids: seen.append((n, ids)), lambda a: seen.append(a))
    for end in range(1, len(text) + 1):
        w(text[:end])
    assert seen == [(0, ["S1"]), (1, ["S2"]), "Corran"]


def test_generate_streams_the_same_answer_it_gives_unstreamed():
    passages = [{"id": f"S{i}", "chunk_id": f"d{i}#0", "doc": f"d{i}", "title": f"T{i}", "text": t}
                for i, t in enumerate(["Ashford Bridge was designed by the engineer Tomas Vell.",
                                       "Tomas Vell was born in Corran.", "text 3", "text 4"], 1)]
    seen = []
    with llm.use_model(llm.ScriptedModel([json.dumps(REPLY)] * 2)):
        whole = g.generate("Where was the designer of Ashford Bridge born?", passages=passages)
        streamed = g.generate("Where was the designer of Ashford Bridge born?", passages=passages,
                              watch=Watcher(lambda n, t, ids: seen.append(t), seen.append))
    assert seen == [s["text"] for s in REPLY["sentences"]] + ["Corran"]
    assert {k: v for k, v in streamed.items() if k != "cost"} == {k: v for k, v in whole.items() if k != "cost"}


def test_a_cli_watches_every_answer_generate_writes_whichever_pattern_calls_it():
    passages = [{"id": "S1", "chunk_id": "d1#0", "doc": "d1", "title": "T1", "text": "Tomas Vell was born in Corran."}]
    seen = []
    with llm.use_model(llm.ScriptedModel([json.dumps(REPLY)] * 2)):
        with g.watching(Watcher(lambda n, t, ids: seen.append(n), seen.append)):
            g.generate("Where was Tomas Vell born?", passages=passages)
        g.generate("Where was Tomas Vell born?", passages=passages)   # outside the block: nobody watches
    assert seen == [0, 1, "Corran"]


def test_a_reply_that_does_not_go_on_from_the_last_is_a_new_one():
    """A pattern may call generate() twice under one Watcher: the second reply's sentences count from 0 again."""
    seen, begun = [], []
    w = Watcher(lambda n, t, ids: seen.append((n, t)), None, lambda: begun.append(len(seen)))
    first = '{"sentences": [{"text": "A.", "sources": ["S1"]}, {"text": "B.", "sources": ["S2"]}], "answer": "a"}'
    for end in range(1, len(first) + 1):
        w(first[:end])
    second = '{"sentences": [{"text": "C.", "sources": ["S1"]}], "answer": "c"}'
    for end in range(1, len(second) + 1):
        w(second[:end])
    assert seen == [(0, "A."), (1, "B."), (0, "C.")] and begun == [2]
