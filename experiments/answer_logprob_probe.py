"""Would the short answer's own token probabilities help the answer check? A probe on dev, before paying for it.

    python -m experiments.answer_logprob_probe --limit 146        # ask again, with logprobs (~17 s per answer, native)
    python -m experiments.answer_logprob_probe --analyse-only     # the comparison from the probe's rows

The lab's answer call does not ask for logprobs, and asking changes every answer's cache key (hours to re-make
the committed answers). This probe asks the `single` pattern's cached dev answers again, with the same prompt and
logprobs on, checks that the reply is the cached one word for word (greedy decoding), and keeps the log-probability
of the short answer's tokens (mean and minimum over the "answer" value). Then, on dev only, the same nested
cross-validation as answer_check_eval --threshold-ab, with and without that number beside the check's features.
Expected output: a progress bar, then per feature set: held-out precision and coverage of "verified" (target 0.90).
Rows go to results/answer_logprob_dev.jsonl (one per question, resumable); the table to results/answer_logprob_dev.txt.
"""
import json
import math
import re
from pathlib import Path

from tqdm import tqdm

import generate
import llm
from experiments import answer_check_eval as ace
from golden import split_of
from retrieve import eval_items

ROOT = Path(__file__).parent.parent
ROWS = ROOT / "results" / "answer_logprob_dev.jsonl"
VALUE = re.compile(r'"answer"\s*:\s*"((?:[^"\\]|\\.)*)"')


def answer_logprobs(pairs):
    """(mean, min) log-probability of the tokens that overlap the reply's "answer" value, or None."""
    text = "".join(t for t, _ in pairs)
    m = VALUE.search(text)
    if not m or m.end(1) == m.start(1):
        return None
    lps, at = [], 0
    for token, lp in pairs:
        if at < m.end(1) and at + len(token) > m.start(1):
            lps.append(lp)
        at += len(token)
    return (sum(lps) / len(lps), min(lps)) if lps else None


def probe(items, corpus):
    """Ask each cached single answer again with logprobs; append a row per question to ROWS."""
    done = {json.loads(line)["id"] for line in ROWS.open()} if ROWS.exists() else set()
    results = ace.cached_results("single", items, corpus)
    for g in tqdm([g for g in items if g["id"] not in done], desc="probe", unit="q"):
        r = results.get(g["id"])
        if r is None or r.get("error") or r["style"] != "json":
            continue
        system, user = generate.prompt(r["question"], r["passages"], "json")
        response = llm.chat([{"role": "system", "content": system}, {"role": "user", "content": user}],
                            schema=generate.answer_schema([x["id"] for x in r["passages"]]),
                            max_tokens=generate.MAX_TOKENS, logprobs=True, top_logprobs=1)
        reply = json.loads(response.message.content)
        lp = answer_logprobs(llm.token_logprobs(response))
        row = {"id": g["id"], "same": str(reply.get("answer", "")).strip() == r["answer"].strip() or r["idk"],
               "mean": lp and lp[0], "min": lp and lp[1]}
        with ROWS.open("a") as f:
            f.write(json.dumps(row) + "\n")


def analyse(corpus, golden):
    """Held-out dev precision/coverage of the answer check's features, with and without the answer's logprob."""
    lp = {r["id"]: r for r in map(json.loads, ROWS.open()) if r["same"] and r["mean"] is not None}
    items = [g for g in eval_items(golden, 0, corpus) if split_of(g) == "dev" and g["id"] in lp]
    rows = [dict(r, pattern="single") for r in ace.rows_for("single", items, corpus, cached_only=True)
            if r["features"]]
    for r in rows:
        r["features"] = {**r["features"], "answer_prob": math.exp(lp[r["id"]]["mean"]),
                         "answer_min_prob": math.exp(lp[r["id"]]["min"])}
    base = sorted(set(rows[0]["features"]) - {"answer_prob", "answer_min_prob"})
    out = [f"{len(rows)} single dev rows with a probed answer (of {len(lp)} probed the same word for word)"]
    out += ace.feature_sets_ab(rows, [("check's features", base), ("+ answer_prob", base + ["answer_prob"]),
                                      ("+ answer_prob, answer_min_prob", base + ["answer_prob", "answer_min_prob"])])
    print("\n".join(out))
    return out


def main():
    args = ace.probe_parser("Probe: the short answer's token probability as an answer-check feature, on dev "
                            "(see the module docstring).").parse_args()
    if not args.analyse_only:
        dev = [g for g in eval_items(args.golden, 0, args.corpus) if split_of(g) == "dev"][:args.limit or None]
        probe(dev, args.corpus)
    (ROOT / "results" / "answer_logprob_dev.txt").write_text("\n".join(analyse(args.corpus, args.golden)) + "\n")


if __name__ == "__main__":
    main()
