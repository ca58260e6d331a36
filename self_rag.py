r"""Week 7b: Self-RAG (Asai et al. 2023) with prompted reflection: decide, retrieve, filter, answer, critique, refine.

    python self_rag.py "In which village was the designer of Ashford Bridge born?" --corpus tests/fixtures/corpus
    python self_rag.py \
        "Who was the first president of the association which published Journal of Psychotherapy Integration?"
    python self_rag.py --eval 20 --json results/self_rag_20.json
    python self_rag.py --always-retrieve --eval 20      # the retrieve decision switched off, to measure it

Expected output of a question (~150 s measured on the embedded engine with the 2 cores shared, 12 LLM
calls for a two-round question): the settings, every verdict in order
(retrieve or not, each passage relevant or not, each answer's support and usefulness, each refined query,
the answer chosen), then the answer, each citation with its verdict, the sources and the cost.
`--eval N` (~2-4 min per question the first time, cached after): the common table beside plain generate(),
then how often retrieval was skipped and the F1 on those questions (next to generate()'s on the same ones),
the rounds used and the critique verdicts.

The paper trains reflection tokens into the model; here the 1.5B instruct model is asked for each verdict
as schema-constrained JSON (constant instructions and examples in the system prompt, for the prompt cache):
1. Retrieve? {"retrieve": "yes"|"no"}. "no": a short answer from the model alone, with no sources and so
   no citations (its sentence counts as unsupported). Whether that pays is measured by --eval, not assumed.
2. Retrieve k passages for the current query; ISREL for each passage not judged yet {"relevant": ...};
   irrelevant passages are dropped, relevant ones accumulate over rounds (newest first, MAX_CONTEXT).
3. A cited answer from the relevant passages: generate(passages=...).
4. Critique against the passages it cites: {"support": "fully"|"partially"|"no", "usefulness": 1-5}.
5. Not fully supported, or usefulness under USEFUL_MIN: a refined query {"query": ...}, back to 2, up to
   MAX_ROUNDS rounds. The best-critiqued answer wins (support, then usefulness, then the later round).
No relevant passage in any round: the first retrieval answers, unfiltered (said in the trace).
A reply out of shape never crashes: retrieve, relevant, support "no"/1, or stop refining; each is a warning.
Not handled: segment-level beam search over critiques (the paper's decoding); one answer per round instead.
"""
import re
import time
from typing import Literal

from pydantic import BaseModel, Field

import llm
import pattern_cli
from generate import IDK, check_question, format_sources, generate, is_idk
from pattern_cli import fmt, mean
from judge import ask
from lab import steps
from retrieve import CORPUS_DIR, DEFAULT_CHUNKER, retrieve_chunks
from vector_index import DEMO_QUESTION

K = 4              # passages per retrieval
MAX_ROUNDS = 3     # retrieval rounds (the first query plus up to two refinements)
USEFUL_MIN = 4     # usefulness (1-5) an answer needs, with full support, to stop refining
MAX_CONTEXT = 5    # relevant passages in the answer prompt
SUPPORT = ("fully", "partially", "no")
DEMO = DEMO_QUESTION


class Decide(BaseModel):
    retrieve: Literal["yes", "no"]


class Relevant(BaseModel):
    relevant: Literal["yes", "no"]


class Critique(BaseModel):
    support: Literal[SUPPORT]
    usefulness: Literal[1, 2, 3, 4, 5]


class Query(BaseModel):
    query: str = Field(max_length=120)


class Alone(BaseModel):
    answer: str = Field(max_length=120)


DECIDE_SCHEMA, RELEVANT_SCHEMA, CRITIQUE_SCHEMA, QUERY_SCHEMA, ALONE_SCHEMA = (
    m.model_json_schema() for m in (Decide, Relevant, Critique, Query, Alone))

