"""Honest drift or fabrication? A row that differs from the course's reference and was not shown to reproduce
(grade.py) keeps its points when it passes checks that do not depend on the machine it was made on:

1. retrieval: its passages are among the ones its question retrieves here, in any order, cut SLACK deeper than
   it was: retrieval has no model in it, and an index built elsewhere ranks the same chunks but for a borderline
   one;
2. claims: claims.row_claims finds nothing wrong (its counts, its short answer stated, its passages' texts);
3. score: its EM, F1 and "right" are what its short answer scores against the golden answers here;
4. its own words: its short answer is what generate() makes of the reply it records (`written`): the span the
   question asks for, or "I don't know";
5. the judge: each citation it calls precise, the grader's judge finds precise too, its sentence read against the
   passage as generate() showed it (citations.verify; model calls, cached in the judge's cache).

    why = honest("verify_citations.py", row, item, course, chunks, method="json")   # [] -> honest drift, or why not

A row that fails one says which. How check 1 is made depends on how the row's passages were found:
- one retrieval with no model in it (retrieval_of): verify_citations.py's rows, benchmark.py's of a pattern with
  one retrieval (patterns.Pattern's `retrieval`), the pattern scripts' plain `generate` rows: the question is
  retrieved again;
- queries the model wrote on the way (iterative, FLARE, Self-RAG, CRAG, chain and parallel, the smart router):
  each retrieval the row records (`retrievals`: retrieve.recording(), kept by harness.cached_answer) is re-run, and
  every passage it was given must be among what they retrieve here (CRAG's web stand-in's in its own folder);
- GraphRAG's graph (graph_local, graph_global, graphrag.py's graphrag-auto): the graph is the model's own extraction,
  so its lookups cannot be re-run apart from the model; check 1 is left out (claims already ask that each passage
  be a corpus chunk) and a community summary as a passage leaves the row "not checked";
- router_eval.py's rows carry no verdicts: checks 1 (its recorded retrievals), 3 (EM, F1 and the two recalls) and 4.
A row with no `retrievals` (written before rows kept them) says "not checked" and loses as before.
Not handled: a wrong row whose sentence states the golden answer, cited to a passage that does state it, passes
every check here (it is what an honest right answer looks like), and a pattern row's recorded queries are the
model's: one written to find the passage that states the answer is not told from an honest one. A re-run cannot
tell them apart either (it makes the reference's answer, not the drifted one): grade.py counts the drift rows that
are right where the reference is wrong, and for rows the reference lacks the random re-run's miss chance is printed
(reference.escape()).
"""
import assembly
import llm
import patterns
from generate import IDK
from grading.claims import OUTSIDE, row_claims
from layers import spans
from lab.cache import ROOT
from lab.answers import exact_match, f1
from layers import links as links_layer
from retrieve import DEFAULT_CHUNKER, doc_recall
from vector_index import CorpusError, build_index
from lab import answers

def retrieval_of(script, method):
    """The retrieve_chunks method that made a row's passages, or None when no single retrieval did (a pattern that
    asks the model along the way): verify_citations.py's rows and every script's plain `generate` rows are fused;
    benchmark.py's are its pattern's (patterns.Pattern.retrieval)."""
    if script == "verify_citations.py" or method == "generate":
        return "fused"
    return getattr(patterns.PATTERNS.get(method), "retrieval", None) if script == "benchmark.py" else None


GRAPH = ("graph_local", "graph_global", "graphrag-auto")   # rows whose passages the model-built graph chose
SLACK = 2   # a row's passage may rank up to this far below the k it was cut at: a borderline chunk of an index built
            # on another machine (its embeddings' last digits differ) swaps with the next one
_BUILT = set()   # (corpus, chunker) whose index this grading run has built or brought up to date


def retrieved(query, k, corpus, chunker, method="fused", depth=12):
    """retrieve_chunks here, the index built first (once per run: incremental, seconds when it is there)."""
    if (str(corpus), chunker) not in _BUILT:
        build_index(corpus, chunker)
        _BUILT.add((str(corpus), chunker))
    return links_layer.retrieve_chunks(query, k, depth, corpus=corpus, chunker=chunker, method=method)


