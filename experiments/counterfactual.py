"""Sources that disagree, made on purpose: the lab's own counterfactual set, built the way RGB builds its own
(Chen et al., AAAI 2024, "Benchmarking Large Language Models in Retrieval-Augmented Generation": true snippets
beside copies whose answer is replaced), from golden.json or the catalogue and their corpora.

    python -m experiments.counterfactual --split dev --ratio 1:1 --out .rag/cf/dev-1to1
    python -m experiments.counterfactual --split test --ratio all --out .rag/cf/test-all
    python -m experiments.counterfactual --corpus catalogue/docs --golden catalogue/golden.json --split test \
        --ratio 1:3 --out .rag/cf/catalogue-test-1to3

Expected output (seconds, no model): how many questions were kept and why the others were not, then `wrote OUT`.
OUT/corpus is the corpus (each file linked, not copied) with the false copies added; OUT/golden.json holds the kept
questions, each with "false_answer", "true_docs" (its supporting documents that state the answer) and "false_docs"
(the copies). Evaluate on it like any folder: `--corpus OUT/corpus --golden OUT/golden.json`.

For each question of the split, every supporting document whose text states the golden answer (or an alias) is a
true document. Its false copy is the same file with every mention of the answer replaced by a false one: another
golden answer (of either half) of the same kind: the answer to a question with the same noun (MuSiQue's relation
after '>>', 'place of birth'; the noun after 'what' or 'which', 'company'), else with a noun of the same class
(CLASSES: place, person, organisation, when; 'where' asks a place, 'who' a person), with the same shape (a year, a
number, a capitalised name, a phrase); a question of no class takes no answer a classed question gives. (The first
sets took any answer of the same wh-word and shape: 'Mississippi' as a country, 'Sonny Stitt' as a publisher.)
Never one that matches the true answer and never one that the question or its supporting documents name (so a
false answer shown comes from a false copy, not from a true page that names it for something else), chosen by a
hash of the question's id (the same on every machine). The ratio (false:true) says what sits in the corpus:
- `all`: only false: each true document is replaced by its copy, under the same name (nothing left to disagree);
- `3:1`: the true document and three false copies;
- `1:1`: the true document and one false copy;
- `1:3`: one false copy of four documents: the true one, two true copies and the false one.
Copies are named `<doc>--copy-N` and keep the document's title: mirrored pages, as web text has them.
Not kept: yes/no questions (a copy saying "no" is not a replaced value), choices ("Who is older, A or B?": no one
document states the answer), questions no supporting document states the answer of, and documents whose file the
lab does not read as text (PDF, Word): their copies cannot be edited.
Not handled: a false value that means the same as the true one in other words ('twice' -> 'two-time'): answers_match
does not see it, so a few copies are not false; phrases get another question's answer, which may read oddly.
"""
import argparse
import hashlib
import json
import os
import re
import sys
from pathlib import Path

from lab.answers import answers_match, normalize_answer
from lab.documents import doc_id
from golden import split_of
from retrieve import CORPUS_DIR, GOLDEN, load_golden
from vector_index import CorpusError

RATIOS = {"all": (0, 1), "3:1": (1, 3), "1:1": (1, 1), "1:3": (3, 1)}   # false:true -> (true documents, false copies)
EDITABLE = (".txt", ".md", ".html", ".htm")


def shape(answer):
    """What kind of value an answer is: 'year', 'number', 'name', 'phrase', or None for yes / no."""
    a = answer.strip()
    if normalize_answer(a) in ("yes", "no"):
        return None
    if re.fullmatch(r"(1[0-9]|20)\d\d", a):
        return "year"
    if re.fullmatch(r"[£$€]?\d[\d,.]*%?(\s+[a-z]+)?", a):   # '2,000', '30 credits'
        return "number"
    return "name" if a[:1].isupper() else "phrase"


ASKS = [("when", r"^(when|in what year|what year|which year|in which year)\b"),
        ("how many", r"^(how many|how much|how long|how old|how tall|how high|how far)\b"),
        ("where", r"^(where|in what (city|country|state|county|town)|in which (city|country|state|county|town)|"
                  r"what (city|country|state|county|town)|which (city|country|state|county|town))\b"),
        ("who", r"^(who|whom|whose)\b"), ("language", r"\blanguage\b")]


