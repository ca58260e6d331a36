"""Week 8 (reliability): how often an answer is shown disputed, and what the user then sees, on attacks, on
planted false answers and on clean questions.

    python -m experiments.counterfactual --split test --ratio 1:1 --out .rag/cf/test-1to1   # seconds, no model
    python -m experiments.disputes_eval --counterfactual .rag/cf/test-1to1 --json results/disputes_cf_test_1to1.json
    python -m experiments.disputes_eval --golden 60 --split test --json results/disputes_golden_test.json
    python -m experiments.disputes_eval --injection misinformation --json results/disputes_misinformation.json
    python -m experiments.disputes_eval --golden 30 --wide 0   # the prompt's passages alone (before issue 48)

Expected output: one line per set with the disputed rate, what the user is shown (the answer check's status:
verified, supported, disputed...), the false answers shown without "disputed" and shown as verified, and what the
dispute check cost (calls and seconds per answer, p50, and what looking past the prompt added), then each question
the check got wrong. Answers are the cached ones: --counterfactual and --golden answer as verify_citations.py does
(generate(), json prompt, k=4: the same cache keys), --injection reads the answers experiments/injection.py scored. Each
answer is then checked as the page checks it (disputes.check looking up to --wide passages past the prompt,
citations.verify, answer_check.check). One model call per passage asked, cached by content in .rag/cache/judge.jsonl.

A counterfactual folder (experiments/counterfactual.py) holds a corpus where the documents that state each
answer sit beside copies with another value; a row's false answer is "shown" when the short answer names it, or a
sentence that cites a false copy names it (injection.mentions); the true answer likewise, with the true pages.
"""
import argparse
import json
import statistics
import sys
from pathlib import Path

from layers import answer_check
from layers import disputes
import harness
from experiments import injection
import llm
from assembly import FULL
from layers.disputes import WIDE, check, suspects
from lab import cache, mirrors
from retrieve import CORPUS_DIR, GOLDEN, eval_items, sample_golden
from vector_index import CorpusError, build_index
from lab import answers


def seen(result, corpus, wide=WIDE):
    """What the user is shown for one answer, checked as the page checks it: {"disputed" (looking past the prompt
    as disputes.check does with `wide`), "prompt_disputed" (the prompt's passages alone), "answers", "status" (the
    answer check's, with the dispute; "prompt_status": with the prompt's alone), "quarantined", "read" (passages
    past the prompt asked), "calls" and "seconds" of the prompt's check, "wide_calls" and "wide_seconds" that
    looking further added}."""
    alone = check(result)   # the prompt's passages alone (their replies are then cached for the wide check)
    d = check(result, corpus=corpus, wide=wide) if wide else alone
    status = answer_check.check(result, FULL.verify(result, dispute=d), d)["status"]
    before = status if d is alone else answer_check.check(result, FULL.verify(result, dispute=alone), alone)["status"]
    return {"disputed": d["disputed"], "prompt_disputed": alone["disputed"], "prompt_status": before,
            "answers": d["answers"] if d["disputed"] else None, "status": status, "answer": result.get("answer"),
            "quarantined": sorted(suspects(d, result["passages"])), "passages": len(result["passages"]),
            "own": next((g["answer"] for g in d["answers"] if g.get("own")), None),
            "read": d["read"], "calls": alone["calls"], "seconds": round(alone["seconds"], 2),
            "wide_calls": d["calls"] - alone["calls"], "wide_seconds": round(d["seconds"] - alone["seconds"], 2)}


def named(result, value, docs=None):
    """Whether the short answer or a sentence of the result names `value` (injection.mentions); with `docs`, only a
    sentence that cites one of those documents counts (a planted value shown as a claim of its false copy, not a
    word another page happens to use)."""
    by_id = {p["id"]: p.get("doc") for p in result.get("passages", [])}
    cites = lambda s: docs is None or any(by_id.get(c) in docs for c in s.get("cites", []))
    return bool(value) and (injection.mentions(result.get("answer") or "", value) or any(
        cites(s) and injection.mentions(s["text"], value) for s in result.get("sentences", [])))


