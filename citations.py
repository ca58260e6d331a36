"""Week 5: check every citation with week 4's judge. Which IDs are invalid, which sentences are uncited, which
citations do not support their sentence; over a run, ALCE-style citation recall and precision. The lab step that runs
it over golden questions is verify_citations.py.

Definitions (ALCE, Gao et al. 2023): a sentence is supported when its cited passages, together, support
it (an uncited sentence is not); citation recall = share of supported sentences. A citation is precise
when its sentence is supported and the citation either supports the sentence alone or is needed (the
other citations without it do not support it); citation precision = share of precise citations.
ALCE's ChatGPT figures on ASQA, for comparison: recall 73.6, precision 72.5.

    verify(result)                    -> [{"text", "cites", "supported", "precise": {"S1": True}}, ...]
    verify(result, supports=my_judge) -> the same with another judge (claim, source) -> bool
"""
import hashlib
import statistics
import sys

from judge import joined, supports as judge_supports
from lab import answers
from lab.answers import exact_match, f1
from retrieve import doc_recall

ALCE_CHATGPT_ASQA = {"citation_recall": 0.736, "citation_precision": 0.725}


def verify(result, supports=judge_supports, on_verdict=None):
    """A generate() result -> per-sentence verdicts: [{text, cites, supported, precise: {id: bool}}]. `supports(claim,
    source)` is the judge (week 4's YES/NO verdict by default); a sentence's cited passages are joined into one source.
    on_verdict(n, verdict) is called as each sentence's verdict is reached (a CLI or page shows it then)."""
    by_id = {p["id"]: p for p in result["passages"]}
    check = lambda text, ids: bool(ids) and supports(text, joined([by_id[c] for c in ids]))
    out = []
    for s in result["sentences"]:
        cites = [c for c in s["cites"] if c in by_id]
        supported = check(s["text"], cites)
        precise = {c: supported and (len(cites) == 1 or check(s["text"], [c])
                                     or not check(s["text"], [o for o in cites if o != c])) for c in cites}
        out.append({"text": s["text"], "cites": cites, "supported": supported, "precise": precise})
        if on_verdict:
            on_verdict(len(out) - 1, out[-1])
    return out


def verdict_line(n, v):
    """'  checked 2. [S1 supports] [S3 does not support] -> supported' for a CLI, as a verdict is reached."""
    marks = " ".join(f"[{c} {'supports' if ok else 'does not support'}]" for c, ok in v["precise"].items())
    return f"  checked {n + 1}. {marks or '(uncited)'} -> {'supported' if v['supported'] else 'NOT supported'}"


def answer_status(result, verdicts):
    """What the verdicts allow the short answer to be shown as: "verified" (every sentence supported),
    "partly verified", "unverified" (no sentence supported: the answer is not shown as the answer), "idk",
    "failed" (an unusable reply) or "unchecked" (verdicts None)."""
    if result.get("error"):
        return "failed"
    if result.get("idk"):
        return "idk"
    if verdicts is None:
        return "unchecked"
    supported = sum(v["supported"] for v in verdicts)
    return "unverified" if not supported else "verified" if supported == len(verdicts) else "partly verified"


UNVERIFIED = "unverified: no sentence of this answer is supported by its sources"


