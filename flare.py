r"""Week 7a: FLARE (Jiang et al. 2023), retrieval triggered by the model's own low confidence while it writes.

    python flare.py "In which village was the designer of Ashford Bridge born?" --corpus tests/fixtures/corpus
    python flare.py \
        "Who was the first president of the association which published Journal of Psychotherapy Integration?"
    python flare.py --threshold 0.6 --query span "question"
    python flare.py --eval 20 --json results/flare_20.json

Expected output of a question (~60 s and 3 LLM calls measured on the embedded engine with both cores
shared; less on idle cores): the settings; the trace: the first retrieval, each look-ahead segment with its
lowest token probability, each trigger (confidence, low-confidence words, query, passages brought) and the
regenerated segment; then the answer, each citation with its verdict (citations.verify), the sources
and the cost. `--eval N` (~1-2 min per question the first time, judge included; cached after): the common
table (EM, F1, doc recall, citation recall/precision, calls and s per question) beside plain generate() on
the same questions, then the threshold and trigger counts. The --eval harness that self_rag.py and crag.py
share lives here too (evaluate_pattern).

How it writes: passages retrieved for the question (k) are numbered S1..; the model writes one line at a
time, continuing its own reply (the reply so far is prefilled as the assistant turn): one to three cited
sentences, then "Answer: <a few words>". Each line is a look-ahead segment generated with real token
logprobs (llm.chat(logprobs=True)). When a content token (not punctuation, not a [S#] marker) has
probability under THRESHOLD, the segment becomes a query: `masked` (default, FLARE's implicit query) drops
the low-confidence words, with the question in front when under MIN_QUERY_WORDS words are left; `span` is
the question plus the low-confidence words. The new passages are appended as S4, S5.. (labels never
change, so earlier citations stay valid) and the segment is regenerated once with them.
Bounds: MAX_RETRIEVALS triggered retrievals, MAX_SENTENCES sentences, about MAX_TOKENS generated tokens;
then the answer line is asked for directly. Unlike the paper, passages accumulate rather than replace
each other, so every cited label still points at the text the model saw.
Not handled: the threshold is not tuned per model; a reply that ignores the line format ends as one line.
"""
import math
import re
import time

import llm
import pattern_cli
from generate import CITE_GROUP, IDK, SYSTEM, check_question, format_sources, is_idk, split_cited, strip_cites
from lab import steps
from retrieve import CORPUS_DIR, DEFAULT_CHUNKER, retrieve_chunks
from vector_index import DEMO_QUESTION

THRESHOLD = 0.4          # a content token under this probability triggers retrieval (FLARE's theta)
QUERY_MODES = ("masked", "span")
K = 3                    # passages retrieved for the question before writing
NEW_K = 2                # new passages per triggered retrieval
MAX_RETRIEVALS = 2       # triggered retrievals per answer
MAX_SENTENCES = 3        # cited sentences before the answer line is asked for
SEGMENT_TOKENS = 48      # look-ahead: tokens generated per segment (one line, cut at the newline)
ANSWER_TOKENS = 24       # the answer line
MAX_TOKENS = 200         # generated tokens in all, regenerations included; then the answer line
MIN_QUERY_WORDS = 4      # a masked query shorter than this gets the question in front
DEMO = DEMO_QUESTION
ANSWER_LABEL = re.compile(r"^\s*answer\s*:\s*", re.I)
MID_ANSWER = re.compile(r"(?<=[.!?\]])\s*answer\s*:\s*", re.I)  # 'X [S1]. Answer: Y' written on one line

FLARE_EXAMPLE = """Ashford Bridge was designed by Tomas Vell [S1].
Tomas Vell was born in Hartmoor [S2].
Answer: Hartmoor

Reply in this format: one to three short sentences, each on its own line and ending with its source IDs, \
then a last line "Answer: <the answer in a few words>". If the sources do not hold the answer, reply only \
"Answer: I don't know.\""""
FLARE_SYSTEM = SYSTEM.format(example=FLARE_EXAMPLE)