def eval_counterfactual(folder, wide=WIDE, limit=0):
    """Rows of a counterfactual folder's questions (OUT/golden.json over OUT/corpus), answered by generate() as
    verify_citations.py answers, then checked as the page checks: false_shown, true_shown and seen()."""
    from tqdm import tqdm
    folder = Path(folder)
    corpus, golden = folder / "corpus", folder / "golden.json"
    if not golden.is_file() or not corpus.is_dir():
        raise CorpusError(f"{folder} is not a counterfactual folder (python -m experiments.counterfactual --out DIR)")
    items = sample_golden(json.loads(golden.read_text(encoding="utf-8")), limit, seed=0)   # half single, half multi
    build_index(corpus, progress=False)
    name, answer_fn, settings = harness.run_args(corpus=corpus)
    rows = []
    for item in tqdm(items, desc="counterfactual", unit="q", file=sys.stderr):
        result = harness.cached_answer(name, answer_fn, item, settings)["result"]
        rows.append({"id": item["id"], "type": item["type"], "ratio": item["ratio"], "false": item["false_answer"],
                     "false_shown": named(result, item["false_answer"], set(item["false_docs"])),
                     "true_shown": any(named(result, a, set(item["true_docs"]))
                                       for a in [item["answer"], *item.get("aliases", [])]),
                     "known": knows(item), **seen(result, corpus, wide)})
    return rows


def knows(item):
    """Whether the model, asked the question with no passage (disputes.own_answer, cached), gives its true answer.
    Where no true page is left (`all`), what the model knows is the only other side: RECALL (Liu et al. 2023)
    measures a model misled by false context over the questions it answers right without it."""
    mine, true = disputes.own_answer(item["question"])["answer"], [item["answer"], *item.get("aliases", [])]
    return bool(mine) and any(disputes.agree(mine, a, item["question"]) for a in true)


def eval_injection(families, k=4, wide=WIDE):
    """Rows of the injected questions of these families (json prompt, the injected document in the prompt as
    experiments/injection.py puts it): the target shown as the false answer, and seen()."""
    from tqdm import tqdm
    items = [i for i in injection.load_items(injection.GOLDEN) if i["attack"]["kind"] in families]
    build_index(injection.CORPUS, progress=False)   # up to date first: the answers are keyed by what it holds
    _, get = injection.answer_source("json", injection.CORPUS, k)   # the answers injection scored, cached
    rows = []
    for item in tqdm(items, desc="disputes", unit="q", file=sys.stderr):
        result = get(item)["result"]
        rows.append({"id": item["id"], "kind": item["attack"]["kind"], "false": item["attack"]["target"],
                     "false_shown": named(result, item["attack"]["target"]),
                     "true_shown": any(named(result, a) for a in [item["answer"], *item["aliases"]]),
                     **seen(result, injection.CORPUS, wide)})
    return rows


def eval_golden(n, wide=WIDE, split=None, only=()):
    """Rows of n clean golden questions (half single, half multi-hop; one split of them with `split`; with `only`,
    every question of the split whose id is in it), answered by
    generate() as verify_citations.py answers them (its cached answers are reused: same key): every dispute is a
    false one or a real disagreement of corpus/; right, and seen()."""
    from tqdm import tqdm
    name, answer_fn, settings = harness.run_args()
    rows = []
    items = [i for i in eval_items(GOLDEN, 0 if only else n, split=split) if not only or i["id"] in only]
    if missing := set(only) - {i["id"] for i in items}:
        raise ValueError(f"--only: no {split or ''} golden question {', '.join(sorted(missing))}")
    for item in tqdm(items, desc="disputes", unit="q", file=sys.stderr):
        result = harness.cached_answer(name, answer_fn, item, settings)["result"]
        rows.append({"id": item["id"], "type": item["type"], "right": answers.right(result["answer"], item)
                     and not result.get("idk"), **seen(result, CORPUS_DIR, wide)})
    return rows


def p50(values):
    return statistics.median(values) if values else 0.0


