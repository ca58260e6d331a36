"""Labelled judge pairs: (claim, source, label) built reproducibly from golden.json and corpus/, split
dev/test by question, written to pairs/judge_{dev,test}.jsonl for `experiments/judge_eval.py`.

    python -m experiments.judge_pairs   # writes pairs/judge_dev.jsonl and pairs/judge_test.jsonl
    python -m experiments.judge_pairs --golden FILE --corpus DIR --out DIR --dev 40 --test 60
    python -m experiments.judge_pairs --two-passage   # pairs/judge2_{dev,test}.jsonl: sources of two passages

Expected output (~5 s, no model call): candidates per kind and subtype, then pairs written per split.

Every claim reads 'The answer to "<question>" is <answer>.', as a verifier sees a short answer. Kinds:
- `support`: the right answer against its gold paragraph(s): a MuSiQue hop (earlier hops' answers filled
  into the sub-question) against the hop's paragraph, or a whole question against its supporting
  paragraphs joined;
- `unrelated`: the same claim against the top BM25 paragraph that is not a supporting one and does not
  contain the answer (on topic, but silent about the claim);
- `hard`: a WRONG answer that the source itself names, against the same gold source as the support pair:
  `bridge` (an earlier hop's answer, or HotpotQA's other supporting title: the bridge entity or the
  other side of a comparison), `number` (another year or number of the same paragraph put in the
  answer's place), `entity` (another name of the same paragraph).
Splits are by question (a SHA-1 of its id, never by pair), so no question feeds both sides; each question
gives at most one pair per kind, the subtype picked by a seeded draw, so no question dominates.
Not handled: yes/no answers get no hard pair (nothing in a source names "no"); an alias the golden file
lacks could make an `entity` pair a true claim (the pair skips names that share a word with the answer).
"""
import argparse
import hashlib
import json
import random
import re
from pathlib import Path

from bm25_baseline import doc_index, search
from lab.answers import COMMON, NAME, normalize_answer
from retrieve import CORPUS_DIR, GOLDEN, load_golden
from vector_index import CorpusError

ROOT = Path(__file__).parent.parent   # the repository (this file is in experiments/)
OUT_DIR = ROOT / "pairs"
KINDS = ("support", "unrelated", "hard")
TEST_SHARE = 0.6          # of the questions; the rest is dev
DEV_PER_KIND, TEST_PER_KIND = 90, 60   # dev: every pair the dev questions give (was 40: too few to resolve 1-in-40)
SEED = 15
TITLE_NOTE = re.compile(r"\s*\([^)]*\)$")   # 'Mark King (musician)' -> 'Mark King'
NUMBER = re.compile(r"\b\d[\d,.]*\b")
CLAIM = re.compile(r'^The answer to ".*" is (.*)\.$', re.S)


def claim(question, answer):
    """claim('Who designed it?', 'Tomas Vell') -> 'The answer to "Who designed it?" is Tomas Vell.'"""
    return f'The answer to "{question}" is {answer}.'


def names(text, answer):
    """Whether normalised `answer` occurs in `text` as whole words."""
    a = normalize_answer(answer)
    return bool(a) and f" {a} " in f" {normalize_answer(text)} "


def _words(s):
    return set(normalize_answer(s).split())


def number_swap(answer, source, rng):
    """The answer with its number replaced by another one the source names, or None.
    ('84 km', 'It flows 84 km, 12 of them ...') -> '12 km'"""
    found = NUMBER.search(answer)
    if not found:
        return None
    year = len(found.group()) == 4
    others = sorted({n for n in NUMBER.findall(source) if n != found.group() and (len(n) == 4) == year
                     and n.strip(",.") != found.group().strip(",.")})
    return answer.replace(found.group(), rng.choice(others), 1) if others else None


def entity_swap(answer, question, source, rng):
    """Another name the source gives, sharing no word with the answer or the question, or None."""
    taken = _words(answer) | _words(question)
    multi = len(answer.split()) > 1
    found = []
    for m in NAME.finditer(source):
        span = m.group().strip(" .,'’")
        words = _words(span)
        if not words or words & taken or words <= COMMON or len(span) < 4 or span in found:
            continue
        if multi == (len(span.split()) > 1):
            found.append(span)
    return rng.choice(sorted(found)) if found else None


