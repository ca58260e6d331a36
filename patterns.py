"""Every way the lab answers a question, in one registry: the page offers them (app.py), the benchmark runs
them (benchmark.py), the injection test attacks them (experiments/injection.py).

    import patterns
    p = patterns.PATTERNS["flare"]
    result = p.answer("In which village was the designer of Ashford Bridge born?", corpus=corpus)
    settings, answer = p.answerer(corpus)   # its rows are cached under p.cache and these settings

The contract a pattern keeps: an answer function `f(question, corpus=..., chunker=..., **settings)` that returns
generate()'s dict plus mode, trace (a steps.Trace) and cost, built with steps.finish(). Adding a pattern means
its module and one line in PATTERNS. `settings(corpus, chunker)` gives the answer's keyword arguments and the
cache settings, the same ones the pattern's own `--eval` uses (flare.py, self_rag.py and crag.py take them
from their own parser and settings(), GraphRAG from graphrag.eval_settings()), so rows computed by a script are
reused by the benchmark. The rows are keyed by these settings and the code of the answer function's module
(harness.answer_key): no version to bump.
"""
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import crag
import flare
import generate
import graphrag
import multihop
import self_rag
from layers import links, quarantine
from retrieve import CORPUS_DIR, DEFAULT_CHUNKER
from vector_index import CorpusError


@dataclass(frozen=True)
class Pattern:
    name: str                  # the registry key: benchmark rows, experiments/injection.py --patterns
    label: str                 # what the page's picker says ("" = not on the page)
    fn: Callable               # the answer function
    about: str                 # one line for --help and the benchmark report
    cache: str                 # the name its rows are cached under
    settings: Callable = None  # (corpus, chunker) -> (answer kwargs, cache settings); default: corpus and chunker
    fixed: dict = field(default_factory=dict)  # always passed to fn (GraphRAG's mode)
    options: tuple = ()        # the options settings() takes beside corpus and chunker (GraphRAG's extractor)
    retrieval: str = None      # the retrieve_chunks method that alone makes its passages, no model call on the way
                               # (grading/drift.py re-runs it); None: the model takes part in what is retrieved
    generated: bool = True     # its answer is written by generate() (FLARE writes its own): the span layer applies
    layers: tuple = ()         # the layer modules `fixed` passes in: their code keys its cached answers too

    def kwargs_and_key(self, corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, **options):
        """(the answer's keyword arguments, the cache settings); options: a pattern's own (GraphRAG's extractor)."""
        if self.settings:
            return self.settings(corpus, chunker, **{k: v for k, v in options.items() if k in self.options})
        kw = {"corpus": corpus, "chunker": chunker}
        return kw, {"corpus": str(corpus), "chunker": chunker}

    def answerer(self, corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, **options):
        """(cache settings, function question -> result) with the settings resolved once; CorpusError when the
        pattern needs something not built (a graph)."""
        kw, key = self.kwargs_and_key(corpus, chunker, **options)
        fn = functools.partial(self.fn, **self.fixed, **kw)   # a partial: its module keys the rows
        fn.layers = self.layers
        return key, fn

    def answer(self, question, corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, **options):
        """The pattern's answer with its default settings."""
        return self.answerer(corpus, chunker, **options)[1](question)


def _script(module):
    """A pattern script's own defaults and cache settings, as its --eval runs them."""
    def settings(corpus, chunker):
        kw, key = module.settings(module.parser().parse_args(["--corpus", str(corpus), "--chunker", chunker]))
        return kw, {k: str(v) if isinstance(v, Path) else v for k, v in key.items()}
    return settings


def _multihop(extra):
    return lambda corpus, chunker: ({"corpus": corpus, "chunker": chunker},
                                    {"corpus": str(corpus), **extra(chunker)})


def _graph(mode):
    return lambda corpus, chunker, extractor=None: graphrag.eval_settings(mode, corpus, chunker, extractor)


PATTERNS = {p.name: p for p in [
    Pattern("seed", "", generate.seed_answer, "the seed pipeline: seed_interleave retrieval + the lab's original "
            "free-text prompt (baseline)", "seed", lambda c, ch: ({"corpus": c, "chunker": ch}, {
                "retrieval": "seed_interleave", "style": "lab", "k": generate.SEED_K, "corpus": str(c),
                "chunker": ch}), retrieval="seed_interleave"),
    Pattern("single", "single", multihop.single_answer, "generate(): fused retrieval + the JSON cited prompt",
            "generate-json", lambda c, ch: ({"corpus": c, "chunker": ch},
                                            {"style": "json", "order": "best_first", "corpus": str(c)}),
            retrieval="fused"),
    Pattern("smart", "smart router", multihop.smart_answer, "multihop.smart_answer: learned router, then single "
            "or chain", "multihop-smart", _multihop(lambda ch: {"chunker": ch, "router": "learned"}),
            fixed={"router": "learned", "multi": links.chain_answer}, layers=("layers.links",)),
    Pattern("chain", "chain", links.chain_answer, "layers/links.chain_answer: links from the first passages, "
            "one cited answer (1 call)", "multihop-chain",
            _multihop(lambda ch: {"chunker": ch}), retrieval="chain"),
    Pattern("parallel", "parallel", multihop.multihop_answer, "multihop.multihop_answer: decompose, retrieve each "
            "part, one cited answer", "multihop-parallel", _multihop(lambda ch: {})),
    Pattern("iterative", "iterative", multihop.iterative_answer, "multihop.iterative_answer: hop by hop with "
            "[ANSWER_N]", "multihop-iterative", _multihop(lambda ch: {"chunker": ch})),
    Pattern("flare", "FLARE", flare.flare_answer, "flare.flare_answer: retrieval triggered by low token confidence",
            "flare", _script(flare), generated=False),
    Pattern("self_rag", "Self-RAG", self_rag.self_rag_answer, "self_rag.self_rag_answer: retrieve on demand, "
            "relevance filter, critique, refine", "self-rag", _script(self_rag)),
    Pattern("crag", "CRAG", crag.crag_answer, "crag.crag_answer: grade retrieval, refine, web fallback (local "
            "stand-in unless RAG_WEB=ddgs)", "crag", _script(crag),
            fixed={"keep_whole": quarantine.quarantine_reasons}, layers=("layers.quarantine",)),
    Pattern("graph_local", "GraphRAG", graphrag.graph_answer, "graphrag.graph_answer(mode='local'), when a graph "
            "is built", "graphrag-local", _graph("local"), {"mode": "local"}, ("extractor",)),
    Pattern("graph_global", "", graphrag.graph_answer, "graphrag.graph_answer(mode='global'), when a graph is "
            "built", "graphrag-global", _graph("global"), {"mode": "global"}, ("extractor",)),
]}
DEFAULT = "smart"


def on_page(corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER):
    """{label: Pattern} the page offers for this corpus: GraphRAG only where its graph has been built."""
    out = {}
    for p in PATTERNS.values():
        if not p.label:
            continue
        try:
            p.kwargs_and_key(corpus, chunker)
        except CorpusError:
            continue
        out[p.label] = p
    return out


def parse(text, allowed=None):
    """'seed, flare' -> ['seed', 'flare']; 'all' -> every name allowed; ValueError naming an unknown one."""
    allowed = list(allowed or PATTERNS)
    names = allowed if text.strip() == "all" else [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in names if p not in allowed]
    if unknown or not names:
        raise ValueError(f"unknown pattern {', '.join(map(repr, unknown)) or repr(text)}: "
                         f"choose from {', '.join(allowed)} (comma-separated) or all")
    return list(dict.fromkeys(names))
