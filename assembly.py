"""The lab at full strength: the week steps, and the layers the lab added on top of them, in order, one line each.
The demo, the page, the benchmark and the harness answer with this; a week's own script runs its step alone.

    python assembly.py "Who designed Ashford Bridge?" --corpus tests/fixtures/corpus   # answered and checked
    python assembly.py "..." --off disputes,answer_check                                # without two layers
    python assembly.py --layers                                                         # the layers, in order

Expected output: the answer as the demo shows it (verified, supported, disputed...), each sentence with its
citations' verdicts, the sources, then whether the passages disagree. ~15-30 s on the embedded engine the first time.

The lab at full strength, in order:
  week 2  retrieve.retrieve_chunks       fused retrieval (RRF over dense and BM25)
          + layers/links                 hop 2 along the links a passage names (a multi-hop route's retrieval)
  week 3  generate.generate              the cited answer, a JSON schema for the reply
          + layers/spans                 the short answer cut to the span asked for; citations re-cited
  week 4  judge.supports                 the YES/NO judge
          + layers/judge_answers         the claim's answer against the source's own
  week 5  citations.verify               every citation judged (ALCE recall and precision)
          + layers/quarantine            a passage that reads like an instruction supports nothing
          + layers/disputes              passages that disagree are shown as a choice
          + layers/answer_check          "verified" only when a calibrated score confirms the short answer
  week 6  multihop.smart_answer          routed (the learned router, router.py) and, for a multi-hop route, the
                                         links layer's chain_answer instead of decomposition
  week 7  crag.crag_answer               + layers/quarantine: a passage with injection markers is kept whole, not
                                         refined (so verify still sees the markers)
A layer wraps a week's function and keeps its signature; `build(off)` composes the checks and `answerer(pattern,
off=...)` the answers, leaving out the layers named in `off`, so the benchmark can measure each one (`python
benchmark.py --ablation`: full strength, then full strength minus each layer, on the same questions). Each layer's
docstring says what it adds and what it was measured to gain. Not handled: passage trimming (generate.TRIM_WORDS,
off by default) is still an environment setting of week 3's step, not a layer.
"""
import argparse
import functools
import inspect
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

import citations
import llm
from generate import check_question, generate, writing
from layers import answer_check, disputes, judge_answers, links, quarantine, spans
from retrieve import CORPUS_DIR, DEFAULT_CHUNKER
from vector_index import CorpusError

LAYERS = {  # name: (the week step it changes, what it adds)
    "spans": ("week 3 generate", "the short answer cut to the span asked for; citations moved to the passage that "
                                 "states the sentence"),
    "judge_answers": ("week 4 judge", "the claim's answer compared with the source's own, not a bare YES/NO"),
    "quarantine": ("week 5 verify", "a passage that reads like an instruction supports nothing"),
    "disputes": ("week 5 check", "passages that give different answers are shown as a choice"),
    "answer_check": ("week 5 check", "the short answer confirmed by a calibrated score before it is called verified"),
    "links": ("week 6 smart_answer", "a question routed multi-hop answered by following the links its first "
                                     "passages name (one LLM call), not by decomposition"),
}


@dataclass
class Lab:
    """The composed steps. verify(result, on_verdict=None, dispute=None) -> verdicts; dispute(result, **where) -> the
    disputes layer's dict or None; status(result, verdicts, dispute) -> the answer check's dict."""
    off: frozenset
    verify: Callable
    dispute: Callable
    status: Callable


def build(off=()):
    """The lab with every layer not named in `off`: -> Lab."""
    off = frozenset(off)
    if unknown := off - set(LAYERS):
        raise ValueError(f"unknown layer {sorted(unknown)[0]!r}: the layers are {', '.join(LAYERS)}")
    on = lambda name: name not in off

    verify = citations.verify                                          # week 5: each citation, week 4's YES/NO judge
    if on("judge_answers"):
        verify = partial(judge_answers.verify, step=verify)            # the claim's answer against the source's own
    if on("quarantine"):
        verify = partial(quarantine.verify, step=verify)               # instruction-like passages support nothing
    if on("quarantine") and on("disputes"):
        verify = partial(disputes.verify, step=verify)                 # ... nor a disagreeing side that reads like one
    else:
        verify = _no_dispute(verify)
    dispute = disputes.check if on("disputes") else _undisputed       # do the passages disagree?
    status = answer_check.check if on("answer_check") else sentence_status           # the headline confirmed
    return Lab(off, verify, dispute, status)


def _no_dispute(verify):
    """verify without the disputes layer's rule: the same call, its `dispute` argument ignored."""
    return lambda result, on_verdict=None, dispute=None: verify(result, on_verdict=on_verdict)


def _undisputed(result, **where):
    return None


def sentence_status(result, verdicts, dispute=None):
    """The status without the answer check: week 5's (every sentence supported: "verified")."""
    return {"status": citations.answer_status(result, verdicts), "score": None, "reasons": [], "parts": {},
            "calibration": "none"}