DECIDE_SYSTEM = """You decide whether a question needs facts looked up in a document collection before it \
can be answered.
"no" only when common knowledge or reasoning alone answers it (arithmetic, the meaning of a common word, a
world-famous fact such as the capital of France). "yes" for anything about a specific person, place, work,
organisation, event, date or number.

Question: What is 12 times 12?
{"retrieve": "no"}
Question: Who designed Ashford Bridge?
{"retrieve": "yes"}
Question: What is the capital of France?
{"retrieve": "no"}
Question: In which year did the band that recorded "Salt Roads" form?
{"retrieve": "yes"}"""

ALONE_SYSTEM = 'Answer the question in a few words from what you know. If you are not sure, answer "I don\'t know."'

RELEVANT_SYSTEM = """You check whether a passage is relevant to a question: "yes" if it states the answer or a \
fact needed on
the way to it (about a person, place or thing the question refers to); "no" if it is about something else,
even when it shares a word with the question.

Question: In which village was the designer of Ashford Bridge born?
Passage: Ashford Bridge: It was designed by the engineer Tomas Vell and opened in 1872.
{"relevant": "yes"}
Question: In which village was the designer of Ashford Bridge born?
Passage: Hartmoor Bridge: A footbridge over the Oster, built by the county in 1950.
{"relevant": "no"}"""

CRITIQUE_SYSTEM = """You check an answer against its sources. "support": "fully" if the sources state \
everything the answer
says, "partially" if they state only some of it, "no" if they do not state it. "usefulness": 5 if the answer
gives exactly what the question asks, 3 if it helps partly, 1 if it does not answer the question.

<source id="S1" title="Ashford Bridge">Ashford Bridge was designed by the engineer Tomas Vell.</source>
Question: In which village was the designer of Ashford Bridge born?
Answer: Tomas Vell. Ashford Bridge was designed by Tomas Vell. [S1]
{"support": "fully", "usefulness": 1}
<source id="S1" title="Hartmoor">Hartmoor is a village in Wessmark, known for its cheese fair.</source>
Question: In which village was the designer of Ashford Bridge born?
Answer: Hartmoor. Tomas Vell was born in Hartmoor. [S1]
{"support": "no", "usefulness": 5}"""

REFINE_SYSTEM = """A search did not find everything needed to answer a question. Write one short search query for the
missing fact: name the person, place or thing to look up next. Do not repeat a query already tried.

Question: In which village was the designer of Ashford Bridge born?
Found so far: Ashford Bridge was designed by Tomas Vell. [S1]
Queries tried: In which village was the designer of Ashford Bridge born?
{"query": "Tomas Vell birthplace village"}"""


def decide_retrieval(question, trace):
    """True unless the model says "no" (an unreadable reply retrieves)."""
    return ask(f"Question: {question}", DECIDE_SYSTEM, DECIDE_SCHEMA, trace,
               "retrieve decision").get("retrieve") != "no"


def is_relevant(question, passage, trace):
    """ISREL. The question comes first so the verdicts on one question share the cached prefix."""
    text = " ".join(passage["text"].split())
    return ask(f"Question: {question}\nPassage: {passage['title']}: {text}", RELEVANT_SYSTEM, RELEVANT_SCHEMA, trace,
               f"relevance of {passage['chunk_id']}").get("relevant") != "no"


def critique(question, result, trace):
    """ISSUP and ISUSE of a generate() result -> {"support", "usefulness"}; an IDK answer costs no call."""
    if result["idk"]:
        return {"support": "no", "usefulness": 1}
    cited = {c for s in result["sentences"] for c in s["cites"]}
    sources = [p for p in result["passages"] if p["id"] in cited] or result["passages"]
    reply = ask(f"{format_sources(sources)}\nQuestion: {question}\nAnswer: {result['answer']}. {result['text']}",
                CRITIQUE_SYSTEM, CRITIQUE_SCHEMA, trace, "critique")
    support, useful = reply.get("support"), reply.get("usefulness")
    return {"support": support if support in SUPPORT else "no", "usefulness": useful if useful in range(1, 6) else 1}


