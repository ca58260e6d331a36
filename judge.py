"""Week 5: the measuring machine. Does a source support a claim? Is an answer faithful, right?

    python judge.py   # audit 10 golden questions (half single, half multi): table
    python judge.py --limit 30 --json results/judge_audit.json
    python -m experiments.judge_eval   # the judge itself on labelled pairs (experiments/judge_pairs.py builds them)

Expected output: the settings, a progress bar, then one row per question (faithfulness, EM, F1) and a
mean row; ~20 s per question on the embedded engine the first time, ~1 s when every verdict is cached.

- `supports(claim, source, question=None, answer=None)`: the one entry point. Its design, `answer_check`,
  was chosen on dev pairs among seven (experiments/judge_eval.py, results/judge_eval_dev.json) because a YES/NO verdict
  passes a wrong answer whose names appear in the source (the bridge entity, the other side of a comparison):
  1. the claim's question and answer: its own 'The answer to "q" is a.' form, or the `question` and short
     `answer` a sentence carries (verify_citations passes both); with neither, only step 4 runs;
  2. the model answers the question from the source alone; the claim holds when the two answers agree
     (SQuAD normalisation, containment or token F1 >= 0.5, numbers equal), and fails when the source never
     names the claim's answer;
  3. when they differ, the model picks between the two (multiple choice); if it keeps its own, only a very
     confident YES (P(YES) >= RESCUE_P_YES from the verdict token's logprobs) saves the claim: an alias;
  4. the YES/NO verdict decides where there is nothing to compare (yes/no answers, "not stated").
  All steps share one system prompt, so after the first the engine reads only the last lines: the source is
  read once per claim, and once per question for every claim about it.
- `answer_chain` (a candidate, not the default): a source of several passages read as a chain (chain_answer: the
  passage naming the question's subject first, the bridge asked for apart from the answer). It lost to
  answer_check on two-passage dev pairs (experiments/judge_pairs.py --two-passage; results/judge2_eval_dev.json).
- RAG_JUDGE_MODEL=bespoke-minicheck (any Ollama fact-checking model) judges instead, through the same door.
- Every reply is cached under cache.keyed("judge", kind, model, claim or question, source): this file's code
  and its imports' (the prompts among them) name it, in `.rag/cache/judge.jsonl`, with the seconds it cost.
- `exact_match` / `f1`: SQuAD normalisation (lower case, no punctuation, no articles), best over the
  answer and its aliases.
Not handled: a yes/no claim gets only the verdict, which is lenient; a true answer phrased at another
granularity than the source's ('Frankfurt am Main' where the source says Germany) can be refused.
"""
import argparse
import contextlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

import llm
from lab.answers import (NOT_STATED, about, answers_match, exact_match, f1, named_in, normalize_answer, stated_fuller,
                     subject_names)
from lab.cache import Cache, code_key, keyed
from retrieve import CORPUS_DIR, GOLDEN, eval_items
from vector_index import CorpusError

HERE = Path(__file__).parent
JUDGE_STYLES = ("evidence", "verdict")  # quote what the source says first, or the verdict alone
JUDGE_STYLE = "verdict"    # measured better: results/judge_pairs*.json
RESCUE_P_YES = 0.86   # answer_check: P(YES) that overrules the multiple choice; chosen on the dev pairs
RIVAL_MARGIN = 0.0    # answer_contrast (a candidate): P(YES) of the claim's answer minus the model's own to keep it
JUDGE_DESIGN = "answer_check"   # chosen on the dev pairs among judge_eval.DESIGNS: results/judge_eval_dev.json;
# answer_chain (sources of several passages read as a chain) lost to it on two-passage dev pairs:
# results/judge2_eval_dev.json (support 0.733 against 0.933, n = 30 per kind)


class Verdict(BaseModel):
    verdict: Literal["YES", "NO"]


class Evidence(BaseModel):
    evidence: str = Field(max_length=200)
    verdict: Literal["YES", "NO"]


class Answer(BaseModel):
    answer: str = Field(max_length=80)