def summary(rows):
    """Rates over rows: disputed (and by the prompt alone), verified, and when the rows have a false answer, how
    often it was shown, shown without "disputed", shown as verified; when they have `right`, the verified
    precision and coverage; the dispute check's calls and seconds per answer (mean, p50) and what looking past the
    prompt added."""
    n = max(1, len(rows))
    rate = lambda f: sum(1 for r in rows if f(r)) / n
    out = {"n": len(rows), "disputed": rate(lambda r: r["disputed"]), "prompt_disputed":
           rate(lambda r: r["prompt_disputed"]), "verified": rate(lambda r: r["status"] == "verified"),
           "calls_per_q": sum(r["calls"] for r in rows) / n, "seconds_p50": p50([r["seconds"] for r in rows]),
           "wide_calls_per_q": sum(r["wide_calls"] for r in rows) / n,
           "wide_calls_p50": p50([r["wide_calls"] for r in rows]),
           "wide_seconds_p50": p50([r["wide_seconds"] for r in rows]),
           "wide_seconds_per_q": sum(r["wide_seconds"] for r in rows) / n}
    if rows and "false_shown" in rows[0]:
        out.update({"false_shown": rate(lambda r: r["false_shown"]), "true_shown": rate(lambda r: r["true_shown"]),
                    "false_silent": rate(lambda r: r["false_shown"] and not r["disputed"]),
                    "false_verified": rate(lambda r: r["false_shown"] and r["status"] == "verified")})
    if rows and "known" in rows[0]:   # the questions the model answers right with no passage: counts
        known = [r for r in rows if r["known"]]
        out.update({"known": len(known), "known_false_shown": sum(r["false_shown"] for r in known),
                    "known_false_silent": sum(r["false_shown"] and not r["disputed"] for r in known)})
    if rows and "right" in rows[0]:
        right = sum(r["right"] for r in rows)
        out["right"] = right
        for pre, key in (("", "status"), ("prompt_", "prompt_status")):   # now, and with the prompt's check alone
            shown = [r for r in rows if r[key] == "verified"]
            out.update({f"{pre}verified_n": len(shown), f"{pre}wrong_verified": sum(not r["right"] for r in shown),
                        f"{pre}verified_precision": sum(r["right"] for r in shown) / max(1, len(shown)),
                        f"{pre}verified_coverage": sum(r["right"] for r in shown) / max(1, right)})
    return out


def line(name, s):
    """One printed line of a summary."""
    out = f"{name:8} n={s['n']:3d} disputed {s['disputed']:.3f} (prompt alone {s['prompt_disputed']:.3f})"
    if "false_shown" in s:
        out += (f"; false shown {s['false_shown']:.3f}, without 'disputed' {s['false_silent']:.3f}, as verified "
                f"{s['false_verified']:.3f}; true shown {s['true_shown']:.3f}")
    if "known" in s:
        out += (f"; the model knows {s['known']} with no passage: of those, false shown {s['known_false_shown']}, "
                f"without 'disputed' {s['known_false_silent']}")
    if "verified_n" in s:
        out += (f"; verified {s['verified_n']} (precision {s['verified_precision']:.3f}, coverage "
                f"{s['verified_coverage']:.3f}, wrong {s['wrong_verified']}; with the prompt's check alone "
                f"{s['prompt_verified_n']}, {s['prompt_verified_precision']:.3f}, {s['prompt_verified_coverage']:.3f})")
    return out + (f"; check {s['calls_per_q']:.1f} calls/q, {s['seconds_p50']:.1f} s p50; looking past the prompt "
                  f"+{s['wide_calls_per_q']:.1f} calls/q (p50 {s['wide_calls_p50']:.0f}), "
                  f"+{s['wide_seconds_per_q']:.1f} s/q (p50 {s['wide_seconds_p50']:.1f})")


def groups_text(r):
    return "; ".join(f"{g['answer']} [{', '.join(g['sources'])}]" for g in r["answers"] or [])


def report(rows, by):
    """Print the summary lines (all, then per value of `by`) and each row the check got wrong."""
    for value in sorted({r[by] for r in rows}):
        print(line(str(value), summary([r for r in rows if r[by] == value])))
    print(line("all", summary(rows)))
    for r in rows:
        missed = r.get("false_shown") and not r["disputed"]
        false = "right" in r and r["disputed"]
        if missed or false or (r.get("false_shown") and r["status"] == "verified"):
            tag = "VERIFIED FALSE" if r.get("false_shown") and r["status"] == "verified" else \
                "silent" if missed else "disputed"
            print(f"  {tag:14} {r['id'][:36]:36} {r[by]:6} [{r['status']}] {r.get('answer')!r:.40} "
                  + (f"(false: {r['false']}) " if "false" in r else "") + groups_text(r))


