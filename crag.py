"""Week 7c: CRAG (Yan et al. 2024), corrective retrieval: grade what came back, act on the grade, keep only
the sentences that matter, and go outside (web_search.py) when retrieval fails.

    python crag.py "Who founded Quillfeather Observatory?"    # not in corpus/: answered from the web stand-in, cited
    python crag.py "In which village was the designer of Ashford Bridge born?" --corpus tests/fixtures/corpus
    RAG_WEB=ddgs python crag.py "question"                     # the real web when reachable (or --web ddgs)
    python crag.py --eval 20 --json results/crag_20.json

Expected output of a question (~95 s measured on the embedded engine with the 2 cores shared, 9 LLM calls): the
settings; the trace: the retrieved chunks
with their evaluator scores, the action and why, the web query and results (backend, URL) when used, each
refinement (sentences kept of each passage); then the answer, each citation with its verdict, the sources
with their URL or path, and the cost. `--eval N` (~2 min per question the first time, cached after): the
common table beside plain generate(), then how often each action fired, F1 per action and the score counts.

1. Retrieve k passages for the question.
2. Evaluator: each passage gets a schema-constrained number in [-1, 1] from five levels: 1 states the answer,
   0.5 states a fact needed on the way, 0 is about something the question names but gives no needed fact,
   -0.5 only shares a word, -1 is about something else. The reply first names what the question asks about
   and what the passage is about (reasoning through the schema), then the grade. (The paper fine-tunes a T5
   scorer; a 1.5B model grades more steadily on a labelled five-point scale than as a free float.)
   Grounding check, because the 1.5B grades alone were measured too generous (+1 for "William Brydone Jack
   Observatory" on "Who founded Quillfeather Observatory?"), while the subject it names was right: a passage
   that does not contain the named subject's words cannot show that retrieval is correct (grade capped at 0;
   it stays as a possible second-hop passage), and when no passage contains them, retrieval failed (all -1).
3. Action, the paper's rule with thresholds UPPER = 0.5 and LOWER = -0.5: `correct` when some passage
   scores above UPPER (on this scale: a passage states the answer), `incorrect` when every passage scores
   below LOWER (all about something else), `ambiguous` otherwise. correct: the internal passages scoring
   above LOWER; incorrect: none of them, the web instead; ambiguous: both (AMBIGUOUS_WEB web results).
4. Web: the question rewritten as a search query (JSON), web_search.search(query, WEB_K): real web with
   RAG_WEB=ddgs when reachable, else the shipped stand-in folder. Results carry `url` and cite like any source.
5. Knowledge refinement: each passage of REFINE_MIN_SENTENCES sentences or more is split into sentences and
   the model names those that bear on the question (JSON list of numbers); the passage keeps its chunk ID and
   title line with only those sentences, so a citation is verified against exactly the text the model read.
   A passage with no sentence kept is dropped.
6. generate(passages=knowledge): the usual cited answer.
A reply out of shape never crashes: score 0, keep the whole passage, or search with the question itself.
Not handled: several web queries per question, fetching whole web pages (ddgs gives snippets).
"""
import functools
import re
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

import llm
import pattern_cli
import web_search
from generate import check_question, generate
from pattern_cli import fmt, mean
from judge import ask
from lab import steps
from retrieve import CORPUS_DIR, DEFAULT_CHUNKER, retrieve_chunks
from vector_index import split_sentences

K = 4                      # passages retrieved from the corpus
WEB_K = 3                  # web results when the action calls for them
UPPER, LOWER = 0.5, -0.5   # the paper's thresholds: correct if any score > UPPER, incorrect if all < LOWER
LEVELS = [-1, -0.5, 0, 0.5, 1]
ACTIONS = ("correct", "ambiguous", "incorrect")
MAX_CONTEXT = 5            # passages in the answer prompt
AMBIGUOUS_WEB = 2          # web results beside the corpus passages on an ambiguous action
REFINE_MIN_SENTENCES = 3   # shorter passages are kept whole: too little to strip, and a call saved
DEMO = "Who founded Quillfeather Observatory?"


class Score(BaseModel):
    question_is_about: str = Field(max_length=60)
    passage_is_about: str = Field(max_length=60)
    score: Literal[tuple(LEVELS)]


class Query(BaseModel):
    query: str = Field(max_length=120)


SCORE_SCHEMA, QUERY_SCHEMA = Score.model_json_schema(), Query.model_json_schema()

