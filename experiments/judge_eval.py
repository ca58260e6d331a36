"""Week 5, the judge on trial: every judge design on the labelled pairs, one table, confusion counts.

    python -m experiments.judge_eval               # test split (pairs/judge_test.jsonl), every design
    python -m experiments.judge_eval --split dev   # the split the designs and threshold are chosen on
    python -m experiments.judge_eval --limit 10 --designs verdict,answer --json results/judge_eval_test.json

Expected output: the settings, a progress bar per model step, then one row per design: accuracy on
support / unrelated / hard pairs, the confusion counts (TP FN on support, TN FP on the rest), model calls
and judge seconds per pair. ~30 min for the 180 test pairs the first time on the embedded engine (two
cores), seconds on a rerun: every reply is cached by judge.py. `--split dev` also prints the yes-probability
threshold sweep. The pairs come from `python -m experiments.judge_pairs` (committed in pairs/).

Designs (DESIGNS; judge.supports() runs judge_answers.JUDGE_DESIGN):
- `verdict`: the old prompt, a schema-constrained YES/NO with worked examples;
- `yes_prob`: the same call, YES when P(YES) read from the verdict token's logprobs clears a threshold
  chosen on dev;
- `answer`: the model answers the claim's question from the source, and the claim holds when its answer
  matches the model's (SQuAD normalisation, containment or token F1 >= 0.5, numbers equal);
- `answer_choice`: as `answer`, but when the two answers differ and the source names the claim's, the
  model picks between them (multiple choice) and the claim holds if it picks the claim's;
- `verdict_and_*`: the verdict must be YES as well;
- `answer_contrast`: answer_check, but where the model keeps its own answer the claim also holds when the
  verdict's P(YES) for it beats P(YES) for the model's own answer put in the same words (a fragment such as
  'insane' for "which character?" then loses). Dev 0.900/0.900/0.900; test support 0.933 but hard 0.800, so
  not the default.
The seconds are those each reply cost when first computed (cached replies keep them), so a rerun from
cache reports the same cost.
"""
import argparse
import json
import sys
from pathlib import Path

import judge
from experiments import context_checks
import llm
from experiments.judge_pairs import KINDS, OUT_DIR, load
from lab import answers
from lab.cache import Cache, code_key
from vector_index import CorpusError
from layers import judge_answers

THRESHOLDS = [round(0.05 * i, 2) for i in range(1, 20)]
DESIGNS = ("answer_chain", "answer_check", "in_context", "in_context_among", "verdict", "yes_prob", "answer",
           "answer_choice", "verdict_and_answer", "verdict_and_answer_choice", "answer_contrast")
P_YES_THRESHOLD = 0.65     # yes_prob: P(YES) at or above this is a YES; chosen on the dev pairs (the sweep)

# the candidates' own prompts (answer_check shares one system prompt for all its steps: judge_answers.SHARED_SYSTEM)
ANSWER_RULES = """You answer a question from a source. Use only the source, not your own knowledge.
Reply with the shortest answer the source gives: a name, place, number, date or short phrase, copied from the
source. The source may name several people, places and dates: give the one that answers exactly what is asked.
If the source does not answer the question, the answer is "not stated"."""

ANSWER_EXAMPLES = [  # (source, question, answer): the same fictional facts as SUPPORT_EXAMPLES
    ("Ashford Bridge is a stone bridge in Corran. It was designed by the engineer Tomas Vell in 1872.",
     "Who designed Ashford Bridge?", "Tomas Vell"),
    ("Ashford Bridge is a stone bridge in Corran. It was designed by the engineer Tomas Vell in 1872.",
     "When was the bridge in Corran designed?", "1872"),
    ("Hartmoor is a village in the county of Wessmark, known for its cheese fair.",
     "In which village was Tomas Vell born?", "not stated"),
    ("Corran is a market town on the River Lente.\n\n"
     "Ashford Bridge is a stone bridge in Corran, designed by Tomas Vell.",
     "On which river is the town where Ashford Bridge stands?", "River Lente"),
]
def answer_system():
    shots = [f"Source: {src}\nQuestion: {q}\n" + json.dumps({"answer": a}) for src, q, a in ANSWER_EXAMPLES]
    return ANSWER_RULES + "\n\n" + "\n\n".join(shots)


CHOICE_RULES = """You pick which option the source gives as the answer to a question. Use only the source.
Read the question carefully: the source may name several of the options, in different roles. Pick the one that
answers exactly what is asked, or "not stated" when the source answers with none of them."""


ANSWER_SYSTEM = answer_system()


