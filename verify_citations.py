"""Week 5: check every citation with week 4's judge. Which IDs are invalid, which sentences are uncited, which
citations do not support their sentence; over a run, ALCE-style citation recall and precision.

    python verify_citations.py                          # 10 golden questions, half single, half multi
    python verify_citations.py --limit 30 --json results/citations.json
    python verify_citations.py --styles lab,text,json --limit 30   # the prompt styles side by side
    python verify_citations.py --ask "question"         # one answer, each citation with its verdict

Expected output: the settings, a progress bar, then one row per prompt style: questions, sentences,
cited-sentence rate, invalid IDs, citation recall, citation precision, answer F1, seconds per question
(generation) and judge seconds per sentence; ~30 s per question on the embedded engine the first
time, much less on a rerun (verdicts are cached by judge.py). --json writes the summary (one style: at the top;
several: under "styles"), the "settings" (styles, order) and the "rows" per style it is summarize()d from.

The checking itself is citations.py (verify: one judge call per citation, ALCE's definitions). --ask runs the week's
step alone; the loop over golden questions, with its caches, is harness.py, which checks each answer as the lab at
full strength does (assembly.py: the judge layer, quarantine, disputes, the answer check), as the grading replays it.
"""
import argparse
import json
import sys
from pathlib import Path

import llm
from citations import print_checked, print_table, say_verdict, summarize
from generate import DEFAULT_STYLE, ORDERS, STYLES, generate, writing
from retrieve import CORPUS_DIR, GOLDEN, eval_items
from vector_index import CorpusError

TIMING_FIELDS = ("seconds_per_question", "seconds_p50", "judge_seconds_per_sentence")  # wall clock: differ run to run
ROW_TIMING = ("seconds", "judge_seconds")   # the same in the rows


def untimed(row):
    """A row without its wall-clock fields (ROW_TIMING, and the dispute check's seconds)."""
    out = {f: x for f, x in row.items() if f not in ROW_TIMING}
    if isinstance(out.get("dispute"), dict):
        out["dispute"] = {f: x for f, x in out["dispute"].items() if f != "seconds"}
    return out


def main():
    ap = argparse.ArgumentParser(description="Verify the citations of generated answers on golden questions.")
    ap.add_argument("--limit", type=int, default=10, help="golden questions (half single, half multi)")
    ap.add_argument("--styles", default=DEFAULT_STYLE, help=f"comma-separated prompt styles of {', '.join(STYLES)}")
    ap.add_argument("--order", choices=ORDERS, default="best_first", help="order of the passages in the prompt")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="folder of documents (.txt .md .pdf .docx .html)")
    ap.add_argument("--golden", type=Path, default=GOLDEN, help="golden questions")
    ap.add_argument("--ask", help="verify the answer to this one question instead")
    ap.add_argument("--fresh", action="store_true", help="ignore cached per-question results")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--no-timing", action="store_true",
                    help="leave the wall-clock fields out of --json: two runs then write identical files")
    args = ap.parse_args()
    styles = [s.strip() for s in args.styles.split(",") if s.strip()]
    if not styles or any(s not in STYLES for s in styles):
        sys.exit(f"verify_citations: --styles takes {', '.join(STYLES)}, got {args.styles!r}")
    print(f"model={llm.engine_info()['model']} engine={llm.engine_info()['engine']} styles={','.join(styles)} "
          f"order={args.order} corpus={args.corpus}"
          + ("" if args.ask else f" golden={args.golden} limit={args.limit}"))
    try:
        with llm.ctrl_c("verify_citations"):
            if args.ask:
                result = generate(args.ask, order=args.order, style=styles[0], corpus=args.corpus,
                                  watch=writing() if styles[0] == "json" else None)
                return print_checked(result, on_verdict=say_verdict)
            from harness import run   # the golden run as the lab at full strength checks it (the graded run)
            items = eval_items(args.golden, args.limit, args.corpus)
            rows = {s: run(items, s, args.order, args.corpus, args.fresh) for s in styles}
            summaries = {s: summarize(rs) for s, rs in rows.items()}
    except (CorpusError, llm.LLMError) as e:
        sys.exit(f"verify_citations: {e}")
    print_table(summaries)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        if args.no_timing:
            summaries = {k: {f: x for f, x in v.items() if f not in TIMING_FIELDS} for k, v in summaries.items()}
            rows = {k: [untimed(r) for r in rs] for k, rs in rows.items()}
        data = summaries[styles[0]] if len(styles) == 1 else {"styles": summaries}
        # the rows each summary is made of (citations.summarize(rows)): grading/grade.py recomputes the summary
        data = {**data, "settings": {"styles": styles, "order": args.order}, "rows": rows}
        args.json.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
