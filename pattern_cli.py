"""Week 7: the command line the pattern scripts share (flare.py, self_rag.py, crag.py; graphrag.py's flags): the
question and the common flags, the script's own settings checked, and one question answered (and with --check, its
citations checked with week 5's judge). Their --eval (the pattern beside generate() on golden questions) is
harness.pattern_main's.

    args, kw, key = pattern_cli.parse_settings("flare", parser, settings)
    pattern_cli.ask("flare", args, lambda q: flare_answer(q, **kw), key)

Expected output of ask(): the question and settings, the engine, the pattern's trace (one line a step), the cited
answer and its sources (with --check: each citation's verdict, citations.print_checked), then the cost line.
"""
import argparse
import sys
from pathlib import Path

import citations
import llm
from generate import check_question, print_result
from lab import steps
from retrieve import CORPUS_DIR, DEFAULT_CHUNKER, GOLDEN
from vector_index import CorpusError


def mean(values):
    """Mean, or None for no values (printed as n/a)."""
    values = list(values)
    return sum(values) / len(values) if values else None


def fmt(x):
    return "n/a" if x is None else f"{x:.3f}"


def pattern_parser(description, demo):
    """A pattern script's parser: the question (default `demo`) and the shared flags (add_pattern_args);
    the script adds its own settings."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("question", nargs="?", default=demo, help="the question")
    add_pattern_args(ap)
    return ap


def add_pattern_args(ap):
    """The flags every pattern script shares (--corpus, --chunker, --golden, --eval, --json, --fresh)."""
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="folder of documents (.txt .md .pdf .docx .html)")
    ap.add_argument("--chunker", default=DEFAULT_CHUNKER, help="which collection to retrieve from")
    ap.add_argument("--golden", type=Path, default=GOLDEN, help="golden questions for --eval")
    ap.add_argument("--eval", type=int, default=0, metavar="N",
                    help="evaluate on N golden questions (half single, half multi)")
    ap.add_argument("--json", type=Path, help="write the --eval figures here")
    ap.add_argument("--fresh", action="store_true", help="ignore cached per-question rows")
    ap.add_argument("--check", action="store_true", help="check each citation of the answer with week 5's judge")


def parse_settings(prog, parser, settings):
    """A pattern script's flags -> (args, answer keyword arguments, cache settings); a bad value exits with one
    line naming the script. parser and settings are the script's own parser() and settings(args)."""
    args = parser().parse_args()
    try:
        return (args, *settings(args))
    except ValueError as e:
        sys.exit(f"{prog}: {e}")


def ask(prog, args, answer, kw, describe=lambda r: ""):
    """One question: the settings, the trace, the cited answer (its citations checked with --check), the cost.
    describe(result) -> a prefix for the cost line."""
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in kw.items()}
    try:
        question = check_question(args.question)
        print(f"question={question!r} " + " ".join(f"{k}={v}" for k, v in settings.items()))
        print(f"model: {llm.engine_info()['engine']} {llm.engine_info()['model']}")
        r = answer(question)
        steps.print_trace(r["trace"])
        if args.check:
            citations.print_checked(r, on_verdict=citations.say_verdict)
        else:
            print_result(r, cost=False)
        print(f"\n{describe(r)}" + steps.cost_line(r["cost"], "wall_seconds"))
    except (ValueError, CorpusError, llm.LLMError) as e:
        sys.exit(f"{prog}: {e}")