IN_CONTEXT = ("in_context", "in_context_among")
AMONG = {"support": "unrelated", "unrelated": "support", "hard": "unrelated"}   # the uncited source beside the pair's


def context_of_pair(pair, others=()):
    """(context, cited ids): the pair's source as an answer's sources (a joined source's passages as S1, S2..), with
    `others` (texts) placed among them uncited, in an order fixed by the pair's id; the question is the claim's."""
    mine = judge_answers.passages_of(pair["source"][:judge.MAX_SOURCE_CHARS])
    texts = [(t, True) for t in mine] + [(t, False) for t in others]
    if others and int(Cache.key(pair["id"])[:8], 16) % 2:   # the uncited source first for half the pairs
        texts = texts[len(mine):] + texts[:len(mine)]
    passages = [{"id": f"S{i}", "title": "", "text": t} for i, (t, _) in enumerate(texts, 1)]
    slot = judge_answers.claim_slot(pair["claim"])
    context = context_checks.context_of({"question": slot[0] if slot else pair["claim"], "passages": passages})
    return context, [p["id"] for p, (_, cited) in zip(passages, texts) if cited]


def among(pairs):
    """{pair id: [the uncited source beside it]}: for in_context_among, the same question's pair of another kind
    (AMONG: a support pair gets the unrelated source, an unrelated pair the supporting one, so a judge that reads
    past the cited source says yes to it)."""
    by = {(p["group"], p["kind"]): p["source"] for p in pairs}
    return {p["id"]: [by[(p["group"], AMONG[p["kind"]])]] if (p["group"], AMONG[p["kind"]]) in by else []
            for p in pairs}


def judge_pair(claim, source, design, pair=None, others=()):
    """(supported, parts) for one candidate design; answer_check, answer_contrast and verdict are
    judge_answers.judge_claim's; in_context (in_context_among: beside an uncited source)
    context_checks.judge_claim's."""
    if design in ("answer_chain", "answer_check", "answer_contrast", "verdict"):
        return judge_answers.judge_claim(claim, source, design=design)
    if design in IN_CONTEXT:
        context, ids = context_of_pair(pair, others if design == "in_context_among" else ())
        return context_checks.judge_claim(context, claim, ids, source)
    source, slot, parts = source[:judge.MAX_SOURCE_CHARS], judge_answers.claim_slot(claim), {}
    if design in ("yes_prob",) or design.startswith("verdict_and") or slot is None:
        parts["verdict"] = judge.verdict_reply(claim, source)
        v = parts["verdict"]["value"]
        verdict = v["p_yes"] >= P_YES_THRESHOLD if design == "yes_prob" else v["yes"]
        if design == "yes_prob" or slot is None or not verdict:
            return verdict, parts
    q, claimed = slot
    parts["answer"] = judge_answers.source_answer(q, source, ANSWER_SYSTEM)
    said = parts["answer"]["value"]
    if answers.answers_match(said, claimed):
        return True, parts
    if not design.endswith("choice") or answers.normalize_answer(said) in answers.NOT_STATED \
            or not answers.named_in(source, claimed):
        return False, parts
    parts["choice"] = judge_answers.choose(q, source, [claimed, said], CHOICE_RULES)
    pick = parts["choice"]["value"]
    return answers.answers_match(pick, claimed) and not answers.answers_match(pick, said), parts


def run_design(pairs, design, progress=True):
    """[(pair, supported, parts)] for one design; model steps run grouped by source (prompt cache)."""
    from tqdm import tqdm
    order = sorted(range(len(pairs)), key=lambda i: (pairs[i]["source"], pairs[i]["claim"]))
    out, beside = [None] * len(pairs), among(pairs) if design == "in_context_among" else {}
    for i in tqdm(order, desc=design, unit="pair", file=sys.stderr, disable=not progress):
        p = pairs[i]
        try:
            ok, parts = judge_pair(p["claim"], p["source"], design, p, beside.get(p["id"], ()))
        except llm.ReplyError:
            ok, parts = False, {}
        out[i] = (p, ok, parts)
    return out


def score(results):
    """{kind: {n, accuracy, ...confusion}, calls, seconds} for one design's results."""
    row = {}
    for kind in KINDS:
        got = [(p["label"], ok) for p, ok, _ in results if p["kind"] == kind]
        right = sum(label == ok for label, ok in got)
        row[kind] = {"n": len(got), "accuracy": right / max(1, len(got)),
                     "yes": sum(ok for _, ok in got), "no": sum(not ok for _, ok in got)}
    n = max(1, len(results))
    row["calls"] = sum(part["calls"] for _, _, parts in results for part in parts.values()) / n
    row["seconds"] = sum(part["seconds"] for _, _, parts in results for part in parts.values()) / n
    return row


