r"""Week 6: questions no single document answers. Route, decompose, retrieve per hop, answer with citations.

    python multihop.py \
        "When does monsoon season happen in the city where India's national physical laboratory is located?"
    python multihop.py --mode iterative "question"     # force a mode: single, parallel or iterative
    python multihop.py --router learned "question"     # the learned router (router.py) instead of the model

Expected output: the settings, the route, the sub-questions, each hop (query, retrieved chunk ids, hop answer),
warnings and fallbacks, the cited answer, its sources and the cost (LLM calls, tokens, seconds). With --check, the
judge's verdict on each sentence too (week 5's check): an answer none of whose sentences its sources support is
printed as UNVERIFIED, not as the answer. A two-hop question takes 4-6 LLM calls (route, decomposition, hops,
answer): ~80 s measured here while other jobs shared the 2 cores, roughly 20-30 s on idle cores.

- Routing lives in router.py: the LLM router by default (one call: does the question need facts from more than one
  document?), the learned one with --router learned (logistic regression on surface features, no call; without
  .rag/router.json the first use fits and saves it, ~0.1 s, no embeddings).
- Decomposition lives in decompose.py: sub-questions with [ANSWER_N] placeholders, cleaned and repaired
  (12 of 50 chains broke before the repairs, 1 after).
- `multihop_answer()` (parallel): the question and each sub-question (placeholders removed) retrieved on their
  own, merged round-robin by rank without repeated chunk ids, cut to `final_k`, one cited answer.
- `iterative_answer()` (sequential): hop 0 retrieves the question; hop N fills [ANSWER_N] from earlier hop
  answers, retrieves, answers in a few words naming its source; before an independent step (no placeholder
  left) it asks whether the facts already answer the question and stops if so. The final prompt holds each
  hop's evidence chunk first, and the hop answers ride along with the question as notes. A placeholder that
  cannot be filled (a hop found nothing, or it points forward) breaks the chain: single-hop fallback.
Every answer is generate()'s dict plus `mode`, `trace` (list of steps), `fallback` (reason or None),
`retrieved` (every chunk seen) and `cost` of the whole run. The lab at full strength (assembly.py) routes with the
learned router and answers a multi-hop route by following links instead (layers/links.py: one LLM call).
Not handled: hops that need a list of answers.
"""
import argparse
import sys
import time
from itertools import zip_longest
from pathlib import Path

import citations
import llm
from decompose import MAX_PARTS, PLACEHOLDER, answer_hop, fill, is_answerable, plan
from generate import (check_question, generate, print_result as print_answer, watching,
                      writing)
from lab import steps
from retrieve import CORPUS_DIR, DEFAULT_CHUNKER, retrieve_chunks
from router import learned_route, load_router, needs_decomposition
from vector_index import DEMO_QUESTION, CorpusError

MODES = ("single", "parallel", "iterative")
HOP_K = 3            # chunks retrieved per sub-question / hop
FINAL_K = 4          # chunks in the final prompt: generate()'s k, so every mode is compared at equal context
def merge_passages(lists, final_k=None, first=()):
    """Ranked lists -> one, round-robin by rank, no chunk_id twice, chunk ids in `first` ahead; with final_k,
    new documents before second chunks of a document, then cut. ([[a, b], [a, c]]) -> [a, b, c]"""
    pool = [p for c in first for ps in lists for p in ps if p["chunk_id"] == c]
    merged, seen = [], set()
    for p in pool + [p for row in zip_longest(*lists) for p in row if p]:
        if p["chunk_id"] not in seen:
            seen.add(p["chunk_id"])
            merged.append(p)
    if final_k is None:
        return merged
    docs, fresh, rest = set(), [], []
    for p in merged:
        (rest if p["doc"] in docs else fresh).append(p)
        docs.add(p["doc"])
    return (fresh + rest)[:final_k]


def _retrieve(query, k, hop, trace, corpus, chunker):
    found = [dict(p, hop=hop) for p in retrieve_chunks(query, k, corpus=corpus, chunker=chunker)]
    trace.append({"step": "retrieve", "hop": hop, "query": query, "chunks": [p["chunk_id"] for p in found]})
    return found


def _hop(query, n, k, lists, trace, corpus, chunker):
    """One hop: retrieve k chunks, answer; an "unknown" answer gets one retry on the next k chunks of the same
    query (ranks k+1..2k), so a fact just below the cut is not lost. Appends each list to `lists`."""
    lists.append(_retrieve(query, k, n, trace, corpus, chunker))
    try:
        answer, source = answer_hop(query, lists[-1])
        if answer is None:   # the retry: the next k chunks, none of them shown already
            shown = {p["chunk_id"] for p in lists[-1]}
            deeper = [p for p in _retrieve(query, 2 * k, n, trace, corpus, chunker) if p["chunk_id"] not in shown]
            if deeper:
                trace[-1].update(chunks=[p["chunk_id"] for p in deeper], retry=True)
                lists.append(deeper)
                answer, source = answer_hop(query, deeper)
        return answer, source
    except llm.LLMError as e:
        trace.append({"step": "warning", "message": f"hop {n}: answer unreadable: {e}"})
        return None, None


