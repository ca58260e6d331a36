"""Week 6: a multi-hop question -> the simple questions to answer in order (multihop.py runs them).

    python multihop.py --mode iterative "question"   # shows the sub-questions, then each hop

- `decompose()`: a schema-constrained list (never line-splitting); later sub-questions say [ANSWER_N] for
  sub-question N's answer. The reply is cleaned: "#1" -> [ANSWER_1]; empty items, restatements of the whole
  question and duplicates dropped; a placeholder pointing at its own or a later step points at the one
  before; a first step that waits for an answer gets "What is <look_up_first>?" asked before it. Each repair
  is a trace warning. Measured: 12 of 50 chains broke before these repairs, 1 after; F1 0.396 -> 0.445
  (router_eval.py, 50 multi questions).
- `plan()`: decompose() with an unreadable reply turned into a warning and [] (the caller falls back).
- `fill()`: placeholders -> earlier hop answers, and which ones cannot be filled (the chain is broken).
- `answer_hop()`: one hop's short answer from its passages, with the ID of the source that states it;
  `is_answerable()`: whether the facts found so far already answer the question (iterative_answer stops then).
"""
import json
import re

import llm
from generate import check_question, format_sources, is_idk, shots
from lab import steps

MAX_PARTS = 3        # sub-questions (and hops) at most: 195 of the 200 golden multi questions have 2-3 hops
PLACEHOLDER = re.compile(r"\[ANSWER_(\d+)\]")
LOOSE_PLACEHOLDER = re.compile(r"\[\s*answer[\s_-]*(\d+)\s*\]|#(\d+)\b", re.I)  # what small models write
STOP_WORDS = {"a", "an", "the", "of", "in", "on", "at", "to", "for", "by", "from", "with", "and", "or", "is", "was",
              "are", "were", "be", "did", "does", "do", "who", "whom", "whose", "what", "which", "where", "when", "how",
              "that", "this", "it", "its", "s"}


# without look_up_first the model copied the whole question as its only sub-question 3 times in 5 (8 golden
# questions tried); with it, chains like 'Who made X?' -> 'What is the birthplace of [ANSWER_1]?' came out
DECOMPOSE_SYSTEM = """Split a question into the simple questions that must be answered, in order, to answer it.
First copy, word for word, the part of the question that describes a thing without naming it: that is what
to look up first ("nothing" if the question names everything). Then write the sub-questions: the first asks
what that thing is; later ones write [ANSWER_1], [ANSWER_2], ... for the answers of earlier ones.
Never copy the whole question.

""" + shots([("In which country was the architect of the Halvard Tower born?", "the architect of the Halvard Tower",
              ["Who was the architect of the Halvard Tower?", "In which country was [ANSWER_1] born?"]),
             ("Which lake is deeper, Lake Orvo or Lake Tamsin?", "nothing",
              ["How deep is Lake Orvo?", "How deep is Lake Tamsin?"]),
             ("What is the population of the capital of the country where Mount Kela stands?",
              "the country where Mount Kela stands", ["In which country does Mount Kela stand?",
                                                      "What is the capital of [ANSWER_1]?",
                                                      "What is the population of [ANSWER_2]?"]),
             ("The river that flows through Dunmere is a tributary of which river?",
              "The river that flows through Dunmere",
              ["Which river flows through Dunmere?", "[ANSWER_1] is a tributary of which river?"])],
            ("look_up_first", "sub_questions"))


def _same_words(a, b):
    """True when two questions use the same words, in any order or case: a duplicate, not another part."""
    x, y = (set(re.findall(r"[a-z0-9]+", s.lower())) for s in (a, b))
    return bool(x) and x == y


def _content_words(text):
    return set(re.findall(r"[a-z0-9]+", PLACEHOLDER.sub(" ", text).lower())) - STOP_WORDS


def _restates(sub, question):
    """True when `sub` asks all the question asks (at most one content word in 8 missing): not a part of it.
    A part leaves something out: 'Who directed Jump for Glory?' is a part of 'Who is the spouse of the director
    of Jump for Glory?' though 8 of their 9 words are shared (a word-overlap test dropped such parts)."""
    q = _content_words(question)
    return bool(q) and len(q - _content_words(sub)) <= len(q) // 8


