"""What the cache keys cost per question: every input in the key (issue 29), measured on the golden questions.

    python -m experiments.bench_keys   # corpus/ and golden.json (304 questions), ~10 s once indexed
    python -m experiments.bench_keys --json results/bench_keys.json

Expected output: the settings, then one row per step, in ms: the index fingerprint read once per process (from the
chunks' metadata, when no build in the process left it) and again (in memory); per question, an answer key and a
row key with every input (harness.answer_key, harness.row_key) against the same keys without the two new inputs
(the index fingerprint, the golden labels), and what re-reading every corpus file to hash it would cost instead.
Medians and p95 over `--repeat` rounds of all questions. No model call: the model's name comes from the engine's
settings, resolved once before timing.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import harness
import llm
import vector_index
from lab.cache import Cache, keyed, module_of, write_json
from retrieve import CORPUS_DIR, GOLDEN, labels, load_golden
from vector_index import DEFAULT_CHUNKER, CorpusError, build_index, fingerprint

PATTERN = "generate-json"   # the plain cited answer's keys (harness.run_args): every pattern's have the same shape


def per_question(items, key_of, repeat):
    """[ms per question] of key_of(item) over `repeat` rounds of all items."""
    out = []
    for _ in range(repeat):
        for item in items:
            start = time.perf_counter()
            key_of(item)
            out.append((time.perf_counter() - start) * 1000)
    return out


def stats(ms):
    ms = sorted(ms)
    return {"median": statistics.median(ms), "p95": ms[int(0.95 * (len(ms) - 1))], "n": len(ms)}


def main():
    ap = argparse.ArgumentParser(description="What computing the cache keys costs per question (no model call).")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="folder of documents (.txt .md .pdf .docx .html)")
    ap.add_argument("--golden", type=Path, default=GOLDEN, help="golden questions")
    ap.add_argument("--repeat", type=int, default=5, help="rounds over all questions")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    try:
        items = load_golden(args.golden)
        build_index(args.corpus, DEFAULT_CHUNKER, progress=False)
        model = llm.engine_info()["model"]   # resolved once, before timing
    except (CorpusError, llm.LLMError) as e:
        sys.exit(f"bench_keys: {e}")
    print(f"corpus={args.corpus} golden={args.golden} ({len(items)} questions) repeat={args.repeat} model={model}")
    vector_index._FINGERPRINTS.clear()   # as in a process that did not build: read from the chunks' metadata
    start = time.perf_counter()
    fingerprint(args.corpus)
    cold = (time.perf_counter() - start) * 1000
    warm = per_question(items[:1], lambda _: fingerprint(args.corpus), 1000)
    name, answer, settings = harness.run_args("json", "best_first", args.corpus)
    assert name == PATTERN
    module = module_of(answer)
    new = lambda g: harness.row_key(harness.answer_key(name, answer, settings, g), g)
    old = lambda g: keyed("harness", "row", keyed(module, "answer", name, settings, model, g["question"], g["id"]),
                          "-", "-")   # the same keys without the fingerprint and the labels
    reread = lambda g: Cache.key(*[(p.name, p.read_bytes().decode("utf-8", "replace"))
                                   for p in sorted(Path(args.corpus).glob("*")) if p.is_file()])
    rows = {"fingerprint, first read (once per process)": {"median": cold, "p95": cold, "n": 1},
            "fingerprint, again (in memory)": stats(warm),
            "answer + row key, every input (per question)": stats(per_question(items, new, args.repeat)),
            "answer + row key, without fingerprint and labels": stats(per_question(items, old, args.repeat)),
            "the labels alone (retrieve.labels)": stats(per_question(items, labels, args.repeat)),
            "re-reading every corpus file to hash it, once": stats(per_question(items[:3], reread, 1))}
    print(f"\n{'step':54}{'median ms':>11}{'p95 ms':>9}{'n':>7}")
    for step, s in rows.items():
        print(f"{step:54}{s['median']:11.3f}{s['p95']:9.3f}{s['n']:7d}")
    added = rows["answer + row key, every input (per question)"]["median"] - rows[
        "answer + row key, without fingerprint and labels"]["median"]
    print(f"\nthe new inputs add {added:.3f} ms per question (median); over {len(items)} questions "
          f"{added * len(items):.0f} ms, plus {cold:.0f} ms once per process")
    if args.json:
        write_json(args.json, {"corpus": str(args.corpus), "golden": str(args.golden), "questions": len(items),
                               "model": model, "repeat": args.repeat, "ms": rows, "added_ms_per_question": added})


if __name__ == "__main__":
    main()
