"""Week 8 (reliability): how often disputes.py marks an answer disputed, on attacks and on clean questions.

    python -m experiments.disputes_eval --injection misinformation --json results/disputes_misinformation.json
    python -m experiments.disputes_eval --golden 30 --json results/disputes_golden.json   # false disputes
    python -m experiments.disputes_eval --golden 30 --wide 4   # also looking past the prompt's passages

Expected output: one line per set with the disputed rate, the calls and seconds disputes.check() added, then
each disputed question with its groups of answers and their sources. --injection reads the answers injection.py
scored (json prompt, the injected document in the prompt), --golden those verify_citations.py made (the same
cached answers: no new answer call). One model call per passage, cached by content in .rag/cache/judge.jsonl.
--wide N also asks the next N passages retrieval ranks below the prompt's (ids W1..WN) and reports, beside the
prompt's own disputed rate, the rate when they are read too: does looking past the prompt find disagreements the
prompt alone misses, and how many false ones does it add?
"""
import argparse
import sys
from pathlib import Path

import harness
import injection
import llm
from disputes import check, suspects
from lab import cache
from retrieve import CORPUS_DIR, GOLDEN, eval_items, retrieve_chunks
from vector_index import build_index


def widened(result, n, corpus):
    """The result with the next n passages retrieval ranks below its own (ids W1..Wn) added to its passages."""
    if not n or not result.get("passages"):
        return result
    have = {p.get("chunk_id") for p in result["passages"]}
    more = [p for p in retrieve_chunks(result["question"], len(result["passages"]) + n, corpus=corpus)
            if p["chunk_id"] not in have][:n]
    return {**result, "passages": result["passages"] + [{**p, "id": f"W{i}"} for i, p in enumerate(more, 1)]}


def scored(result, wide, corpus):
    """row() of the prompt's dispute check and, with wide, of the one that also reads the next `wide` passages."""
    d = check(result)
    out = row(d, result["passages"])
    if wide:
        w = check(widened(result, wide, corpus))
        out["wide"] = {"disputed": w["disputed"], "answers": w["answers"] if w["disputed"] else None,
                       "calls": w["calls"] - d["calls"], "seconds": round(w["seconds"] - d["seconds"], 2)}
    return out


def eval_injection(families, k=4, wide=0):
    """Share of injected questions of these families whose answer (json prompt, the injected document in the
    prompt as injection.py puts it) is marked disputed, with the calls and seconds dispute() added."""
    from tqdm import tqdm
    items = [i for i in injection.load_items(injection.GOLDEN) if i["attack"]["kind"] in families]
    build_index(injection.CORPUS, progress=False)   # up to date first: the answers are keyed by what it holds
    _, get = injection.answer_source("json", injection.CORPUS, k)   # the answers injection.py scored, cached
    rows = []
    for item in tqdm(items, desc="disputes", unit="q", file=sys.stderr):
        result = get(item)["result"]
        rows.append({"id": item["id"], "kind": item["attack"]["kind"], **scored(result, wide, injection.CORPUS)})
    return {**summary(rows), "rows": rows}


def eval_golden(n, wide=0):
    """False disputes: the disputed rate on n clean golden questions (half single, half multi-hop), answered by
    generate() as verify_citations.py answers them (its cached answers are reused: same key)."""
    from tqdm import tqdm
    name, answer_fn, settings = harness.run_args()
    rows = []
    for item in tqdm(eval_items(GOLDEN, n), desc="disputes", unit="q", file=sys.stderr):
        result = harness.cached_answer(name, answer_fn, item, settings)["result"]
        rows.append({"id": item["id"], "type": item["type"], **scored(result, wide, CORPUS_DIR)})
    return rows


def row(d, passages):
    """check()'s dict as a JSON row: the groups only when disputed, and the passages that verify() would then
    quarantine as the side that reads like an instruction (suspects)."""
    return {"disputed": d["disputed"], "answers": d["answers"] if d["disputed"] else None,
            "quarantined": sorted(suspects(d, passages)), "passages": len(passages),
            "calls": d["calls"], "seconds": round(d["seconds"], 2)}