def qualifies_title(candidate, titles):
    """Whether the candidate is a qualifier inside a longer title ('Arkansas' in 'McRae, Arkansas'): then it
    is often a true answer too (McRae is located in Arkansas as well as in White County), so no hard pair."""
    return any(names(t, candidate) and normalize_answer(t) != normalize_answer(candidate) for t in titles)


def unrelated_source(question, answer, supporting, corpus, docs):
    for doc, _ in search(question, 8, corpus):
        if doc not in supporting and not names(f"{docs[doc].title}\n{docs[doc].text}", answer):
            return doc
    return None


def candidates(item, docs, corpus):
    """{kind: [(subtype, claim, source), ...]} for one multi-hop golden item."""
    text = lambda d: f"{docs[d].title}\n{docs[d].text}"
    out = {k: [] for k in KINDS}
    rng = random.Random(f"{SEED}:{item['id']}")
    # claims: (question, answer, source doc ids, wrong answers the source names as 'bridge')
    claims = []
    sup = [d for d in item["supporting_docs"] if d in docs]
    if item.get("decomposition"):
        answers = []
        for hop in item["decomposition"]:
            q = re.sub(r"#(\d+)", lambda m: answers[int(m.group(1)) - 1] if int(m.group(1)) <= len(answers)
                       else m.group(0), hop["question"])
            if hop["doc"] in docs and "#" not in q:
                claims.append((q, hop["answer"], [hop["doc"]], list(answers)))
            answers.append(hop["answer"])
        if sup:
            claims.append((item["question"], item["answer"], sup, answers[:-1]))
    elif sup:
        others = [TITLE_NOTE.sub("", docs[d].title) for d in sup]
        claims.append((item["question"], item["answer"], sup, others))
    for q, a, srcs, bridges in claims:
        source = "\n\n".join(text(d) for d in srcs)
        titles = [TITLE_NOTE.sub("", docs[d].title) for d in srcs]
        out["support"].append(("gold", claim(q, a), source))
        far = unrelated_source(q, a, item["supporting_docs"], corpus, docs)
        if far:
            out["unrelated"].append(("bm25", claim(q, a), text(far)))
        if normalize_answer(a) in ("yes", "no"):
            continue
        for b in bridges:
            if names(source, b) and not (_words(b) & _words(a)) and not qualifies_title(b, titles):
                out["hard"].append(("bridge", claim(q, b), source))
                break
        if (swap := number_swap(a, source, rng)):
            out["hard"].append(("number", claim(q, swap), source))
        elif (swap := entity_swap(a, q, source, rng)) and not qualifies_title(swap, titles):
            out["hard"].append(("entity", claim(q, swap), source))
    return out


def two_passage(item, docs, corpus):
    """{kind: [(subtype, claim, source, passages)]} for a question whose answer needs its two supporting paragraphs
    read together, each source exactly two passages in a seeded order (verify() joins cited passages in the order a
    sentence cites them, so the judge must find the chain itself): support (the two gold paragraphs), unrelated (the
    two best BM25 paragraphs that are not supporting and do not name the answer) and hard (a wrong answer the two
    gold paragraphs name: the bridge, another number, another name)."""
    sup = [d for d in item["supporting_docs"] if d in docs]
    q, a = item["question"], item["answer"]
    if len(sup) != 2 or len(item["supporting_docs"]) != 2:
        return {}
    rng = random.Random(f"{SEED}:two:{item['id']}")
    text = lambda d: f"{docs[d].title}\n{docs[d].text}"
    order = lambda ds: rng.sample(ds, len(ds))
    gold = [text(d) for d in order(sup)]
    out = {"support": [("gold", claim(q, a), "\n\n".join(gold), gold)], "unrelated": [], "hard": []}
    far = [d for d, _ in search(q, 12, corpus) if d not in item["supporting_docs"]
           and not names(text(d), a)][:2]
    if len(far) == 2:
        far = [text(d) for d in order(far)]
        out["unrelated"].append(("bm25", claim(q, a), "\n\n".join(far), far))
    if normalize_answer(a) in ("yes", "no"):
        return out
    source, titles = "\n\n".join(gold), [TITLE_NOTE.sub("", docs[d].title) for d in sup]
    bridges = [h["answer"] for h in item.get("decomposition", [])[:-1]] or titles
    for b in bridges:
        if names(source, b) and not (_words(b) & _words(a)) and not qualifies_title(b, titles):
            out["hard"].append(("bridge", claim(q, b), source, gold))
            break
    if (swap := number_swap(a, source, rng)):
        out["hard"].append(("number", claim(q, swap), source, gold))
    elif (swap := entity_swap(a, q, source, rng)) and not qualifies_title(swap, titles):
        out["hard"].append(("entity", claim(q, swap), source, gold))
    return out