FULL = build()
PASSED_IN = {  # layer: (the keyword argument through which patterns.py passes it to a pattern, what it passes)
    "links": ("multi", links.chain_answer),                      # smart: a multi-hop route follows links
    "quarantine": ("keep_whole", quarantine.quarantine_reasons),  # crag: an injected passage is not refined
}


def answerer(pattern, corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, off=(), **options):
    """(cache settings, question -> result): a pattern's answer (patterns.Pattern) with the layers on the answer
    itself, those not in `off`: the chain for a multi-hop route (links), the span rules on what generate() wrote
    (spans). The settings name a layer left out when that changes what the model is asked (links)."""
    settings, fn = pattern.answerer(corpus, chunker, **options)
    for name, (keyword, part) in PASSED_IN.items():   # a layer the pattern passes in, left out: the week's own step
        if name in off and fn.keywords.get(keyword) is part:
            layers = tuple(m for m in fn.layers if m != f"layers.{name}")
            fn = functools.partial(fn, **{keyword: None})
            fn.layers, settings = layers, {**settings, "off": [*settings.get("off", []), name]}
    if pattern.generated and "spans" not in off:
        fn = with_layer(fn, spans.finish, "layers.spans")
    return settings, fn


def script_answerer(fn, generated=True):
    """A pattern script's own answer function (its --eval: a functools.partial of the pattern's function, its settings
    from the script's flags) with the layers answerer() gives it, so that both key the same rows: each layer in
    PASSED_IN that the function takes (crag_answer's keep_whole), then the span layer when generate() wrote it."""
    takes = inspect.signature(fn.func).parameters if isinstance(fn, functools.partial) else {}
    passed = {name: (kw, part) for name, (kw, part) in PASSED_IN.items() if kw in takes and kw not in fn.keywords}
    if passed:
        fn = functools.partial(fn, **dict(passed.values()))
        fn.layers = tuple(f"layers.{name}" for name in passed)
    return with_layer(fn, spans.finish, "layers.spans") if generated else fn


def with_layer(fn, finish, module):
    """fn with `finish` applied to its result; `layers` names the layer modules, whose code keys its cached answers
    beside fn's own (harness.answer_key)."""
    @functools.wraps(fn)
    def answer(question, **kw):
        return finish(fn(question, **kw))
    answer.layers = (*getattr(fn, "layers", ()), module)
    answer.inner, answer.finish = fn, finish   # the harness caches fn's answer and applies finish to it
    return answer


def with_notes(result):
    """The result with what the span rules changed as lines to print under its sentences."""
    return {**result, "notes": [spans.recited_line(f) for f in result.get("recited", [])]}


def print_checked(result, lab=FULL, on_verdict=None, corpus=None):
    """What the demo shows for one answer: whether its passages disagree (with `corpus`, or the folder the result's
    retrievals name, up to disputes.WIDE passages past the prompt's), each citation's verdict, the answer check's
    headline, then the disagreement as a choice between the answers."""
    where = {"corpus": corpus} if corpus else disputes.recorded_where(result)
    d = lab.dispute(result, **where)
    verdicts = lab.verify(result, on_verdict=on_verdict, dispute=d if d is not None else False)
    if "answer_check" in lab.off:
        citations.print_answer(with_notes(result), verdicts)
    else:
        answer_check.print_answer(with_notes(result), verdicts, d)
    if d is not None:
        print(disputes.describe(d, result["passages"], where.get("corpus")) if d["disputed"] else
              "not disputed: the passages that answer the question agree")


def main():
    ap = argparse.ArgumentParser(description="Answer a question with the lab at full strength (or some layers off).")
    ap.add_argument("question", nargs="?", help="the question")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="folder of documents (.txt .md .pdf .docx .html)")
    ap.add_argument("--off", default="", help=f"comma-separated layers to leave out, of {', '.join(LAYERS)}")
    ap.add_argument("--layers", action="store_true", help="list the layers in order and stop")
    args = ap.parse_args()
    if args.layers or not args.question:
        for name, (step, adds) in LAYERS.items():
            print(f"{name:14} on {step:20} {adds}")
        return
    try:
        lab = build([x.strip() for x in args.off.split(",") if x.strip()])
        question = check_question(args.question)
    except ValueError as e:
        sys.exit(f"assembly: {e}")
    print(f"model={llm.engine_info()['model']} engine={llm.engine_info()['engine']} corpus={args.corpus} "
          f"off={','.join(sorted(lab.off)) or '-'}")
    try:
        with llm.ctrl_c("assembly"):
            result = generate(question, corpus=args.corpus, watch=writing())
            if "spans" not in lab.off:
                result = spans.finish(result)
            print_checked(result, lab, on_verdict=citations.say_verdict, corpus=args.corpus)
    except (CorpusError, llm.LLMError) as e:
        sys.exit(f"assembly: {e}")


if __name__ == "__main__":
    main()
