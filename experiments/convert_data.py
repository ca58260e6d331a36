"""Build corpus/ and golden.json from the raw HotpotQA and MuSiQue files.

This is the only script that reads ../shared/data; everything else reads its output, which is
committed. Run it again only to regenerate that output:

    python -m experiments.convert_data   # reads ../shared/data, writes corpus/ + golden.json
    python -m experiments.convert_data --data DIR --out .   # other locations
    python -m experiments.convert_data --split test --out .rag/test_half   # the test half over its own paragraphs

Expected output (about 2 s):
    corpus: 2884 documents (994 hotpotqa, 1890 musique)
    golden: 304 questions (200 multi, 104 single)

Document ids are `<slug of title>_<8 hex of sha1(title + text)>`: readable, stable across runs, and
unique even where MuSiQue reuses a title for different paragraphs. Each corpus file holds the title
on line 1 and the paragraph text below it.

golden.json items carry exactly: id, question, answer, aliases, supporting_docs, type, hops, source;
MuSiQue items also carry `decomposition` (the gold sub-questions with their answers and documents).
Single items are the MuSiQue sub-questions that do not refer to an earlier hop (`#1` ...).
What it does not do: it keeps MuSiQue's terse "X >> relation" sub-questions as they are published.
"""
import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

from golden import split_of

ROOT = Path(__file__).parent.parent   # the repository (this file is in experiments/)
DEFAULT_DATA = ROOT.parent / "shared" / "data"
HOP_REF = re.compile(r"#\d")


def doc_id(title, text):
    """'Lilu (mythology)', '...' -> 'lilu-mythology_3f2a9c1e'"""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or "doc"
    return f"{slug}_{hashlib.sha1((title + chr(10) + text).encode()).hexdigest()[:8]}"


def load_json(path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        sys.exit(f"convert_data: cannot read {path}: {e}")


def convert_hotpotqa(folder, docs):
    corpus = load_json(folder / "corpus.json")  # title -> list of sentences
    ids = {}
    for title, sentences in corpus.items():
        text = "".join(sentences).strip()
        ids[title] = doc_id(title, text)
        docs[ids[title]] = (title, text)
    items = []
    for q in load_json(folder / "questions.json"):
        support = list(dict.fromkeys(ids[t] for t, _ in q["supporting_facts"]))
        items.append({"id": f"hotpotqa-{q['_id']}", "question": q["question"], "answer": q["answer"],
                      "aliases": [], "supporting_docs": support, "type": "multi",
                      "hops": len(support), "source": "hotpotqa",
                      "context": [ids[t] for t, _ in q["context"] if t in ids]})
    return items, len(corpus)


def convert_musique(folder, docs):
    corpus = load_json(folder / "corpus.json")  # list of {title, text}
    for d in corpus:
        docs[doc_id(d["title"], d["text"])] = (d["title"], d["text"])
    multi, single = [], {}
    for q in load_json(folder / "questions.json"):
        para_ids = [doc_id(p["title"], p["paragraph_text"]) for p in q["paragraphs"]]
        decomposition = [{"question": s["question"], "answer": s["answer"],
                          "doc": para_ids[s["paragraph_support_idx"]]}
                         for s in q["question_decomposition"]]
        multi.append({"id": f"musique-{q['id']}", "question": q["question"], "answer": q["answer"],
                      "aliases": q.get("answer_aliases", []),
                      "supporting_docs": [i for i, p in zip(para_ids, q["paragraphs"]) if p["is_supporting"]],
                      "type": "multi", "hops": len(decomposition), "source": "musique",
                      "decomposition": decomposition, "context": para_ids})
        for s, step in zip(q["question_decomposition"], decomposition):
            if not HOP_REF.search(s["question"]) and s["id"] not in single:
                single[s["id"]] = {"id": f"musique-sub-{s['id']}", "question": s["question"],
                                   "answer": s["answer"], "aliases": [], "supporting_docs": [step["doc"]],
                                   "type": "single", "hops": 1, "source": "musique",
                                   "decomposition": [step], "parent": f"musique-{q['id']}"}
    return multi + list(single.values()), len(corpus)


def write_output(docs, golden, out):
    corpus_dir = out / "corpus"
    corpus_dir.mkdir(parents=True, exist_ok=True)
    for old in corpus_dir.glob("*.txt"):  # regenerate exactly: no stale documents survive
        if old.stem not in docs:
            old.unlink()
    for i, (title, text) in docs.items():
        (corpus_dir / f"{i}.txt").write_text(f"{title}\n{text}\n", encoding="utf-8")
    (out / "golden.json").write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with hotpotqa/ and musique/")
    ap.add_argument("--out", type=Path, default=ROOT, help="where corpus/ and golden.json go")
    ap.add_argument("--split", choices=("dev", "test"), help="only that half's multi questions (and the single "
                    "questions drawn from them) over only their own paragraphs: a second, smaller corpus")
    args = ap.parse_args()
    docs = {}
    hotpot, n_h = convert_hotpotqa(args.data / "hotpotqa", docs)
    hotpot_ids = set(docs)
    musique, n_m = convert_musique(args.data / "musique", docs)
    musique_ids = set(docs) - hotpot_ids
    golden = hotpot + musique
    if args.split:  # one half's questions (golden.split_of) over only the paragraphs those questions come with
        kept = {g["id"] for g in golden if g["type"] == "multi" and split_of(g) == args.split}
        golden = [g for g in golden if g["id"] in kept or g.get("parent") in kept]
        context = {d for g in golden if g["type"] == "multi" for d in g["context"]}
        docs = {i: d for i, d in docs.items() if i in context}
        n_h, n_m = (sum(i in context for i in ids) for ids in (hotpot_ids, musique_ids))
    golden = [{k: v for k, v in g.items() if k not in ("context", "parent")} for g in golden]
    missing = [d for g in golden for d in g["supporting_docs"] if d not in docs]
    if missing:
        sys.exit(f"convert_data: supporting documents missing from the corpus: {missing[:3]}")
    write_output(docs, golden, args.out)
    n_multi = sum(g["type"] == "multi" for g in golden)
    print(f"corpus: {len(docs)} documents ({n_h} hotpotqa, {n_m} musique)")
    print(f"golden: {len(golden)} questions ({n_multi} multi, {len(golden) - n_multi} single)")


if __name__ == "__main__":
    main()
