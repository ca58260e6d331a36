"""Layer on week 4's judge (judge.supports): compare the claim's answer with the source's own, instead of a bare
YES/NO. A YES/NO verdict passes a wrong answer whose names appear in the source (the bridge entity of a two-hop
question, the other side of a comparison); on the dev pairs the plain verdict got such hard wrong answers right 2
times in 10 (labs/design/week4-judge.md).

    python -m experiments.judge_eval --designs verdict,answer_check   # this layer against the week's verdict

Measured by the ablation (`python benchmark.py --ablation`, results/issue59/ablation.txt, embedded 1.5B, at
0a3f912): the answer check reads its verdicts, so without it no answer is verified; with it 0.418 (single) of
golden.json test's right answers are (n = 134), and 0.179 of debian/'s (n = 56), each at 0.92 precision or more.
Cost: up to 3 s a question; citation precision as it scores it is 0.004-0.031 lower (a stricter judge).

The design, `answer_check`, was chosen on dev pairs among seven (experiments/judge_eval.py,
results/judge_eval_dev.json):
  1. the claim's question and answer: its own 'The answer to "q" is a.' form, or the `question` and short
     `answer` a sentence carries (verify() passes both); with neither, only step 4 runs;
  2. the model answers the question from the source alone; the claim holds when the two answers agree
     (SQuAD normalisation, containment or token F1 >= 0.5, numbers equal), and fails when the source never
     names the claim's answer;
  3. when they differ, the model picks between the two (multiple choice); if it keeps its own, only a very
     confident YES (P(YES) >= RESCUE_P_YES from the verdict token's logprobs) saves the claim: an alias;
  4. the YES/NO verdict decides where there is nothing to compare (yes/no answers, "not stated").
All steps share one system prompt, so after the first the engine reads only the last lines: the source is read once
per claim, and once per question for every claim about it. `verify` is week 5's citations.verify with this judge:
each sentence judged with the result's question and short answer, and how the judge decided ("answer", "choice",
"rescue", "verdict", "minicheck" or "failed"), which the calibrated answer check reads.
- `answer_chain` (a candidate, not the default): a source of several passages read as a chain. It lost to
  answer_check on two-passage dev pairs (experiments/judge_pairs.py --two-passage; results/judge2_eval_dev.json).
- RAG_JUDGE_MODEL=bespoke-minicheck (any Ollama fact-checking model) judges instead, through the same door.
Not handled: a true answer phrased at another granularity than the source's ('Frankfurt am Main' where the source
says Germany) can be refused.
"""
import json
import os
import re

from pydantic import BaseModel, Field

import citations
import llm
from judge import JUDGE_STYLE, MAX_SOURCE_CHARS, SUPPORT_EXAMPLES, joined, timed, verdict_reply
from lab.answers import NOT_STATED, about, answers_match, named_in, normalize_answer, stated_fuller, subject_names
from lab.cache import Cache

MODULE = "layers.judge_answers"   # the replies this layer's prompts give are keyed by its code
RESCUE_P_YES = 0.86   # P(YES) that overrules the multiple choice; chosen on the dev pairs
RIVAL_MARGIN = 0.0    # answer_contrast (a candidate): P(YES) of the claim's answer minus the model's own to keep it
JUDGE_DESIGN = "answer_check"   # chosen on the dev pairs among judge_eval.DESIGNS: results/judge_eval_dev.json;
# answer_chain (sources of several passages read as a chain) lost to it on two-passage dev pairs:
# results/judge2_eval_dev.json (support 0.733 against 0.933, n = 30 per kind)


class Answer(BaseModel):
    answer: str = Field(max_length=80)


class ChainAnswer(BaseModel):
    bridge: str = Field(max_length=80)
    answer: str = Field(max_length=80)


ANSWER_SCHEMA = Answer.model_json_schema()
CLAIM_FORM = re.compile(r'^\s*The answer to "(.+)" is (.+?)\.?\s*$', re.S)  # how verifiers phrase a short answer
BARE_ANSWER_WORDS = 6         # a claim this short and without a full stop, given with its question, is an answer


def claim_slot(claim, question=None, answer=None):
    """(question, answer) a claim puts to the source, or None when it has none (then only the verdict counts):
    the claim's own 'The answer to "q" is a.' form; else the given question with the given answer when the
    claim states it, or (no answer given) with the claim itself when it is a bare answer of a few words.
    'The answer to "Who designed it?" is Tomas Vell.' -> ('Who designed it?', 'Tomas Vell')
    ('Vell, an engineer, designed it.', 'Who designed it?', 'Vell') -> ('Who designed it?', 'Vell')"""
    if m := CLAIM_FORM.match(claim):
        return m.group(1).strip(), m.group(2).strip()
    if not question:
        return None
    if answer and normalize_answer(answer) not in NOT_STATED and named_in(claim, answer, 1.0):
        return question, answer
    bare = answer is None and len(claim.split()) <= BARE_ANSWER_WORDS and not claim.rstrip().endswith((".", "!", "?"))
    return (question, claim.strip()) if bare else None