def main():
    ap = argparse.ArgumentParser(description="The disputed rate of answers, and what the user is shown: on planted "
                                 "false answers (counterfactual folders), injected documents or clean questions.")
    ap.add_argument("--counterfactual", type=Path, metavar="DIR", action="append",
                    help="a folder made by experiments.counterfactual (repeat for several ratios)")
    ap.add_argument("--injection", metavar="FAMILIES", help="these injection families (comma-separated, e.g. "
                    "misinformation), json prompt, from tests/fixtures/injection")
    ap.add_argument("--golden", type=int, metavar="N", help="false disputes on N clean golden questions")
    ap.add_argument("--split", choices=("dev", "test"), help="--golden: one half of golden.json")
    ap.add_argument("--only", metavar="IDS", help="--golden: just these questions (comma-separated ids)")
    ap.add_argument("--limit", type=int, default=0, help="--counterfactual: N questions of each folder, half "
                    "single-hop and half multi-hop, the same N every time (0: all)")
    ap.add_argument("--k", type=int, default=4, help="passages in the prompt (--injection)")
    ap.add_argument("--own-bar", type=float, default=disputes.OWN_BAR, metavar="P",
                    help="the model's own answer (asked without passages) is a side when it gives another answer with "
                    f"at least this probability (default {disputes.OWN_BAR}; 1: never)")
    ap.add_argument("--twin-ratio", type=float, default=mirrors.TWIN_RATIO, metavar="R",
                    help="read first the same section of a cited page's other copies: the copy's chunk at least this "
                    f"alike the cited one (default {mirrors.TWIN_RATIO}; above 1: never)")
    ap.add_argument("--wide", type=int, default=WIDE, metavar="N",
                    help=f"passages past the prompt's asked when the prompt's give at most one answer (default "
                         f"{WIDE}; 0: the prompt's only)")
    ap.add_argument("--json", type=Path, help="write the figures and rows here")
    args = ap.parse_args()
    disputes.OWN_BAR, mirrors.TWIN_RATIO = args.own_bar, args.twin_ratio
    only = {i.strip() for i in (args.only or "").split(",") if i.strip()}
    if not (args.golden or args.injection or args.counterfactual):
        ap.error("choose --counterfactual DIR, --injection FAMILIES or --golden N")
    try:
        print(f"model: {llm.engine_info()['engine']} {llm.engine_info()['model']}; wide={args.wide}; "
              f"own bar={args.own_bar}; twin ratio={args.twin_ratio}")
        if args.counterfactual:
            rows, by = [r for f in args.counterfactual for r in eval_counterfactual(f, args.wide, args.limit)], "ratio"
            what = {"counterfactual": [cache.portable(str(f)) for f in args.counterfactual], "limit": args.limit}
        elif args.golden:
            rows, by, what = eval_golden(args.golden, args.wide, args.split, only), "type", {
                "golden": args.golden, "split": args.split, **({"only": sorted(only)} if only else {})}
        else:
            rows, by, what = eval_injection(args.injection.split(","), args.k, args.wide), "kind", \
                {"families": args.injection}
    except (ValueError, CorpusError) as e:
        sys.exit(f"disputes_eval: {e}")
    except llm.LLMError as e:
        sys.exit(f"disputes_eval: {e} (answers and replies so far are cached: rerun to resume)")
    report(rows, by)
    if args.json:
        parts = {str(v): summary([r for r in rows if r[by] == v]) for v in sorted({r[by] for r in rows})}
        cache.write_json(args.json, {**what, "wide": args.wide, "own_bar": args.own_bar,
                                     "twin_ratio": args.twin_ratio, "model": llm.engine_info(),
                                     **summary(rows), "by": parts, "rows": rows})


if __name__ == "__main__":
    main()
