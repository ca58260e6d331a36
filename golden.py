"""The golden file every evaluation reads: load it (a malformed entry is one warning line and is skipped), the labels
an answer is scored against, and the balanced draw of n questions a student's graded commands run.

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


