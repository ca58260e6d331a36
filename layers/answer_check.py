"""Layer on week 5's check (citations.answer_status): is the short answer a user reads first right? citations.verify
checks each sentence against its sources; this checks the headline, in three parts, and combines them into one score.

- stated (no model call): a supported sentence states the short answer (or, for yes/no, the supported sentences
  name what the question compares). A headline no sentence states is never verified.
- relevant (no model call): the answer is the kind of thing the question asks for: a date for "when", a number
  for "how many", yes/no for "Is ...?", one of the options for "X or Y?", never a bare year for "where"/"who". An
  answer of the wrong kind is never verified.
- agreed (at most one model call, cached): the cited passages, read in the order the sentences cite them (passage
  A gives the bridge, then passage B the answer), are asked the question on their own (judge.source_answer);
  their answer must match the short answer. When the sentence that states the answer was judged by the same
  comparison on the same passages, that reply is reused from the judge's cache: no call.
- Measured by the ablation (`python benchmark.py --ablation`, results/issue59/ablation.txt, at 0a3f912): verified
  precision 0.920 with it and 0.452 without (single, golden.json test, n = 134); 1.000 and 0.489 on debian/ (n = 56);
  +0.6 to 1.0 calls and 3-8 s a question. It verifies 0.418 of golden's right answers, against 0.945 shown
  verified without it.
- score(): a small logistic model over these parts and what the lab already knows (sentence verdicts, how the
  sentence judge passed the answer's sentence, disputes, retrieval scores), fitted per model by
  experiments/answer_check_eval.py on the dev split; "verified" needs score >= the threshold chosen there for a target
  precision, one per route (the router reads the question as one hop or two): a route whose dev answers keep the
  target at no threshold is never verified. A model with no calibration gets "supported" marks only.
"""
import functools
import hashlib
import json
import math
import re
from pathlib import Path

import citations
import llm
import router
from layers.disputes import agree
from judge import MAX_SOURCE_CHARS, joined
from layers.judge_answers import source_answer
from lab.links import CODE
from lab.answers import (NOT_STATED, named_in, normalize_answer, stated_fuller,
                         subject_names)

HERE = Path(__file__).parent.parent   # the repository (this file is in layers/)
CALIBRATIONS = HERE / "models" / "calibration"
YESNO_START = re.compile(r"^\s*(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b", re.I)
MONTHS = ("january february march april may june july august september october november december "
          "jan feb mar apr jun jul aug sep sept oct nov dec").split()
NUMBER_WORDS = set("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
                   "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety "
                   "hundred thousand million billion dozen".split())
DATE_RELATIONS = ("inception", "date", "point in time", "start time", "end time", "publication date", "founded",
                  "dissolved", "abolished", "year")
PLACE_RELATIONS = ("located in", "country", "place of", "headquarters", "location", "continent", "capital")


def asked_kind(question):
    """What a question asks for: "yesno", "choice" (X or Y?), "number", "date", "place", "person" or None.
    'How many ...' -> number; 'Is A or B older?' -> choice; 'X >> inception' (MuSiQue's form) -> date"""
    q = question.strip().lower()
    if ">>" in q:
        rel = q.split(">>")[-1]
        return ("date" if any(r in rel for r in DATE_RELATIONS) else
                "place" if any(r in rel for r in PLACE_RELATIONS) else None)
    if YESNO_START.match(q):
        return "choice" if re.search(r"\bor\b", q) else "yesno"
    if re.search(r"\bhow (many|much|long|old|tall|high|big|far|large|deep|wide)\b", q):
        return "number"
    if re.match(r"^(when\b|(in |on )?(what|which) (year|date|decade|century|month|day)\b)", q):
        return "date"
    if re.match(r"^(where\b|(in |from |at |to )?(what|which) (city|country|town|state|place|county|continent))", q):
        return "place"
    if re.match(r"^(who|whom|whose)\b", q):
        return "person"
    if re.search(r"\bor\b", q) and re.match(r"^(which|who|what)\b", q):
        return "choice"
    return None


def _is_yesno(answer):
    return normalize_answer(answer).split()[:1] in (["yes"], ["no"])


def _has_date(answer):
    words = normalize_answer(answer).split()
    return bool(re.search(r"\d", answer)) or any(w in MONTHS for w in words) or "century" in words


def _has_number(answer):
    words = normalize_answer(answer).split()
    return bool(re.search(r"\d", answer)) or any(w in NUMBER_WORDS for w in words)