def finish(result, question, mode, trace, seen, fallback, cost, start):
    """Every mode's last step (and a layer's that adds a mode): the trace closed with its synthesis, then
    steps.finish's result with the passages seen, the fallback taken, calls and seconds."""
    if not trace or trace[-1]["step"] != "synthesize":  # a fallback inside a mode has synthesized already
        trace.append({"step": "synthesize", "chunks": [p["chunk_id"] for p in result["passages"]],
                      "answer": result["answer"]})
    return steps.finish(result, mode, trace, seen, cost, start, question=question, fallback=fallback)


def single_answer(question, final_k=FINAL_K, corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, trace=None, reason=None):
    """One retrieval, one cited answer (generate()), as a multihop-style result; `reason` marks a fallback."""
    question, trace, start = check_question(question), steps.trace(trace), time.perf_counter()
    if reason:
        trace.append({"step": "fallback", "to": "single", "reason": reason})
    with llm.counting() as cost:
        passages = _retrieve(question, final_k, 0, trace, corpus, chunker)
        result = generate(question, passages=passages)
    return finish(result, question, "single", trace, passages, reason, cost, start)


def multihop_answer(question, k=HOP_K, final_k=FINAL_K, max_parts=MAX_PARTS, sub_questions=None,
                    corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER):
    """Parallel: the question and each sub-question retrieved on their own, merged, one cited answer.
    final_k=None keeps every merged chunk. `sub_questions` skips decompose() (smart_answer has them)."""
    question, trace, start = check_question(question), steps.trace(), time.perf_counter()
    with llm.counting() as cost:
        subs = plan(question, max_parts, trace) if sub_questions is None else list(sub_questions)
        fallback = None if subs else "no usable decomposition: the question alone was retrieved"
        if fallback:
            trace.append({"step": "fallback", "to": "single", "reason": fallback})
        # a placeholder has no words to search for: the rest of the sub-question is the query
        lists = [_retrieve(" ".join(PLACEHOLDER.sub("", s).split()), k, n, trace, corpus, chunker)
                 for n, s in enumerate([question] + subs)]
        chosen = merge_passages(lists, final_k)
        trace.append({"step": "merge", "chunks": [p["chunk_id"] for p in chosen],
                      "left_out": len(merge_passages(lists)) - len(chosen)})
        result = generate(question, passages=chosen)
    return finish(result, question, "parallel", trace, [p for ps in lists for p in ps], fallback, cost, start)


def iterative_answer(question, max_hops=MAX_PARTS, k=HOP_K, final_k=FINAL_K, sub_questions=None, stop_early=True,
                     corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER):
    """Sequential: hop by hop, [ANSWER_N] filled from earlier answers, retrieved, answered; stops when the
    facts answer the question (asked only when no later step waits for an answer); one cited answer, each
    hop's evidence chunk first. A broken chain falls back to single_answer(), the reason in `fallback` and
    the trace. final_k=None keeps every chunk seen."""
    question, trace, start = check_question(question), steps.trace(), time.perf_counter()
    with llm.counting() as cost:
        subs = plan(question, max_hops, trace) if sub_questions is None else list(sub_questions)[:max_hops]
        answers, evidence, facts, broken = [], [], [], None if subs else "no usable decomposition"
        lists = [_retrieve(question, k, 0, trace, corpus, chunker)]  # hop 0: the question itself, no model call
        for n, sub in enumerate(subs, 1):
            query, bad = fill(sub, answers)
            if bad:
                broken = f"hop {n}: placeholder [ANSWER_{bad[0]}] never filled in {sub!r}"
                break
            answer, source = _hop(query, n, k, lists, trace, corpus, chunker)
            answers.append(answer)
            evidence += [source] if source else []
            facts += [f"{query} -> {answer}"] if answer else []
            trace.append({"step": "hop", "n": n, "sub_question": sub, "query": query, "answer": answer,
                          "source": source})
            if answer is None:
                trace.append({"step": "warning", "message": f"hop {n}: no answer found"})
            elif stop_early and n < len(subs) and not any(map(PLACEHOLDER.search, subs[n:])):
                # only before independent steps: asked mid-chain, the model took the bridge entity for the
                # answer ("New Delhi" for a monsoon question) and skipped the hop that finds the answer
                try:
                    done = is_answerable(question, facts)
                except llm.LLMError as e:
                    done = False
                    trace.append({"step": "warning", "message": f"answerable check unreadable: {e}"})
                trace.append({"step": "answerable", "after_hop": n, "answerable": done})
                if done:
                    break
        seen = [p for ps in lists for p in ps]
        if broken:
            result = single_answer(question, final_k or FINAL_K, corpus, chunker, trace=trace, reason=broken)
            seen += result["passages"]
        else:
            chosen = merge_passages(lists, final_k, first=evidence)
            trace.append({"step": "merge", "chunks": [p["chunk_id"] for p in chosen], "evidence": evidence})
            # the hop answers travel with the question as notes; the sources stay the only thing to cite
            notes = f"{question}\n(Notes from earlier lookups: {'; '.join(facts)}.)" if facts else question
            result = generate(notes, passages=chosen)
    return finish(result, question, "iterative", trace, seen, broken, cost, start)


