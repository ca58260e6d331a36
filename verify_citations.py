"""Week 4: check every citation. Which IDs are invalid, which sentences are uncited, which citations
do not support their sentence; over a run, ALCE-style citation recall and precision.

    python verify_citations.py                          # 10 golden questions, half single, half multi
    python verify_citations.py --limit 30 --json results/citations.json
    python verify_citations.py --styles lab,text,json --limit 30   # the prompt styles side by side
    python verify_citations.py --ask "question"         # one answer, each citation with its verdict

Expected output: the settings, a progress bar, then one row per prompt style: questions, sentences,
cited-sentence rate, invalid IDs, citation recall, citation precision, answer F1, seconds per question
(generation) and judge seconds per sentence; ~30 s per question on the embedded engine the first
time, much less on a rerun (verdicts are cached by judge.py).

Definitions (ALCE, Gao et al. 2023): a sentence is supported when its cited passages, together, support
it (an uncited sentence is not); citation recall = share of supported sentences. A citation is precise
when its sentence is supported and the citation either supports the sentence alone or is needed (the
other citations without it do not support it); citation precision = share of precise citations.
ALCE's ChatGPT figures on ASQA, for comparison: recall 73.6, precision 72.5.
"""
import argparse
import json
import statistics
import sys
from pathlib import Path

import llm
from generate import DEFAULT_STYLE, ORDERS, STYLES, generate
from judge import f1, joined, supports
from retrieve import CORPUS_DIR, GOLDEN, load_golden, sample_golden
from vector_index import CorpusError

HERE = Path(__file__).parent
ALCE_CHATGPT_ASQA = {"citation_recall": 0.736, "citation_precision": 0.725}


def verify(result):
    """A generate() result -> per-sentence verdicts: [{text, cites, supported, precise: {id: bool}}]."""
    by_id = {p["id"]: p for p in result["passages"]}
    out = []
    for s in result["sentences"]:
        cites = [c for c in s["cites"] if c in by_id]
        supported = bool(cites) and supports(s["text"], joined([by_id[c] for c in cites]))
        precise = {}
        for c in cites:
            if not supported:
                precise[c] = False
            elif len(cites) == 1:
                precise[c] = True
            else:
                others = [by_id[o] for o in cites if o != c]
                precise[c] = supports(s["text"], by_id[c]["text"]) or not supports(s["text"], joined(others))
        out.append({"text": s["text"], "cites": cites, "supported": supported, "precise": precise})
    return out


def summarize(rows):
    """rows of {result, verdicts, item, judge} -> the run's figures (the documented JSON keys)."""
    sentences = [v for r in rows for v in r["verdicts"]]
    citations = [ok for v in sentences for ok in v["precise"].values()]
    n = max(1, len(rows))
    return {"questions": len(rows), "sentences": len(sentences),
            "cited_sentence_rate": sum(bool(v["cites"]) for v in sentences) / max(1, len(sentences)),
            "invalid_ids": sum(len(r["result"]["invalid_ids"]) for r in rows),
            "citation_recall": sum(v["supported"] for v in sentences) / max(1, len(sentences)),
            "citation_precision": sum(citations) / max(1, len(citations)),
            "answer_f1": sum(f1(r["result"]["answer"], r["item"]) for r in rows) / n,
            "idk_answers": sum(r["result"]["idk"] for r in rows),
            "seconds_per_question": sum(r["result"]["cost"]["seconds"] for r in rows) / n,
            "seconds_p50": statistics.median([r["result"]["cost"]["seconds"] for r in rows] or [0]),
            "judge_seconds_per_sentence": sum(r["judge"]["seconds"] for r in rows) / max(1, len(sentences))}


def run(items, style=DEFAULT_STYLE, order="best_first", corpus=CORPUS_DIR, progress=True):
    from tqdm import tqdm
    rows = []
    for item in tqdm(items, desc=f"verify {style}", unit="q", file=sys.stderr, disable=not progress):
        result = generate(item["question"], order=order, style=style, corpus=corpus)
        with llm.counting() as judge_cost:
            verdicts = verify(result)
        rows.append({"item": item, "result": result, "verdicts": verdicts, "judge": judge_cost})
    return rows