def refine_query(question, result, tried, trace):
    """A new query for what is missing, or None when the model gives none."""
    found = result["text"] if result and not result["idk"] else "nothing useful"
    reply = ask(f"Question: {question}\nFound so far: {found}\nQueries tried: {'; '.join(tried)}", REFINE_SYSTEM,
                QUERY_SCHEMA, trace, "query refinement", max_tokens=60)
    return " ".join(str(reply.get("query", "")).split()) or None


def answer_alone(question, trace):
    """The no-retrieval branch: a short answer from the model's memory, uncited."""
    answer = str(ask(f"Question: {question}", ALONE_SYSTEM, ALONE_SCHEMA, trace,
                     "answer without retrieval").get("answer", "")).strip()
    idk = is_idk(answer)
    return {"question": question, "answer": IDK if idk else answer, "text": IDK if idk else answer,
            "sentences": [] if idk else [{"text": answer, "cites": []}], "passages": [], "invalid_ids": [],
            "idk": idk, "error": None, "style": "self-rag", "order": "none"}


def _norm(s):
    return " ".join(re.findall(r"\w+", s.lower()))


def retrieval_rounds(question, k, max_rounds, useful_min, corpus, chunker, trace):
    """Steps 2-5 of the module docstring -> (chosen generate() result, every passage retrieved)."""
    relevant, judged, tried, candidates, retrieved, query = [], {}, [], [], [], question
    for rnd in range(1, max_rounds + 1):
        hits = retrieve_chunks(query, k, corpus=corpus, chunker=chunker)
        retrieved += hits
        tried.append(query)
        trace.append({"step": "retrieve", "round": rnd, "query": query, "chunks": [p["chunk_id"] for p in hits]})
        new = []
        for p in (p for p in hits if p["chunk_id"] not in judged):
            judged[p["chunk_id"]] = is_relevant(question, p, trace)
            trace.append({"step": "relevance", "round": rnd, "chunk": p["chunk_id"], "relevant": judged[p["chunk_id"]]})
            new += [p] if judged[p["chunk_id"]] else []
        relevant += new
        if new:  # new evidence: answer again, newest passages first
            result = generate(question, passages=(new + [p for p in relevant if p not in new])[:MAX_CONTEXT])
            crit = critique(question, result, trace)
            candidates.append(((SUPPORT[::-1].index(crit["support"]), crit["usefulness"], rnd), result))
            trace.append({"step": "generate", "round": rnd, "chunks": [p["chunk_id"] for p in result["passages"]],
                          "answer": result["answer"]})
            trace.append({"step": "critique", "round": rnd, **crit})
            if crit["support"] == "fully" and crit["usefulness"] >= useful_min:
                break
        else:
            trace.append({"step": "note", "round": rnd, "message": "no new relevant passage: no new answer"})
        if rnd == max_rounds:
            break
        query = refine_query(question, candidates[-1][1] if candidates else None, tried, trace)
        if not query or _norm(query) in {_norm(t) for t in tried}:
            trace.append({"step": "note", "round": rnd,
                          "message": f"refinement gave {'no' if not query else 'a repeated'} query: stop"})
            break
        trace.append({"step": "refine", "round": rnd, "query": query})
    if not candidates:
        first = retrieved[:k]
        trace.append({"step": "fallback",
                      "message": "no passage judged relevant: the first retrieval answers, unfiltered"})
        return generate(question, passages=first), retrieved
    (_, _, rnd), best = max(candidates, key=lambda c: c[0])
    trace.append({"step": "select", "round": rnd, "answer": best["answer"]})
    return best, retrieved


