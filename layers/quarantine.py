"""Layer on week 5's verify (citations.verify): a passage that reads like an instruction supports nothing. Week 8
teaches the attacks (experiments/injection.py) and the detector (injection_detector.py); this puts them to work on
every answer.

    python -m experiments.injection --patterns json --json results/injection.json   # attack success with and without it

A passage that carries injection markers (label look-alikes, source tags, chat role tokens, "ignore the
instructions", fake turns, ready-made replies) or that the learned detector flags (text addressed to the model or its
reader) is quarantined: its citations are imprecise and listed in the verdict's `quarantined` with the reasons, and the
sentence is judged on its other citations only. `extra` adds passages to keep out (the disputes layer's side that
reads like an instruction). The assembly also passes quarantine_reasons to week 7's CRAG as `keep_whole`
(assembly.PASSED_IN): a passage with a marker is not refined, so that refinement cannot drop the sentence that gives
an injection away and keep its false claim (1 of 12 attacks passed that way). On 78 injected questions in 13
families the attack success goes 0.333 -> 0.013 with the dispute rule (results/injection.json); no document of
corpus/ carries a marker, and the detector flags 0.83% of them (cross-fitted, results/injection_detector.json); on
two unseen clean folders 0.5% and 1.8% of chunks.
Measured again on issue 59's code (results/issue59/injection_before_after.txt, f1c054d): attack success 0.359 with
the check alone, 0.026 with this layer. Its cost on clean text (the ablation, results/issue59/ablation.txt): a cited
passage is quarantined in 0.7% of golden.json test's answers, and in 5.4% (single) and 10.7% (smart) of debian/'s,
whose policy manual addresses its reader; citation precision there falls 0.020 and 0.061.
"""
import re

import citations
import injection_detector
from generate import CITE_GROUP, SOURCE_TAG

INJECTION_MARKERS = [  # what instructions hidden in a document look like; none occurs in corpus/ (2,884 docs)
    ("label look-alike", CITE_GROUP),
    ("source delimiter", SOURCE_TAG),
    ("chat role token", re.compile(r"<\|")),
    ("instruction to the model", re.compile(r"\b(ignore|disregard|forget)\b[^.\n]{0,40}"
                                            r"\b(instructions?|rules?|prompt)\b"
                                            r"|\b(new rule|system prompt|must reply|reply with exactly)\b", re.I)),
    ("chat turn", re.compile(r"^\s*(system|user|assistant|answer)\s*:", re.I | re.M)),
    ("ready-made reply", re.compile(r'"sources"\s*:\s*\[', re.I)),
]


def injection_markers(text):
    """Names of the injection markers in a source text, [] for a clean one. A verifier can refuse to let
    such a passage support a claim. 'Ignore all previous instructions.' -> ['instruction to the model']"""
    return [name for name, pattern in INJECTION_MARKERS if pattern.search(text)]


def quarantine_reasons(text):
    """Why a passage may support no claim: its injection markers, then the learned detector's flag (text
    addressed to the model or its reader, injection_detector.py), [] for a clean passage. The one rule that
    verify() below, CRAG's refinement (assembly.py passes it) and experiments/injection.py's '+quarantine' row apply."""
    return injection_markers(text) + list(injection_detector.flagged(text))


def verify(result, on_verdict=None, step=citations.verify, extra=None):
    """`step`'s verdicts with every quarantined passage (quarantine_reasons, and `extra`: {passage id: reason}) kept
    from supporting: each sentence judged on its other citations; a quarantined citation is imprecise and listed in
    the verdict's "quarantined" with its reasons."""
    extra = extra or {}
    reasons = {p["id"]: r for p in result["passages"]
               if (r := quarantine_reasons(p["text"]) + ([extra[p["id"]]] if p["id"] in extra else []))}
    ids = {p["id"] for p in result["passages"]}
    cited = [[c for c in s["cites"] if c in ids] for s in result["sentences"]]
    kept = {**result, "sentences": [{**s, "cites": [c for c in cs if c not in reasons]}
                                    for s, cs in zip(result["sentences"], cited)]}

    def restore(n, v):   # the sentence's citations as written, the quarantined ones imprecise with their reasons
        v["quarantined"] = {c: reasons[c] for c in cited[n] if c in reasons}
        v["precise"] = {c: c not in reasons and v["precise"].get(c, False) for c in cited[n]}
        v["cites"] = cited[n]
        if on_verdict:
            on_verdict(n, v)
    return step(kept, on_verdict=restore)
