"""What lab/spans.py does to short answers already written: EM, F1 and "right" of the model's own short answers and of
the spans answer_span takes from them, on the rows of a results file (the same replies: no model call).

    python -m experiments.span_eval results/answer_check.json golden.json            # HotpotQA/MuSiQue, dev and test
    python -m experiments.span_eval results/answer_check.json golden.json --answers results/cache/answers.jsonl
    python -m experiments.span_eval results/issue45/benchmark_before_test.json catalogue/golden.json --json out.json

Expected output (a second): one row per (rows, split, type) block: n, answers changed, EM / F1 / right before and
after, the answers shown verified as the rows were checked and how many of them are right by today's
lab.answers.right (so rows written by older code are labelled as today's are), and the changed answers of the
dev split (never the test split's, so nothing is chosen on them). A block's split is the golden item's
(golden.split_of). Answers the span rule leaves alone score the same before and after.
`--answers` also counts, over every cached generate() result in a cache file, the sentences spans.recite would cite
anew (the judge then reads the passage that states them; that needs the model, so only the count is given here).
"""
import argparse
import json
import sys
from pathlib import Path

from lab.answers import right
from lab.answers import exact_match, f1
from lab.cache import Cache, write_json
from golden import split_of
from layers.spans import answer_span, recite


def blocks(report):
    """{name: rows} of a results file: answer_check_eval's {"rows": {"single/dev": [...]}} or benchmark.py's
    {"rows": {"single": [...]}}."""
    rows = report.get("rows")
    if not isinstance(rows, dict):
        raise ValueError("no 'rows' by pattern in this file")
    return rows


def score(rows, golden):
    """(n, changed, {before: {em, f1, right}, after: ...}, [(question, before, after, gold)])."""
    out, changed = {"before": [0, 0, 0], "after": [0, 0, 0]}, []
    for r in rows:
        g = golden[r["id"]]
        before = r["answer"]
        after = before if r.get("idk") else answer_span(g["question"], before)
        if after != before:
            changed.append((g["question"], before, after, g["answer"]))
        for side, a in (("before", before), ("after", after)):
            out[side][0] += exact_match(a, g)
            out[side][1] += f1(a, g)
            out[side][2] += right(a, g) and not r.get("idk")
    n = max(1, len(rows))
    figures = {s: {"em": v[0] / n, "f1": v[1] / n, "right": v[2] / n} for s, v in out.items()}
    shown = [r for r in rows if r.get("status") == "verified"]   # as the row was checked, labelled by today's right()
    figures["verified"] = {"n": len(shown), "right": sum(right(r["answer"], golden[r["id"]]) for r in shown)}
    return len(rows), changed, figures


def recited(path):
    """(answers, sentences, sentences re-cited) over the generate()-shaped results cached in a cache file."""
    answers = sentences = moved = 0
    for value in Cache(path.stem, path.parent).data.values():
        result = value.get("result") if isinstance(value, dict) else None
        if isinstance(result, dict) and "sentences" in result and "passages" in result:
            answers, sentences = answers + 1, sentences + len(result["sentences"])
            moved += len(recite(result["sentences"], result["passages"])[1])
    return answers, sentences, moved


def main():
    ap = argparse.ArgumentParser(description="EM/F1 of cached short answers before and after lab/spans.answer_span.")
    ap.add_argument("results", type=Path, help="a results file with rows (answer_check_eval's or benchmark.py's)")
    ap.add_argument("golden", type=Path, help="the golden file the rows were scored against")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--show", type=int, default=12, help="changed dev answers to print per block")
    ap.add_argument("--answers", type=Path, help="a cache of generate() results: count the sentences re-cited")
    args = ap.parse_args()
    try:
        golden = {g["id"]: g for g in json.loads(args.golden.read_text(encoding="utf-8"))}
        report = json.loads(args.results.read_text(encoding="utf-8"))
        named = blocks(report)
    except (OSError, ValueError) as e:
        sys.exit(f"span_eval: {e}")
    print(f"{'rows':26} {'n':>4} {'changed':>7}   {'EM':>13} {'F1':>13} {'right':>13} {'verified (right)':>17}")
    figures = {}
    for name, rows in named.items():
        for split, kind in ((s, k) for s in ("dev", "test") for k in (None, "single", "multi")):
            part = [r for r in rows if r["id"] in golden and split_of(golden[r["id"]]) == split
                    and kind in (None, golden[r["id"]]["type"])]
            if not part:
                continue
            n, changed, s = score(part, golden)
            label = (name if name.endswith(split) else f"{name}/{split}") + (f"/{kind}" if kind else "")
            figures[label] = {"n": n, "changed": len(changed), **s}
            cell = lambda k: f"{s['before'][k]:.3f}->{s['after'][k]:.3f}"
            shown = f"{s['verified']['n']} ({s['verified']['right']})"
            print(f"{label:26} {n:>4} {len(changed):>7}   {cell('em'):>13} {cell('f1'):>13} {cell('right'):>13} "
                  f"{shown:>17}")
            for q, b, a, gold in (changed[:args.show] if split == "dev" and not kind else []):
                print(f"    {q[:60]!r}: {b[:50]!r} -> {a!r} (gold {gold!r})")
    out = {"results": str(args.results), "golden": str(args.golden), "figures": figures}
    if args.answers:
        a, n, moved = recited(args.answers)
        out["recited"] = {"answers": a, "sentences": n, "recited": moved}
        print(f"{args.answers}: {moved} of {n} sentences ({moved / max(1, n):.1%}) in {a} cached answers re-cited")
    if args.json:
        write_json(args.json, out)


if __name__ == "__main__":
    main()