def read_segment(pairs):
    """Token (text, logprob) pairs -> (first non-empty line, [(start, end, probability)] of its tokens).
    [('\\n', 0.0), ('Vell', -0.1), (' [S1]', 0.0), ('\\nMore', 0.0)] -> ('Vell [S1]', [(0, 4, 0.905), (4, 9, 1.0)])"""
    text = "".join(t for t, _ in pairs)
    start = len(text) - len(text.lstrip())
    end = text.find("\n", start)
    line = text[start:len(text) if end < 0 else end].rstrip()
    spans, pos = [], 0
    for token, logprob in pairs:
        lo, hi = max(pos, start), min(pos + len(token), start + len(line))
        if lo < hi:
            spans.append((lo - start, hi - start, math.exp(logprob)))
        pos += len(token)
    return line, spans


def low_confidence(line, spans, threshold, skip=0):
    """(lowest probability of a content token, spans under the threshold). Content tokens hold a letter or
    digit, lie after `skip` (an "Answer:" label) and outside [S#] markers: which source to cite is not a gap
    in knowledge. ('Born in Hartmoor', [(0, 4, .9), (4, 7, .8), (7, 16, .2)], 0.4) -> (0.2, [(7, 16, 0.2)])"""
    cites = [m.span() for m in CITE_GROUP.finditer(line)]
    content = [(a, b, p) for a, b, p in spans if b > skip and any(ch.isalnum() for ch in line[max(a, skip):b])
               and not any(a < ce and cs < b for cs, ce in cites)]
    return min((p for *_, p in content), default=1.0), [s for s in content if s[2] < threshold]


def widen(line, a, b):
    """A character span trimmed to its letters and digits, then grown to whole words:
    ('born in Hartmoor', 7, 12) (' Hart') -> (8, 16) ('Hartmoor')"""
    while a < b and not line[a].isalnum():
        a += 1
    while b > a and not line[b - 1].isalnum():
        b -= 1
    while a > 0 and line[a - 1].isalnum():
        a -= 1
    while b < len(line) and line[b].isalnum():
        b += 1
    return a, b


def make_query(question, line, low, mode="masked"):
    """The retrieval query of a low-confidence segment (see the module docstring).
    masked: ('Who designed X?', 'X was designed by Tomas Vell [S1].', low on 'Vell') -> 'X was designed by Tomas.'"""
    words = [widen(line, a, b) for a, b, _ in low]
    if mode == "span":
        span = line[min(a for a, _ in words):max(b for _, b in words)]
        return f"{question} {ANSWER_LABEL.sub('', strip_cites(span))}".strip()
    kept = "".join(ch for i, ch in enumerate(line) if not any(a <= i < b for a, b in words))
    masked = ANSWER_LABEL.sub("", strip_cites(kept))
    return masked if len(re.findall(r"\w+", masked)) >= MIN_QUERY_WORDS else f"{question} {masked}".strip()


def write_segment(question, pool, lines, forced, threshold):
    """One look-ahead segment: the next line of the reply, with its confidence."""
    head = "".join(f"{line}\n" for line in lines) + ("Answer:" if forced else "")
    messages = [{"role": "system", "content": FLARE_SYSTEM},
                {"role": "user", "content": f"{format_sources(pool)}\nQuestion: {question}"}]
    if head:  # the reply so far, continued by the model (prefill)
        messages.append({"role": "assistant", "content": head})
    # top_logprobs=1: llama.cpp computes token probabilities only when asked for at least one alternative
    response = llm.chat(messages, logprobs=True, top_logprobs=1, max_tokens=ANSWER_TOKENS if forced else SEGMENT_TOKENS)
    # LLMError when the engine gives no logprobs at all; [] is a reply that ended at once (only the end token,
    # which carries no text: llama.cpp then echoes the prefill as the content, so the content is not checked)
    pairs = llm.token_logprobs(response)
    line, spans = read_segment(pairs)
    label = ANSWER_LABEL.match(line)
    skip = label.end() if label else 0
    confidence, low = low_confidence(line, spans, threshold, skip)
    return {"line": line, "kind": "answer" if forced or label else "sentence", "skip": skip,
            "confidence": confidence, "low": low, "tokens": response.eval_count or 0}


def new_passages(query, pool, new_k, corpus, chunker):
    """The best new_k chunks for the query that are not in the pool yet, labelled after it."""
    seen = {p["chunk_id"] for p in pool}
    hits = retrieve_chunks(query, len(pool) + new_k, depth=max(12, len(pool) + new_k), corpus=corpus, chunker=chunker)
    fresh = [p for p in hits if p["chunk_id"] not in seen][:new_k]
    return [{**p, "id": f"S{len(pool) + n}", "rank": len(pool) + n} for n, p in enumerate(fresh, 1)]


