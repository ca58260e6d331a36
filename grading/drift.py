"""Honest drift or fabrication? A row that differs from the course's reference and was not shown to reproduce
(grade.py) keeps its points when it passes checks that do not depend on the machine it was made on:

1. retrieval: its passages are the ones its question retrieves here (the same chunk IDs, in any order): retrieval
   has no model in it, and an index built elsewhere ranks the same chunks but for a borderline one;
2. claims: claims.row_claims finds nothing wrong (its counts, its short answer stated, its passages' texts);
3. score: its EM, F1 and "right" are what its short answer scores against the golden answers here;
4. its own words: its short answer is what generate() makes of the reply it records (`written`): the span the
   question asks for, the name a spelled-out code stands for, or "I don't know";
5. the judge: each citation it calls precise, the grader's judge finds precise too, its sentence read against the
   passage as generate() showed it (citations.verify; model calls, cached in the judge's cache).

    why = honest("verify_citations.py", row, item, course, chunks, method="json")   # [] -> honest drift, or why not

A row that fails one says which. The rows checked so are those whose passages one retrieval made, with no model
in it (retrieval_of): verify_citations.py's, benchmark.py's of a pattern with one retrieval (patterns.Pattern's
`retrieval`), and the pattern scripts' plain `generate` rows. The others (patterns that ask the model on the way,
router_eval.py's) say "not checked" and lose as before.
Not handled: a wrong row whose sentence states the golden answer, cited to a passage that does state it, passes
every check here (it is what an honest right answer looks like): the sampled re-run is what can catch it, with the
chance reference.escape() prints.
"""
import answer_check
import citations
import llm
import patterns
from generate import IDK, trim_passage
from grading.claims import row_claims
from lab import spans
from lab.answers import exact_match, f1
from retrieve import DEFAULT_CHUNKER, retrieve_chunks
from vector_index import CorpusError, build_index

def retrieval_of(script, method):
    """The retrieve_chunks method that made a row's passages, or None when no single retrieval did (a pattern that
    asks the model along the way): verify_citations.py's rows and every script's plain `generate` rows are fused;
    benchmark.py's are its pattern's (patterns.Pattern.retrieval)."""
    if script == "verify_citations.py" or method == "generate":
        return "fused"
    return getattr(patterns.PATTERNS.get(method), "retrieval", None) if script == "benchmark.py" else None


_BUILT = set()   # (corpus, chunker) whose index this grading run has built or brought up to date


def retrieval(row, question, course, chunker, method="fused"):
    """(problems, {chunk id: passage as retrieved here}) of check 1; the course corpus's index is built first (once
    per run: incremental, seconds when it is there)."""
    if (course.corpus, chunker) not in _BUILT:
        build_index(course.corpus, chunker)
        _BUILT.add((course.corpus, chunker))
    have = [s["chunk_id"] for s in row["sources"]]
    found = {p["chunk_id"]: p for p in retrieve_chunks(question, len(have), corpus=course.corpus, chunker=chunker,
                                                       method=method)}
    missing = [c for c in have if c not in found]
    return ([f"its passages are not what its question retrieves here: {', '.join(missing[:3])} not among the "
             f"{len(found)} retrieved"] if missing else []), found


def score(row, item):
    """Problems of check 3: EM, F1 and right recomputed from its short answer."""
    want = {"em": exact_match(row["answer"], item), "f1": f1(row["answer"], item),
            "right": answer_check.right(row["answer"], item) and not row.get("idk")}
    return [f"{k} {row.get(k)!r}, its answer {row['answer']!r} scores {v!r}" for k, v in want.items()
            if k in row and (abs(row[k] - v) > 1e-9 if isinstance(v, float) else bool(row[k]) != v)]


def own_words(row, question):
    """Problems of check 4: the short answer generate() makes of the recorded reply."""
    if not isinstance(row.get("written"), str):
        return ["it records no reply (`written`) to derive its short answer from"]
    spelled = row.get("spelled")
    want = IDK if row.get("idk") else spelled["name"] if isinstance(spelled, dict) and spelled.get("name") \
        else spans.answer_span(question, row["written"])
    return [] if row["answer"] == want else [f"its short answer {row['answer']!r} is not what its recorded reply "
                                             f"{row['written']!r} gives ({want!r})"]


def judged(row, question, found):
    """Problems of check 5: citations the row calls precise that the grader's judge does not find precise."""
    ids = {s["chunk_id"]: s["id"] for s in row["sources"]}
    titles = [p.get("title", "") for p in found.values()]
    shown = [{**trim_passage(question, p, titles), "id": ids[c]} for c, p in found.items() if c in ids]
    result = {"question": question, "answer": row["answer"], "idk": row.get("idk", False), "passages": shown,
              "invalid_ids": row.get("invalid_ids") or [],
              "sentences": [{"text": v["text"], "cites": v["cites"]} for v in row["verdicts"]]}
    try:
        verdicts = citations.verify(result, dispute=False)
    except llm.LLMError as e:
        return [f"its verdicts could not be judged again: {e}"]
    return [f"sentence {n + 1}: it calls {c} precise, the grader's judge does not ({v['text'][:60]!r})"
            for n, (mine, v) in enumerate(zip(row["verdicts"], verdicts))
            for c, ok in mine["precise"].items() if ok and not v["precise"].get(c)]


def honest(script, row, item, course, chunks, chunker=DEFAULT_CHUNKER, method=None):
    """[] when a differing row (of `method`: its pattern or style) passes checks 1-5 (honest drift), else the
    reasons (the first failed check's)."""
    how = retrieval_of(script, method)
    if how is None:
        return [f"not checked: {script}'s {method} rows were not made by one retrieval, which check 1 needs"]
    if item is None:
        return ["not checked: its question is not in the course's golden file"]
    claimed = row_claims(row, item, chunks, chunker)
    if claimed is None:
        return ["not checked: it carries no verdicts and passages (an older row)"]
    if claimed:
        return claimed
    question = item["question"]
    for problems in (score(row, item), own_words(row, question)):
        if problems:
            return problems
    try:
        problems, found = retrieval(row, question, course, chunker, how)
    except CorpusError as e:
        return [f"not checked: its question could not be retrieved here: {e}"]
    return problems or judged(row, question, found)