def _bare_number(answer):
    return bool(re.fullmatch(r"[\d\s.,:/–-]+(bc|ad|bce|ce|s)?", normalize_answer(answer))) or all(
        w in NUMBER_WORDS or w in MONTHS or w.isdigit() for w in normalize_answer(answer).split())


def relevant(question, answer):
    """(fits, reason): whether the answer is the kind the question asks for (asked_kind); None kinds always fit, but
    not an answer that repeats a code the question names: ('In which building is ARC 120 taught?', 'ARC 120
    Drawing') -> False."""
    kind = asked_kind(question)
    echoed = set(CODE.findall(answer)) & set(CODE.findall(question))
    if echoed and kind not in ("choice", "yesno"):   # 'ARC 120 Drawing and Representation' for "... ARC 120 taught?"
        return False, f"'{answer}' repeats {sorted(echoed)[0]}, which the question names"
    if kind is None:
        fits = not _is_yesno(answer)
        return fits, "" if fits else f"'{answer}' answers yes/no to a question that asks for something else"
    fits = {"yesno": _is_yesno(answer), "number": _has_number(answer), "date": _has_date(answer),
            "place": not _is_yesno(answer) and not _bare_number(answer),
            "person": not _is_yesno(answer) and not _bare_number(answer),
            "choice": not _is_yesno(answer) and named_in(question, answer, 0.5)}[kind]
    what = {"yesno": "yes or no", "number": "a number", "date": "a date", "place": "a place", "person": "a person",
            "choice": "one of the options the question names"}[kind]
    return fits, "" if fits else f"the question asks for {what}; '{answer}' is not one"


def stating(result, verdicts):
    """The supported sentences that state the short answer (for yes/no: that name what the question is about)."""
    answer, question = result.get("answer") or "", result.get("question") or ""
    good = [v for v in verdicts if v["supported"]]
    if _is_yesno(answer):
        names = subject_names(question)
        told = " ".join(v["text"] for v in good)
        return good if good and all(named_in(told, n, 0.5) for n in names) else []
    return [v for v in good if named_in(v["text"], answer, 1.0)]


def stated(result, verdicts, states=None):
    """(ok, reason): a supported sentence states the short answer (states: stating()'s, when the caller has it)."""
    if stating(result, verdicts) if states is None else states:
        return True, ""
    if not any(v["supported"] for v in verdicts):
        return False, "no sentence of this answer is supported by its sources"
    return False, f"no supported sentence states '{result.get('answer', '')}'"


def cited_order(result, verdicts):
    """IDs of the passages the supported sentences cite (not quarantined), in the order they cite them."""
    known = {p["id"] for p in result.get("passages", [])}
    return list(dict.fromkeys(c for v in verdicts if v["supported"] for c in v["cites"]
                              if c in known and c not in v.get("quarantined", {})))


def chain_source(result, verdicts):
    """The cited passages of the supported sentences, in the order the sentences cite them (the bridge first),
    joined as one source; '' when none."""
    by_id = {p["id"]: p for p in result.get("passages", [])}
    return joined([by_id[c] for c in cited_order(result, verdicts)])[:MAX_SOURCE_CHARS]


def agreed(result, verdicts, source=None):
    """(ok, their answer, reason): the chain of cited passages (source: chain_source()'s, when the caller has it)
    asked the question on their own (one cached call). Read as a chain instead (judge.chain_answer, the bridge asked
    for apart from the answer), the passages agreed with fewer right answers on dev: results/agreed_chain_ab_dev.txt."""
    source = chain_source(result, verdicts) if source is None else source
    answer, question = result.get("answer") or "", result["question"]
    if not source:
        return False, "", "no supported sentence cites a passage"
    try:
        said = str(source_answer(question, source)["value"]).strip()
    except llm.ReplyError:
        return False, "", "the passages' own answer was out of shape"
    if normalize_answer(said) in NOT_STATED:
        return False, said, "the cited passages, asked the question, say it is not stated"
    ok = agree(said, answer, question) or stated_fuller(said, answer, source)
    return ok, said, "" if ok else f"the cited passages, asked the question, answer '{said}'"