def summary(rows):
    n = max(1, len(rows))
    wide = {"wide_disputed": sum(r["wide"]["disputed"] for r in rows) / n,
            "wide_calls_per_q": sum(r["wide"]["calls"] for r in rows) / n} if rows and "wide" in rows[0] else {}
    return {"n": len(rows), "disputed": sum(r["disputed"] for r in rows) / n, **wide,
            "conflict_quarantined": sum(len(r["quarantined"]) for r in rows) / max(1, sum(r["passages"] for r in rows)),
            "calls_per_q": sum(r["calls"] for r in rows) / n, "seconds_per_q": sum(r["seconds"] for r in rows) / n}


def wide_text(s):
    """'; with the next passages: disputed 0.150 (+0.8 calls per question)' when --wide ran, else ''."""
    return (f"; with the next passages too: disputed {s['wide_disputed']:.3f} (+{s['wide_calls_per_q']:.1f} calls "
            f"per question)") if "wide_disputed" in s else ""


def main():
    ap = argparse.ArgumentParser(description="The disputed rate of answers: on injected documents or on clean golden "
                                 "questions.")
    ap.add_argument("--injection", metavar="FAMILIES", help="the disputed rate on these injection families "
                    "(comma-separated, e.g. misinformation), json prompt, from tests/fixtures/injection")
    ap.add_argument("--golden", type=int, metavar="N", help="false disputes on N clean golden questions")
    ap.add_argument("--k", type=int, default=4, help="passages in the prompt (--injection)")
    ap.add_argument("--wide", type=int, default=0, metavar="N",
                    help="also check the next N retrieved passages beyond the prompt's, and report both rates")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    if not (args.golden or args.injection):
        ap.error("choose --injection FAMILIES or --golden N")
    if args.golden:
        rows = eval_golden(args.golden, args.wide)
        report = {**summary(rows), "rows": rows}
        for t in ("single", "multi"):
            part = summary([r for r in rows if r["type"] == t])
            print(f"{t:6} n={part['n']:3d} disputed {part['disputed']:.3f}" + wide_text(part))
        print(f"all    n={report['n']:3d} disputed {report['disputed']:.3f} (clean questions: every one is a false "
              f"dispute or a real disagreement of corpus/); {report['calls_per_q']:.1f} calls, "
              f"{report['seconds_per_q']:.1f} s per question; clean passages quarantined as the side of a dispute "
              f"that reads like an instruction: {report['conflict_quarantined']:.4f} of "
              f"{sum(r['passages'] for r in rows)}" + wide_text(report))
        for r in rows:
            if r["disputed"]:
                groups = "; ".join(f"{g['answer']} [{', '.join(g['sources'])}]" for g in r["answers"])
                lost = f"  (quarantined: {', '.join(r['quarantined'])})" if r["quarantined"] else ""
                print(f"  {r['id'][:40]:40} {r['type']:6} {groups}{lost}")
        for r in rows:
            if r.get("wide", {}).get("disputed") and not r["disputed"]:   # found only past the prompt
                print(f"+ {r['id'][:40]:40} {r['type']:6} "
                      + "; ".join(f"{g['answer']} [{', '.join(g['sources'])}]" for g in r["wide"]["answers"]))
        if args.json:
            cache.write_json(args.json, {"golden": args.golden, "model": llm.engine_info(), **report})
        return
    if args.injection:
        report = eval_injection(args.injection.split(","), args.k, args.wide)
        print(f"disputed {report['disputed']:.3f} of n={report['n']} ({args.injection}); dispute() added "
              f"{report['calls_per_q']:.1f} calls and {report['seconds_per_q']:.1f} s per question"
              + wide_text(report))
        for r in report["rows"]:
            print(f"  {r['id']:8} {r['kind']:15} {'DISPUTED' if r['disputed'] else 'agree':8} "
                  + "; ".join(f"{g['answer']} [{', '.join(g['sources'])}]" for g in r["answers"] or [])
                  + (f"  (with the next passages: {'DISPUTED' if r['wide']['disputed'] else 'agree'})"
                     if "wide" in r else ""))
        if args.json:
            cache.write_json(args.json, {"families": args.injection, "model": llm.engine_info(), **report})
        return


if __name__ == "__main__":
    main()
