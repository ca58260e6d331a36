"""Does the chain show every hop's evidence? A sweep of lab/links.py's constants on one half of the catalogue.

    python -m experiments.bridge_sweep --split dev --grid "[dict(CODE_BONUS=cb) for cb in (0.2, 0.8)]"

Per setting, with `chain` at k passages: "last", the share of two- and three-hop questions whose last hop's answer is
in a passage (retrieve.answers_held); "chain", the share whose every hop's answer is in a passage of that hop's own
document (the item's decomposition names it: a room's code on the buildings page does not stand for the staff page
that gives it), which is what the model needs to answer and cite both hops; and "last" on single-hop questions.
No model call. Not handled: items without a decomposition count "chain" as "last" (golden.json's HotpotQA items).
"""
import argparse

from lab import links
from layers import links as links_layer
from retrieve import answers_held, eval_items, get_retriever, hop_answers
from vector_index import embed


def measure(items, vecs, retriever, k):
    """(multi last, multi chain, single last, n multi, n single) of chain's passages for the items."""
    multi, single = [], []
    for item, vec in zip(items, vecs):
        hops = hop_answers(item)
        if not hops:
            continue
        passages = links_layer.chain(retriever, item["question"], k, vec)
        last = answers_held(passages, hops)[0]
        if item["type"] == "single":
            single.append(last)
            continue
        dec = item.get("decomposition", [])
        chain = all(any(p["doc"] == h["doc"] and answers_held([p], [[h["answer"]]])[0] for p in passages) for h in dec)
        multi.append((last, float(chain) if dec else last))
    mean = lambda xs: sum(xs) / max(len(xs), 1)
    return mean([m[0] for m in multi]), mean([m[1] for m in multi]), mean(single), len(multi), len(single)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("dev", "test"), default="dev", help="which half (choose on dev)")
    ap.add_argument("--grid", default="[{}]", help="a Python list of dicts of lab/links.py constants to try")
    ap.add_argument("--golden", default="catalogue/golden.json", help="golden questions")
    ap.add_argument("--corpus", default="catalogue/docs", help="their folder")
    ap.add_argument("--k", type=int, default=4, help="passages")
    args = ap.parse_args()
    grid = eval(args.grid, {"__builtins__": {}, "dict": dict})   # a list comprehension of dicts: not a literal
    items = eval_items(args.golden, 0, args.corpus, split=args.split)
    retriever, vecs = get_retriever(args.corpus), embed([g["question"] for g in items])
    saved = {k: getattr(links, k) for kw in grid for k in kw}
    print(f"{args.golden} {args.split}, chain at k={args.k}")
    for kw in grid:
        for name, value in {**saved, **kw}.items():
            setattr(links, name, value)
        last, chain, single, nm, ns = measure(items, vecs, retriever, args.k)
        print(f"{kw}: multi (n={nm}) last {last:.3f} chain {chain:.3f} | single (n={ns}) last {single:.3f}", flush=True)


if __name__ == "__main__":
    main()
