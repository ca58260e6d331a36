"""Week 4 (speed): an answer's checks asked inside the answer's own prompt, so its sources are read once.

The cited answer's prompt (generate.prompt) is a system prompt (the answer's rules and example, then the checks'
rules, generate.CHECK_RULES) and a user message: the sources, then the question. Each check of that answer is the
same two messages with one more line naming the sources it may use:
    Check: answer from [S2][S3] to "Where was the designer of Ashford Bridge born?"
    Check: answer from [S2] to "...", one of: Corran | Tomas Vell
    Check: does [S2] state: Tomas Vell was born in Hartmoor.
llama.cpp's prompt cache holds the answer's prompt, so a check reads only its own line (~20-60 tokens) where the
judge on its own read the cited passages again after its own system prompt (~100-400 tokens each).
- InContext(context, ids): the judge's three prompts (judge.Alone's answer / choose / verdict) asked this way, so the
  answer_check design (judge._answer_check) runs unchanged on top of it.
- judge_claim(): citations.verify's sentence judge; answer(): answer_check.agreed's and disputes.check's question
  to one passage or a chain of them.
Replies are cached like the judge's (judge.timed), keyed by the whole context: the system prompt, the sources and
question, and the check's line. With RAG_JUDGE_MODEL set, the fact-checking model judges as before (no context).
Not handled: a pattern whose answer came from another prompt (FLARE's, Self-RAG's critics) gets the same checks,
right, but without the cache's saving: its checks read the sources once, on the first check.
"""
import generate
import judge
import llm
from generate import is_idk
from lab.cache import Cache



def on():
    """Whether citations.verify, answer_check.agreed and disputes.check ask in context: generate.CHECKS_IN_CONTEXT,
    off since the in-context verdict lost to the judge on its own on dev pairs (results/context_checks_judge_dev*)."""
    return generate.CHECKS_IN_CONTEXT


def context_of(result):
    """{"system", "user"}: the json-style prompt of an answer's question over its passages, with the checks' rules
    (as generate() sends it when CHECKS_IN_CONTEXT is on)."""
    system, user = generate.prompt(result["question"], result["passages"], "json", checks=True)
    return {"system": system, "user": user}


def tag(ids):
    """['S2', 'S3'] -> '[S2][S3]'"""
    return "".join(f"[{i}]" for i in ids)


class InContext:
    """The judge's three prompts about the sources `ids`, asked after the answer's own prompt (see judge.Alone)."""

    def __init__(self, context, ids):
        self.context, self.ids = context, list(ids)

    def _ask(self, kind, task, compute):
        payload = [Cache.key(self.context["system"])[:12], self.context["user"], task]
        return judge.timed(f"context-{kind}", payload, compute)

    def _json(self, task, schema):
        return llm.complete_json(f"{self.context['user']}\n{task}", schema, system=self.context["system"],
                                 max_tokens=60)

    def answer(self, question):
        task = f'Check: answer from {tag(self.ids)} to "{question}"'

        def compute():
            said = str(self._json(task, judge.ANSWER_SCHEMA).get("answer", "")).strip()
            return "not stated" if is_idk(said) else said   # the answer's own rule 3 says "I don't know."
        return self._ask("answer", task, compute)

    def choose(self, question, options):
        options = sorted(set(options)) + ["not stated"]  # a fixed order that does not favour the claim's option
        schema = {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "string",
                                                                                      "enum": options}}}
        task = f'Check: answer from {tag(self.ids)} to "{question}"\nOptions:\n' + "\n".join(f"- {o}" for o in options)
        return self._ask("choice", task, lambda: str(self._json(task, schema).get("answer", "")))

    def verdict(self, claim):
        task = f"Check: does {tag(self.ids)} state: {claim}"
        return self._ask("verdict", task, lambda: judge.yes_no(self.context["system"],
                                                                 f"{self.context['user']}\n{task}"))


def judge_claim(context, claim, ids, source, question=None, answer=None):
    """(supported, parts): the answer_check design on the cited sources `ids` (their text joined is `source`, which
    the name checks read), asked in the answer's context."""
    parts = {}
    ok = judge._answer_check(claim, source[:judge.MAX_SOURCE_CHARS], judge.claim_slot(claim, question, answer),
                             parts, asker=InContext(context, ids))
    return ok, parts


def answer(context, question, ids):
    """What the sources `ids` alone give as the answer to `question`: a cached reply (judge.source_answer's kind)."""
    return InContext(context, ids).answer(question)