def print_answer(result, verdicts):
    print(f"\nquestion: {result['question']}\nanswer:   {result['answer']}")
    for n, v in enumerate(verdicts, 1):
        marks = " ".join(f"[{c}: {'supports' if ok else 'does not support'}]" for c, ok in v["precise"].items())
        print(f"  {n}. {v['text']}\n     {marks or '(uncited)'} -> sentence {'supported' if v['supported'] else 'NOT supported'}")
    for bad in result["invalid_ids"]:
        print(f"  invalid citation [{bad['id']}] in sentence {bad['sentence'] + 1}: dropped (no such source)")
    print("sources:")
    for p in result["passages"]:
        print(f"  [{p['id']}] {p['chunk_id']}: {' '.join(p['text'].split())[:90]}")


COLUMNS = [("questions", "questions", "d"), ("sentences", "sentences", "d"), ("cited_sentence_rate", "cited", ".3f"),
           ("invalid_ids", "invalid", "d"), ("citation_recall", "c-recall", ".3f"),
           ("citation_precision", "c-prec", ".3f"), ("answer_f1", "F1", ".3f"),
           ("seconds_per_question", "s/q", ".1f"), ("seconds_p50", "s/q p50", ".1f"),
           ("judge_seconds_per_sentence", "judge s", ".1f")]


def print_table(summaries):
    """One row per style, fixed columns; ALCE's ChatGPT citation figures underneath for scale."""
    print(f"\n{'style':8}" + "".join(f"{h:>10}" for _, h, _ in COLUMNS))
    for style, s in summaries.items():
        print(f"{style:8}" + "".join(f"{s[key]:>10{fmt}}" for key, _, fmt in COLUMNS))
    alce = {k: f"{v:>10.3f}" for k, v in ALCE_CHATGPT_ASQA.items()}
    print(f"{'ALCE*':8}" + "".join(alce.get(key, f"{'':>10}") for key, _, _ in COLUMNS[:6])
          + "   *ChatGPT on ASQA (Gao et al. 2023)")


def main():
    ap = argparse.ArgumentParser(description="Verify the citations of generated answers on golden questions.")
    ap.add_argument("--limit", type=int, default=10, help="golden questions (half single, half multi)")
    ap.add_argument("--styles", default=DEFAULT_STYLE, help=f"comma-separated prompt styles of {', '.join(STYLES)}")
    ap.add_argument("--order", choices=ORDERS, default="best_first", help="order of the passages in the prompt")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="folder of .txt/.md documents")
    ap.add_argument("--golden", type=Path, default=GOLDEN, help="golden questions")
    ap.add_argument("--ask", help="verify the answer to this one question instead")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    styles = [s.strip() for s in args.styles.split(",") if s.strip()]
    if not styles or any(s not in STYLES for s in styles):
        sys.exit(f"verify_citations: --styles takes {', '.join(STYLES)}, got {args.styles!r}")
    print(f"model={llm.engine_info()['model']} engine={llm.engine_info()['engine']} styles={','.join(styles)} "
          f"order={args.order} corpus={args.corpus}" + ("" if args.ask else f" golden={args.golden} limit={args.limit}"))
    try:
        if args.ask:
            result = generate(args.ask, order=args.order, style=styles[0], corpus=args.corpus)
            return print_answer(result, verify(result))
        items = sample_golden(load_golden(args.golden), args.limit)
        summaries = {s: summarize(run(items, s, args.order, args.corpus)) for s in styles}
    except (CorpusError, llm.LLMError) as e:
        sys.exit(f"verify_citations: {e}")
    print_table(summaries)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        data = summaries[styles[0]] if len(styles) == 1 else {"styles": summaries}
        args.json.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
