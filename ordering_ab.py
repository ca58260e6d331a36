"""Week 4 A/B: does the order of the passages in the prompt change the answer?

    python ordering_ab.py   # 10 golden questions, best_first vs worst_first vs edges
    python ordering_ab.py --limit 30 --json results/ordering_ab.json

Expected output: the settings, a progress bar, then one row per order (faithfulness, F1,
seconds per question), the paired deltas against best_first with 95% bootstrap intervals, and one
sentence on what they mean; ~1.5 min per question on the embedded engine (three answers, each audited).

Every order sees exactly the same passages for a question (retrieved once); only their order and
therefore their labels change. Deltas are paired per question and resampled 2,000 times (seeded).
"""
import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.stats import bootstrap

import llm
from generate import DEFAULT_STYLE, ORDERS, generate
from judge import audit
from lab.cache import write_json
from retrieve import CORPUS_DIR, GOLDEN, eval_items, retrieve_chunks
from vector_index import CorpusError

METRICS = ("faithfulness", "f1")  # no relevance: it did not separate right from wrong answers
                                  # (experiments/relevance_eval.py)
BOOTSTRAP = 2000
SEED = 0


def bootstrap_ci(deltas, n=BOOTSTRAP, seed=SEED):
    """Mean of paired deltas and its 95% percentile interval (scipy.stats.bootstrap, seeded).
    [0.1, 0.1, 0.1] -> (0.1, 0.1, 0.1): deltas all alike have no spread to resample."""
    d = np.asarray(deltas, dtype=float)
    if len(d) < 2 or np.ptp(d) == 0:
        return float(d.mean()), float(d.mean()), float(d.mean())
    ci = bootstrap((d,), np.mean, n_resamples=n, method="percentile", random_state=np.random.default_rng(seed))
    return float(d.mean()), float(ci.confidence_interval.low), float(ci.confidence_interval.high)


def run(items, k=4, style=DEFAULT_STYLE, corpus=CORPUS_DIR):
    """{order: [per-question audit + seconds]} on the same passages for every order."""
    from tqdm import tqdm
    rows = {o: [] for o in ORDERS}
    for item in tqdm(items, desc="orders", unit="q", file=sys.stderr):
        passages = retrieve_chunks(item["question"], k, corpus=corpus)
        for order in ORDERS:
            result = generate(item["question"], k, order, style, passages=passages)
            rows[order].append({"id": item["id"], **audit(result, item), "seconds": result["cost"]["seconds"]})
    return rows


def report(rows):
    means = {o: {m: float(np.mean([r[m] for r in rs])) for m in METRICS + ("seconds",)} for o, rs in rows.items()}
    deltas = {o: {m: bootstrap_ci([a[m] - b[m] for a, b in zip(rows[o], rows["best_first"])]) for m in METRICS}
              for o in ORDERS if o != "best_first"}
    return {"n": len(rows["best_first"]), "means": means, "deltas_vs_best_first": deltas, "reading": reading(deltas)}


def reading(deltas):
    """One sentence on what the intervals say."""
    clear = [f"{o} {m} {d[0]:+.3f}" for o, by_m in deltas.items() for m, d in by_m.items() if d[1] > 0 or d[2] < 0]
    if not clear:
        return ("Every 95% interval includes zero: on this corpus and model the order of the passages makes no "
                "difference we can measure at this n; with k short passages nothing is far from the edges.")
    return f"Intervals that exclude zero: {'; '.join(clear)}; the other changes are within noise at this n."


def print_report(rep):
    print(f"\n{'order':12}" + "".join(f"{m:>14}" for m in METRICS) + f"{'s/q':>8}")
    for o, m in rep["means"].items():
        print(f"{o:12}" + "".join(f"{m[x]:14.3f}" for x in METRICS) + f"{m['seconds']:8.1f}")
    print(f"\npaired delta vs best_first, mean [95% bootstrap interval], n={rep['n']}")
    for o, by_m in rep["deltas_vs_best_first"].items():
        print(f"{o:12}" + "".join(f"  {m} {d[0]:+.3f} [{d[1]:+.3f}, {d[2]:+.3f}]" for m, d in by_m.items()))
    print(f"\n{rep['reading']}")


def main():
    ap = argparse.ArgumentParser(description="Best-first vs worst-first vs edges: the same passages, reordered.")
    ap.add_argument("--limit", type=int, default=10, help="golden questions (half single, half multi)")
    ap.add_argument("--k", type=int, default=4, help="passages in the prompt")
    ap.add_argument("--style", default=DEFAULT_STYLE, help="prompt style (see generate.py)")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="folder of documents (.txt .md .pdf .docx .html)")
    ap.add_argument("--golden", type=Path, default=GOLDEN, help="golden questions")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    print(f"model={llm.engine_info()['model']} limit={args.limit} k={args.k} style={args.style} "
          f"orders={','.join(ORDERS)} golden={args.golden}")
    try:
        rep = report(run(eval_items(args.golden, args.limit, args.corpus), args.k, args.style, args.corpus))
    except (CorpusError, llm.LLMError) as e:
        sys.exit(f"ordering_ab: {e}")
    print_report(rep)
    if args.json:
        write_json(args.json, rep)


if __name__ == "__main__":
    main()
