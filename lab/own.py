"""The model's own answer: the prompt that asks the question with no passage at all, and how sure the model is of
its reply. disputes.own_side makes the call (cached) and uses the reply as the one side a folder cannot give when
every page in it states the same (false) value. No model call here.

    read_reply([("Se", -0.05), ("ine", -0.01)])   # {"answer": "Seine", "p": 0.94}

"p" is the probability the model gave its reply's words (the product of their tokens' probabilities, read from
the engine's logprobs): a model that knows an answer gives it with p near 1; one that guesses spreads its
probability over several names. A reply of "unknown" comes back as answer "".
"""
import math

from lab.answers import normalize_answer

OWN_SYSTEM = """Answer the question from your own knowledge; there are no documents. Reply with the shortest answer:
a name, place, number, date or short phrase, on one line."""
OWN_EXAMPLES = [   # (question, reply): two well-known facts
    ("Which river flows through Paris?", "Seine"),
    ("In which year did the Berlin Wall fall?", "1989"),
]
OWN_TOKENS = 16
OWN = "model"   # the source id of the model's own side (disputes.own_side)
UNKNOWN = {"unknown", "i dont know", "not known", "none", ""}


def messages(question):
    """The chat turns: the system rules, the examples as earlier turns, the question."""
    turns = [{"role": "system", "content": OWN_SYSTEM}]
    for q, a in OWN_EXAMPLES:
        turns += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    return turns + [{"role": "user", "content": question}]


def read_reply(pairs):
    """Token (text, logprob) pairs -> {"answer": the first line, "" for unknown, "p": the product of its tokens'
    probabilities}. [('Se', -0.05), ('ine', -0.01)] -> {"answer": "Seine", "p": 0.94}"""
    text, logp = "", 0.0
    for token, logprob in pairs:
        if "\n" in token and text.strip():
            break
        text += token
        logp += logprob
    answer = text.strip().rstrip(".")
    return {"answer": "" if normalize_answer(answer) in UNKNOWN else answer, "p": round(math.exp(logp), 4)}