SHARED_RULES = """You check answers and claims against a source. Use only the source, not your own knowledge.
The source may name several people, places, numbers and dates in different roles: read what is asked carefully.
After the source comes one task:
- "Question:": reply with the shortest answer the source gives, copied from it (a name, place, number, date or
  short phrase), or "not stated" when the source does not answer the question.
- "Question:" with "Options:": reply with the option the source gives as the answer, or "not stated".
- "Claim:": reply YES only if the source states what the claim says (the same names and numbers in the same
  relation), NO if the claim adds a fact the source does not state or puts a name in another role."""
SHARED_EXAMPLES = [  # (source, task, reply)
    (SUPPORT_EXAMPLES[0][0], "Question: Who designed Ashford Bridge?", {"answer": "Tomas Vell"}),
    (SUPPORT_EXAMPLES[0][0], "Question: When was the bridge in Corran designed?", {"answer": "1872"}),
    (SUPPORT_EXAMPLES[0][0], "Question: Who designed Ashford Bridge?\nOptions:\n- Corran\n- Tomas Vell\n- not stated",
     {"answer": "Tomas Vell"}),
    (SUPPORT_EXAMPLES[0][0], 'Claim: The answer to "Who designed Ashford Bridge?" is Corran.', {"verdict": "NO"}),
    (SUPPORT_EXAMPLES[0][0], "Claim: Tomas Vell designed Ashford Bridge in 1872.", {"verdict": "YES"}),
    (SUPPORT_EXAMPLES[4][0], "Question: In which village was Tomas Vell born?", {"answer": "not stated"}),
    ("Corran is a market town on the River Lente.\n\n"
     "Ashford Bridge is a stone bridge in Corran, designed by Tomas Vell.",
     "Question: On which river is the town where Ashford Bridge stands?", {"answer": "River Lente"}),
]
SHARED_SYSTEM = SHARED_RULES + "\n\n" + "\n\n".join(f"Source: {src}\n{task}\n{json.dumps(reply)}"
                                                      for src, task, reply in SHARED_EXAMPLES)


CHAIN_RULES = """You answer a question from numbered sources. Use only the sources, not your own knowledge.
Many questions take two steps: one source names something (a person, place, work or company), and another source
tells what the question asks about that thing. Reply with "bridge": that thing, copied from a source ("" when one
source answers the question on its own), then "answer": the final answer to the question, copied from a source, or
"not stated" when the sources do not answer it. The answer is what the question asks for, never the bridge."""
CHAIN_EXAMPLES = [  # (sources, question, reply): the judge's fictional facts again
    (["Ashford Bridge is a stone bridge in Corran, designed by Tomas Vell.",
      "Corran is a market town on the River Lente."],
     "On which river is the town where Ashford Bridge stands?", {"bridge": "Corran", "answer": "River Lente"}),
    (["Tomas Vell (1820-1891) was an engineer born in Hartmoor.",
      "Ashford Bridge is a stone bridge in Corran. It was designed by the engineer Tomas Vell in 1872."],
     "Where was the designer of Ashford Bridge born?", {"bridge": "Tomas Vell", "answer": "Hartmoor"}),
    (["The River Lente flows 84 kilometres from the Brannock Hills to the sea.",
      "Medra is a small island off Port Sallow with about 300 residents."],
     "How long is the River Lente?", {"bridge": "", "answer": "84 kilometres"}),
    (["Hartmoor is a village in the county of Wessmark, known for its cheese fair.",
      "Medra is a small island off Port Sallow with about 300 residents."],
     "Who designed the bridge in Hartmoor?", {"bridge": "", "answer": "not stated"}),
]


def numbered(passages):
    return "\n".join(f"Source {i}: {p}" for i, p in enumerate(passages, 1))


CHAIN_SYSTEM = CHAIN_RULES + "\n\n" + "\n\n".join(f"{numbered(src)}\nQuestion: {q}\n{json.dumps(reply)}"
                                                    for src, q, reply in CHAIN_EXAMPLES)
MAX_CHAIN = 4     # passages read as a chain; a source split into more is read whole


def passages_of(source):
    """The passages a joined source holds (joined() puts a blank line between them)."""
    return [p.strip() for p in source.split("\n\n") if p.strip()]