EVALUATOR_SYSTEM = """You grade how much a passage helps answer a question, using only the passage. \
First name the person, place
or thing the question asks about, then what the passage is about; then the score:
1 = it states the answer; 0.5 = it states a fact needed on the way to the answer (who or what the question
refers to), not the answer; 0 = it is about something the question names but gives no needed fact;
-0.5 = it is about something else that only shares a word with the question; -1 = it is about something else.

Question: Who designed Ashford Bridge?
Passage: Ashford Bridge: It was designed by the engineer Tomas Vell and opened in 1872.
{"question_is_about": "Ashford Bridge", "passage_is_about": "Ashford Bridge", "score": 1}
Question: In which village was the designer of Ashford Bridge born?
Passage: Ashford Bridge: It was designed by the engineer Tomas Vell and opened in 1872.
{"question_is_about": "Ashford Bridge", "passage_is_about": "Ashford Bridge", "score": 0.5}
Question: In which village was the designer of Ashford Bridge born?
Passage: Tomas Vell: Tomas Vell, the engineer who designed Ashford Bridge, was born in Hartmoor.
{"question_is_about": "Ashford Bridge", "passage_is_about": "Tomas Vell", "score": 1}
Question: How long is Ashford Bridge?
Passage: Ashford Bridge: The bridge has five arches and carries a single road.
{"question_is_about": "Ashford Bridge", "passage_is_about": "Ashford Bridge", "score": 0}
Question: Who designed Ashford Bridge?
Passage: Brisk Bridge: Brisk Bridge was designed in 1890 by the architect Lena Osk.
{"question_is_about": "Ashford Bridge", "passage_is_about": "Brisk Bridge", "score": -0.5}
Question: Who designed Ashford Bridge?
Passage: Medra: Medra is a small island with about 300 residents.
{"question_is_about": "Ashford Bridge", "passage_is_about": "Medra", "score": -1}"""

REFINE_SYSTEM = """You keep the sentences of a passage that help answer a question: those that state the \
answer or a fact
needed on the way to it. Reply in JSON with the numbers of the sentences to keep, an empty list if none helps.

Question: In which village was the designer of Ashford Bridge born?
Passage "Ashford Bridge":
1. Ashford Bridge is a stone arch bridge over the River Lente in the town of Corran.
2. It was designed by the engineer Tomas Vell and opened in 1872.
3. The bridge has five arches and carries a single road.
{"keep": [2]}"""

REWRITE_SYSTEM = """Rewrite the question as a short web search query: the key names and words, no question words.

Question: In which village was the designer of Ashford Bridge born?
{"query": "Ashford Bridge designer birthplace village"}"""


def grade_passage(question, passage, trace):
    """The evaluator's reply -> {grade (a level of LEVELS, 0 when unusable), subject, grounded}. The question
    comes first so the grades of one question share the cached prefix."""
    text = " ".join(passage["text"].split())
    reply = ask(f"Question: {question}\nPassage: {passage['title']}: {text}", EVALUATOR_SYSTEM, SCORE_SCHEMA, trace,
                f"evaluator on {passage['chunk_id']}", max_tokens=72)
    grade, subject = reply.get("score"), " ".join(str(reply.get("question_is_about", "")).split())
    grade = float(grade) if isinstance(grade, (int, float)) and grade in LEVELS else 0.0
    return {"grade": grade, "subject": subject, "grounded": names_subject(passage, subject)}


def names_subject(passage, subject):
    """Does the passage contain the subject's names (its capitalised words, else its longer words)?
    No subject named: not checked (True). ({'title': 'Medra', 'text': 'An island.'}, 'Medra island') -> True"""
    words = re.findall(r"\b[A-Z][\w'-]*", subject) or re.findall(r"\w{4,}", subject)
    text = f"{passage.get('title', '')} {passage['text']}".lower()
    return all(re.search(rf"(?<!\w){re.escape(w.lower())}(?!\w)", text) for w in words)


def scores_from(grades):
    """Grades -> scores: ungrounded grades capped at 0, or all -1 when no passage is grounded.
    [(1, grounded), (1, not)] -> [1, 0]; [(1, not), (0.5, not)] -> [-1, -1]"""
    any_grounded = any(g["grounded"] for g in grades)
    return [g["grade"] if g["grounded"] else min(g["grade"], 0.0) if any_grounded else -1.0 for g in grades]


def choose_action(scores):
    """[1, -1] -> 'correct'; [-1, -1] -> 'incorrect' (also for no passages); [0.5, -1] -> 'ambiguous'."""
    if any(s > UPPER for s in scores):
        return "correct"
    if all(s < LOWER for s in scores):
        return "incorrect"
    return "ambiguous"


