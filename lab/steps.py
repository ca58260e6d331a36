"""What every pattern shares about how it answered: its trace, the one line each step reads as, and the result.

    with steps.watch() as seen:          # in the thread that answers
        multihop.smart_answer(question)  # meanwhile another thread reads `seen`: route, retrieve, ...

- `Trace`: a pattern's list of steps (dicts). To everything else a plain list (==, json, slicing); its append()
  also publishes the step to the thread's watcher, so the demo page shows each step the moment it happens.
  A step updated after it was appended (a retrieval retried deeper) shows updated.
- `describe(step)`: one line of text per step, the one wording the CLIs (`print_trace`), the page and the
  benchmark's reports use.
- `finish(result, mode, trace, retrieved, cost, start, **fields)`: a pattern's answer, generate()'s dict plus
  mode, trace, the chunks it saw, its cost with wall seconds, and its own fields.
"""
import contextlib
import json
import threading
import time

_WATCH = threading.local()


class Trace(list):
    """A pattern's trace: a list whose append() also publishes the step to this thread's watcher, if any."""

    def append(self, step):
        super().append(step)
        seen = getattr(_WATCH, "seen", None)
        if seen is not None and seen is not self:
            seen.append(step)


def trace(steps=None):
    """The trace a pattern appends to: the caller's (steps, when given) or a new one."""
    return steps if steps is not None else Trace()


@contextlib.contextmanager
def watch():
    """with watch() as seen: every step appended to any Trace in this thread meanwhile lands in `seen`,
    in order (a plain list: read it from another thread while this one works)."""
    previous, _WATCH.seen = getattr(_WATCH, "seen", None), []
    try:
        yield _WATCH.seen
    finally:
        _WATCH.seen = previous


def finish(result, mode, trace, retrieved, cost, start, **fields):
    """The answer a pattern returns: generate()'s dict (result) plus mode, trace, `retrieved` (chunk id and doc of
    every chunk it saw, once each, in order), cost (llm.counting's figures and wall_seconds since `start`) and
    the pattern's own fields (action, triggers, entities...)."""
    seen = list({p["chunk_id"]: {"chunk_id": p["chunk_id"], "doc": p["doc"]} for p in retrieved}.values())
    return {**result, "mode": mode, "trace": trace, "retrieved": seen,
            "cost": {**cost, "wall_seconds": time.perf_counter() - start}, **fields}


def _short(value, limit=300):
    if isinstance(value, list):
        value = ", ".join(_short(v, 80) for v in value)
    elif isinstance(value, dict):
        value = json.dumps(value, ensure_ascii=False)
    elif isinstance(value, float):
        value = f"{value:.3g}"
    value = str(value)
    return value if len(value) <= limit else value[:limit] + "…"


def _low(s):
    return ", ".join(f"{t!r} {p:.2f}" for t, p in s.get("low", []))


def describe(s):
    """One trace step -> one line. {"step": "hop", "n": 1, "query": "Who?", "answer": "Vell", "source": "S1"}
    -> 'hop 1: Who? -> Vell (source S1)'; a step without a wording of its own lists its fields."""
    kind = s.get("step", "?")
    at = f"[round {s['round']}] " if "round" in s else ""
    if kind == "route" and "router" in s:
        p = f", P(multi) {s['p_multi']:.2f}" if s.get("p_multi") is not None else ""
        return f"route: {'multi' if s['multi'] else 'single'}-hop by the {s['router']} router{p}"
    if kind == "decompose":
        return "sub-questions: " + " | ".join(f"{n}. {q}" for n, q in enumerate(s["sub_questions"], 1)) \
            if s["sub_questions"] else "decomposition: nothing usable"
    if kind == "retrieve":
        hop = f" (hop {s['hop']})" if "hop" in s else ""
        how = f" by {s['method']}" if s.get("method") else ""
        chunks = [f"{label} {c}" for label, c in zip(s["labels"], s["chunks"])] if "labels" in s else s["chunks"]
        return (f"{at}retrieve{hop}{how} {s['query']!r}: {_short(chunks)}"
                + "".join(f"; {line}" for line in s.get("links", [])))
    if kind == "hop":
        return f"hop {s['n']}: {s['query']} -> {s['answer'] or 'no answer'} (source {s['source'] or 'none'})"
    if kind in ("segment", "regenerate"):
        low = _low(s)
        return (f"{'segment ' + str(s['n']) if kind == 'segment' else 'regenerated'} ({s['kind']}, lowest p "
                f"{s['confidence']:.2f}{', under ' + str(s['threshold']) + ': ' + low if low else ''}): {s['text']}")
    if kind == "trigger":
        return (f"trigger {s['retrieval']}: confidence {s['confidence']:.2f} on {_short([w for w, _ in s['low']])}; "
                f"query {s['query']!r} brought {_short(s['labels']) or 'nothing new'}")
    if kind == "evaluate":
        return (f"evaluate {s['chunk']}: grade {s['grade']:+.1f} -> score {s['score']:+.1f}"
                + ("" if s.get("grounded", True) else f" (does not name {s.get('subject')!r})"))
    if kind == "action":
        return (f"action: {s['action'].upper()} (max {s['max']}, min {s['min']}; correct if a score > {s['upper']}, "
                f"incorrect if all < {s['lower']})")
    if kind == "web":
        return f"web query {s['query']!r}: " + (", ".join(f"{r['url']} ({r['backend']})" for r in s["results"])
                                                 or "nothing")
    if kind == "refine" and "chunk" in s:
        return f"refine {s['chunk']}: " + ("kept whole (short)" if s["whole"]
                                           else f"kept sentences {s['kept'] or 'none'} of {s['of']}")
    if kind == "refine":
        return f"{at}refined query: {s['query']!r}"
    if kind == "decide":
        return f"decide: {'retrieve' if s['retrieve'] else 'NO retrieval'} ({s['by']})"
    if kind == "relevance":
        return f"{at}{s['chunk']}: {'relevant' if s['relevant'] else 'NOT relevant'}"
    if kind == "critique":
        return f"{at}critique: support {s['support']}, usefulness {s['usefulness']}"
    if kind in ("generate", "synthesize"):
        return f"{at}answer {s['answer']!r} from {', '.join(s['chunks']) or 'no passages'}"
    if kind == "select":
        return f"chosen: the answer of round {s['round']}: {s['answer']!r}"
    if kind in ("warning", "fallback", "skip", "stop", "note") and ("message" in s or "reason" in s):
        return f"{at}{kind}: {s.get('message') or s.get('reason')}" + (f" (to {s['to']})" if s.get("to") else "")
    return f"{at}{kind}: " + "; ".join(f"{k} {_short(v)}" for k, v in s.items() if k not in ("step", "round"))


def print_trace(trace):
    """Every step of a trace, one line each (describe): what a pattern's CLI prints before its answer."""
    for s in trace:
        print(describe(s))


def cost_line(c, seconds="seconds"):
    """What one answer cost, in the CLIs' words: 'llm calls 2  prompt tokens 900  completion tokens 40  12.3 s'."""
    return (f"llm calls {c['calls']}  prompt tokens {c['prompt_tokens']}  completion tokens {c['completion_tokens']}  "
            f"{c.get(seconds, c['seconds']):.1f} s")