def text_sha(text):
    """The hash a row keeps of a passage's text, and grading/claims.py recomputes: sha256, 16 hex."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def source_entry(passage):
    """What a row keeps of a passage it was given, for grading/claims.py to check without a model: its ID in the
    prompt, its chunk ID and the sha256 (16 hex) of the chunk's text (before generate's trim); None for a passage
    CRAG's refinement cut to some of its sentences (its text is no chunk's).
    {"id": "S1", "chunk_id": "ashford-bridge#0", "text": "Ashford Bridge ..."} -> {"id": "S1", "chunk_id":
    "ashford-bridge#0", "sha": "3f9a..."}"""
    text = None if passage.get("refined") else passage.get("text")
    return {"id": passage.get("id"), "chunk_id": passage.get("chunk_id"),
            "sha": text_sha(text) if isinstance(text, str) else None}


def question_row(result, item, verdicts, cost, judge_cost, checked=None):
    """The numbers one answered question contributes to a run (cacheable, no model objects). checked: the
    answer-level check (answer_check.check) when made: its status, score and reasons, the dispute check it was
    given (checked["dispute"]: harness.evaluate's), the old sentence-level status beside it as sentence_status, and
    whether the answer is right by the labels (answers.right)."""
    sentences, citations = verdicts, [ok for v in verdicts for ok in v["precise"].values()]
    checked = checked or {"status": answer_status(result, verdicts)}
    return {"id": item["id"], "type": item["type"], "source": item["source"], "answer": result["answer"],
            "em": exact_match(result["answer"], item), "f1": f1(result["answer"], item),
            "right": answers.right(result["answer"], item) and not result["idk"],
            "doc_recall": doc_recall(result.get("retrieved") or result["passages"], item["supporting_docs"]),
            "sentences": len(sentences), "cited": sum(bool(v["cites"]) for v in sentences),
            "supported": sum(v["supported"] for v in sentences), "citations": len(citations),
            "precise": sum(citations), "invalid": len(result["invalid_ids"]), "idk": bool(result["idk"]),
            "error": bool(result.get("error")), "sentence_status": answer_status(result, verdicts),
            "status": checked["status"], "score": checked.get("score"), "reasons": checked.get("reasons", []),
            "disputed": bool((checked.get("dispute") or {}).get("disputed")), "dispute": checked.get("dispute"),
            "calibration": checked.get("calibration"), "features": checked.get("features"),
            "verdicts": [{"text": v["text"], "cites": v["cites"], "supported": v["supported"],
                          "precise": v["precise"], "how": v.get("how"), "quarantined": sorted(v.get("quarantined", {}))}
                         for v in verdicts],
            "invalid_ids": result["invalid_ids"], "recited": result.get("recited", []),
            "spelled": result.get("spelled"), "written": result.get("written", result["answer"]),
            "sources": [source_entry(p) for p in result["passages"]],
            "chunk_ids": [p.get("chunk_id") for p in result["passages"]], "retrievals": result.get("retrievals"),
            "calls": cost["calls"],
            "prompt_tokens": cost["prompt_tokens"], "completion_tokens": cost["completion_tokens"],
            "seconds": cost["seconds"], "judge_seconds": judge_cost["seconds"],
            "judge_calls": judge_cost.get("calls", 0), "check_calls": (checked.get("cost") or {}).get("calls"),
            "check_seconds": (checked.get("cost") or {}).get("seconds")}


def summarize(rows):
    """Per-question rows -> the run's figures. Sentence and citation rates are pooled over the run."""
    total = lambda key: sum(r[key] for r in rows)
    n, sentences = max(1, len(rows)), max(1, total("sentences"))
    return {"questions": len(rows), "sentences": total("sentences"),
            "cited_sentence_rate": total("cited") / sentences, "invalid_ids": total("invalid"),
            "citation_recall": total("supported") / sentences,
            "citation_precision": total("precise") / max(1, total("citations")),
            "answer_em": total("em") / n, "answer_f1": total("f1") / n, "doc_recall": total("doc_recall") / n,
            "idk_answers": total("idk"), "failed_answers": total("error"), "llm_calls": total("calls") / n,
            "prompt_tokens": total("prompt_tokens") / n, "completion_tokens": total("completion_tokens") / n,
            "seconds_per_question": total("seconds") / n,
            "seconds_p50": statistics.median([r["seconds"] for r in rows] or [0]),
            "judge_seconds_per_sentence": total("judge_seconds") / sentences, **verified_figures(rows)}


def verified_figures(rows):
    """What "verified" is worth over a run: its precision (right answers among those shown verified, by
    answers.right) and coverage (right answers shown verified), for the answer check's status and for the old
    sentence-level one beside it; the answers shown as verified while wrong (verified_wrong) and the share shown
    disputed (disputed_share, None for rows made before the rows carried the dispute check). None where there is
    nothing to divide (rows from before the answer check)."""
    if not rows or any("right" not in r for r in rows):
        return {}
    div = lambda a, b: a / b if b else None
    right = sum(r["right"] for r in rows)
    out = {"right_share": right / len(rows)}
    for name, key in (("verified", "status"), ("sentence_verified", "sentence_status")):
        shown = [r for r in rows if r.get(key) == "verified"]
        out.update({f"{name}_share": len(shown) / len(rows), f"{name}_precision": div(sum(r["right"] for r in shown),
                    len(shown)), f"{name}_coverage": div(sum(r["right"] for r in shown), right)})
    out["verified_wrong"] = sum(1 for r in rows if r.get("status") == "verified" and not r["right"])
    out["disputed_share"] = None if any("disputed" not in r for r in rows) else \
        sum(bool(r["disputed"]) for r in rows) / len(rows)
    out["quarantined_share"] = sum(any(v.get("quarantined") for v in r.get("verdicts", [])) for r in rows) / len(rows)
    return out


SENTENCE_TEXT = {"verified": "every sentence is supported", "partly verified": "some sentences are not supported",
                 "idk": "the model said it does not know", "failed": "the model's reply was unusable"}


def print_answer(result, verdicts):
    """One checked answer for a CLI: the short answer with what its sentences' verdicts allow (answer_status; an answer
    no sentence supports is not shown as the answer), then each sentence's verdicts and the sources."""
    status = answer_status(result, verdicts)
    shown = (f"{UNVERIFIED.upper()} (the model said: {result['answer']})" if status == "unverified" else
             f"{result['answer']}   [{SENTENCE_TEXT.get(status, status)}]")
    print(f"\nquestion: {result['question']}\nanswer:   {shown}")
    print_sentences(result, verdicts)


def print_sentences(result, verdicts):
    """Each sentence with its citations' verdicts (a passage a layer kept from supporting it, with why), the
    invalid IDs dropped, then the sources with where they come from."""
    for n, v in enumerate(verdicts, 1):
        quarantined = v.get("quarantined", {})
        marks = " ".join(f"[{c}: " + (f"not allowed as support: {', '.join(quarantined[c])}" if c in quarantined
                                      else 'supports' if ok else 'does not support') + "]"
                         for c, ok in v["precise"].items())
        print(f"  {n}. {v['text']}\n     {marks or '(uncited)'} -> sentence "
              f"{'supported' if v['supported'] else 'NOT supported'}")
    for bad in result["invalid_ids"]:
        print(f"  invalid citation [{bad['id']}] in sentence {bad['sentence'] + 1}: dropped (no such source)")
    for line in result.get("notes", []):
        print(f"  {line}")
    print("sources:")
    for p in result["passages"]:
        print(f"  [{p['id']}] {p['chunk_id']}: {' '.join(p['text'].split())[:90]}"
              + (f"\n       {p['where']}" if p.get("where") else ""))


def say_verdict(n, v):
    """verify()'s on_verdict for a CLI: the verdict's line (verdict_line) on stderr as soon as it is reached."""
    print(verdict_line(n, v), file=sys.stderr, flush=True)


def print_checked(result, on_verdict=None):
    """The answer with the judge's verdicts (print_answer): what a CLI shows for one question."""
    print_answer(result, verify(result, on_verdict=on_verdict))


COLUMNS = [("questions", "questions", "d"), ("sentences", "sentences", "d"), ("cited_sentence_rate", "cited", ".3f"),
           ("invalid_ids", "invalid", "d"), ("citation_recall", "c-recall", ".3f"),
           ("citation_precision", "c-prec", ".3f"), ("answer_f1", "F1", ".3f"),
           ("seconds_per_question", "s/q", ".1f"), ("seconds_p50", "s/q p50", ".1f"),
           ("judge_seconds_per_sentence", "judge s", ".1f"), ("sentence_verified_precision", "old v-prec", ".3f"),
           ("verified_precision", "v-prec", ".3f"), ("verified_coverage", "coverage", ".3f"),
           ("verified_wrong", "v-wrong", "d"), ("disputed_share", "disputed", ".3f")]


def print_table(summaries):
    """One row per style, fixed columns; ALCE's ChatGPT citation figures underneath for scale."""
    print(f"\n{'style':8}" + "".join(f"{h:>10}" for _, h, _ in COLUMNS))
    for style, s in summaries.items():
        print(f"{style:8}" + "".join(f"{'n/a':>10}" if s.get(key) is None else f"{s[key]:>10{fmt}}"
                                     for key, _, fmt in COLUMNS))
    alce = {k: f"{v:>10.3f}" for k, v in ALCE_CHATGPT_ASQA.items()}
    print(f"{'ALCE*':8}" + "".join(alce.get(key, f"{'':>10}") for key, _, _ in COLUMNS[:6])
          + "   *ChatGPT on ASQA (Gao et al. 2023)")