def decompose(question, max_parts=MAX_PARTS, trace=None):
    """Question -> sub-questions, later ones saying [ANSWER_N]; [] when nothing usable is left; LLMError when
    the reply is not JSON. The raw reply and every problem go to `trace`.
    'In which village was the designer of Ashford Bridge born?'
      -> ['Who designed Ashford Bridge?', 'In which village was [ANSWER_1] born?']"""
    question, trace = check_question(question), steps.trace(trace)
    schema = {"type": "object", "required": ["look_up_first", "sub_questions"], "properties": {
        "look_up_first": {"type": "string", "maxLength": 120},
        "sub_questions": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": max_parts}}}
    reply = llm.complete_json(f"Question: {question}", schema, system=DECOMPOSE_SYSTEM, max_tokens=60 + 50 * max_parts)
    raw = reply.get("sub_questions") if isinstance(reply, dict) else None
    raw = raw if isinstance(raw, list) else []
    warn = lambda msg: trace.append({"step": "warning", "message": f"decomposition: {msg}"})
    kept, number = [], {}
    for n, s in enumerate(raw[:max_parts], 1):
        s = LOOSE_PLACEHOLDER.sub(lambda m: f"[ANSWER_{m.group(1) or m.group(2)}]", " ".join(str(s).split()))
        if not re.search(r"[A-Za-z0-9]", PLACEHOLDER.sub("", s)):
            warn(f"sub-question {n} is empty, dropped")
        elif _restates(s, question):
            warn(f"sub-question {n} repeats the question, dropped")
        elif any(_same_words(s, k) for k in kept):
            warn(f"sub-question {n} repeats an earlier one, dropped")
        else:
            kept.append(s)
            number[n] = len(kept)
    # renumber after drops; a placeholder for a dropped item becomes [ANSWER_0], which never fills
    out = [PLACEHOLDER.sub(lambda m: f"[ANSWER_{number.get(int(m.group(1)), 0)}]", s) for s in kept]
    look_up = str(reply.get("look_up_first", "")).strip(" .?") if isinstance(reply, dict) else ""
    out = _ask_first(out, look_up, question, max_parts, warn)
    if len(raw) > max_parts:
        warn(f"{len(raw)} sub-questions, kept the first {max_parts}")
    if not out:
        warn(f"empty decomposition (model wrote {json.dumps(raw)[:120]})")
    trace.append({"step": "decompose", "look_up_first": reply.get("look_up_first") if isinstance(reply, dict) else None,
                  "raw": raw, "sub_questions": out})
    return out


def _ask_first(subs, look_up, question, max_parts, warn):
    """Placeholders that point at their own or a later step never fill. In the first sub-question they stand for
    the thing named in look_up_first, so 'What is <look_up_first>?' is asked first (seen: 'What time does the
    state where [ANSWER_1] stop selling booze?' alone); later, they point at the step before.
    (['Who wed [ANSWER_1]?'], 'the director of X') -> ['What is the director of X?', 'Who wed [ANSWER_1]?']"""
    out = [PLACEHOLDER.sub(lambda m: f"[ANSWER_{n}]" if int(m.group(1)) > n else m.group(0), s)
           for n, s in enumerate(subs)]  # in sub-question n+1, [ANSWER_m] with m > n is self or forward
    if out != subs:
        warn("a placeholder pointed at its own or a later sub-question: it now points at the one before")
    if not out or "[ANSWER_0]" not in out[0]:
        return out
    words = look_up.split()
    if (len(words) < 2 or look_up.lower() in ("nothing", "none") or _restates(look_up, question)
            or len(out) >= max_parts):
        return out
    warn(f"sub-question 1 waits for an answer no step asks for: 'What is {look_up}?' asked first")
    shift = lambda s: PLACEHOLDER.sub(lambda m: f"[ANSWER_{int(m.group(1)) + 1}]", s)
    return [f"What is {look_up}?"] + [shift(s) for s in out]


def plan(question, max_parts, trace):
    """decompose(), with an unreadable reply (LLMError) turned into a trace warning and []."""
    try:
        return decompose(question, max_parts, trace)
    except llm.LLMError as e:
        trace.append({"step": "warning", "message": f"decomposition failed: {e}"})
        return []


def fill(sub_question, answers):
    """Placeholders -> earlier hop answers (None = that hop found none). Returns (query, unfillable numbers).
    ('Where was [ANSWER_1] born?', ['Tomas Vell']) -> ('Where was Tomas Vell born?', [])"""
    bad = [int(n) for n in PLACEHOLDER.findall(sub_question)
           if not 0 < int(n) <= len(answers) or answers[int(n) - 1] is None]
    return (sub_question if bad else PLACEHOLDER.sub(lambda m: answers[int(m.group(1)) - 1], sub_question)), bad


# ---- hops: what iterative_answer asks at each step ----

HOP_SYSTEM = """Answer the question from the sources in a few words (a name, place, date or number), not a sentence,
and give the ID of the source that states it. If no source states it, answer "unknown" with source "none".

<source id="S1" title="Halvard Tower">The Halvard Tower in Brisk was designed by the architect Lena Osk.</source>
<source id="S2" title="Brisk">Brisk is a port city on the north coast.</source>
""" + shots([("Who was the architect of the Halvard Tower?", "Lena Osk", "S1"),
             ("When was Lena Osk born?", "unknown", "none")], ("answer", "source"))

ANSWERABLE_SYSTEM = """You get a question and the facts found so far. Say "yes" only if the facts alone give the answer;
say "no" if something the question asks about is still missing.

Facts: Who was the architect of the Halvard Tower? -> Lena Osk
Question: In which country was the architect of the Halvard Tower born?
{"answerable": "no"}
Facts: Who was the architect of the Halvard Tower? -> Lena Osk; In which country was Lena Osk born? -> Norway
Question: In which country was the architect of the Halvard Tower born?
{"answerable": "yes"}"""
YES_NO = {"type": "string", "enum": ["yes", "no"]}


# ---- hops ----

def answer_hop(query, passages):
    """One hop -> (short answer or None, chunk_id of its source or None). LLMError on a bad reply."""
    schema = {"type": "object", "required": ["answer", "source"], "properties": {
        "answer": {"type": "string", "maxLength": 80},
        "source": {"type": "string", "enum": [p["id"] for p in passages] + ["none"]}}}
    reply = llm.complete_json(f"{format_sources(passages)}\nQuestion: {query}", schema, system=HOP_SYSTEM,
                              max_tokens=60)
    answer = " ".join(str(reply.get("answer", "")).split()).strip(" .")
    source = next((p["chunk_id"] for p in passages if p["id"] == reply.get("source")), None)
    return (None if is_idk(answer) else answer), source


def is_answerable(question, facts):
    schema = {"type": "object", "properties": {"answerable": YES_NO}, "required": ["answerable"]}
    reply = llm.complete_json(f"Facts: {'; '.join(facts)}\nQuestion: {question}", schema, system=ANSWERABLE_SYSTEM,
                              max_tokens=16)
    return str(reply.get("answerable", "")).lower() == "yes"
