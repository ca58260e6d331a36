"""Would the judge's P(YES) that the short answer is right help the answer check? A probe on dev, before adopting it.

    python -m experiments.answer_ptrue_probe                  # ask each stated dev answer's claim (~3 s each, native)
    python -m experiments.answer_ptrue_probe --analyse-only   # the comparison from the cached replies alone

The answer check's "agreed" part asks the cited passages the question and compares their answer with the short
answer: a yes or a no. This probe asks the same passages (answer_check.chain_source, the bridge first) to judge the
claim 'The answer to "<question>" is <answer>.' with the shared judge prompt (judge.verdict_reply, style "shared"),
and reads P(YES) from the verdict token's logprobs: a graded number where "agreed" is a bit. The prompt begins with
the bytes the "agreed" call began with (the shared system prompt, then the source), so llama.cpp's prompt cache can
reuse them when both run on one answer. It is asked only for answers a supported sentence states (the others are
never verified), for the `single` and `smart` patterns' cached dev rows and the unanswerable dev items. Then, on dev
only, the nested cross-validation of answer_check_eval --threshold-ab, with and without the number.
Expected output: a progress bar, then per feature set: held-out precision and coverage of "verified" (target 0.90)
and the unanswerable items shown verified. Replies are cached in the judge's cache (.rag/cache/judge.jsonl); the
table goes to results/answer_ptrue_dev.txt.
"""
import sys
from pathlib import Path

from tqdm import tqdm

from layers import answer_check
import judge
import llm
from experiments import answer_check_eval as ace
from golden import split_of
from retrieve import eval_items

ROOT = Path(__file__).parent.parent
OUT = ROOT / "results" / "answer_ptrue_dev.txt"


def claim_of(result):
    """The claim the probe puts to the passages: the short answer as the answer to the question."""
    return f'The answer to "{result["question"].strip()}" is {(result.get("answer") or "").strip()}.'


def dev_rows(corpus, golden, names=("single", "smart")):
    """[(row, cached result)] for the patterns' cached dev rows and unanswerable dev items (rows tagged with
    "pattern" and "unanswerable", as answer_check_eval tags them)."""
    dev = [g for g in eval_items(golden, 0, corpus) if split_of(g) == "dev"]
    extra = ace.unanswerable_set()
    un = [g for g in extra["items"] if g["split"] == "dev"]
    out = []
    for (name, _), rows in ace.labelled_rows(names, {"dev": dev}, corpus, extra, cached_only=True).items():
        results = {**ace.cached_results(name, dev, corpus),
                   **(ace.cached_results(name, un, ROOT / extra["corpus"]) if un else {})}
        out += [({"unanswerable": False, **r}, results.get(r["id"])) for r in rows]
    return out


def source_of(row, result, source="chain"):
    """What the claim is put to: "chain", the cited passages of the supported sentences in the order they cite them
    (what "agreed" reads), or "prompt", every passage the answer's prompt held, in its order."""
    if source == "prompt":
        return judge.joined(result.get("passages", []))[:judge.MAX_SOURCE_CHARS]
    return answer_check.chain_source(result, row["verdicts"])


def p_true(row, result, cached_only=False, source="chain"):
    """P(YES) that the passages (source_of) say the short answer answers the question; 0.0 for an answer no supported
    sentence states (never verified) or no passage; None when cached_only and the reply is not cached."""
    if not row["features"] or not row["features"]["stated"] or not result:
        return 0.0
    source = source_of(row, result, source)
    if not source:
        return 0.0
    if cached_only:   # the judge's cache alone: the model is refused (grading.replay's way; experiments/ may
        refused = llm.ScriptedModel(lambda messages, schema: _refuse())   # not import grading/)
        refused.name = llm.engine_info()["model"]   # the keys name the model
        with llm.use_model(refused):
            try:
                return judge.verdict_reply(claim_of(result), source, "shared")["value"]["p_yes"]
            except llm.LLMError:
                return None
    return judge.verdict_reply(claim_of(result), source, "shared")["value"]["p_yes"]