def asks(question):
    """What a question asks for, roughly: 'when', 'how many', 'where', 'who', 'language' or 'other'."""
    q = question.strip().lower()
    return next((kind for kind, pattern in ASKS if re.search(pattern, q)), "other")


VERBS = {"is", "was", "are", "were", "does", "did", "do", "has", "had", "can", "could", "will", "would"}
CLASSES = {   # what a question's noun (noun()) asks for: a false answer comes from the same class
    "place": {"country", "state", "city", "town", "county", "village", "region", "continent", "capital", "location",
              "place of birth", "place of death", "located in the administrative territorial entity", "river",
              "island", "station", "airport", "headquarters location", "country of citizenship", "country of origin"},
    "person": {"performer", "author", "singer", "composer", "producer", "director", "father", "mother", "spouse",
               "child", "founded by", "creator", "actor", "actress", "person", "man", "woman", "player", "lyricist"},
    "organisation": {"company", "band", "team", "university", "school", "college", "record label", "publisher",
                     "member of political party", "member of sports team", "party", "organization", "network"},
    "when": {"year", "date", "decade", "century", "inception", "publication date"},
}
CLASS_OF = {"where": "place", "who": "person", "when": "when"}


def noun(question):
    """The thing a question names as its answer: MuSiQue's relation after '>>' ('place of birth'), else the noun
    after 'what' or 'which' ('company' in 'What company published...'); None when it names none."""
    q = question.strip().lower()
    if ">>" in q:
        return q.rsplit(">>", 1)[1].strip() or None
    m = re.search(r"\b(?:what|which)\s+(?:(?:kind|type|sort) of\s+)?([a-z]+)", q)
    return m.group(1) if m and m.group(1) not in VERBS else None


def kind(item):
    """(class, noun, shape) of what a question asks: its noun's class (CLASSES; else what asks() gives, 'who' a
    person, 'where' a place), the noun itself, and the answer's shape. A false answer must be of the same kind."""
    n, ask = noun(item["question"]), asks(item["question"])
    cls = next((c for c, nouns in CLASSES.items() if n in nouns), None) or CLASS_OF.get(ask, ask)
    return cls, n, shape(item["answer"])


def false_answer(item, pool, texts=()):
    """A false answer of the same kind (kind()) that matches none of the item's answers, picked by a hash of the
    item's id: another golden answer to a question with the same noun ('country': 'Sweden' for 'Norway'), else of
    the same class ('place', 'person', 'organisation', 'when'...), always of the same shape. An answer to a question
    of the catch-all class 'other' (no noun, no class) takes no answer that another class's question has. Never one
    that the question or the item's own supporting documents (`texts`) name: a value they name for something else
    would be "shown" by an answer that was never misled by a false copy. None when there is none."""
    (cls, n, form), said = kind(item), [item["answer"], *item.get("aliases", [])]
    pooled = [(g["answer"], kind(g)) for g in pool]   # each pool answer's kind, read once
    if cls == "other":   # an answer another question gives as a place, a person...: that class
        cls = next((k[0] for a, k in pooled if k[0] != "other" and answers_match(a, said[0])), cls)
    known = normalize_answer(" ".join([item["question"], *texts]))
    differs = lambda v: len(v) > 1 and not any(answers_match(v, a) or answers_match(a, v) for a in said) \
        and f" {normalize_answer(v)} " not in f" {known} "
    kinds = [(a, k) for a, k in pooled if differs(a)]
    typed = {normalize_answer(a) for a, k in kinds if k[0] != "other"}   # answers known to be a place, a person...
    same = lambda k: k[2] == form and k[0] == cls
    others = sorted({a for a, k in kinds if same(k) and n and k[1] == n}) or sorted(
        {a for a, k in kinds if same(k) and (cls != "other" or normalize_answer(a) not in typed)})
    if form is None or not others:
        return None
    return others[int(hashlib.sha256(item["id"].encode()).hexdigest(), 16) % len(others)]


def mentions(item):
    """A pattern for every way the item's answer is written (the answer, its aliases), longest first."""
    said = sorted({a for a in [item["answer"], *item.get("aliases", [])] if a.strip()}, key=len, reverse=True)
    return re.compile("|".join(rf"(?<!\w){re.escape(a)}(?!\w)" for a in said), re.I)


