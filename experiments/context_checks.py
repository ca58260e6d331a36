"""An answer's checks asked inside the answer's own prompt, so its sources are read once: a measured candidate.

Not used by the lab: its in-context verdict lost to the judge on its own on dev pairs (python -m
experiments.judge_eval --designs answer_check,in_context,in_context_among; results/context_checks_judge_dev*.json),
so the lab's checks stay judge.py's. The answer's prompt would be a system prompt (the answer's rules and example,
generate.JSON_SYSTEM, then the checks' rules, CHECK_RULES below) and a user message: the sources, then the
question. Each check of that answer is the same two messages with one more line naming the sources it may use:
    Check: answer from [S2][S3] to "Where was the designer of Ashford Bridge born?"
    Check: answer from [S2] to "...", one of: Corran | Tomas Vell
    Check: does [S2] state: Tomas Vell was born in Hartmoor.
llama.cpp's prompt cache holds the answer's prompt, so a check reads only its own line (~20-60 tokens) where the
judge on its own read the cited passages again after its own system prompt (~100-400 tokens each).
- InContext(context, ids): the judge's three prompts (judge_answers.Alone's answer / choose / verdict) asked this
  way, so the
  answer_check design (judge_answers._answer_check) runs unchanged on top of it.
- judge_claim(): the sentence judge asked this way; answer(): the question to one passage or a chain of them (what
  answer_check.agreed and disputes.check ask).
Replies are cached like the judge's (judge.timed), keyed by the whole context: the system prompt, the sources and
question, and the check's line.
"""
import generate
import judge
import llm
from generate import is_idk
from lab.cache import Cache
from layers import judge_answers

CHECK_RULES = """Instead of a question to answer, the last lines may ask you to check the sources, in the JSON asked
for. A check names the sources it may read, like [S2]: use only those, as if the other sources were not there. They may
name several people, places, numbers and dates in different roles: read what is asked carefully.
- "Check: answer from [S2] to <question>": reply with the shortest answer those sources give, copied from them (a
  name, place, number, date or short phrase), or "not stated" when they do not answer the question.
- The same with "Options:": reply with the option those sources give as the answer, or "not stated".
- "Check: does [S2] state: <claim>": reply YES only if those sources state what the claim says (the same names and
  numbers in the same relation), NO if the claim adds a fact they do not state or puts a name in another role.

Checks on the example's sources.
Check: answer from [S1] to "Who designed Ashford Bridge?"
{"answer": "Tomas Vell"}
Check: answer from [S2] to "Who designed Ashford Bridge?"
{"answer": "not stated"}
Check: answer from [S1] to "Who designed Ashford Bridge?"
Options:
- Ashford Bridge
- Tomas Vell
- not stated
{"answer": "Tomas Vell"}
Check: answer from [S1][S2] to "Where was the designer of Ashford Bridge born?"
{"answer": "Hartmoor"}
Check: does [S1][S2] state: The answer to "Where was the designer of Ashford Bridge born?" is Tomas Vell.
{"verdict": "NO"}
Check: does [S2] state: Tomas Vell designed Ashford Bridge.
{"verdict": "NO"}
Check: does [S2] state: Tomas Vell was born in Hartmoor.
{"verdict": "YES"}"""
# with the checks' rules after the answer's, the answer and every check of it begin with the same bytes, this and the
# sources, so the engine reads the sources once
CHECK_SYSTEM = generate.JSON_SYSTEM + "\n\n" + CHECK_RULES


def context_of(result):
    """{"system", "user"}: the json-style prompt of an answer's question over its passages, with the checks' rules
    after the answer's (CHECK_SYSTEM): the prompt every check of it begins with."""
    _, user = generate.prompt(result["question"], result["passages"], "json")
    return {"system": CHECK_SYSTEM, "user": user}


def tag(ids):
    """['S2', 'S3'] -> '[S2][S3]'"""
    return "".join(f"[{i}]" for i in ids)


class InContext:
    """The judge's three prompts about the sources `ids`, asked after the answer's own prompt (see
    judge_answers.Alone)."""

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
            said = str(self._json(task, judge_answers.ANSWER_SCHEMA).get("answer", "")).strip()
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
    slot = judge_answers.claim_slot(claim, question, answer)
    ok = judge_answers._answer_check(claim, source[:judge.MAX_SOURCE_CHARS], slot,
                             parts, asker=InContext(context, ids))
    return ok, parts


def answer(context, question, ids):
    """What the sources `ids` alone give as the answer to `question`: a cached reply (judge_answers.source_answer's
    kind)."""
    return InContext(context, ids).answer(question)
