"""ordering_ab.py: the bootstrap, and one scripted run over the fixture corpus (llm.ScriptedModel)."""
import json
import re

import pytest

import llm
import ordering_ab as ab
from lab import cache
from retrieve import load_golden
from conftest import NOT_STATED_REPLY, judge_defers


def test_bootstrap_known_answers():
    assert ab.bootstrap_ci([0.1, 0.1, 0.1]) == pytest.approx((0.1, 0.1, 0.1))
    mean, lo, hi = ab.bootstrap_ci([0, 1] * 20)
    assert mean == 0.5 and 0.3 < lo < 0.5 < hi < 0.7
    assert ab.bootstrap_ci([1, 2, 3]) == ab.bootstrap_ci([1, 2, 3])  # seeded


def test_scripted_run_sees_the_same_passages_in_every_order(corpus, golden_path, tmp_path, monkeypatch):
    monkeypatch.setitem(cache._MOVED, "judge", tmp_path)   # judge verdicts under tmp_path (cache.moved)
    seen = []

    def model(messages, schema):
        if judge_defers(messages, schema):
            return NOT_STATED_REPLY
        props = schema.get("properties", {}) if isinstance(schema, dict) else {}
        if "sentences" in props:
            seen.append(messages[-1]["content"])
            # the answer is right only when the best passage is read first
            first = messages[-1]["content"].split("</source>")[0]
            answer = "Tomas Vell" if "Ashford" in first else "Hartmoor"
            return json.dumps({"sentences": [{"text": answer + ".", "sources": ["S1"]}], "answer": answer})
        return '{"verdict": "YES"}' if "verdict" in props else '{"score": 5}'

    items = [g for g in load_golden(golden_path) if g["id"] == "fx-1"]
    with llm.use_model(llm.ScriptedModel(model)):
        rep = ab.report(ab.run(items, k=3, corpus=corpus))
    titles = [re.findall(r'title="([^"]*)"', prompt) for prompt in seen]
    assert len(titles) == 3 and all(sorted(t) == sorted(titles[0]) for t in titles)  # same passages
    assert titles[1] == titles[0][::-1] and titles[0][0] == "Ashford Bridge"         # reordered
    assert rep["n"] == 1 and rep["means"]["best_first"]["f1"] == 1.0
    assert rep["means"]["worst_first"]["f1"] == 0.0  # the best passage is read last
    assert rep["deltas_vs_best_first"]["worst_first"]["f1"][0] == -1.0
    assert "Intervals that exclude zero" in rep["reading"]
