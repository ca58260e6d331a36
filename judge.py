"""Week 5: the measuring machine. Does a source support a claim? Is an answer faithful, relevant, right?

    python judge.py                      # audit 10 golden questions (half single, half multi): table
    python judge.py --limit 30 --json results/judge_audit.json
    python judge.py --pairs 30           # accuracy of supports() on labelled pairs built from golden.json

Expected output: the settings, a progress bar, then one row per question (faithfulness, relevance,
EM, F1) and a mean row; ~20 s per question on the embedded engine the first time, ~1 s when every
verdict is cached. `--pairs` prints accuracy per kind of pair and writes results/judge_pairs.json.

- `supports(claim, source)`: a YES/NO verdict, schema-constrained, from a prompt whose rules and worked
  examples (a constant prefix the engine's prompt cache reuses) cover the hard case: a claim whose
  answer is wrong although the names in it appear in the source. The source comes before the claim so
  several claims checked against one source share the cached prefix too.
- Every verdict is cached by a content hash of (model, prompt version, claim, source) in
  `.rag/cache/judge.jsonl`, so reruns are fast and identical.
- `exact_match` / `f1`: SQuAD normalisation (lower case, no punctuation, no articles), best over the
  answer and its aliases.
Labelled pairs (`--pairs N`): from MuSiQue's gold decomposition, each hop's sub-question (earlier
answers filled in) with its answer makes a claim; YES against the hop's gold paragraph; NO against a
top retrieved paragraph that is not a supporting one and does not contain the answer; and "hard" NO:
the hop's claim with the previous hop's answer (the bridge entity) against the same gold paragraph.
"""
import argparse
import json
import os
import re
import string
import sys
from collections import Counter
from pathlib import Path

import llm
from cache import Cache
from retrieve import CORPUS_DIR, GOLDEN, eval_items
from vector_index import CorpusError

HERE = Path(__file__).parent
PROMPT_VERSION = "judge-v1"   # bump when the prompt changes, so old cached verdicts are not reused
JUDGE_STYLES = ("evidence", "verdict")  # quote what the source says first, or the verdict alone
JUDGE_STYLE = "verdict"    # measured better: results/judge_pairs*.json
DESIGNS = ("verdict", "yes_prob", "answer", "answer_choice", "verdict_and_answer", "verdict_and_answer_choice")
JUDGE_DESIGN = "verdict"   # chosen on the dev pairs: results/judge_eval_dev.json
P_YES_THRESHOLD = 0.5      # yes_prob: P(YES) at or above this is a YES; chosen on the dev pairs
VERDICT = {"type": "string", "enum": ["YES", "NO"]}
SCHEMAS = {"verdict": {"type": "object", "properties": {"verdict": VERDICT}, "required": ["verdict"]},
           "evidence": {"type": "object", "properties": {"evidence": {"type": "string", "maxLength": 200},
                                                         "verdict": VERDICT}, "required": ["evidence", "verdict"]}}
SCORE_SCHEMA = {"type": "object", "properties": {"score": {"type": "integer", "enum": [1, 2, 3, 4, 5]}},
                "required": ["score"]}
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
        {"evidence": ev, "verdict": v} if style == "evidence" else {"verdict": v}) for src, claim, ev, v in SUPPORT_EXAMPLES]
    first = "\nFirst write as evidence what the source says about the claim, then the verdict." if style == "evidence" else ""
    return SUPPORT_RULES + first + "\n\n" + "\n\n".join(shots)


RELEVANCE_PROMPT = """Question: {question}
Answer: {answer}

How directly does the answer respond to the question, whether or not it is correct?
5 = answers exactly what was asked, 3 = partly or vaguely, 1 = does not answer it ("I don't know" is 1).
Reply in JSON with "score"."""

_CACHE = None


def cache():
    global _CACHE
    if _CACHE is None:
        _CACHE = Cache("judge")
    return _CACHE


