"""Week 4: the judge. Does a source support a claim? The next week checks every citation with it.

    python judge.py   # audit 10 golden questions (half single, half multi): faithfulness, EM, F1
    python judge.py --limit 30 --json results/judge_audit.json

Expected output: the settings, a progress bar, then one row per question (faithfulness, EM, F1) and a
mean row; ~20 s per question on the embedded engine the first time, ~1 s when every verdict is cached.

- `supports(claim, source)`: the course's YES/NO prompt, the verdict constrained by a JSON schema
  ({"verdict": "YES" | "NO"}), five worked examples (one of them the hard case: the right names in the wrong role).
  Measured on labelled pairs (`python -m experiments.judge_eval --designs verdict`).
- `faithfulness`: the share of an answer's sentences the retrieved passages, together, support; `exact_match` / `f1`
  (lab/answers.py): SQuAD normalisation, best over the answer and its aliases.
- Every verdict is cached under cache.keyed("judge", ...): this file's code and its imports' (the prompt among them)
  name it, in `.rag/cache/judge.jsonl`, with the seconds it cost (timed, spending).
Not handled: a YES/NO verdict passes a wrong answer whose names appear in the source (the bridge entity of a two-hop
question): layers/judge_answers.py compares the claim's answer with the source's own instead.
"""
import argparse
import contextlib
import json
import math
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

import llm
from lab.answers import exact_match, f1
from lab.cache import Cache, code_key, keyed
from retrieve import CORPUS_DIR, GOLDEN, eval_items
from vector_index import CorpusError

JUDGE_STYLES = ("evidence", "verdict")  # quote what the source says first, or the verdict alone
JUDGE_STYLE = "verdict"    # measured better: results/judge_pairs*.json
MAX_SOURCE_CHARS = 6000    # a longer source is cut: a 1.5B model judges worse on very long inputs


class Verdict(BaseModel):
    verdict: Literal["YES", "NO"]


class Evidence(BaseModel):
    evidence: str = Field(max_length=200)
    verdict: Literal["YES", "NO"]


VERDICT = Verdict.model_json_schema()["properties"]["verdict"]   # {"enum": ["YES", "NO"], "type": "string", ...}
SCHEMAS = {"verdict": Verdict.model_json_schema(), "evidence": Evidence.model_json_schema()}

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


_SPENT = {"calls": 0, "seconds": 0.0}   # what every judge reply handed out cost when first computed (cached or not)
_HANDED = []   # (key, calls, seconds) of the replies handed out inside spending() blocks: which a block shares
_DEPTH = [0]   # how many spending() blocks are open


def timed(kind, payload, compute, module="judge"):
    """A cached model reply with the seconds and calls it cost when it was computed, keyed by `module`'s code (a
    layer that asks its own prompts passes its name, so an edit to them re-keys its replies)."""
    def run():
        with llm.counting() as cost:
            value = compute()
        return {"value": value, "seconds": round(cost["seconds"], 3), "calls": cost["calls"]}
    key = keyed(module, kind, llm.engine_info()["model"], payload)
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


def verdict_reply(claim, source, style="verdict", system=None, module="judge"):
    """The YES/NO prompt: {"value": {"yes": bool, "p_yes": float}, "seconds", "calls"}. p_yes is the
    probability of YES read from the verdict token's logprobs (1.0 / 0.0 when the engine gives none).
    `system`: another system prompt (a layer's, keyed by its `module`)."""
    system_text = system or support_system(style)
    return timed("verdict", [style, claim, source] + ([Cache.key(system)[:12]] if system else []),
                 lambda: yes_no(system_text, f"Source: {source}\nClaim: {claim}",
                                SCHEMAS.get(style, SCHEMAS["verdict"])), module)


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
    word = lambda t: t.strip().strip('"').upper()
    for lp in response.logprobs or []:
        if word(lp.token) in ("YES", "NO"):
            p = math.exp(lp.logprob)  # without a top list: the chosen token's probability, the rest to the other
            top = [(word(t.token), math.exp(t.logprob)) for t in (lp.top_logprobs or [])] \
                or [(word(lp.token), p), ("NO" if word(lp.token) == "YES" else "YES", 1 - p)]
            p_y, p_n = (sum(p for w, p in top if w == v) for v in ("YES", "NO"))
            return round(p_y / (p_y + p_n), 4) if p_y + p_n else float(yes)
    return float(yes)


def ask(user, system, schema, trace, what, max_tokens=40):
    """A pattern's JSON verdict (Self-RAG's and CRAG's critics), or {} with a warning in the trace when the reply
    is out of shape: one model call, not cached here (the pattern's rows are)."""
    try:
        reply = llm.complete_json(user, schema, system=system, max_tokens=max_tokens)
        return reply if isinstance(reply, dict) else {}
    except llm.ReplyError as e:
        trace.append({"step": "warning", "message": f"{what}: {e}"})
        return {}


def supports(claim, source, style=None):
    """True when the source states the claim: the YES/NO verdict, cached. An unusable reply counts as "not
    supported" and is not cached. supports('Vell designed it.', 'Vell designed it.') -> True"""
    try:
        return bool(verdict_reply(claim, source[:MAX_SOURCE_CHARS], style or JUDGE_STYLE)["value"]["yes"])
    except llm.ReplyError:
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
    print(f"model={llm.engine_info()['model']} judge=verdict/{code_key('judge')} golden={args.golden} "
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