class ChainAnswer(BaseModel):
    bridge: str = Field(max_length=80)
    answer: str = Field(max_length=80)


VERDICT = Verdict.model_json_schema()["properties"]["verdict"]   # {"enum": ["YES", "NO"], "type": "string", ...}
SCHEMAS = {"verdict": Verdict.model_json_schema(), "evidence": Evidence.model_json_schema()}
MAX_SOURCE_CHARS = 6000       # a longer source is cut: a 1.5B model judges worse on very long inputs

SUPPORT_RULES = """You check whether a source supports a claim. Use only the source, not your own knowledge.
Say YES only if the source states what the claim says: the same people, places, things and numbers, in the
same relation to each other. Say NO if the claim adds a fact the source does not state, if the source
mentions the same names in a different role, or if the source is about something else."""

SUPPORT_EXAMPLES = [  # (source, claim, what the source says about it, verdict)
    ("Ashford Bridge is a stone bridge in Corran. It was designed by the engineer Tomas Vell in 1872.",
     "Tomas Vell designed Ashford Bridge.", "It was designed by the engineer Tomas Vell.", "YES"),
    ("Ashford Bridge is a stone bridge in Corran. It was designed by the engineer Tomas Vell in 1872.",
     'The answer to "Who designed Ashford Bridge?" is Corran.',
     "Tomas Vell designed it; Corran is where the bridge stands, not its designer.", "NO"),
    ("Medra is a small island off Port Sallow with about 300 residents.",
     "Medra has about 300 residents and a lighthouse.", "About 300 residents; no lighthouse is mentioned.", "NO"),
    ("The River Lente flows 84 kilometres from the Brannock Hills to the sea.",
     'The answer to "How long is the River Lente?" is 84 km.', "The River Lente flows 84 kilometres.", "YES"),
    ("Hartmoor is a village in the county of Wessmark, known for its cheese fair.",
     "Tomas Vell was born in Hartmoor.", "The source does not mention Tomas Vell.", "NO"),
]


def support_system(style):
    shots = [f"Source: {src}\nClaim: {claim}\n" + json.dumps(
        {"evidence": ev, "verdict": v} if style == "evidence" else {"verdict": v})
        for src, claim, ev, v in SUPPORT_EXAMPLES]
    first = ("\nFirst write as evidence what the source says about the claim, then the verdict."
             if style == "evidence" else "")
    return SUPPORT_RULES + first + "\n\n" + "\n\n".join(shots)


def cache():
    return Cache.shared("judge")


def _cached(kind, payload, compute):
    key = keyed("judge", kind, llm.engine_info()["model"], payload)
    hit = cache().get(key)
    return hit if hit is not None else cache().put(key, compute())


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


_SPENT = {"calls": 0, "seconds": 0.0}   # what every judge reply handed out cost when first computed (cached or not)
_HANDED = []   # (key, calls, seconds) of the replies handed out inside spending() blocks: which a block shares
_DEPTH = [0]   # how many spending() blocks are open


def timed(kind, payload, compute):
    """A cached model reply with the seconds and calls it cost when it was computed."""
    def run():
        with llm.counting() as cost:
            value = compute()
        return {"value": value, "seconds": round(cost["seconds"], 3), "calls": cost["calls"]}
    key = keyed("judge", kind, llm.engine_info()["model"], payload)
    hit = cache().get(key)
    reply = hit if hit is not None else cache().put(key, run())
    if _DEPTH[0]:
        _HANDED.append((str(key), reply["calls"], reply["seconds"]))
    _SPENT["calls"] += reply["calls"]
    _SPENT["seconds"] += reply["seconds"]
    return reply


@contextlib.contextmanager
def spending():
    """with spending() as c: ... -> the judge calls and seconds the block's verdicts cost when first computed, so a
    rerun from the cache reports the same judging cost as the first run (llm.counting sees live calls only), and
    c["replies"]: {key: (calls, seconds)} of the replies handed out in the block."""
    before, start, delta = dict(_SPENT), len(_HANDED), {}
    _DEPTH[0] += 1
    try:
        yield delta
    finally:
        _DEPTH[0] -= 1
        delta.update({k: v - before[k] for k, v in _SPENT.items()})
        delta["replies"] = {k: (c, s) for k, c, s in _HANDED[start:]}
        if not _DEPTH[0]:
            _HANDED.clear()   # the outermost block has read them