def split_passage(passage):
    """(title line or None, sentences). A titled chunk 'Title\\nA b. C d.' -> ('Title', ['A b.', 'C d.'])"""
    first, _, rest = passage["text"].partition("\n")
    if rest.strip() and first.strip() == str(passage.get("title", "")).strip():
        return first.strip(), split_sentences(rest)
    return None, split_sentences(passage["text"])


def refine(question, passage, trace, keep_whole=None):
    """Knowledge refinement: the passage with only the sentences that bear on the question, or None.
    keep_whole(text) -> reasons: a passage with any is kept whole, unrefined (the quarantine layer passes its
    markers, so that a refined injection cannot lose the sentence that gives it away)."""
    head, sentences = split_passage(passage)
    n, markers = len(sentences), keep_whole(passage["text"]) if keep_whole else []
    if markers:
        trace.append({"step": "refine", "chunk": passage["chunk_id"], "kept": list(range(1, n + 1)), "of": n,
                      "whole": True, "markers": markers})
        return passage
    if n < REFINE_MIN_SENTENCES:
        trace.append({"step": "refine", "chunk": passage["chunk_id"], "kept": list(range(1, n + 1)), "of": n,
                      "whole": True})
        return passage
    numbered = "\n".join(f"{i}. {s}" for i, s in enumerate(sentences, 1))
    schema = {"type": "object", "required": ["keep"], "properties": {"keep": {
        "type": "array", "items": {"type": "integer", "enum": list(range(1, n + 1))}, "maxItems": n}}}
    reply = ask(f"Question: {question}\nPassage \"{passage['title']}\":\n{numbered}", REFINE_SYSTEM, schema, trace,
                f"refinement of {passage['chunk_id']}", max_tokens=8 + 4 * n)
    if "keep" not in reply:  # unusable reply: keep the passage whole rather than lose evidence
        return passage
    keep = sorted({i for i in reply["keep"] if isinstance(i, int) and 1 <= i <= n})
    trace.append({"step": "refine", "chunk": passage["chunk_id"], "kept": keep, "of": n, "whole": False})
    if not keep:
        return None
    text = (f"{head}\n" if head else "") + " ".join(sentences[i - 1] for i in keep)
    return {**passage, "text": text, "refined": {"kept": keep, "of": n}}


def rewrite_query(question, trace):
    reply = ask(f"Question: {question}", REWRITE_SYSTEM, QUERY_SCHEMA, trace, "web query rewrite", max_tokens=48)
    return " ".join(str(reply.get("query", "")).split()) or question


def crag_answer(question, k=K, web_k=WEB_K, web=None, web_dir=None, refine_knowledge=True,
                corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, keep_whole=None):
    """Question -> generate()-shaped dict plus mode, action, trace, retrieved (corpus and web passages)."""
    question, trace, start = check_question(question), steps.trace(), time.perf_counter()
    web_search.resolve_backend(web)  # an unknown backend fails before any model call
    with llm.counting() as cost:
        hits = retrieve_chunks(question, k, corpus=corpus, chunker=chunker)
        trace.append({"step": "retrieve", "query": question, "chunks": [p["chunk_id"] for p in hits]})
        grades = [grade_passage(question, p, trace) for p in hits]
        scores = scores_from(grades)
        for p, g, s in zip(hits, grades, scores):
            trace.append({"step": "evaluate", "chunk": p["chunk_id"], **g, "score": s})
        action = choose_action(scores)
        trace.append({"step": "action", "action": action, "max": max(scores, default=None),
                      "min": min(scores, default=None), "upper": UPPER, "lower": LOWER})
        ranked = [p for s, p in sorted(zip(scores, hits), key=lambda x: -x[0]) if s > LOWER]
        internal, outside = ([] if action == "incorrect" else ranked), []
        if action != "correct":
            query = rewrite_query(question, trace)
            outside = web_search.search(query, web_k, backend=web, folder=web_dir)
            if action == "ambiguous":
                internal, outside = internal[:MAX_CONTEXT - AMBIGUOUS_WEB], outside[:AMBIGUOUS_WEB]
            trace.append({"step": "web", "query": query, "results": [
                {"chunk": p["chunk_id"], "url": p["url"], "backend": p["backend"]} for p in outside]})
        refined = (refine(question, p, trace, keep_whole) if refine_knowledge else p for p in internal + outside)
        knowledge = [r for r in refined if r is not None][:MAX_CONTEXT]
        result = generate(question, passages=knowledge)
        trace.append({"step": "generate", "chunks": [p["chunk_id"] for p in result["passages"]],
                      "answer": result["answer"]})
    return steps.finish(result, "crag", trace, hits + outside, cost, start, action=action)