def _seg_step(step, n, seg, threshold):
    return {"step": step, "n": n, "kind": seg["kind"], "text": seg["line"], "confidence": round(seg["confidence"], 4),
            "low": [[seg["line"][a:b].strip(), round(p, 4)] for a, b, p in seg["low"]], "threshold": threshold}


def flare_answer(question, k=K, new_k=NEW_K, threshold=THRESHOLD, query_mode="masked", max_retrievals=MAX_RETRIEVALS,
                 max_sentences=MAX_SENTENCES, max_tokens=MAX_TOKENS, corpus=CORPUS_DIR, chunker=DEFAULT_CHUNKER):
    """Question -> generate()-shaped dict plus mode, trace, retrieved, triggers, threshold (module docstring)."""
    question, trace, start = check_question(question), steps.trace(), time.perf_counter()
    if query_mode not in QUERY_MODES:
        raise ValueError(f"unknown query mode {query_mode!r}: use {' or '.join(QUERY_MODES)}")
    with llm.counting() as cost:
        pool = [{**p, "rank": n} for n, p in enumerate(retrieve_chunks(question, k, corpus=corpus, chunker=chunker), 1)]
        trace.append({"step": "retrieve", "query": question, "chunks": [p["chunk_id"] for p in pool],
                      "labels": [p["id"] for p in pool]})
        lines, answer, retrievals, spent, force = [], None, 0, 0, False
        while answer is None:
            forced = force or len(lines) >= max_sentences or spent + SEGMENT_TOKENS > max_tokens
            n = len(lines) + 1
            seg = write_segment(question, pool, lines, forced, threshold)
            spent += seg["tokens"]
            trace.append(_seg_step("segment", n, seg, threshold))
            if seg["low"] and retrievals >= max_retrievals:
                trace.append({"step": "skip", "n": n, "reason": f"retrieval budget spent ({max_retrievals})"})
            elif seg["low"]:
                retrievals += 1
                query = make_query(question, seg["line"], seg["low"], query_mode)
                brought = new_passages(query, pool, new_k, corpus, chunker)
                trace.append({"step": "trigger", "n": n, "retrieval": retrievals,
                              "confidence": round(seg["confidence"], 4),
                              "low": trace[-1]["low"], "query": query, "chunks": [p["chunk_id"] for p in brought],
                              "labels": [p["id"] for p in brought]})
                if brought:
                    pool += brought
                    seg = write_segment(question, pool, lines, forced, threshold)
                    spent += seg["tokens"]
                    trace.append(_seg_step("regenerate", n, seg, threshold))
                else:
                    trace.append({"step": "skip", "n": n, "reason": "no new passages: segment kept"})
            line = seg["line"]
            mid = MID_ANSWER.search(line) if seg["kind"] == "sentence" else None
            if mid:  # seen on the real engine: the sentences and the answer line on one line; split, or the
                # "Answer: Y" part was scored as an uncited sentence (FLARE's citation recall 0.375 on 20 questions)
                lines += [line[:mid.start()].strip()] if line[:mid.start()].strip() else []
                answer = line[mid.end():]
            elif seg["kind"] == "answer":
                answer = line[seg["skip"]:]
            elif not line or line.upper().startswith("END") or any(strip_cites(line) == strip_cites(x) for x in lines):
                force = True
                trace.append({"step": "stop", "n": n, "reason": "empty, END or repeated line: answer line asked for"})
            else:
                lines.append(line)
    return finish(question, lines, answer, pool, trace, retrievals, threshold, cost, start)


def finish(question, lines, answer, pool, trace, retrievals, threshold, cost, start):
    valid, sentences, invalid = {p["id"] for p in pool}, [], []
    for text, ids in (pair for line in lines for pair in split_cited(line)):
        if not is_idk(text):
            invalid += [{"sentence": len(sentences), "id": i} for i in ids if i not in valid]
            sentences.append({"text": text, "cites": [i for i in ids if i in valid]})
    answer = strip_cites(answer).strip()
    idk = is_idk(answer)
    answer = IDK if idk else answer
    text = " ".join(f"{s['text']}{''.join(f' [{c}]' for c in s['cites'])}" for s in sentences) or answer
    result = {"question": question, "answer": answer, "text": text, "sentences": sentences, "passages": pool,
              "invalid_ids": invalid, "idk": idk, "error": None, "style": "flare", "order": "arrival"}
    return steps.finish(result, "flare", trace, pool, cost, start, triggers=retrievals, threshold=threshold)