def _cached(kind, payload, compute):
    key = Cache.key(kind, PROMPT_VERSION, llm.engine_info()["model"], payload)
    hit = cache().get(key)
    return hit if hit is not None else cache().put(key, compute())


ANSWER_RULES = """You answer a question from a source. Use only the source, not your own knowledge.
Reply with the shortest answer the source gives: a name, place, number, date or short phrase, copied from the
source. The source may name several people, places and dates: give the one that answers exactly what is asked.
If the source does not answer the question, the answer is "not stated"."""

ANSWER_EXAMPLES = [  # (source, question, answer): the same fictional facts as SUPPORT_EXAMPLES
    ("Ashford Bridge is a stone bridge in Corran. It was designed by the engineer Tomas Vell in 1872.",
     "Who designed Ashford Bridge?", "Tomas Vell"),
    ("Ashford Bridge is a stone bridge in Corran. It was designed by the engineer Tomas Vell in 1872.",
     "When was the bridge in Corran designed?", "1872"),
    ("Hartmoor is a village in the county of Wessmark, known for its cheese fair.",
     "In which village was Tomas Vell born?", "not stated"),
    ("Corran is a market town on the River Lente.\n\nAshford Bridge is a stone bridge in Corran, designed by Tomas Vell.",
     "On which river is the town where Ashford Bridge stands?", "River Lente"),
]
ANSWER_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 80}},
                 "required": ["answer"]}
CLAIM_FORM = re.compile(r'^\s*The answer to "(.+)" is (.+?)\.?\s*$', re.S)  # how verifiers phrase a short answer
BARE_ANSWER_WORDS = 6         # a claim this short and without a full stop, given with its question, is an answer
NOT_STATED = {"not stated", "not given", "not mentioned", "unknown", "none", ""}


def answer_system():
    shots = [f"Source: {src}\nQuestion: {q}\n" + json.dumps({"answer": a}) for src, q, a in ANSWER_EXAMPLES]
    return ANSWER_RULES + "\n\n" + "\n\n".join(shots)


def claim_slot(claim, question=None, answer=None):
    """(question, answer) a claim puts to the source, or None when it has none (then only the verdict counts):
    the claim's own 'The answer to "q" is a.' form; else the given question with the given answer when the
    claim states it, or with the claim itself when it is a bare answer of a few words.
    'The answer to "Who designed it?" is Tomas Vell.' -> ('Who designed it?', 'Tomas Vell')
    ('Vell, an engineer, designed it.', 'Who designed it?', 'Vell') -> ('Who designed it?', 'Vell')"""
    if m := CLAIM_FORM.match(claim):
        return m.group(1).strip(), m.group(2).strip()
    if not question:
        return None
    if answer and normalize_answer(answer) not in NOT_STATED and named_in(claim, answer, 1.0):
        return question, answer
    bare = len(claim.split()) <= BARE_ANSWER_WORDS and not claim.rstrip().endswith((".", "!", "?"))
    return (question, claim.strip()) if bare else None


def answers_match(said, claimed):
    """Whether the source's answer and the claim's agree: SQuAD-normalised equal, one inside the other,
    or token F1 >= 0.5. ('the engineer Tomas Vell', 'Tomas Vell') -> True; ('Corran', 'Tomas Vell') -> False"""
    s, c = normalize_answer(said), normalize_answer(claimed)
    if s in NOT_STATED or not c:
        return False
    if set(re.findall(r"\d+", s)) != set(re.findall(r"\d+", c)) and re.search(r"\d", c):
        return False  # 'June 6' is not 'June 30', whatever their shared words
    return s == c or f" {c} " in f" {s} " or f" {s} " in f" {c} " or _token_f1(said, claimed) >= 0.5


def _timed(kind, payload, compute):
    """A cached model reply with the seconds and calls it cost when it was computed."""
    def run():
        with llm.counting() as cost:
            value = compute()
        return {"value": value, "seconds": round(cost["seconds"], 3), "calls": cost["calls"]}
    return _cached(kind, payload, run)


