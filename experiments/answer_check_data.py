"""Unanswerable questions for the answer check: golden-shaped items whose supporting documents, and every
document that names the answer, are left out of the corpus they run on.

    python -m experiments.answer_check_data   # writes pairs/unanswerable.json and corpus_unanswerable/
    python vector_index.py --corpus corpus_unanswerable
    python -m experiments.answer_check_eval   # counts how many of them are shown "verified"

Expected output (~5 s, no model call): how many items were picked per split and type, how many documents were
left out, and the two paths written. Reproducible: the items are golden.json's, picked in the order of a hash of
their id (golden.split_of of the golden id gives their dev/test half, kept as "split"); the corpus is corpus/ less the
left-out files. A right answer is then impossible from the sources, so the only good outcomes are "I don't know"
or an answer not shown verified. Yes/no questions are not used (no document "names" yes), nor questions whose
answer is named in more than MAX_NAMING documents (leaving those out would gut the corpus for the others).
"""
import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

from lab.answers import named_in, normalize_answer
from golden import split_of
from retrieve import CORPUS_DIR, GOLDEN
from vector_index import load_documents

ROOT = Path(__file__).parent.parent   # the repository (this file is in experiments/)
OUT = ROOT / "pairs" / "unanswerable.json"
CORPUS_OUT = ROOT / "corpus_unanswerable"
PER_SPLIT = 30        # items per dev/test half
MAX_NAMING = 12       # an answer named in more documents than this is not used


def naming(docs, answer):
    """The ids of the documents that name the answer (every word of it) or an alias."""
    return {d for d, doc in docs.items() if any(named_in(doc.text, a, 1.0) for a in answer)}


def build(golden, corpus=CORPUS_DIR, per_split=PER_SPLIT):
    """(items, left-out document ids): per split, the first per_split usable items in hash order."""
    docs, _ = load_documents(corpus, quiet=True)
    order = sorted(golden, key=lambda g: hashlib.sha1(("unanswerable:" + g["id"]).encode()).hexdigest())
    picked, out, taken = [], set(), {"dev": 0, "test": 0}
    for g in order:
        s = split_of(g)
        names = [g["answer"]] + list(g.get("aliases", []))
        if taken[s] >= per_split or normalize_answer(g["answer"]) in ("yes", "no") or len(normalize_answer(
                g["answer"])) < 3:
            continue
        gone = naming(docs, names) | set(g["supporting_docs"])
        if len(gone) > MAX_NAMING + len(g["supporting_docs"]):
            continue
        taken[s] += 1
        out |= gone
        picked.append({**g, "id": f"unanswerable-{g['id']}", "split": s, "left_out": sorted(gone)})
    return picked, out


def main():
    ap = argparse.ArgumentParser(description="Build unanswerable items and the corpus they run on.")
    ap.add_argument("--golden", type=Path, default=GOLDEN, help="golden questions")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="the corpus to copy, less the left-out files")
    ap.add_argument("--per-split", type=int, default=PER_SPLIT, help="items per dev/test half")
    args = ap.parse_args()
    golden = json.loads(args.golden.read_text())
    items, out = build(golden, args.corpus, args.per_split)
    if not items:
        sys.exit("answer_check_data: no usable item")
    if CORPUS_OUT.exists():
        shutil.rmtree(CORPUS_OUT)
    CORPUS_OUT.mkdir()
    kept = 0
    for f in sorted(args.corpus.iterdir()):
        if f.is_file() and f.stem not in out:
            shutil.copy2(f, CORPUS_OUT / f.name)
            kept += 1
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps({"corpus": CORPUS_OUT.name, "built_from": [args.golden.name, args.corpus.name],
                               "left_out": len(out), "items": items}, indent=1) + "\n")
    for s in ("dev", "test"):
        part = [g for g in items if g["split"] == s]
        print(f"{s}: {len(part)} items ({sum(g['type'] == 'single' for g in part)} single, "
              f"{sum(g['type'] == 'multi' for g in part)} multi)")
    print(f"left out {len(out)} documents, kept {kept}\nwrote {OUT} and {CORPUS_OUT}/")


if __name__ == "__main__":
    main()
