"""Issue 59's before/after table: the lab at full strength before a change and after it, on the same questions, from
two benchmark.py --json files each, with each figure's change and whether it holds within the tolerance.

    python -m experiments.before_after results/issue59/before_golden_test.json results/issue59/after_golden_test.json \
        results/issue59/before_catalogue_test.json results/issue59/after_catalogue_test.json

Expected output: one block per pair (its files and n), then a row per pattern and figure: before, after, the change,
and `ok` when the after figure is within TOLERANCE of before or better, `WORSE` when it is not, `n/a` when either
side has no value. The figures are issue 59's: F1, EM, citation recall and precision, verified precision, the
share of right answers verified (coverage), the share of right answers, and the router's accuracy (smart: the
route a question took, read from its retrievals, against its type). A pair whose question ids differ is refused:
the two runs must answer the same questions.
--changes GOLDEN.json also lists, per pattern, the questions right before and not after (lost) and the other way
(won): id, type, question, gold answer, both answers.
Not handled: the per-split (single, multi) tables; compare them with the benchmark's own .md reports.
"""
import argparse
import json
import sys
from pathlib import Path

from experiments.ablation_report import signed
from pattern_cli import fmt

TOLERANCE = 0.02
FIGURES = [("answer_f1", "F1"), ("answer_em", "EM"), ("right_share", "right"), ("citation_recall", "c-recall"),
           ("citation_precision", "c-precision"), ("verified_precision", "v-precision"),
           ("verified_coverage", "right verified")]


def routed_multi(row):
    """Did the question take the multi-hop route? Yes when it retrieved more than once (a decomposition's hops) or
    not by the plain fused method (the chain). A multi-hop route that fell back to one retrieval counts as single."""
    retrievals = row.get("retrievals") or []
    return len(retrievals) > 1 or any(r.get("method") != "fused" for r in retrievals)


def router_accuracy(rows):
    """Share of rows whose route matches their type (multi-hop questions routed multi-hop), None with no rows."""
    return sum(routed_multi(r) == (r["type"] == "multi") for r in rows) / len(rows) if rows else None


def figures(run, pattern):
    """{figure: value} of one pattern in one benchmark run (the `all` table, plus the router's accuracy)."""
    out = dict(run["table"]["all"][pattern])
    if pattern == "smart":
        out["router_accuracy"] = router_accuracy(run["rows"][pattern])
    return out


def compare(before, after):
    """[(pattern, label, before value, after value, verdict)] for the patterns both runs hold."""
    lines = []
    for pattern in [p for p in before["table"]["all"] if p in after["table"]["all"]]:
        ids = [sorted(r["id"] for r in run["rows"][pattern]) for run in (before, after)]
        if ids[0] != ids[1]:
            raise ValueError(f"{pattern}: the two runs answered different questions ({len(ids[0])} and "
                             f"{len(ids[1])})")
        b, a = figures(before, pattern), figures(after, pattern)
        for key, label in FIGURES + ([("router_accuracy", "router accuracy")] if pattern == "smart" else []):
            x, y = b.get(key), a.get(key)
            verdict = "n/a" if x is None or y is None else "ok" if y >= x - TOLERANCE else "WORSE"
            lines.append((pattern, label, x, y, verdict))
    return lines


def changes(before, after, pattern):
    """([lost row pairs], [won row pairs]): (before row, after row) of the questions whose `right` flipped."""
    by_id = {r["id"]: r for r in after["rows"][pattern]}
    pairs = [(r, by_id[r["id"]]) for r in before["rows"][pattern] if r["id"] in by_id]
    return ([p for p in pairs if p[0]["right"] and not p[1]["right"]],
            [p for p in pairs if not p[0]["right"] and p[1]["right"]])


def print_changes(before, after, golden):
    for pattern in [p for p in before["rows"] if p in after["rows"]]:
        for word, pairs in zip(("lost", "won"), changes(before, after, pattern)):
            print(f"{pattern}: {word} {len(pairs)}")
            for b, a in pairs:
                item = golden.get(b["id"], {})
                print(f"  {b['id']} ({b['type']}) {item.get('question', '?')} gold: {item.get('answer', '?')!r} "
                      f"before: {b['answer'][:60]!r} after: {a['answer'][:60]!r}")


def main():
    ap = argparse.ArgumentParser(description="Before/after figures of the lab at full strength from benchmark JSON "
                                             "pairs (issue 59).")
    ap.add_argument("files", nargs="+", type=Path, help="BEFORE.json AFTER.json [BEFORE.json AFTER.json ...]")
    ap.add_argument("--json", type=Path, help="write every pair's rows here")
    ap.add_argument("--changes", type=Path, metavar="GOLDEN", help="list the questions whose answer turned right or "
                                                                   "wrong; GOLDEN gives their questions")
    args = ap.parse_args()
    if len(args.files) % 2:
        sys.exit("before_after: give the files in pairs, BEFORE.json AFTER.json")
    report = []
    for b, a in zip(args.files[::2], args.files[1::2]):
        try:
            before, after = (json.loads(f.read_text(encoding="utf-8")) for f in (b, a))
            lines = compare(before, after)
        except (OSError, ValueError, KeyError) as e:
            sys.exit(f"before_after: {b} / {a}: {e}")
        n = {p: len(after["rows"][p]) for p in after["rows"]}
        print(f"\n## {b} -> {a} (n per pattern: {n}); ok = within {TOLERANCE} of before or better")
        print(f"{'pattern':8} {'figure':16} {'before':>7} {'after':>7} {'change':>7}  verdict")
        for pattern, label, x, y, verdict in lines:
            change = signed(None if x is None or y is None else y - x)
            print(f"{pattern:8} {label:16} {fmt(x):>7} {fmt(y):>7} {change:>7}  {verdict}")
        if args.changes:
            print_changes(before, after, {g["id"]: g for g in json.loads(args.changes.read_text(encoding="utf-8"))})
        report.append({"before": str(b), "after": str(a), "n": n,
                       "rows": [dict(zip(("pattern", "figure", "before", "after", "verdict"), x)) for x in lines]})
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
