"""Probe (dev only): does the model's own answer (lab/own.py: the question with no passage, and how sure the
model is) know what a folder's pages do not say? Per question: its own answer, p, whether it agrees with the true
answer, with the planted false one (counterfactual folders) and with the answer the user was shown (clean rows of
a disputes_eval JSON). The bar's choice: the planted `all` answers it would dispute against the clean answers it
would dispute, per bar. One short model call per question (cached in .rag/cache/judge.jsonl).

    python results/issue48/own_probe.py --clean results/issue48/golden_dev60_v7.json \\
        --cf .rag/cf/dev-all --catalogue catalogue/golden.json --out results/issue48/own_probe_dev.jsonl
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from disputes import agree, own_answer  # noqa: E402
from lab.links import split_of  # noqa: E402
from retrieve import GOLDEN  # noqa: E402

BARS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


def knows(reply, values, question):
    return bool(reply["answer"]) and any(agree(reply["answer"], v, question) for v in values if v)


def rows(args):
    gold = {g["id"]: g for g in json.loads(GOLDEN.read_text(encoding="utf-8"))}
    if args.clean:
        for r in json.loads(Path(args.clean).read_text(encoding="utf-8"))["rows"]:
            g = gold[r["id"]]
            yield "clean", g["question"], [g["answer"], *g.get("aliases", [])], None, r.get("answer") or ""
    if args.cf:
        items = [g for g in json.loads((Path(args.cf) / "golden.json").read_text(encoding="utf-8"))]
        for g in items[:args.limit or None]:
            yield "cf-all", g["question"], [g["answer"], *g.get("aliases", [])], g["false_answer"], g["false_answer"]
    if args.catalogue:
        for g in json.loads(Path(args.catalogue).read_text(encoding="utf-8")):
            if split_of(g) == "dev":
                yield "catalogue", g["question"], [g["answer"], *g.get("aliases", [])], None, g["answer"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clean", help="a disputes_eval JSON of clean dev questions (its shown answers)")
    ap.add_argument("--cf", help="a counterfactual folder (its planted false answers are the shown ones)")
    ap.add_argument("--catalogue", help="catalogue golden.json (dev half; the true answer stands for the shown)")
    ap.add_argument("--limit", type=int, default=60, help="counterfactual questions read")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    out = []
    for kind, question, true, false, shown in rows(args):
        reply = own_answer(question)
        out.append({"set": kind, "question": question, "own": reply["answer"], "p": reply["p"],
                    "knows_true": knows(reply, true, question), "says_false": knows(reply, [false], question),
                    "agrees_shown": knows(reply, [shown], question), "shown": shown, "true": true[0]})
    args.out.write_text("".join(json.dumps(o) + "\n" for o in out), encoding="utf-8")
    print("set        n  knows-true  " + "  ".join(f"disp@{b}" for b in BARS))
    for kind in ("clean", "cf-all", "catalogue"):
        part = [o for o in out if o["set"] == kind]
        if not part:
            continue
        # disputed at bar b: the model's own answer is sure enough and does not agree with the shown answer
        disp = [sum(1 for o in part if o["own"] and o["p"] >= b and not o["agrees_shown"]) for b in BARS]
        print(f"{kind:<9} {len(part):>3}  {sum(o['knows_true'] for o in part):>10}  "
              + "  ".join(f"{d:>7}" for d in disp))


if __name__ == "__main__":
    main()
