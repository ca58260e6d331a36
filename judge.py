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
import re
import string
import sys
from collections import Counter
from pathlib import Path

import llm
from bm25_baseline import doc_index
from cache import Cache
from retrieve import CORPUS_DIR, GOLDEN, eval_items, load_golden, retrieve_chunks
from vector_index import CorpusError

HERE = Path(__file__).parent
PROMPT_VERSION = "judge-v1"   # bump when the prompt changes, so old cached verdicts are not reused
JUDGE_STYLES = ("evidence", "verdict")  # quote what the source says first, or the verdict alone
JUDGE_STYLE = "verdict"    # measured better: results/judge_pairs*.json
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


def ask(prompt, **kw):
    """The judge's plain question to the model -> text."""
    return llm.complete(prompt, **kw)


def _cached(kind, payload, compute):
    key = Cache.key(kind, PROMPT_VERSION, llm.engine_info()["model"], payload)
    hit = cache().get(key)
    return hit if hit is not None else cache().put(key, compute())


def supports(claim, source, style=None):
    """True when the source states the claim. Cached. supports('Vell designed it.', 'Vell designed it.') -> True"""
    source, style = source[:MAX_SOURCE_CHARS], style or JUDGE_STYLE

    def verdict():
        reply = llm.complete_json(f"Source: {source}\nClaim: {claim}", SCHEMAS[style],
                                  system=support_system(style), max_tokens=120)
        return str(reply.get("verdict", "")).strip().upper() == "YES"
    try:
        return bool(_cached("supports", [style, claim, source], verdict))
    except llm.ReplyError:  # an unusable verdict counts as "not supported" and is not cached
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


def build_pairs(golden, n, corpus=None):
    """Labelled (claim, source, label, kind) pairs from MuSiQue decompositions; see the docstring."""
    docs = doc_index(corpus or CORPUS_DIR)[0]
    text = lambda d: f"{docs[d].title}\n{docs[d].text}"
    pairs = {"yes": [], "no": [], "hard": []}
    for item in (g for g in golden if g["type"] == "multi" and g.get("decomposition")):
        answers = []
        for hop in item["decomposition"]:
            q = re.sub(r"#(\d+)", lambda m: answers[int(m.group(1)) - 1] if int(m.group(1)) <= len(answers)
                       else m.group(0), hop["question"])
            answers.append(hop["answer"])
            if hop["doc"] not in docs or "#" in q:
                continue
            claim = f'The answer to "{q}" is {hop["answer"]}.'
            pairs["yes"].append((claim, text(hop["doc"]), True, "yes"))
            for p in retrieve_chunks(q, 4, corpus=corpus or CORPUS_DIR):
                if p["doc"] not in item["supporting_docs"] and normalize_answer(hop["answer"]) not in normalize_answer(p["text"]):
                    pairs["no"].append((claim, text(p["doc"]), False, "no"))
                    break
            if len(answers) > 1 and normalize_answer(answers[-2]) != normalize_answer(hop["answer"]):
                pairs["hard"].append((f'The answer to "{q}" is {answers[-2]}.', text(hop["doc"]), False, "hard"))
    return [p for kind in ("yes", "no", "hard") for p in pairs[kind][:n]]


def run_pairs(n, golden_path, json_path, style=None):
    from tqdm import tqdm
    pairs = build_pairs(load_golden(golden_path), n)
    rows = []
    for claim, source, label, kind in tqdm(pairs, desc="judge pairs", unit="pair", file=sys.stderr):
        rows.append({"kind": kind, "label": label, "verdict": supports(claim, source, style), "claim": claim,
                     "source": source[:300]})
    table = {}
    for kind in ("yes", "no", "hard"):
        got = [r["verdict"] == r["label"] for r in rows if r["kind"] == kind]
        table[kind] = {"n": len(got), "accuracy": sum(got) / max(1, len(got))}
    main_pairs = [r["verdict"] == r["label"] for r in rows if r["kind"] != "hard"]
    table["yes+no"] = {"n": len(main_pairs), "accuracy": sum(main_pairs) / max(1, len(main_pairs))}
    table["all"] = {"n": len(rows), "accuracy": sum(r["verdict"] == r["label"] for r in rows) / max(1, len(rows))}
    print(f"\n{'pairs':8} {'n':>4} {'accuracy':>9}")
    for kind, r in table.items():
        print(f"{kind:8} {r['n']:4} {r['accuracy']:9.3f}")
    out = {"model": llm.engine_info(), "prompt_version": PROMPT_VERSION, "judge_style": style or JUDGE_STYLE,
           "table": table, "pairs": rows}
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {json_path}")


def main():
    from generate import generate
    from tqdm import tqdm
    ap = argparse.ArgumentParser(description="Audit answers (faithfulness, relevance, EM, F1) or test the judge.")
    ap.add_argument("--limit", type=int, default=10, help="golden questions to audit (half single, half multi)")
    ap.add_argument("--golden", type=Path, default=GOLDEN, help="golden questions")
    ap.add_argument("--corpus", type=Path, help="folder of .txt/.md documents (default corpus/)")
    ap.add_argument("--pairs", type=int, default=0, help="instead: judge accuracy on N labelled pairs per kind")
    ap.add_argument("--judge-style", choices=JUDGE_STYLES, default=JUDGE_STYLE, help="supports() prompt")
    ap.add_argument("--json", type=Path, help="write the table here")
    args = ap.parse_args()
    print(f"model={llm.engine_info()['model']} golden={args.golden} "
          + (f"pairs={args.pairs}" if args.pairs else f"limit={args.limit}"))
    try:
        if args.pairs:
            return run_pairs(args.pairs, args.golden, args.json or HERE / "results" / "judge_pairs.json", args.judge_style)
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