def found_by(log, have, course, chunker, what):
    """(problems, {chunk id: passage as found here}) of check 1: each retrieval of `log` ({query, k, depth, method,
    chunker, corpus}, as retrieve.recording() writes them) re-run here, cut SLACK deeper; the chunk IDs `have` must
    be among what they find. `what` names the retrievals in the problem."""
    found = {}
    for r in log:
        folder, prefix = folder_of(r.get("corpus"), course)
        try:
            hits = retrieved(r["query"], int(r.get("k", 4)) + SLACK, folder, r.get("chunker") or chunker,
                             r.get("method") or "fused", int(r.get("depth", 12)))
        except (ValueError, TypeError) as e:
            return [f"its recorded retrieval {r['query'][:60]!r} cannot be re-run: {e}"], found
        for p in hits:
            found.setdefault(prefix + p["chunk_id"], {**p, "chunk_id": prefix + p["chunk_id"]})
    missing = [c for c in have if c not in found]
    return ([f"its passages are not what {what} here: {', '.join(missing[:3])} not among the {len(found)} found"]
            if missing else []), found


def retrieval(row, question, course, chunker, method="fused"):
    """Check 1 for a row one retrieval of its question made: that retrieval, re-run (found_by)."""
    have = [s["chunk_id"] for s in row["sources"]]
    return found_by([{"query": question, "k": len(have), "method": method}], have, course, chunker,
                    "its question retrieves")


def folder_of(recorded, course):
    """The folder a recorded retrieval searched, here: the web stand-in when it names that folder of this repository
    (CRAG's local web), else the course corpus. -> (folder, chunk id prefix: "web:" for the stand-in, as
    web_search.local_search names its chunks)."""
    import web_search
    standin = web_search.standin_dir().resolve()
    if isinstance(recorded, str) and not recorded.startswith("/") and (ROOT / recorded).resolve() == standin:
        return standin, "web:"
    return course.corpus, ""


def recorded(row, course, chunker, have):
    """Check 1 for a row whose retrievals are recorded (the queries a pattern wrote on the way): each re-run
    (found_by). None: it records none."""
    log = row.get("retrievals")
    if not isinstance(log, list) or not log or not all(isinstance(r, dict) and isinstance(r.get("query"), str)
                                                      for r in log):
        return None
    return found_by(log, have, course, chunker, f"its {len(log)} recorded retrievals find")


def corpus_passages(row, chunks, chunker):
    """{chunk id: passage} of a row's passages read from the course corpus (for the judge, when no retrieval can be
    re-run: GraphRAG's rows)."""
    out = {}
    for s in row["sources"]:
        doc = s["chunk_id"].rpartition("#")[0]
        if (text := chunks.text(s["chunk_id"], chunker)) is not None:
            out[s["chunk_id"]] = {"chunk_id": s["chunk_id"], "doc": doc, "title": chunks.docs[doc].title, "text": text}
    return out


def score(row, item):
    """Problems of check 3: EM, F1 and right recomputed from its short answer."""
    want = {"em": exact_match(row["answer"], item), "f1": f1(row["answer"], item),
            "right": answers.right(row["answer"], item) and not row.get("idk")}
    return [f"{k} {row.get(k)!r}, its answer {row['answer']!r} scores {v!r}" for k, v in want.items()
            if k in row and (abs(row[k] - v) > 1e-9 if isinstance(v, float) else bool(row[k]) != v)]


def own_words(row, question, strict=True):
    """Problems of check 4: the short answer generate() makes of the recorded reply. Not strict: a pattern that
    writes its answer itself (FLARE, Self-RAG) records the answer as its reply."""
    if not isinstance(row.get("written"), str):
        return ["it records no reply (`written`) to derive its short answer from"]
    if not strict and row["written"] == row["answer"]:
        return []
    want = IDK if row.get("idk") else spans.answer_span(question, row["written"])
    return [] if row["answer"] == want else [f"its short answer {row['answer']!r} is not what its recorded reply "
                                             f"{row['written']!r} gives ({want!r})"]