# ---- the --eval harness the three patterns share (verify_citations does the scoring) ----

def flare_stats(r):
    segs = [s for s in r["trace"] if s["step"] == "segment"]
    return {"triggers": r["triggers"], "segments": len(segs), "low_segments": sum(bool(s["low"]) for s in segs),
            "min_confidence": min((s["confidence"] for s in segs), default=1.0)}


def summarize_stats(stats, settings):
    """The FLARE figures under the table, from the per-question figures and the run's settings -> (lines, dict for
    --json; grading/grade.py recomputes it from the file's per_question)."""
    threshold, query_mode = settings["threshold"], settings["query_mode"]
    have = [s for s in stats if "triggers" in s]
    n, total = len(have), sum(s["triggers"] for s in have)
    out = {"threshold": threshold, "query": query_mode, "questions": n, "retrievals_triggered": total,
           "questions_with_trigger": sum(s["triggers"] > 0 for s in have), "segments": sum(s["segments"] for s in have),
           "low_segments": sum(s["low_segments"] for s in have),
           "f1_with_trigger": pattern_cli.mean(s["f1"] for s in have if s["triggers"]),
           "f1_without_trigger": pattern_cli.mean(s["f1"] for s in have if not s["triggers"])}
    lines = [f"\nFLARE threshold {threshold} (query {query_mode}): {total} retrievals triggered on "
             f"{out['questions_with_trigger']}/{n} questions ({total / max(1, n):.2f} per question); "
             f"{out['low_segments']}/{out['segments']} segments had a token under the threshold",
             f"F1 with a trigger {pattern_cli.fmt(out['f1_with_trigger'])}, "
             f"without {pattern_cli.fmt(out['f1_without_trigger'])}"]
    return lines, out


def parser():
    ap = pattern_cli.pattern_parser("FLARE: retrieve when a look-ahead segment has a low-confidence token.", DEMO)
    ap.add_argument("--threshold", type=float, default=THRESHOLD, help="token probability that triggers retrieval")
    ap.add_argument("--query", choices=QUERY_MODES, default="masked", help="how a segment becomes a query")
    ap.add_argument("--k", type=int, default=K, help="passages retrieved for the question first")
    ap.add_argument("--new-k", type=int, default=NEW_K, help="new passages per triggered retrieval")
    ap.add_argument("--max-retrievals", type=int, default=MAX_RETRIEVALS, help="triggered retrievals at most")
    ap.add_argument("--max-sentences", type=int, default=MAX_SENTENCES, help="sentences before the answer line")
    ap.add_argument("--max-tokens", type=int, default=MAX_TOKENS, help="generated tokens, about, in all")
    return ap


def settings(args):
    """Parsed flags -> (flare_answer keyword arguments, cache settings); ValueError on a bad value. benchmark.py
    calls it with parser().parse_args([]) so its rows share --eval's cache."""
    if (not 0 < args.threshold <= 1 or min(args.k, args.new_k, args.max_sentences, args.max_tokens) < 1
            or args.max_retrievals < 0):
        raise ValueError("--threshold must be in (0, 1]; --k, --new-k, --max-sentences, --max-tokens at least 1")
    kw = dict(k=args.k, new_k=args.new_k, threshold=args.threshold, query_mode=args.query,
              max_retrievals=args.max_retrievals,
              max_sentences=args.max_sentences, max_tokens=args.max_tokens, corpus=args.corpus, chunker=args.chunker)
    return kw, kw


def main():
    args, kw, key = pattern_cli.parse_settings("flare", parser, settings)
    answer = lambda q: flare_answer(q, **kw)
    if not args.eval:
        return pattern_cli.ask("flare", args, answer, key, lambda r: f"retrievals triggered {r['triggers']}  ")
    import harness   # --eval: checked as the lab at full strength checks (harness.evaluate)
    harness.pattern_main("flare", args, answer, key, flare_stats, summarize_stats, generated=False)


if __name__ == "__main__":
    main()