def self_rag_answer(question, k=K, max_rounds=MAX_ROUNDS, useful_min=USEFUL_MIN, decide=True,
                    corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER):
    """Question -> generate()-shaped dict plus mode, trace (every verdict), retrieved, retrieval (bool)."""
    question, trace, start = check_question(question), steps.trace(), time.perf_counter()
    with llm.counting() as cost:
        retrieve = decide_retrieval(question, trace) if decide else True
        trace.append({"step": "decide", "retrieve": retrieve, "by": "model" if decide else "always (flag)"})
        if retrieve:
            result, retrieved = retrieval_rounds(question, k, max_rounds, useful_min, corpus, chunker, trace)
        else:
            result, retrieved = answer_alone(question, trace), []
    return steps.finish(result, "self-rag", trace, retrieved, cost, start, question=question, retrieval=retrieve)


def self_rag_stats(r):
    crit = [s for s in r["trace"] if s["step"] == "critique"]
    return {"retrieval": r["retrieval"], "rounds": sum(s["step"] == "retrieve" for s in r["trace"]),
            "support": crit[-1]["support"] if crit else None, "accepted": any(
                s["support"] == "fully" and s["usefulness"] >= USEFUL_MIN for s in crit)}


def summarize_stats(stats, settings=None):
    """How often retrieval was skipped, and what that did to F1 -> (lines, dict for --json; grading/grade.py
    recomputes it from the file's per_question)."""
    have = [s for s in stats if "retrieval" in s]
    skipped = [s for s in have if not s["retrieval"]]
    out = {"questions": len(have), "skipped_retrieval": len(skipped),
           "f1_skipped": mean(s["f1"] for s in skipped),
           "generate_f1_on_skipped": mean(s["generate_f1"] for s in skipped),
           "mean_rounds": mean(s["rounds"] for s in have if s["retrieval"]),
           "accepted": sum(s["accepted"] for s in have),
           "support": {v: sum(s["support"] == v for s in have) for v in SUPPORT}}
    lines = [f"\nSelf-RAG skipped retrieval on {len(skipped)}/{len(have)} questions; F1 on those "
             f"{fmt(out['f1_skipped'])} (plain generate(), which retrieves, on the same: "
             f"{fmt(out['generate_f1_on_skipped'])})",
             f"rounds per retrieving question {fmt(out['mean_rounds'])}; accepted (fully supported, usefulness >= "
             f"{USEFUL_MIN}) {out['accepted']}; final support "
             + ", ".join(f"{k} {v}" for k, v in out["support"].items())]
    return lines, out


def parser():
    ap = pattern_cli.pattern_parser("Self-RAG: retrieve on demand, filter, answer, critique, refine the query.", DEMO)
    ap.add_argument("--k", type=int, default=K, help="passages per retrieval")
    ap.add_argument("--max-rounds", type=int, default=MAX_ROUNDS, help="retrieval rounds at most")
    ap.add_argument("--useful-min", type=int, default=USEFUL_MIN, help="usefulness (1-5) that stops refining")
    ap.add_argument("--always-retrieve", action="store_true", help="skip the retrieve decision (to measure it)")
    return ap


def settings(args):
    """Parsed flags -> (self_rag_answer keyword arguments, cache settings); ValueError on a bad value."""
    if args.k < 1 or args.max_rounds < 1 or not 1 <= args.useful_min <= 5:
        raise ValueError("--k and --max-rounds must be at least 1, --useful-min 1 to 5")
    kw = dict(k=args.k, max_rounds=args.max_rounds, useful_min=args.useful_min, decide=not args.always_retrieve,
              corpus=args.corpus, chunker=args.chunker)
    return kw, kw


def main():
    args, kw, key = pattern_cli.parse_settings("self_rag", parser, settings)
    answer = lambda q: self_rag_answer(q, **kw)
    if not args.eval:
        return pattern_cli.ask("self_rag", args, answer, key)
    import harness   # --eval: checked as the lab at full strength checks (harness.evaluate)
    harness.pattern_main("self-rag", args, answer, key, self_rag_stats, summarize_stats)


if __name__ == "__main__":
    main()
