"""The golden file every evaluation reads: load it (a malformed entry is one warning line and is skipped), the labels
an answer is scored against, the balanced draw of n questions a student's graded commands run, its stable dev/test
halves, and how a retrieval is scored against it (supporting-doc recall, answer-bearing recall, their tables).

    items = load_golden("golden.json")          # [{"id", "question", "answer", "aliases", "supporting_docs", ...}]
    sample_golden(items, 10)                     # 5 single, 5 multi, multi alternating sources; every prefix balanced
    RAG_STUDENT=ada python retrieve.py --eval    # ada's own draw (draw_seed), the same on every machine

Not handled: a golden file in another shape than golden.json's (GOLDEN_KEYS).
"""
import hashlib
import json
import os
import random
from itertools import zip_longest
from pathlib import Path

from lab.answers import normalize_answer
from vector_index import CorpusError, warn

GOLDEN = Path(__file__).parent / "golden.json"
GOLDEN_KEYS = {"id": str, "question": str, "answer": str, "aliases": list, "supporting_docs": list,
               "type": str, "hops": int, "source": str}
LABELS = ("answer", "aliases", "supporting_docs", "type", "source", "attack")   # what an answer is scored against

def split_of(item):
    """'dev' or 'test' for a golden item: its own "split" where the golden file gives one (catalogue/golden.json splits
    by entity), else from a hash of its id: the same half on every machine."""
    if item.get("split") in ("dev", "test"):
        return item["split"]
    return "dev" if int(hashlib.sha1(item["id"].encode()).hexdigest(), 16) % 2 == 0 else "test"


def load_golden(path=GOLDEN):
    """golden.json -> list of valid items. A malformed entry gets one warning line and is skipped."""
    try:
        items = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise CorpusError(f"cannot read golden file {path}: {e}") from None
    if not isinstance(items, list):
        raise CorpusError(f"golden file {path} must hold a JSON list of questions")
    good = []
    for n, item in enumerate(items):
        name = f"{path}: entry {n}" + (f" (id {item.get('id')!r})" if isinstance(item, dict) else "")
        problem = golden_problem(item)
        if problem:
            warn(f"{name}: {problem}, skipped")
        else:
            good.append(item)
    if not good:
        raise CorpusError(f"golden file {path} has no usable questions")
    return good


def golden_problem(item):
    """What is wrong with one golden entry, or None."""
    if not isinstance(item, dict):
        return f"expected an object, got {type(item).__name__}"
    for key, kind in GOLDEN_KEYS.items():
        if key not in item:
            return f"missing key {key!r}"
        if not isinstance(item[key], kind) or (kind is int and isinstance(item[key], bool)):
            return f"{key!r} should be {kind.__name__}, got {type(item[key]).__name__}"
    if not item["question"].strip():
        return "empty question"
    if item["type"] not in ("single", "multi"):
        return f"type must be 'single' or 'multi', got {item['type']!r}"
    if not all(isinstance(a, str) for a in item["aliases"]):  # scoring compares them as text
        return "aliases must be a list of strings"
    if not all(isinstance(d, str) for d in item["supporting_docs"]) or not item["supporting_docs"]:
        return "supporting_docs must be a non-empty list of document ids"
    return None


def labels(item):
    """A golden item's labels (LABELS), which every cached row scored against them is keyed by; its question and
    id key the answer. An item without an attack gives attack None."""
    return {k: item.get(k) for k in LABELS}


DRAW_ENV = "RAG_STUDENT"   # whose draw of the golden set the graded commands run (labs/instructors.md)


def draw_seed(student=None):
    """The seed of a student's own draw of the golden set: 0 (the course's default draw, which results/ holds) for
    no student, else from the sha256 of the id. With student None, RAG_STUDENT's. draw_seed("") -> 0"""
    student = (os.environ.get(DRAW_ENV, "") if student is None else str(student)).strip()
    return int(hashlib.sha256(student.encode()).hexdigest()[:12], 16) if student else 0


