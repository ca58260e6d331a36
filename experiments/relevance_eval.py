"""Does a relevance score tell right answers from wrong ones? ROC AUC of each measure on answers the lab's
patterns actually gave to golden.json questions.

    python -m experiments.relevance_eval   # answers from results/cache/rows.jsonl, every measure
    python -m experiments.relevance_eval --rows .rag/cache/rows.jsonl --json results/relevance_auc.json

Expected output (~1 min on the embedded engine when the LLM scores are cached, ~10 min when not): the
settings, then one row per measure: n right, n wrong, ROC AUC (0.5 = no better than chance) with a
95% bootstrap interval. "Right" is token F1 >= 0.5 against the golden answer, "wrong" is F1 = 0 (and
not "I don't know"); answers in between are left out. Each (question, answer) counts once.

Measures:
- `llm_1to5`: relevance(), the model's 1-5 "how directly does it answer" score (the audit's old column,
  dropped from judge.py and ordering_ab.py because it does not discriminate);
- `embed_cosine`: cosine between the question's and the answer's embeddings (vector_index.embed);
- `source_agrees`: judge.supports() of 'The answer to "q" is a.' against the answer's own retrieved
  sources is not measured here: those rows do not keep their sources (see experiments/judge_eval.py for the judge).
"""
import argparse
import json
import sys
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel

import llm
from judge import _cached
from retrieve import GOLDEN, load_golden
from vector_index import CorpusError, embed

ROOT = Path(__file__).parent.parent   # the repository (this file is in experiments/)
ROWS = ROOT / "results" / "cache" / "rows.jsonl"
RIGHT_F1, WRONG_F1 = 0.5, 0.0
BOOTSTRAP = 2000
MEASURES = ("llm_1to5", "embed_cosine")


class Score(BaseModel):
    score: Literal[1, 2, 3, 4, 5]


SCORE_SCHEMA = Score.model_json_schema()
RELEVANCE_PROMPT = """Question: {question}
Answer: {answer}

How directly does the answer respond to the question, whether or not it is correct?
5 = answers exactly what was asked, 3 = partly or vaguely, 1 = does not answer it ("I don't know" is 1).
Reply in JSON with "score"."""


def relevance(question, answer):
    """How directly the answer addresses the question, 0..1 (LLM score 1-5, rescaled). Cached."""
    def score():
        return llm.complete_json(RELEVANCE_PROMPT.format(question=question, answer=answer), SCORE_SCHEMA,
                                 max_tokens=12).get("score", 1)
    return (int(_cached("relevance", [question, answer], score)) - 1) / 4


def answers(rows_path, golden):
    """Unique (question, answer, right) from cached evaluation rows: right = F1 >= 0.5, wrong = F1 = 0."""
    questions = {g["id"]: g["question"] for g in golden}
    seen = {}
    for line in Path(rows_path).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)["v"]
        if row.get("id") not in questions or "answer" not in row or row.get("idk") or row.get("error"):
            continue
        if row["f1"] >= RIGHT_F1 or row["f1"] <= WRONG_F1:
            seen[(row["id"], row["answer"])] = (questions[row["id"]], row["answer"], row["f1"] >= RIGHT_F1)
    return list(seen.values())


def auc_with_interval(labels, scores, seed=0):
    """ROC AUC and a 95% percentile bootstrap interval over the (label, score) pairs."""
    from sklearn.metrics import roc_auc_score
    labels, scores = np.asarray(labels), np.asarray(scores, dtype=float)
    rng, boot = np.random.default_rng(seed), []
    for _ in range(BOOTSTRAP):
        i = rng.integers(0, len(labels), len(labels))
        if labels[i].min() != labels[i].max():
            boot.append(roc_auc_score(labels[i], scores[i]))
    return float(roc_auc_score(labels, scores)), [float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))]


def score_all(items, measure):
    from tqdm import tqdm
    if measure == "embed_cosine":
        q = embed([x[0] for x in items])
        a = embed([x[1] for x in items])
        return list(np.sum(q * a, axis=1) / (np.linalg.norm(q, axis=1) * np.linalg.norm(a, axis=1)))
    return [relevance(q, a) for q, a, _ in tqdm(items, desc=measure, unit="answer", file=sys.stderr)]


def main():
    ap = argparse.ArgumentParser(description="ROC AUC of relevance measures: right vs wrong answers on golden.json.")
    ap.add_argument("--rows", type=Path, default=ROWS, help="cached evaluation rows (JSON lines with answer and f1)")
    ap.add_argument("--golden", type=Path, default=GOLDEN, help="golden questions")
    ap.add_argument("--measures", default=",".join(MEASURES), help="comma-separated, from: " + ", ".join(MEASURES))
    ap.add_argument("--json", type=Path, help="write the table here")
    args = ap.parse_args()
    measures = [m.strip() for m in args.measures.split(",") if m.strip()]
    if bad := [m for m in measures if m not in MEASURES]:
        sys.exit(f"relevance_eval: unknown measure {', '.join(bad)}: choose from {', '.join(MEASURES)}")
    if not args.rows.exists():
        sys.exit(f"relevance_eval: no rows file {args.rows}: run an evaluation first (e.g. verify_citations.py)")
    print(f"model={llm.engine_info()['model']} rows={args.rows} golden={args.golden} measures={','.join(measures)}")
    try:
        items = answers(args.rows, load_golden(args.golden))
        table = {}
        for m in measures:
            scores = score_all(items, m)
            auc, ci = auc_with_interval([x[2] for x in items], scores)
            table[m] = {"n_right": sum(x[2] for x in items), "n_wrong": sum(not x[2] for x in items),
                        "auc": auc, "auc_95": ci, "distinct_scores": len(set(np.round(scores, 6)))}
    except (CorpusError, llm.LLMError) as e:
        sys.exit(f"relevance_eval: {e}")
    print(f"\n{'measure':14} {'right':>6} {'wrong':>6} {'AUC':>6}  {'95% interval':>14} {'distinct':>9}")
    for m, r in table.items():
        print(f"{m:14} {r['n_right']:6} {r['n_wrong']:6} {r['auc']:6.3f}  [{r['auc_95'][0]:.3f}, {r['auc_95'][1]:.3f}]"
              f" {r['distinct_scores']:9}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"model": llm.engine_info(portable=True), "rows": args.rows.name,
                                         "table": table}, indent=1) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