def features(result, verdicts, parts, dispute=None, states=None, source=None):
    """The numbers the score reads, each in [0, 1]: the three parts (parts: check()'s), the sentence verdicts and how
    the judge passed the sentence that states the answer (citations.verify's "how": "answer" when the source's own
    answer matched), the dispute (disputes.check's dict or None) and the best dense retrieval score cited."""
    n = max(1, len(verdicts))
    states = stating(result, verdicts) if states is None else states
    source = chain_source(result, verdicts) if source is None else source
    cited, names = {c for v in verdicts for c in v["cites"]}, subject_names(result["question"])
    answer = result.get("answer") or ""
    dense = [p["dense"] for p in result.get("passages", []) if p["id"] in cited and isinstance(p.get("dense"), float)]
    return {"stated": float(parts["stated"]), "relevant": float(parts["relevant"]), "agreed": float(parts["agreed"]),
            "all_supported": float(all(v["supported"] for v in verdicts) and bool(verdicts)),
            "supported_share": sum(v["supported"] for v in verdicts) / n,
            "stated_by_comparison": float(any(v.get("how") == "answer" for v in states)),
            "disputed": float(bool(dispute and dispute.get("disputed"))),
            "yesno": float(_is_yesno(result.get("answer") or "")),
            "cited_dense": max(dense) if dense else 0.0,
            "multi_hop": multi_hop(result["question"]),     # the learned router's P(multi): no model call
            "one_passage": float(len(cited) == 1),
            "covers_question": sum(named_in(source, x, 1.0) for x in names) / len(names) if names else 1.0,
            "answer_in_passages": min(2, sum(named_in(p["text"], answer, 1.0) for p in result.get("passages", []))) / 2,
            "chain_linked": linked(result, verdicts, states)}


def linked(result, verdicts, states=None):
    """1.0 when the cited chain starts at the question: a cited passage that names the question's subject is the one
    that names the answer, or names that passage's title (the bridge: passage A leads to passage B); 0.0 when not;
    0.5 when the question names no subject to start from. No model call. For yes/no answers every passage cited by
    the stating sentences counts as naming the answer."""
    names = subject_names(result.get("question") or "")
    if not names:
        return 0.5
    by_id = {p["id"]: p for p in result.get("passages", [])}
    cited = [by_id[c] for v in verdicts if v["supported"] for c in v.get("cites", []) if c in by_id]
    states = stating(result, verdicts) if states is None else states
    answer = result.get("answer") or ""
    holders = [by_id[c] for v in states for c in v.get("cites", []) if c in by_id
               and (_is_yesno(answer) or named_in(by_id[c]["text"], answer, 1.0))]
    heads = [p for p in cited if any(named_in(p["text"], n, 1.0) for n in names)]
    return float(any(s["id"] == h["id"] or named_in(h["text"], s.get("title") or "\0", 1.0)
                     for s in holders for h in heads))


def multi_hop(question):
    """P(the question needs two hops), from the learned router (router.py) that smart_answer routes with."""
    return round(router.learned_route(question, _router())[1], 4)


@functools.cache
def _router():
    return router.load_router()


def calibration_path(model=None):
    """Where the calibration of `model` (default: the model that answers) lives."""
    name = re.sub(r"[^\w.-]+", "_", model or llm.engine_info()["model"])
    return CALIBRATIONS / f"{name}.json"


def calibration(model=None):
    """The fitted calibration {model, features, coef, intercept, threshold, ...} of a model, or None."""
    return _read(calibration_path(model))[0]