def sample_golden(golden, n, seed=None):
    """n items, half single and half multi (multi alternating between sources), in an order whose every
    prefix is balanced too; the same n and seed give the same items. n <= 0 -> all items. seed None: the draw of
    the student RAG_STUDENT names (draw_seed), 0 when it is unset."""
    if n <= 0 or n >= len(golden):
        return list(golden)
    rng = random.Random(draw_seed() if seed is None else seed)
    pools = {}
    for g in golden:
        pools.setdefault(g["type"], {}).setdefault(g["source"], []).append(g)
    streams = {}
    for kind, by_source in pools.items():
        for items in by_source.values():
            rng.shuffle(items)
        lists = [by_source[s] for s in sorted(by_source)]
        streams[kind] = [x for group in zip_longest(*lists) for x in group if x is not None]
    order = [x for pair in zip_longest(streams.get("single", []), streams.get("multi", [])) for x in pair if x]
    return order[:n]


def doc_recall(passages, supporting):
    """Share of the supporting documents that appear among the passages. ([{'doc': 'a'}], ['a', 'b']) -> 0.5"""
    found = {p["doc"] for p in passages}
    return sum(d in found for d in supporting) / len(supporting)


def hop_answers(item):
    """What each hop of an item answers, as lists of accepted texts: a multi-hop item's decomposition's answers, the
    last hop also by the item's answer and aliases; with no decomposition (HotpotQA, single-hop items) the last hop
    only. A yes/no answer names nothing a passage would hold: []."""
    last = [item["answer"], *item.get("aliases", [])]
    if normalize_answer(item["answer"]) in ("yes", "no"):
        return []
    return [[h["answer"]] for h in item.get("decomposition", [])[:-1]] + [last]


def answers_held(passages, hops):
    """(last hop's answer in a passage, every hop's answer in one) for hop_answers' lists, SQuAD-normalised text
    inside text: an answer-bearing measure, where doc_recall counts a document whose shown chunk is the wrong one."""
    text = f" {normalize_answer(' '.join(p['text'] for p in passages))} "
    held = [any(f" {normalize_answer(a)} " in text for a in alts if normalize_answer(a)) for alts in hops]
    return float(held[-1]), float(all(held))


def answer_table(rows, methods, ks):
    """Rows -> {"answer_recall": {method: {k: {"last"|"hops": {split: mean}}}}, "answer_n": {...}}, the splits being
    the type and source/type; "hops" over rows with a decomposition only."""
    sums = {}
    for r in (r for r in rows if "answers" in r):
        for m in methods:
            for k in map(str, ks):
                for split in (r["type"], f"{r['source']}/{r['type']}"):
                    sums.setdefault((m, k, "last", split), []).append(r["answers"][m][k][0])
                    if r["decomposed"]:
                        sums.setdefault((m, k, "hops", split), []).append(r["answers"][m][k][1])
    table = {}
    for (m, k, what, split), v in sums.items():
        table.setdefault(m, {}).setdefault(k, {}).setdefault(what, {})[split] = sum(v) / len(v)
    n = {f"{what}/{split}": len(v) for (m, k, what, split), v in sums.items() if (m, k) == (methods[0], str(ks[0]))}
    return {"answer_recall": table, "answer_n": n}


def recall_table(rows, methods, ks):
    """Per-question rows -> {"recall": {method: {k: {split: mean}}}, "n": {split: questions}}, the splits being each
    row's type, "all" and source/type (grading/grade.py recomputes a report's table from its rows with it)."""
    sums = {}
    for r in rows:
        for m in methods:
            for k in ks:
                for split in (r["type"], "all", f"{r['source']}/{r['type']}"):
                    sums.setdefault((m, k, split), []).append(r["recall"][m][str(k)])
    splits = sorted({s for _, _, s in sums})
    recall = {m: {str(k): {s: sum(v) / len(v) for s in splits if (v := sums.get((m, k, s)))}
                  for k in ks} for m in methods}
    return {"recall": recall, "n": {s: len(sums[(methods[0], ks[0], s)]) for s in splits}}
