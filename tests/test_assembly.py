"""The assembly: which layers each switch leaves out, offline (no model call)."""
import functools

import pytest

import assembly
import citations
import multihop
from layers import links, quarantine, spans
from patterns import PATTERNS


def test_an_unknown_layer_is_one_clear_error():
    with pytest.raises(ValueError, match="unknown layer 'spam': the layers are spans, "):
        assembly.build({"spam"})


def test_full_strength_passes_the_links_layer_to_smart_and_off_gives_week_6s_own_step():
    settings, fn = assembly.answerer(PATTERNS["smart"])
    assert fn.inner.keywords["multi"] is links.chain_answer and "layers.links" in fn.layers
    assert fn.inner.func is multihop.smart_answer and "off" not in settings
    settings, fn = assembly.answerer(PATTERNS["smart"], off={"links"})
    assert fn.inner.keywords["multi"] is None and "layers.links" not in fn.layers
    assert settings["off"] == ["links"]   # a different question for the model: a different cache row


def test_the_quarantine_layer_reaches_crags_refinement_and_leaves_with_it():
    _, fn = assembly.answerer(PATTERNS["crag"])
    assert fn.inner.keywords["keep_whole"] is quarantine.quarantine_reasons
    settings, fn = assembly.answerer(PATTERNS["crag"], off={"quarantine"})
    assert fn.inner.keywords["keep_whole"] is None and settings["off"] == ["quarantine"]
    assert fn.layers == ("layers.spans",)


def test_the_span_layer_wraps_generated_answers_only():
    _, fn = assembly.answerer(PATTERNS["single"])
    assert fn.finish is spans.finish and fn.layers == ("layers.spans",)
    _, fn = assembly.answerer(PATTERNS["single"], off={"spans"})
    assert not hasattr(fn, "finish")
    _, fn = assembly.answerer(PATTERNS["flare"])   # FLARE writes its own answer
    assert not hasattr(fn, "finish")


def test_with_every_layer_off_the_status_is_week_5s():
    lab = assembly.build(set(assembly.LAYERS))
    result = {"sentences": [{"text": "A.", "citations": ["S1"]}], "passages": []}
    verdicts = [{"sentence": 0, "supported": True}]
    assert lab.status(result, verdicts)["status"] == citations.answer_status(result, verdicts)
    assert lab.dispute(result) is None


def test_a_pattern_scripts_eval_gets_the_layers_the_benchmark_gives_the_same_pattern():
    import crag
    script = assembly.script_answerer(functools.partial(crag.crag_answer, k=2))
    _, bench = assembly.answerer(PATTERNS["crag"])
    assert script.inner.keywords["keep_whole"] is bench.inner.keywords["keep_whole"] is quarantine.quarantine_reasons
    assert script.layers == bench.layers == ("layers.quarantine", "layers.spans")
    plain = lambda q: {"answer": q}
    assert assembly.script_answerer(plain, generated=False) is plain