def verdict_reply(claim, source, style="verdict"):
    """The YES/NO prompt: {"value": {"yes": bool, "p_yes": float}, "seconds", "calls"}. p_yes is the
    probability of YES read from the verdict token's logprobs (1.0 / 0.0 when the engine gives none).
    style "shared": the shared system prompt of the answer_check design (its prefix is cached with the source)."""
    system = SHARED_SYSTEM if style == "shared" else support_system(style)
    return timed("verdict", [style, claim, source] + ([Cache.key(system)[:12]] if style == "shared" else []),
                  lambda: yes_no(system, f"Source: {source}\nClaim: {claim}", SCHEMAS.get(style, SCHEMAS["verdict"])))


def yes_no(system, user, schema=None):
    """One YES/NO verdict call -> {"yes": bool, "p_yes": P(YES) from the verdict token's logprobs}."""
    response = llm.chat([{"role": "system", "content": system}, {"role": "user", "content": user}],
                        schema=schema or SCHEMAS["verdict"], max_tokens=120, logprobs=True, top_logprobs=5)
    try:
        yes = str(json.loads(response.message.content or "").get("verdict", "")).strip().upper() == "YES"
    except (ValueError, AttributeError):
        raise llm.ReplyError(f"verdict is not JSON: {(response.message.content or '')[:80]!r}") from None
    return {"yes": yes, "p_yes": _p_yes(response, yes)}


def _p_yes(response, yes):
    """P(YES) / (P(YES) + P(NO)) at the verdict token, summed over its spellings in the top logprobs."""
    import math
    word = lambda t: t.strip().strip('"').upper()
    for lp in response.logprobs or []:
        if word(lp.token) in ("YES", "NO"):
            p = math.exp(lp.logprob)  # without a top list: the chosen token's probability, the rest to the other
            top = [(word(t.token), math.exp(t.logprob)) for t in (lp.top_logprobs or [])] \
                or [(word(lp.token), p), ("NO" if word(lp.token) == "YES" else "YES", 1 - p)]
            p_y, p_n = (sum(p for w, p in top if w == v) for v in ("YES", "NO"))
            return round(p_y / (p_y + p_n), 4) if p_y + p_n else float(yes)
    return float(yes)


def source_answer(question, source, system=None):
    """What the source gives as the answer to `question` ("not stated" when nothing): cached reply.
    `system`: another system prompt (experiments/judge_eval.py's candidate designs); default the shared one."""
    system = system or SHARED_SYSTEM

    def compute():
        return str(llm.complete_json(f"Source: {source}\nQuestion: {question}", ANSWER_SCHEMA,
                                     system=system, max_tokens=60).get("answer", "")).strip()
    return timed("answer", [question, source, Cache.key(system)[:12]], compute)


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
    return timed("chain", [question, ordered, Cache.key(CHAIN_SYSTEM)[:12]], compute)


def choose(question, source, options, system=None):
    """Which of `options` (or "not stated") the source gives as the answer: a cached reply."""
    options = sorted(set(options))  # a fixed order that does not favour the claim's option
    schema = {"type": "object", "properties": {"answer": {"type": "string", "enum": options + ["not stated"]}},
              "required": ["answer"]}
    listed = "\n".join(f"- {o}" for o in options + ["not stated"])
    system = system or SHARED_SYSTEM
    return timed("choice", [question, source, options, Cache.key(system)[:12]], lambda: str(llm.complete_json(
        f"Source: {source}\nQuestion: {question}\nOptions:\n{listed}", schema, system=system,
        max_tokens=60).get("answer", "")))


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
        return verdict_reply(claim, self.source, "shared")


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