def sweep(pairs):
    """Accuracy per kind of `p_yes >= t` for each threshold (from the cached verdict replies)."""
    rows = []
    ps = [(p, judge.verdict_reply(p["claim"], p["source"][:judge.MAX_SOURCE_CHARS])["value"]["p_yes"]) for p in pairs]
    for t in THRESHOLDS:
        acc = {k: sum((py >= t) == p["label"] for p, py in ps if p["kind"] == k)
                  / max(1, sum(p["kind"] == k for p, _ in ps))
               for k in KINDS}
        rows.append({"threshold": t, **acc, "mean": sum(acc.values()) / len(acc)})
    return rows


def print_table(table):
    print(f"\n{'design':26} {'support':>8} {'unrel.':>7} {'hard':>6}   {'TP':>3} {'FN':>3} {'TN':>4} {'FP':>4}"
          f" {'calls':>6} {'s/pair':>7}")
    for design, r in table.items():
        s, u, h = r["support"], r["unrelated"], r["hard"]
        print(f"{design:26} {s['accuracy']:8.3f} {u['accuracy']:7.3f} {h['accuracy']:6.3f}   {s['yes']:3} {s['no']:3}"
              f" {u['no'] + h['no']:4} {u['yes'] + h['yes']:4} {r['calls']:6.2f} {r['seconds']:7.2f}")
    n = next(iter(table.values()))
    print(f"n: support {n['support']['n']}, unrelated {n['unrelated']['n']}, hard {n['hard']['n']}"
          " (TP/FN: support pairs judged yes/no; TN/FP: unrelated + hard pairs judged no/yes)")


def main():
    ap = argparse.ArgumentParser(description="Every judge design on the labelled pairs: accuracy per kind, "
                                             "confusion counts, cost.")
    ap.add_argument("--split", choices=("dev", "test"), default="test", help="which pairs file (pairs/judge_*.jsonl)")
    ap.add_argument("--pairs", type=Path, help="another pairs file (JSON lines from experiments/judge_pairs.py)")
    ap.add_argument("--designs", default=",".join(DESIGNS), help="comma-separated, from: " + ", ".join(DESIGNS))
    ap.add_argument("--limit", type=int, default=0, help="pairs per kind (0: all)")
    ap.add_argument("--json", type=Path, help="write the table and every pair's verdicts here")
    args = ap.parse_args()
    designs = [d.strip() for d in args.designs.split(",") if d.strip()]
    if bad := [d for d in designs if d not in DESIGNS]:
        sys.exit(f"judge_eval: unknown design {', '.join(bad)}: choose from {', '.join(DESIGNS)}")
    path = args.pairs or OUT_DIR / f"judge_{args.split}.jsonl"
    if not path.exists():
        sys.exit(f"judge_eval: no pairs file {path}: run `python -m experiments.judge_pairs` first")
    pairs = load(path)
    if args.limit > 0:
        pairs = [p for k in KINDS for p in [q for q in pairs if q["kind"] == k][:args.limit]]
    print(f"model={llm.engine_info()['model']} pairs={path} n={len(pairs)} designs={','.join(designs)} "
          f"default={judge_answers.JUDGE_DESIGN} p_yes>={P_YES_THRESHOLD}")
    table, verdicts = {}, {}
    try:
        for design in designs:
            results = run_design(pairs, design)
            table[design] = score(results)
            verdicts[design] = [ok for _, ok, _ in results]
    except (llm.LLMError, CorpusError) as e:
        sys.exit(f"judge_eval: {e}")
    print_table(table)
    out = {"model": llm.engine_info(portable=True), "judge_code": code_key("judge"), "pairs_file": path.name,
           "p_yes_threshold": P_YES_THRESHOLD, "default_design": judge_answers.JUDGE_DESIGN, "table": table}
    if "yes_prob" in designs or "verdict" in designs:
        out["p_yes_sweep"] = sweep(pairs)
        best = max(out["p_yes_sweep"], key=lambda r: (min(r[k] for k in KINDS), r["mean"]))
        print(f"yes_prob sweep: best threshold by worst kind {best['threshold']} "
              + " ".join(f"{k} {best[k]:.3f}" for k in KINDS))
    if args.json:
        out["pairs"] = [{"id": p["id"], "kind": p["kind"], "subtype": p["subtype"], "label": p["label"],
                         **{d: verdicts[d][i] for d in designs}} for i, p in enumerate(pairs)]
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