def verdict_reply(claim, source, style="verdict"):
    """The YES/NO prompt: {"value": {"yes": bool, "p_yes": float}, "seconds", "calls"}. p_yes is the
    probability of YES read from the verdict token's logprobs (1.0 / 0.0 when the engine gives none)."""
    def compute():
        response = llm.chat([{"role": "system", "content": support_system(style)},
                             {"role": "user", "content": f"Source: {source}\nClaim: {claim}"}],
                            schema=SCHEMAS[style], max_tokens=120, logprobs=True, top_logprobs=5)
        try:
            yes = str(json.loads(response.message.content or "").get("verdict", "")).strip().upper() == "YES"
        except (ValueError, AttributeError):
            raise llm.ReplyError(f"verdict is not JSON: {(response.message.content or '')[:80]!r}") from None
        return {"yes": yes, "p_yes": _p_yes(response, yes)}
    return _timed("verdict", [style, claim, source], compute)


def _p_yes(response, yes):
    """P(YES) / (P(YES) + P(NO)) at the verdict token, summed over its spellings in the top logprobs."""
    import math
    word = lambda t: t.strip().strip('"').upper()
    for lp in response.logprobs or []:
        if word(lp.token) in ("YES", "NO"):
            top = [(word(t.token), math.exp(t.logprob)) for t in (lp.top_logprobs or [])] or [(word(lp.token), 1.0)]
            p_y, p_n = (sum(p for w, p in top if w == v) for v in ("YES", "NO"))
            return round(p_y / (p_y + p_n), 4) if p_y + p_n else float(yes)
    return float(yes)


def source_answer(question, source):
    """What the source gives as the answer to `question` ("not stated" when nothing): cached reply."""
    def compute():
        return str(llm.complete_json(f"Source: {source}\nQuestion: {question}", ANSWER_SCHEMA,
                                     system=answer_system(), max_tokens=60).get("answer", "")).strip()
    return _timed("answer", [question, source], compute)


CHOICE_RULES = """You pick which option the source gives as the answer to a question. Use only the source.
Read the question carefully: the source may name several of the options, in different roles. Pick the one that
answers exactly what is asked, or "not stated" when the source answers with none of them."""


def choose(question, source, options):
    """Which of `options` (or "not stated") the source gives as the answer: a cached reply."""
    options = sorted(set(options))  # a fixed order that does not favour the claim's option
    schema = {"type": "object", "properties": {"answer": {"type": "string", "enum": options + ["not stated"]}},
              "required": ["answer"]}
    listed = "\n".join(f"- {o}" for o in options + ["not stated"])
    return _timed("choice", [question, source, options], lambda: str(llm.complete_json(
        f"Source: {source}\nQuestion: {question}\nOptions:\n{listed}", schema, system=CHOICE_RULES,
        max_tokens=60).get("answer", "")))


def named_in(text, answer, share=0.5):
    """At least `share` of the answer's words occur in the text: ('... engineer Tomas Vell ...', 'Tomas Vell') -> True"""
    words, found = normalize_answer(answer).split(), set(normalize_answer(text).split())
    return bool(words) and sum(w in found for w in words) / len(words) >= share


def judge_claim(claim, source, design=None, style=None, question=None, answer=None):
    """(supported, parts) under one judge design; parts holds each model reply used, with its seconds."""
    design, style, source = design or JUDGE_DESIGN, style or JUDGE_STYLE, source[:MAX_SOURCE_CHARS]
    slot = claim_slot(claim, question, answer)
    parts = {}
    if design in ("verdict", "yes_prob") or design.startswith("verdict_and") or slot is None:
        parts["verdict"] = verdict_reply(claim, source, style)
        v = parts["verdict"]["value"]
        verdict = v["p_yes"] >= P_YES_THRESHOLD if design == "yes_prob" else v["yes"]
        if design in ("verdict", "yes_prob") or slot is None or not verdict:
            return verdict, parts
    q, claimed = slot
    parts["answer"] = source_answer(q, source)
    said = parts["answer"]["value"]
    if answers_match(said, claimed):
        return True, parts
    if not design.endswith("choice") or normalize_answer(said) in NOT_STATED or not named_in(source, claimed):
        return False, parts
    parts["choice"] = choose(q, source, [claimed, said])
    return answers_match(parts["choice"]["value"], claimed) and not answers_match(parts["choice"]["value"], said), parts