def ranking(rows, names, repeats=8, target=0.90):
    """How well cross-fitted scores rank right above wrong, averaged over salts: (AUC among stated golden answers,
    the largest share of right answers any one threshold verifies at precision >= target: a ceiling, since it picks
    the threshold after seeing the labels)."""
    from sklearn.metrics import roc_auc_score
    aucs, ceilings = [], []
    total = sum(r["right"] for r in rows if not r["unanswerable"])
    for salt in range(repeats):
        scored = sorted(((s, r) for s, r in zip(ace.cross_fitted(rows, names, salt=f"rank{salt}"), rows)
                         if r["features"]["stated"] and not r["unanswerable"]), key=lambda t: -t[0])
        aucs.append(roc_auc_score([r["right"] for _, r in scored], [s for s, _ in scored]))
        ok, best = 0, 0.0
        for i, (_, r) in enumerate(scored, 1):
            ok += r["right"]
            best = max(best, ok / total) if ok / i >= target else best
        ceilings.append(best)
    return sum(aucs) / repeats, sum(ceilings) / repeats


def _refuse():
    raise llm.LLMError("not in the judge's cache")


def analyse(pairs, source="chain"):
    """Held-out dev precision/coverage of the answer check's features, with and without p_true."""
    rows = []
    for r, result in pairs:
        if r["features"]:
            p = p_true(r, result, cached_only=True, source=source)
            if p is not None:
                rows.append({**r, "features": {**r["features"], "p_true": p}})
    if not any(r["features"]["stated"] for r in rows):
        sys.exit(f"answer_ptrue_probe: no reply for source {source} is cached yet: run without --analyse-only")
    base = sorted(set(rows[0]["features"]) - {"p_true"})
    right = [r for r in rows if r["features"]["stated"] and not r["unanswerable"]]
    out = [f"source {source}: {len(rows)} dev rows ({sum(not r['unanswerable'] for r in rows)} golden, "
           f"{sum(r['unanswerable'] for r in rows)} unanswerable) of {len(pairs)}; "
           f"p_true asked of {sum(bool(r['features']['stated']) for r in rows)} stated answers"]
    if right:
        from sklearn.metrics import roc_auc_score
        ys, ps = [r["right"] for r in right], [r["features"]["p_true"] for r in right]
        ag = [r["features"]["agreed"] for r in right]
        out.append(f"  among stated golden answers (n={len(right)}, {sum(ys)} right): AUC p_true "
                   f"{roc_auc_score(ys, ps):.3f}, agreed {roc_auc_score(ys, ag):.3f}")
    sets = [("check's features", base), ("+ p_true", base + ["p_true"]),
            ("p_true in place of agreed", [f for f in base if f != "agreed"] + ["p_true"])]
    out += ace.feature_sets_ab(rows, sets, more=lambda rs, names: "  | cross-fitted AUC {:.3f}, best coverage at "
                               "precision 0.90 {:.3f}".format(*ranking(rs, sorted(names))))
    print("\n".join(out))
    return out


def main():
    ap = ace.probe_parser("Probe: the judge's P(YES) for the short answer as an answer-check feature, on dev "
                          "(see the module docstring).")
    ap.add_argument("--source", choices=("chain", "prompt"), default="chain",
                    help="the cited passages in citation order (what 'agreed' reads) or every passage of the prompt")
    args = ap.parse_args()
    try:
        pairs = dev_rows(args.corpus, args.golden)
        if not args.analyse_only:
            for r, result in tqdm(pairs[:args.limit or None], desc="p_true", unit="row"):
                p_true(r, result, source=args.source)
    except llm.LLMError as e:
        sys.exit(f"answer_ptrue_probe: {e}")
    out = OUT.with_name(OUT.stem + ("" if args.source == "chain" else f"_{args.source}") + OUT.suffix)
    out.write_text("\n".join(analyse(pairs, args.source)) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