def chain_order(question, passages):
    """The passages with those naming more of the question's subject first (the start of the chain), ties in a fixed
    order, so the same passages cited in any order share one cached reply:
    ('Where was the designer of Ashford Bridge born?', [on Vell, on the bridge]) -> [bridge, Vell]"""
    names = subject_names(question)
    return sorted(passages, key=lambda p: (-sum(named_in(p, n, 1.0) for n in names), p))


def chain_answer(question, passages):
    """The sources read as a chain, the one naming the question's subject first: a cached reply whose value is
    {"bridge": what the first hop finds ("" for none), "answer": the final answer or "not stated"}. Asking for the
    bridge first keeps it out of the answer: asked the same question of two passages joined, the model tends to
    answer with the hop-1 entity (a company for its city, a person for the title they held)."""
    ordered = chain_order(question, passages)

    def compute():
        reply = llm.complete_json(f"{numbered(ordered)}\nQuestion: {question}", ChainAnswer.model_json_schema(),
                                  system=CHAIN_SYSTEM, max_tokens=80)
        return {"bridge": str(reply.get("bridge", "")).strip(), "answer": str(reply.get("answer", "")).strip()}
    return timed("chain", [question, ordered, Cache.key(CHAIN_SYSTEM)[:12]], compute, MODULE)


def source_answer(question, source, system=None):
    """What the source gives as the answer to `question` ("not stated" when nothing): cached reply.
    `system`: another system prompt (experiments/judge_eval.py's candidate designs); default the shared one."""
    system = system or SHARED_SYSTEM

    def compute():
        return str(llm.complete_json(f"Source: {source}\nQuestion: {question}", ANSWER_SCHEMA,
                                     system=system, max_tokens=60).get("answer", "")).strip()
    return timed("answer", [question, source, Cache.key(system)[:12]], compute, MODULE)


def choose(question, source, options, system=None):
    """Which of `options` (or "not stated") the source gives as the answer: a cached reply."""
    options = sorted(set(options))  # a fixed order that does not favour the claim's option
    schema = {"type": "object", "properties": {"answer": {"type": "string", "enum": options + ["not stated"]}},
              "required": ["answer"]}
    listed = "\n".join(f"- {o}" for o in options + ["not stated"])
    system = system or SHARED_SYSTEM
    return timed("choice", [question, source, options, Cache.key(system)[:12]], lambda: str(llm.complete_json(
        f"Source: {source}\nQuestion: {question}\nOptions:\n{listed}", schema, system=system,
        max_tokens=60).get("answer", "")), MODULE)


def judge_claim(claim, source, design=None, style=None, question=None, answer=None):
    """(supported, parts) under a judge design: "answer_check" (default), "answer_chain" (a candidate: answer_check
    with a source of several passages read as a chain), "answer_contrast" (another) or "verdict" (the old prompt
    alone; experiments/judge_eval.py holds the other candidates); parts holds each model reply used, with its
    seconds."""
    design, style, source = design or JUDGE_DESIGN, style or JUDGE_STYLE, source[:MAX_SOURCE_CHARS]
    parts = {}
    if design == "verdict":
        parts["verdict"] = verdict_reply(claim, source, style)
        return parts["verdict"]["value"]["yes"], parts
    return _answer_check(claim, source, claim_slot(claim, question, answer), parts, design == "answer_contrast",
                         design == "answer_chain"), parts


class Alone:
    """How the judge asks a source: on its own, after the judge's shared system prompt (the answer_check design's
    three prompts). experiments/context_checks.py's InContext asks the same three inside the answer's own prompt
    instead (a candidate that lost on dev)."""

    def __init__(self, source):
        self.source = source

    def answer(self, question):
        return source_answer(question, self.source)

    def choose(self, question, options):
        return choose(question, self.source, options)

    def verdict(self, claim):
        return verdict_reply(claim, self.source, "shared", SHARED_SYSTEM, MODULE)