def crag_stats(r):
    refs = [s for s in r["trace"] if s["step"] == "refine"]
    return {"action": r["action"], "scores": [s["score"] for s in r["trace"] if s["step"] == "evaluate"],
            "web_backends": sorted({x["backend"] for s in r["trace"] if s["step"] == "web" for x in s["results"]}),
            "sentences_kept": sum(len(s["kept"]) for s in refs), "sentences_seen": sum(s["of"] for s in refs)}


WHY_NEVER = {"correct": "no passage was graded 1 (> UPPER): the evaluator never saw the answer stated",
             "incorrect": "every question had a passage naming what it asks about and scored -0.5 or higher (the "
                          "rule needs all < LOWER): retrieval always found its topic; "
                          "a question outside the corpus shows it, e.g. "
                          f"python crag.py {DEMO!r}",
             "ambiguous": "every question had either a passage stating the answer or only unrelated passages"}


def summarize_stats(stats, settings=None):
    """How often each action fired, F1 per action, score counts -> (lines, dict for --json; grading/grade.py
    recomputes it from the file's per_question)."""
    have = [s for s in stats if "action" in s]
    out = {"questions": len(have), "upper": UPPER, "lower": LOWER,
           "actions": {a: sum(s["action"] == a for s in have) for a in ACTIONS},
           "f1_by_action": {a: mean(s["f1"] for s in have if s["action"] == a) for a in ACTIONS},
           "score_counts": {str(v): sum(x == v for s in have for x in s["scores"]) for v in LEVELS},
           "web_backends": sorted({b for s in have for b in s["web_backends"]}),
           "sentences_kept": sum(s["sentences_kept"] for s in have),
           "sentences_seen": sum(s["sentences_seen"] for s in have)}
    lines = [f"\nCRAG actions (correct if a score > {UPPER}, incorrect if all < {LOWER}): "
             + ", ".join(f"{a} {n} (F1 {fmt(out['f1_by_action'][a])})" for a, n in out["actions"].items()),
             "evaluator scores: " + ", ".join(f"{v} x{n}" for v, n in out["score_counts"].items())
             + f"; web backend {', '.join(out['web_backends']) or 'not used'}; refinement kept "
             f"{out['sentences_kept']}/{out['sentences_seen']} sentences"]
    lines += [f"{a} never fired: {WHY_NEVER[a]}" for a, n in out["actions"].items() if have and not n]
    return lines, out


def parser():
    ap = pattern_cli.pattern_parser("CRAG: grade retrieval, refine it or search the web, answer with citations.", DEMO)
    ap.add_argument("--k", type=int, default=K, help="passages retrieved from the corpus")
    ap.add_argument("--web-k", type=int, default=WEB_K, help="web results when the action calls for them")
    ap.add_argument("--web", choices=web_search.BACKENDS, help="web backend (default: RAG_WEB, else local)")
    ap.add_argument("--web-dir", type=Path, help="stand-in web folder (default: RAG_WEB_DIR, else web_standin/)")
    ap.add_argument("--no-refine", action="store_true", help="skip knowledge refinement (whole passages)")
    return ap


def settings(args):
    """Parsed flags -> (crag_answer keyword arguments, cache settings); ValueError on a bad value."""
    if args.k < 1 or args.web_k < 1:
        raise ValueError("--k and --web-k must be at least 1")
    kw = dict(k=args.k, web_k=args.web_k, web=web_search.resolve_backend(args.web),
              web_dir=web_search.standin_dir(args.web_dir), refine_knowledge=not args.no_refine, corpus=args.corpus,
              chunker=args.chunker)
    # the local stand-in is an index too: what it holds keys the answers (the real web cannot be named so)
    return kw, {**kw, "web_index": web_search.fingerprint(kw["web_dir"])} if kw["web"] == "local" else kw


def main():
    args, kw, key = pattern_cli.parse_settings("crag", parser, settings)

    def describe(r):
        urls = "".join(f"  [{p['id']}] from {p['url']}\n" for p in r["passages"] if p.get("url"))
        return f"{urls}action {r['action']}  "
    answer = functools.partial(crag_answer, **kw)
    if not args.eval:
        return pattern_cli.ask("crag", args, answer, key, describe)
    import harness   # --eval: checked as the lab at full strength checks (harness.evaluate)
    harness.pattern_main("crag", args, answer, key, crag_stats, summarize_stats)


if __name__ == "__main__":
    main()