def _read(path):
    """(calibration or None, short hash of the file or "none"), read again only when the file changes."""
    stat = path.stat() if path.exists() else None
    return _parsed(path, stat and (stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=8)
def _parsed(path, version):
    if version is None:
        return None, "none"
    data = path.read_bytes()
    return json.loads(data), hashlib.sha256(data).hexdigest()[:12]


def calibration_id(model=None):
    """A short hash of the calibration file in force ("none" without one): part of every row's key."""
    return _read(calibration_path(model))[1]


def score(feats, cal):
    """P(right) from the calibration's logistic model."""
    z = cal["intercept"] + sum(c * feats[f] for f, c in zip(cal["features"], cal["coef"]))
    return 1 / (1 + math.exp(-z))


def route(feats):
    """"multi" when the learned router reads the question as two hops (its own bar, router.learned_route), else
    "single": each route has its own threshold."""
    return "multi" if feats.get("multi_hop", 0.0) > 0.5 else "single"


def threshold(feats, cal):
    """The bar an answer's score must reach: its route's when the calibration has one per route (a route whose dev
    answers kept no threshold at the target has 1.01: never verified), else the one threshold."""
    return cal.get("thresholds", {}).get(route(feats), cal["threshold"])


def passes(feats, cal):
    """The calibration's own test of an answer the sources neither left unanswered nor disputed: a supported sentence
    states it, it is the kind asked (never an answer of the wrong kind), and its score, rounded as rows show it,
    reaches its route's threshold."""
    return bool(feats["stated"]) and bool(feats["relevant"]) and round(score(feats, cal), 4) >= threshold(feats, cal)


STATUS_TEXT = {
    "verified": "verified: the sentences are supported and the answer is confirmed",
    "supported": "the sentences are supported, but the answer is not confirmed",
    "unanswered": "the sources do not answer this question",
    "disputed": "disputed: the sources disagree",
    "idk": "the model said it does not know", "failed": "the model's reply was unusable"}


def calibration_name(cal):
    return f"{cal['model']}@{cal['fitted']}" if cal else "none"


def check(result, verdicts, dispute=None, cal=False):
    """The answer-level check: {"status", "score", "reasons", "parts", "calibration"}. status is one of
    STATUS_TEXT; "verified" only when a calibration for the answering model exists and the score reaches its
    threshold, and never when no supported sentence states the answer. cal: a calibration dict, None for none
    (supported marks only), False (default) for the answering model's own."""
    cal = calibration() if cal is False else cal
    base = {"score": None, "reasons": [], "parts": {}, "calibration": calibration_name(cal)}
    if result.get("error"):
        return {**base, "status": "failed", "reasons": [str(result["error"])[:120]]}
    if result.get("idk"):
        return {**base, "status": "idk"}
    if verdicts is None:
        return {**base, "status": "unchecked"}
    states, source = stating(result, verdicts), chain_source(result, verdicts)   # once: every part reads them
    ok_stated, why_stated = stated(result, verdicts, states)
    ok_relevant, why_relevant = relevant(result["question"], result.get("answer") or "")
    ok_agreed, said, why_agreed = agreed(result, verdicts, source)
    parts = {"stated": ok_stated, "relevant": ok_relevant, "agreed": ok_agreed, "their_answer": said}
    reasons = [r for r in (why_stated, why_relevant, why_agreed) if r]
    feats = features(result, verdicts, parts, dispute, states, source)
    if cal and set(cal["features"]) - set(feats):   # fitted on features this code no longer computes
        reasons.append(f"calibration {calibration_name(cal)} reads other features: refit "
                           "(python -m experiments.answer_check_eval --fit)")
        cal = None
    s = round(score(feats, cal), 4) if cal else None
    if not any(v["supported"] for v in verdicts) or (not ok_agreed and normalize_answer(said) in NOT_STATED
                                                     and not ok_stated):
        status = "unanswered"
    elif dispute and dispute.get("disputed"):
        status, reasons = "disputed", reasons + ["the passages give different answers"]
    elif cal and passes(feats, cal):
        status = "verified"
    else:
        status = "supported"
        if cal and ok_stated and ok_relevant:
            bar = threshold(feats, cal)
            reasons.append(f"score {s:.2f} is below the threshold {bar:.2f}" if bar <= 1 else
                           f"a {route(feats)}-hop answer is never verified: on dev none kept the precision asked")
        elif not cal and base["calibration"] == "none":
            reasons.append(f"no calibration for {llm.engine_info()['model']}: run python -m "
                           "experiments.answer_check_eval --fit")
    return {**base, "status": status, "score": s, "reasons": reasons, "parts": parts, "features": feats}


def print_answer(result, verdicts, dispute=None):
    """One checked answer for a CLI: the short answer only when check() verifies it, otherwise what the check found
    and why; then each sentence's verdicts and the sources (citations.print_sentences)."""
    checked = check(result, verdicts, dispute)
    status = checked["status"]
    shown = (f"{result['answer']}   [verified: score {checked['score']:.2f}]" if status == "verified" else
             f"{result['answer']}   [{status}]" if status in ("idk", "failed") else
             f"(the sources disagree: see the answers they give below; the model said: {result['answer']})"
             if status == "disputed" else
             f"{STATUS_TEXT[status].upper()} (the model said: {result['answer']})")
    print(f"\nquestion: {result['question']}\nanswer:   {shown}")
    for why in checked["reasons"]:
        print(f"          - {why}")
    print(f"          (sentences: {citations.answer_status(result, verdicts)}; calibration: {checked['calibration']})")
    citations.print_sentences(result, verdicts)