def _answer_check(claim, source, slot, parts, contrast=False, chain=False, asker=None):
    """The answer_check design: the source's own answer first; multiple choice when the two differ and the source
    names both; the verdict only where no answer can be compared (no short answer, yes/no, "not stated").
    `asker` puts the three prompts (default Alone(source): one shared system prompt, so after the first the engine
    reuses system + source from cache); `source` is the text the name checks read."""
    asker = asker or Alone(source)

    def verdict():
        parts["verdict"] = asker.verdict(claim)
        return parts["verdict"]["value"]["yes"]
    if slot is None:
        return verdict()
    q, claimed = slot
    if normalize_answer(claimed) in ("yes", "no"):
        # nothing to compare, but a source that does not name everything the question is about cannot settle it
        # ('Are X and Y both directors?' against a paragraph on X alone): no call
        return about(q, source) and verdict()
    pieces = passages_of(source) if chain else []
    if 2 <= len(pieces) <= MAX_CHAIN:   # several passages: read in order, the bridge asked for apart from the answer
        reply = chain_answer(q, pieces)
        parts["answer"] = {**reply, "value": reply["value"]["answer"]}
        bridge = reply["value"]["bridge"]
    else:
        parts["answer"], bridge = asker.answer(q), ""
    said = parts["answer"]["value"]
    if not named_in(source, claimed):  # the source never names the claim's answer
        return False
    if bridge and answers_match(bridge, claimed, q) and not answers_match(said, claimed, q):
        return False   # the claim gives the first hop's answer, not the question's
    if normalize_answer(said) in NOT_STATED or not named_in(source, said):
        return verdict()  # no answer from the source to compare (none, or not copied from it): the verdict decides
    if answers_match(said, claimed, q) or stated_fuller(said, claimed, source):
        return True  # the same answer, or a fuller form of it the source states ('August 16, 1967' for '1967')
    parts["choice"] = asker.choose(q, [claimed, said])
    pick = parts["choice"]["value"]
    if answers_match(pick, claimed, q) and not answers_match(pick, said, q):
        return True
    # the model keeps its own answer; an alias or a coarser name of the same thing ('ASAP Rocky' for 'Rakim
    # Mayers', 'Germany' for 'Frankfurt am Main') still gets a very confident YES from the verdict
    verdict()
    if parts["verdict"]["value"]["p_yes"] >= RESCUE_P_YES:
        return True
    if not contrast:
        return False
    # answer_contrast (a candidate, not the default: it lost on the hard test pairs, results/judge_eval_test.json):
    # the claim also holds when P(YES) for it beats P(YES) for the model's own answer in the same form
    rival = asker.verdict(f'The answer to "{q}" is {said}.')
    parts["rival"] = rival
    return parts["verdict"]["value"]["p_yes"] - rival["value"]["p_yes"] > RIVAL_MARGIN  # a tie: the choice stands


def judge_model():
    """RAG_JUDGE_MODEL: an Ollama fact-checking model that judges instead (e.g. bespoke-minicheck), or None."""
    return os.environ.get("RAG_JUDGE_MODEL") or None


def minicheck(claim, source, model):
    """A fact-checking model's verdict, in the prompt format Bespoke-MiniCheck was trained on
    ("Document: ...\nClaim: ..." -> "Yes"/"No"): a cached reply."""
    return timed("minicheck", [model, claim, source], lambda: llm.complete(
        f"Document: {source}\nClaim: {claim}", model=model, max_tokens=4).strip().lower().startswith("yes"), MODULE)


def supports(claim, source, question=None, answer=None):
    """judge.supports with the claim's answer compared with the source's own (see claim_slot): True when the source
    states the claim. Cached. An unusable reply counts as "not supported" and is not cached."""
    return judged(claim, source, question, answer)[0]


def judged(claim, source, question=None, answer=None):
    """(supported, how the judge decided: "answer" when the source's own answer to the question matched the claim's,
    "choice", "rescue" (a very confident verdict after the choice), "verdict", "minicheck" or "failed")."""
    if judge_model():
        return bool(minicheck(claim, source[:MAX_SOURCE_CHARS], judge_model())["value"]), "minicheck"
    try:
        ok, parts = judge_claim(claim, source, question=question, answer=answer)
    except llm.ReplyError:
        return False, "failed"
    how = ("verdict" if "answer" not in parts else "answer" if "choice" not in parts and "verdict" not in parts
           else "choice" if "verdict" not in parts else "rescue" if "choice" in parts else "verdict")
    return bool(ok), how


def verify(result, on_verdict=None, step=citations.verify):
    """Week 5's verify (`step`) with this judge: each sentence judged against its cited passages with the result's
    question and short answer, and each verdict's `how` (judged()) set before on_verdict sees it."""
    slot = {} if result.get("idk") else {"question": result.get("question"), "answer": result.get("answer")}
    by_id, hows = {p["id"]: p for p in result["passages"]}, {}

    def judge_one(claim, source):
        ok, hows[claim, source] = judged(claim, source, **slot)
        return ok

    def with_how(n, v):
        v["how"] = hows.get((v["text"], joined([by_id[c] for c in v["cites"]])), "") if v["cites"] else ""
        if on_verdict:
            on_verdict(n, v)
    return step(result, supports=judge_one, on_verdict=with_how)