def split_of(item_id):
    """'dev' or 'test', fixed by the question id: int(sha1(id)) decides, the same on every machine."""
    h = int(hashlib.sha1(item_id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "test" if h < TEST_SHARE else "dev"


def build(golden, corpus=CORPUS_DIR, per_kind=None, two=False):
    """{'dev': [pair, ...], 'test': [...]}; a pair is {id, group, kind, subtype, label, claim, source}, and with
    two=True (two_passage()'s pairs) also question, answer and passages, to be judged as verify() judges."""
    per_kind = per_kind or {"dev": DEV_PER_KIND, "test": TEST_PER_KIND}
    docs = doc_index(corpus)[0]
    pools = {s: {k: [] for k in KINDS} for s in per_kind}
    for item in golden:
        if item["type"] != "multi":
            continue
        side = split_of(item["id"])
        rng = random.Random(f"{SEED}:pick:{item['id']}")
        for kind, found in (two_passage if two else candidates)(item, docs, corpus).items():
            if found:
                subtype = rng.choice(sorted({f[0] for f in found}))  # subtype first: bridges are rarer
                subtype, c, source, *passages = rng.choice([f for f in found if f[0] == subtype])
                pair = {"group": item["id"], "kind": kind, "subtype": subtype, "label": kind == "support",
                        "claim": c, "source": source}
                if two:
                    pair.update(question=item["question"], answer=CLAIM.match(c).group(1), passages=passages[0])
                pools[side][kind].append(pair)
    out = {}
    for side, n in per_kind.items():
        rows = []
        for kind in KINDS:
            pool = pools[side][kind]
            random.Random(f"{SEED}:{side}:{kind}").shuffle(pool)
            rows += pool[:n]
        for i, r in enumerate(rows):
            r["id"] = f"{side}-{r['kind']}-{i:03d}"
        out[side] = rows
    return out


def load(path):
    """A pairs file -> list of pair dicts."""
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def main():
    ap = argparse.ArgumentParser(description="Build labelled judge pairs (support / unrelated / hard), "
                                             "split dev/test by question.")
    ap.add_argument("--golden", type=Path, default=GOLDEN, help="golden questions (default golden.json)")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="folder of documents (default corpus/)")
    ap.add_argument("--out", type=Path, default=OUT_DIR, help="where judge_dev.jsonl / judge_test.jsonl go")
    ap.add_argument("--dev", type=int, default=DEV_PER_KIND, help="pairs per kind on the dev side")
    ap.add_argument("--test", type=int, default=TEST_PER_KIND, help="pairs per kind on the test side")
    ap.add_argument("--two-passage", action="store_true",
                    help="sources of two passages read together (writes judge2_{dev,test}.jsonl)")
    args = ap.parse_args()
    print(f"golden={args.golden} corpus={args.corpus} out={args.out} dev={args.dev}/kind test={args.test}/kind")
    try:
        splits = build(load_golden(args.golden), args.corpus, {"dev": args.dev, "test": args.test},
                       args.two_passage)
    except CorpusError as e:
        raise SystemExit(f"judge_pairs: {e}")
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"\n{'split':6} {'kind':10} {'n':>4}  subtypes")
    for side, rows in splits.items():
        for kind in KINDS:
            got = [r for r in rows if r["kind"] == kind]
            subs = {s: sum(r["subtype"] == s for r in got) for s in sorted({r["subtype"] for r in got})}
            print(f"{side:6} {kind:10} {len(got):4}  {subs}")
        path = args.out / f"judge{'2' if args.two_passage else ''}_{side}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        print(f"wrote {path} ({len(rows)} pairs, {len({r['group'] for r in rows})} questions)")


if __name__ == "__main__":
    main()