def judged(row, question, found):
    """Problems of check 5: citations the row calls precise that the grader's judge does not find precise."""
    ids = {s["chunk_id"]: s["id"] for s in row["sources"]}
    shown = [{**p, "id": ids[c]} for c, p in found.items() if c in ids]   # the passages it was shown
    result = {"question": question, "answer": row["answer"], "idk": row.get("idk", False), "passages": shown,
              "invalid_ids": row.get("invalid_ids") or [],
              "sentences": [{"text": v["text"], "cites": v["cites"]} for v in row["verdicts"]]}
    try:
        verdicts = assembly.FULL.verify(result, dispute=False)
    except llm.LLMError as e:
        return [f"its verdicts could not be judged again: {e}"]
    return [f"sentence {n + 1}: it calls {c} precise, the grader's judge does not ({v['text'][:60]!r})"
            for n, (mine, v) in enumerate(zip(row["verdicts"], verdicts))
            for c, ok in mine["precise"].items() if ok and not v["precise"].get(c)]


def router_row(row, item, course, chunker):
    """Checks 1, 3 and 4 of a router_eval.py row (it carries no verdicts)."""
    if row.get("error") or not isinstance(row.get("chunk_ids"), list) or not isinstance(row.get("retrieved_ids"), list):
        return ["not checked: it records no passages (an older row, or one that failed)"]
    docs = lambda ids: [{"doc": c.rpartition("#")[0]} for c in ids]
    want = {"em": exact_match(row["answer"], item), "f1": f1(row["answer"], item),
            "recall": doc_recall(docs(row["chunk_ids"]), item["supporting_docs"]),
            "recall_all": doc_recall(docs(row["retrieved_ids"]), item["supporting_docs"])}
    problems = [f"{k} {row.get(k)!r}, its answer and passages score {v!r}" for k, v in want.items()
                if not isinstance(row.get(k), (int, float)) or abs(row[k] - v) > 1e-9]
    if not set(row["chunk_ids"]) <= set(row["retrieved_ids"]):
        problems.append("its passages are not among what it says it retrieved")
    problems = problems or own_words(row, item["question"], strict=False)
    if problems:
        return problems
    found = recorded(row, course, chunker, row["retrieved_ids"])
    return ["not checked: it records no retrievals (an older row)"] if found is None else found[0]


def honest(script, row, item, course, chunks, chunker=DEFAULT_CHUNKER, method=None):
    """[] when a differing row (of `method`: its pattern or style) passes checks 1-5 (honest drift), else the
    reasons (the first failed check's)."""
    if item is None:
        return ["not checked: its question is not in the course's golden file"]
    if script == "router_eval.py":
        return router_row(row, item, course, chunker)
    how = retrieval_of(script, method)
    claimed = row_claims(row, item, chunks, chunker)
    if claimed is None:
        return ["not checked: it carries no verdicts and passages (an older row)"]
    if claimed:
        return claimed
    question, have = item["question"], [s["chunk_id"] for s in row["sources"]]
    for problems in (score(row, item), own_words(row, question, strict=how is not None)):
        if problems:
            return problems
    try:
        if how is not None:
            problems, found = retrieval(row, question, course, chunker, how)
        elif method in GRAPH:
            if any(OUTSIDE.match(c) for c in have):
                return [f"not checked: a {method} row cites the graph's own summaries, which only the model re-makes"]
            problems, found = [], corpus_passages(row, chunks, chunker)
        elif (made := recorded(row, course, chunker, have)) is not None:
            problems, found = made
        else:
            return [f"not checked: its {method} row records no retrievals (an older row)"]
    except CorpusError as e:
        return [f"not checked: its question could not be retrieved here: {e}"]
    return problems or judged(row, question, found)