def build(corpus, golden, split, ratio, out):
    """Write OUT/corpus and OUT/golden.json -> (kept items, {reason: count} of those left out)."""
    corpus, out = Path(corpus), Path(out)
    files = {doc_id(p): p for p in corpus.rglob("*") if p.is_file() and not p.name.startswith(".")}
    every = load_golden(golden)
    items = [g for g in every if split in (None, split_of(g))]
    keep_true, n_false = RATIOS[ratio]
    kept, skipped, replaced, copies = [], {}, set(), {}
    for item in items:
        find = mentions(item)
        texts = {d: files[d].read_text(encoding="utf-8", errors="replace") for d in item["supporting_docs"]
                 if d in files and files[d].suffix.lower() in EDITABLE}
        docs = [d for d, t in texts.items() if find.search(t)]
        wrong = false_answer(item, every, list(texts.values()))   # false values from both halves: more of each kind
        why = "yes / no" if shape(item["answer"]) is None else \
            "a choice (its answer is named in the question)" if normalize_answer(item["answer"]) in \
            normalize_answer(item["question"]) else "no other answer of its kind" if wrong is None \
            else "no supporting document states its answer as text" if not docs else None
        if why:
            skipped[why] = skipped.get(why, 0) + 1
            continue
        made = []
        for d in docs:
            text = files[d].read_text(encoding="utf-8", errors="replace")
            false_text = find.sub(wrong, text)
            suffix = files[d].suffix
            if keep_true == 0:
                copies[files[d].name] = false_text   # the true file replaced, under its own name
                replaced.add(files[d].name)
                made.append(d)
                continue
            for n in range(1, keep_true):   # true copies (1:3): mirrored pages
                copies[f"{d}--copy-{n}{suffix}"] = text
            for n in range(keep_true, keep_true + n_false):   # false copies: one, or three (3:1)
                name = f"{d}--copy-{n}{suffix}"
                copies[name] = false_text
                made.append(doc_id(Path(name)))
        kept.append({**item, "false_answer": wrong, "true_docs": docs, "false_docs": made, "ratio": ratio})
    target = out / "corpus"
    target.mkdir(parents=True, exist_ok=True)
    for p in corpus.rglob("*"):
        if p.is_file() and not p.name.startswith(".") and p.name not in replaced:
            link = target / p.relative_to(corpus)
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.exists():
                os.symlink(p.resolve(), link)
    for name, text in copies.items():
        (target / name).unlink(missing_ok=True)   # a link left by an earlier build of another ratio
        (target / name).write_text(text, encoding="utf-8")
    (out / "golden.json").write_text(json.dumps(kept, indent=1) + "\n", encoding="utf-8")
    return kept, skipped


def main(argv=None):
    ap = argparse.ArgumentParser(description="Build a counterfactual corpus: supporting documents copied with their "
                                             "answer replaced, beside or instead of the true ones.")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="the corpus folder")
    ap.add_argument("--golden", type=Path, default=GOLDEN, help="its golden questions")
    ap.add_argument("--split", choices=("dev", "test"), help="one half (golden.split_of; default: every question)")
    ap.add_argument("--ratio", choices=list(RATIOS), default="1:1",
                    help="false:true. all: only false copies; 3:1: the true document and three false copies; "
                         "1:1: the true document and a false copy; 1:3: one false of four")
    ap.add_argument("--out", type=Path, required=True, help="the folder to write (OUT/corpus, OUT/golden.json)")
    args = ap.parse_args(argv)
    if not args.corpus.is_dir():
        sys.exit(f"counterfactual: no corpus folder {args.corpus}")
    try:
        kept, skipped = build(args.corpus, args.golden, args.split, args.ratio, args.out)
    except (CorpusError, OSError) as e:
        sys.exit(f"counterfactual: {e}")
    print(f"{len(kept)} question(s) kept, {sum(len(k['false_docs']) for k in kept)} false document(s); left out: "
          + (", ".join(f"{n} {why}" for why, n in skipped.items()) or "none"))
    print(f"wrote {args.out}/corpus and {args.out}/golden.json")


if __name__ == "__main__":
    main()