def smart_answer(question, router="llm", router_model=None, k=HOP_K, final_k=FINAL_K, max_hops=MAX_PARTS,
                 corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER, multi=None):
    """Route, then: single -> single_answer(); multi -> decompose, then iterative_answer() when a sub-question waits
    for an earlier answer ([ANSWER_N]), multihop_answer() when the parts are independent (comparisons). router: "llm"
    (needs_decomposition, one call) or "learned" (router.py: no call; fitted and saved to .rag/router.json on first
    use, ~0.1 s). multi(question, final_k, corpus, chunker) answers a question routed multi-hop instead (the
    assembly passes layers/links.chain_answer). The saved learned router was fitted on golden.json: do not score its
    routing on those questions here (router_eval.py scores out-of-fold predictions)."""
    question, trace, start = check_question(question), steps.trace(), time.perf_counter()
    if router not in ("learned", "llm"):
        raise ValueError(f"unknown router {router!r}: choose learned or llm")
    with llm.counting() as cost:
        t, multi_hop, p = time.perf_counter(), None, None
        if router == "llm":
            try:
                multi_hop = needs_decomposition(question)
            except llm.LLMError as e:
                trace.append({"step": "warning", "message": f"LLM router failed ({e}): learned router used"})
        if multi_hop is None:
            router, (multi_hop, p) = "learned", learned_route(question, router_model or load_router())
        trace.append({"step": "route", "router": router, "multi": multi_hop, "p_multi": p,
                      "ms": (time.perf_counter() - t) * 1000})
        subs = plan(question, max_hops, trace) if multi_hop and multi is None else []
        if multi_hop and multi is not None:
            result = multi(question, final_k, corpus, chunker)
        elif not subs:
            result = single_answer(question, final_k, corpus, chunker, [],
                                   "no usable decomposition" if multi_hop else None)
        elif any(PLACEHOLDER.search(s) for s in subs):
            result = iterative_answer(question, max_hops, k, final_k, subs, corpus=corpus, chunker=chunker)
        else:
            result = multihop_answer(question, k, final_k, max_hops, subs, corpus=corpus, chunker=chunker)
    result.update(trace=trace + result["trace"], cost={**cost, "wall_seconds": time.perf_counter() - start})
    return result


def print_trace(r):
    """The trace, one line a step (steps.describe), then the mode taken."""
    steps.print_trace(r["trace"])
    print(f"\nmode: {r['mode']}" + (f" (fell back to single-hop: {r['fallback']})" if r["fallback"] else ""))


def print_checked(r):
    """The answer as the judge sees it (--check): an answer no sentence of which its sources support is marked
    unverified and never shown as the answer (citations.print_checked), then the costs."""
    with llm.counting() as judge_cost:
        citations.print_checked(r, on_verdict=citations.say_verdict)   # each verdict on stderr as it comes
    print("\n" + steps.cost_line(r["cost"])
          + f"; the judge: {judge_cost['calls']} llm calls, {judge_cost['seconds']:.1f} s")


def main():
    ap = argparse.ArgumentParser(description="Answer a multi-hop question: route, decompose, retrieve per hop, cite.")
    ap.add_argument("question", nargs="?", default=DEMO_QUESTION, help="the question")
    ap.add_argument("--mode", choices=("auto",) + MODES, default="auto", help="auto: the router decides")
    ap.add_argument("--router", choices=("llm", "learned"), default="llm",
                    help="which router --mode auto asks: the model (one call) or the learned one (router.py, no call)")
    ap.add_argument("--k", type=int, default=HOP_K, help="chunks retrieved per sub-question / hop")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="folder of documents (.txt .md .pdf .docx .html)")
    ap.add_argument("--chunker", default=DEFAULT_CHUNKER, help="which collection to retrieve from")
    ap.add_argument("--check", action="store_true",
                    help="check each citation with week 5's judge (~6 s per sentence)")
    args = ap.parse_args()
    if args.k < 1:
        sys.exit("multihop: --k must be at least 1")
    try:
        with llm.ctrl_c("multihop"), watching(writing()):
            question, kw = check_question(args.question), {"corpus": args.corpus, "chunker": args.chunker}
            info = llm.engine_info()
            print(f"question={question!r} mode={args.mode} router={args.router} k={args.k} final_k={FINAL_K} "
                  f"max_hops={MAX_PARTS} corpus={args.corpus}\nmodel: {info['engine']} {info['model']}")
            if args.mode == "auto":
                r = smart_answer(question, args.router, k=args.k, **kw)
            elif args.mode == "single":
                r = single_answer(question, **kw)
            elif args.mode == "parallel":
                r = multihop_answer(question, args.k, **kw)
            else:
                r = iterative_answer(question, k=args.k, **kw)
            print_trace(r)
            print_checked(r) if args.check else print_answer(r)
    except (ValueError, CorpusError, llm.LLMError) as e:
        sys.exit(f"multihop: {e}")


if __name__ == "__main__":
    main()