def ask(user, system, schema, trace, what, max_tokens=40):
    """A pattern's JSON verdict (Self-RAG's and CRAG's critics), or {} with a warning in the trace when the reply
    is out of shape: one model call, not cached here (the pattern's rows are)."""
    try:
        reply = llm.complete_json(user, schema, system=system, max_tokens=max_tokens)
        return reply if isinstance(reply, dict) else {}
    except llm.ReplyError as e:
        trace.append({"step": "warning", "message": f"{what}: {e}"})
        return {}


def judge_model():
    """RAG_JUDGE_MODEL: an Ollama fact-checking model that judges instead (e.g. bespoke-minicheck), or None."""
    return os.environ.get("RAG_JUDGE_MODEL") or None


def minicheck(claim, source, model):
    """A fact-checking model's verdict, in the prompt format Bespoke-MiniCheck was trained on
    ("Document: ...\nClaim: ..." -> "Yes"/"No"): a cached reply."""
    return timed("minicheck", [model, claim, source], lambda: llm.complete(
        f"Document: {source}\nClaim: {claim}", model=model, max_tokens=4).strip().lower().startswith("yes"))


def supports(claim, source, style=None, question=None, answer=None):
    """True when the source states the claim. Cached. supports('Vell designed it.', 'Vell designed it.') -> True
    `question` (and the short `answer` a sentence gives to it) let the judge check the claim's answer against
    the source's own answer to the question (see claim_slot); without them a free sentence gets the verdict."""
    try:
        if judge_model():
            return bool(minicheck(claim, source[:MAX_SOURCE_CHARS], judge_model())["value"])
        return bool(judge_claim(claim, source, style=style, question=question, answer=answer)[0])
    except llm.ReplyError:  # an unusable reply counts as "not supported" and is not cached
        return False


def joined(passages):
    """Several passages as one source, each kept recognisable."""
    return "\n\n".join(p["text"] for p in passages)


def faithfulness(sentences, passages):
    """Share of answer sentences that the retrieved passages, together, support (1.0 when none)."""
    if not sentences:
        return 1.0
    source = joined(passages)
    return sum(supports(s["text"], source) for s in sentences) / len(sentences)


def audit(result, item):
    """One generate() result against its golden item -> {faithfulness, em, f1}. (No relevance score: the 1-5
    one did not tell right answers from wrong ones, results/relevance_auc.json.)"""
    return {"faithfulness": faithfulness(result["sentences"], result["passages"]),
            "em": exact_match(result["answer"], item), "f1": f1(result["answer"], item)}


def main():
    from generate import generate
    from tqdm import tqdm
    ap = argparse.ArgumentParser(description="Audit answers (faithfulness, EM, F1).")
    ap.add_argument("--limit", type=int, default=10, help="golden questions to audit (half single, half multi)")
    ap.add_argument("--golden", type=Path, default=GOLDEN, help="golden questions")
    ap.add_argument("--corpus", type=Path, help="folder of documents (.txt .md .pdf .docx .html; default corpus/)")
    ap.add_argument("--json", type=Path, help="write the table here")
    args = ap.parse_args()
    print(f"model={llm.engine_info()['model']} judge={JUDGE_DESIGN}/{code_key('judge')} golden={args.golden} "
          f"limit={args.limit}")
    try:
        kw = {"corpus": args.corpus} if args.corpus else {}
        rows = []
        for item in tqdm(eval_items(args.golden, args.limit, args.corpus or CORPUS_DIR), desc="audit", unit="q",
                         file=sys.stderr):
            rows.append({"id": item["id"], "type": item["type"], **audit(generate(item["question"], **kw), item)})
    except (llm.LLMError, CorpusError) as e:
        sys.exit(f"judge: {e}")
    cols = ("faithfulness", "em", "f1")
    print(f"\n{'id':40} {'type':6}" + "".join(f"{c:>13}" for c in cols))
    for r in rows:
        print(f"{r['id'][:40]:40} {r['type']:6}" + "".join(f"{r[c]:13.3f}" for c in cols))
    mean = {c: sum(r[c] for r in rows) / len(rows) for c in cols}
    print(f"{'mean':40} {'':6}" + "".join(f"{mean[c]:13.3f}" for c in cols))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"n": len(rows), "mean": mean, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