def version():
    """What decides a verdict today: prompts, design, threshold, judge model. Part of every row cache key,
    so rows judged by another judge are not reused. version() -> 'judge-v2/verdict_and_answer/0.5/-'"""
    return f"{PROMPT_VERSION}/{JUDGE_DESIGN}/{P_YES_THRESHOLD}/{judge_model() or '-'}"


def judge_model():
    """RAG_JUDGE_MODEL: an Ollama fact-checking model that judges instead (e.g. bespoke-minicheck), or None."""
    return os.environ.get("RAG_JUDGE_MODEL") or None


def minicheck(claim, source, model):
    """A fact-checking model's verdict, in the prompt format Bespoke-MiniCheck was trained on
    ("Document: ...\nClaim: ..." -> "Yes"/"No"): a cached reply."""
    return _timed("minicheck", [model, claim, source], lambda: llm.complete(
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


def relevance(question, answer):
    """How directly the answer addresses the question, 0..1 (LLM score 1-5, rescaled). Cached."""
    def score():
        return llm.complete_json(RELEVANCE_PROMPT.format(question=question, answer=answer), SCORE_SCHEMA,
                                 max_tokens=12).get("score", 1)
    return (int(_cached("relevance", [question, answer], score)) - 1) / 4


def normalize_answer(s):
    """SQuAD: 'The  Eiffel Tower!' -> 'eiffel tower'"""
    s = "".join(ch for ch in s.lower() if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def _token_f1(pred, gold):
    p, g = normalize_answer(pred).split(), normalize_answer(gold).split()
    common = sum((Counter(p) & Counter(g)).values())
    if not p or not g:
        return float(p == g)
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def exact_match(pred, item):
    """1.0 when the normalised prediction equals the answer or an alias."""
    golds = [item["answer"]] + list(item.get("aliases", []))
    return float(any(normalize_answer(pred) == normalize_answer(g) for g in golds))


def f1(pred, item):
    """Best SQuAD token F1 over the answer and its aliases. ('Tomas Vell', {'answer': 'Vell'}) -> 0.667"""
    return max(_token_f1(pred, g) for g in [item["answer"]] + list(item.get("aliases", [])))


def audit(result, item):
    """One generate() result against its golden item -> {faithfulness, relevance, em, f1}."""
    return {"faithfulness": faithfulness(result["sentences"], result["passages"]),
            "relevance": relevance(result["question"], result["answer"]),
            "em": exact_match(result["answer"], item), "f1": f1(result["answer"], item)}


def main():
    from generate import generate
    from tqdm import tqdm
    ap = argparse.ArgumentParser(description="Audit answers (faithfulness, relevance, EM, F1) or test the judge.")
    ap.add_argument("--limit", type=int, default=10, help="golden questions to audit (half single, half multi)")
    ap.add_argument("--golden", type=Path, default=GOLDEN, help="golden questions")
    ap.add_argument("--corpus", type=Path, help="folder of .txt/.md documents (default corpus/)")
    ap.add_argument("--json", type=Path, help="write the table here")
    args = ap.parse_args()
    print(f"model={llm.engine_info()['model']} judge={version()} golden={args.golden} limit={args.limit}")
    try:
        kw = {"corpus": args.corpus} if args.corpus else {}
        rows = []
        for item in tqdm(eval_items(args.golden, args.limit, args.corpus or CORPUS_DIR), desc="audit", unit="q", file=sys.stderr):
            rows.append({"id": item["id"], "type": item["type"], **audit(generate(item["question"], **kw), item)})
    except (llm.LLMError, CorpusError) as e:
        sys.exit(f"judge: {e}")
    cols = ("faithfulness", "relevance", "em", "f1")
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
