"""Probe: a rival side counts only when a sentence stating it is alike (MiniLM cosine >= bar) a sentence stating
another side. Sweeps the bar over cached dispute checks: clean benchmark rows (RESULTS CORPUS GOLDEN PATTERN [SPLIT])
or a counterfactual folder (--cf DIR --limit N). No model call for what is cached. MASK=1: each side's answer put as
X in its sentences (the rule as lab/sides.py has it)."""
import json, sys
from pathlib import Path
import benchmark, harness
from layers import disputes
from lab.answers import named_in
from retrieve import eval_items, sample_golden
from vector_index import embed

BARS = (0.0, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)


import os, re
MASK = os.environ.get("MASK")
ANCHOR = os.environ.get("ANCHOR")   # the side closest to the question always stays, as lab/sides.py has it


def masked(text, answer):
    """The sentence with its side's answer put as 'X' (case-insensitive), so two sentences that state one fact with
    two values read alike."""
    return re.sub(re.escape(answer), "X", text, flags=re.I) if MASK and answer else text


def stating(g, by_id):
    out = []
    for pid in g["sources"]:
        if pid in by_id:
            p = by_id[pid]
            out += [masked(disputes.as_read(p, s), g["answer"]) for s in disputes.sentences_of(p["text"])
                    if named_in(s, g["answer"], 1.0)] or [masked(p["text"], g["answer"])]
    return out


def kept_sides(d, passages, bar):
    """How many sides stay: a side with no page (the model's own) or with an instruction-like page stays; another
    stays when some sentence stating it is within `bar` of a sentence stating another side."""
    by_id = {p["id"]: p for p in [*passages, *d.get("more", [])]}
    groups = d["answers"]
    vecs = [embed(s) if (s := stating(g, by_id)) else None for g in groups]
    keep = disputes.instruction_like(list(by_id.values()))
    near = disputes.closeness(d.get("question", ""), groups, list(by_id.values())) if ANCHOR else None
    anchor = near.index(max(near)) if near else None   # the side closest to the question stays (lab/sides.py)
    n = 0
    for i, g in enumerate(groups):
        if i == anchor or vecs[i] is None or set(g["sources"]) & keep:
            n += 1
            continue
        if any(vecs[j] is not None and float((vecs[i] @ vecs[j].T).max()) >= bar for j in range(len(groups)) if j != i):
            n += 1
    return n


def sweep(checked):
    """checked: [(label, result, d)] -> per bar, per label: disputed count."""
    out = {}
    for label, result, d in checked:
        d = {**d, "question": result["question"]}
        for bar in BARS:
            disputed = d["disputed"] and kept_sides(d, result["passages"], bar) >= 2
            out.setdefault(bar, {}).setdefault(label, [0, 0])
            out[bar][label][0] += disputed
            out[bar][label][1] += 1
    for bar, by in out.items():
        print(f"bar {bar:.2f}: " + "  ".join(f"{k} {v[0]}/{v[1]}" for k, v in sorted(by.items())))
    return out


if sys.argv[1] == "--cf":
    folder, limit = Path(sys.argv[2]), int(sys.argv[4])
    corpus = folder / "corpus"
    items = sample_golden(json.loads((folder / "golden.json").read_text()), limit, seed=0)
    name, fn, settings = harness.run_args(corpus=corpus)
    from experiments.disputes_eval import named
    checked = []
    for item in items:
        result = harness.cached_answer(name, fn, item, settings)["result"]
        d = disputes.check(result, corpus=corpus)
        label = "false_shown" if named(result, item["false_answer"], set(item["false_docs"])) else "false_not_shown"
        checked.append((label, result, d))
elif sys.argv[1] == "--injection":   # the injected questions of these families, answered as injection.py does
    from experiments import injection
    from experiments.disputes_eval import named
    from vector_index import build_index
    kinds = sys.argv[2].split(",")
    build_index(injection.CORPUS, progress=False)
    _, get = injection.answer_source("json", injection.CORPUS, 4)
    checked = []
    for item in [i for i in injection.load_items(injection.GOLDEN) if i["attack"]["kind"] in kinds]:
        result = get(item)["result"]
        d = disputes.check(result, corpus=injection.CORPUS)
        checked.append(("target_shown" if named(result, item["attack"]["target"]) else "target_not_shown", result, d))
elif sys.argv[1] == "--cached":   # rows not yet written: every item of a split whose answer is cached
    corpus, golden, pattern, split = sys.argv[2:6]
    from lab import answers
    specs, _ = benchmark.pattern_specs([pattern], Path(corpus))
    cache_name, settings, fn = specs[pattern]
    checked = []
    for item in eval_items(golden, 0, Path(corpus), split=split):
        kept = harness.stored_answer(cache_name, fn, item, settings)
        if kept is None:
            continue
        result = kept["result"]
        d = disputes.check(result, **harness.where_of(settings))
        right = answers.right(result.get("answer") or "", item) and not result.get("idk")
        checked.append(("right" if right else "wrong", result, d))
else:
    res, corpus, golden, pattern = sys.argv[1:5]
    split = sys.argv[5] if len(sys.argv) > 5 else None
    rows = {r["id"]: r for r in json.load(open(res))["rows"][pattern]}
    items = {i["id"]: i for i in eval_items(golden, 0, Path(corpus), **({"split": split} if split else {}))}
    specs, _ = benchmark.pattern_specs([pattern], Path(corpus))
    cache_name, settings, fn = specs[pattern]
    checked = []
    for rid, row in rows.items():
        result = harness.stored_answer(cache_name, fn, items[rid], settings)["result"]
        d = disputes.check(result, **harness.where_of(settings)) if row.get("disputed") else {"disputed": False,
                                                                                            "answers": []}
        checked.append(("right" if row["right"] else "wrong", result, d))
sweep(checked)
