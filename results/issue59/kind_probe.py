"""Probe (not kept): would a model-asked kind check catch the wrong verified answers to 'which NOUN' questions
without losing right ones? Over the after-runs' verified answers, in one of two forms:
    python results/issue59/kind_probe.py            # yes/no: "Is ANSWER a NOUN, or the name of one?"
    python results/issue59/kind_probe.py --open     # "In one or two words, what kind of thing is ANSWER?"
Prints (run, pattern, right, asked noun, answer, the model's reply) per answer; with yes/no, the counts per run."""
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import llm  # noqa: E402
from lab.cache import Cache, keyed  # noqa: E402

GOLD = {"golden_test": "golden.json", "debian_all": "debian/golden.json", "catalogue_test": "catalogue/golden.json"}
SKIP = {"is", "was", "are", "were", "does", "did", "do", "has", "had", "can", "should", "will", "would"}


def ask(question, noun, answer, open_form):
    """The model's reply (cached) to the yes/no or the open form of the question about the answer's kind."""
    if open_form:   # no question shown: with it, the model repeats the question's noun
        prompt = (f"In one or two words, what kind of thing is \"{answer}\"? (for example: a city, a person, a year, "
                  "a company, a room, an organisation, a course)")
        schema, name, tokens = {"type": "string"}, "kind_probe3", 40
    else:
        prompt = (f"Question: {question}\nProposed answer: {answer}\n"
                  f"The question asks for a {noun}. Is \"{answer}\" a {noun}, or the name of one? Answer yes or no.")
        schema, name, tokens = {"type": "string", "enum": ["yes", "no"]}, "kind_probe", 10
    store, key = Cache("kind_probe", ".rag/cache"), keyed(name, prompt)
    reply = store.get(key)
    if reply is None:
        reply = store.put(key, llm.complete_json(prompt, {"type": "object", "properties": {"answer": schema},
                                                          "required": ["answer"]}, max_tokens=tokens))
    return reply["answer"]


def main():
    open_form, out = "--open" in sys.argv[1:], []
    for run, gold in GOLD.items():
        d = json.load(open(f"results/issue59/after_{run}.json"))
        q = {x["id"]: x["question"] for x in json.load(open(gold))}
        for name, rows in d["rows"].items():
            for r in rows:
                m = re.search(r"\b(?:which|what) ([a-z]+)", q[r["id"]].lower())
                if r.get("status") == "verified" and m and m.group(1) not in SKIP:
                    reply = ask(q[r["id"]], m.group(1), r["answer"], open_form)
                    out.append((run, name, r["right"], m.group(1), r["answer"], reply))
                    print(out[-1], flush=True)
    for run in GOLD if not open_form else ():
        rows = [o for o in out if o[0] == run]
        print(run, "right kept", sum(o[2] and o[5] == "yes" for o in rows), "/", sum(o[2] for o in rows),
              " wrong caught", sum((not o[2]) and o[5] == "no" for o in rows), "/", sum(not o[2] for o in rows))


if __name__ == "__main__":
    main()
