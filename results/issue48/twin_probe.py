"""How alike is a section to the same section of its copy, and to the copy's other sections? The bar of
disputes.TWIN_RATIO, chosen on dev folders. No model, no index: the documents are chunked as the index chunks them.

    python results/issue48/twin_probe.py .rag/cf/catalogue-dev-3to1 .rag/cf/dev-3to1 \
        --clean catalogue/docs corpus --out results/issue48/twin_probe.txt

For every question of each counterfactual folder, each chunk of a true document is held against every chunk of each
of its false copies (the same file with the answer replaced, so chunk n of one is chunk n of the other): "same" is
the ratio to the copy's chunk at the same place, "other" the best ratio to any other chunk of the copy. In each
clean folder, every two documents under one title (a page and its real copy, if a folder has any) are held the same
way, chunk against best chunk: what the rule would read there. A bar separates the two when it is above every "other"
and at or below every "same".

    python results/issue48/twin_probe.py --reach corpus golden.json dev --reach corpus golden.json test \
        --reach catalogue/docs catalogue/golden.json test

--reach: on clean questions, how many prompts (the 4 passages generate() retrieves, no model) hold a page whose copy
the rule would read (mirrors.twin_sections over every title in the prompt, so at least as many as the cited titles
give): where it reads nothing, the clean figures cannot move.
"""
import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from lab.mirrors import alike  # noqa: E402
from vector_index import DEFAULT_CHUNKER, chunk, load_documents  # noqa: E402


def spread(xs):
    if not xs:
        return "none"
    q = statistics.quantiles(xs, n=20) if len(xs) > 1 else xs * 19
    return f"n={len(xs)} min={min(xs):.3f} p5={q[0]:.3f} median={statistics.median(xs):.3f} p95={q[-1]:.3f} " \
           f"max={max(xs):.3f}"


def folder_ratios(folder):
    """(same, other) ratio lists over a counterfactual folder's true documents and their copies."""
    golden = json.loads((folder / "golden.json").read_text())
    docs, _ = load_documents(folder / "corpus", quiet=True)
    same, other = [], []
    for item in golden:
        for t in item.get("true_docs", []):
            for c in item.get("false_docs", []):
                if t not in docs or c not in docs or docs[c].title != docs[t].title:
                    continue
                a, b = chunk(docs[t], DEFAULT_CHUNKER), chunk(docs[c], DEFAULT_CHUNKER)
                for i, text in enumerate(a):
                    ratios = [alike(text, x) for x in b]
                    if i < len(ratios):
                        same.append(ratios[i])
                    rest = ratios[:i] + ratios[i + 1:]
                    if rest:
                        other.append(max(rest))
    return same, other


def clean_ratios(folder):
    """Best ratios between chunks of distinct documents under one title in a clean folder."""
    docs, _ = load_documents(folder, quiet=True)
    by_title = {}
    for d in docs.values():
        by_title.setdefault(d.title, []).append(d)
    out, pairs = [], 0
    for group in (g for g in by_title.values() if len(g) >= 2):
        for x in group:
            for y in group:
                if x is not y:
                    pairs += 1
                    b = chunk(y, DEFAULT_CHUNKER)
                    out += [max(alike(text, c) for c in b) for text in chunk(x, DEFAULT_CHUNKER)]
    return pairs, out


def reach(corpus, golden, split):
    """(questions, [(id, title of the twin read)]) over one split of a clean folder's golden questions."""
    from lab import mirrors
    from retrieve import eval_items, get_retriever, retrieve_chunks
    items, r, hits = eval_items(golden, 0, corpus, split=split), get_retriever(corpus), []
    for item in items:
        prompt = retrieve_chunks(item["question"], 4, corpus=corpus)
        twins = mirrors.twin_sections(prompt, r, {p["title"] for p in prompt})
        hits += [(item["id"], t["title"]) for t in twins]
    return len(items), hits


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="*", type=Path, help="counterfactual folders (experiments.counterfactual)")
    ap.add_argument("--clean", nargs="*", type=Path, default=[], help="clean folders: pages under one title")
    ap.add_argument("--reach", nargs=3, action="append", default=[], metavar=("CORPUS", "GOLDEN", "SPLIT"),
                    help="clean questions whose prompt holds a page the rule would read a copy of")
    ap.add_argument("--out", type=Path, help="also write the report here")
    args = ap.parse_args()
    lines = []
    for f in args.folders:
        same, other = folder_ratios(f)
        lines += [f"{f}: same section {spread(same)}", f"{f}: other section {spread(other)}"]
    for f in args.clean:
        pairs, ratios = clean_ratios(f)
        lines.append(f"{f} (clean): {pairs} ordered pairs of documents under one title; best chunk {spread(ratios)}")
    for corpus, golden, split in args.reach:
        n, hits = reach(Path(corpus), Path(golden), split)
        lines.append(f"{golden} {split} (clean, {n} questions): {len({h[0] for h in hits})} prompts hold a page the rule "
                     f"reads a copy of{': ' + ', '.join(f'{q} ({t})' for q, t in hits) if hits else ''}")
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
