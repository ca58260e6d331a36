"""Probe (not kept): would a model-asked kind check ("does the answer name a <noun>?") catch the wrong verified
answers to 'which NOUN' questions without losing right ones? Over the after-runs' verified answers."""
import json, re, sys
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))
import llm
from lab.cache import Cache, keyed
GOLD = {"golden_test": "golden.json", "debian_all": "debian/golden.json", "catalogue_test": "catalogue/golden.json"}
SKIP = {"is", "was", "are", "were", "does", "did", "do", "has", "had", "can", "should", "will", "would"}
store = Cache("kind_probe", ".rag/cache")
out = []
for run, gold in GOLD.items():
    d = json.load(open(f"results/issue59/after_{run}.json"))
    items = json.load(open(gold))
    items = items if isinstance(items, list) else items.get("questions", items)
    q = {x["id"]: x["question"] for x in items}
    for name, rows in d["rows"].items():
        for r in rows:
            if r.get("status") != "verified":
                continue
            m = re.search(r"\b(?:which|what) ([a-z]+)", q[r["id"]].lower())
            if not m or m.group(1) in SKIP:
                continue
            noun = m.group(1)
            prompt = (f"In one or two words, what kind of thing is \"{r['answer']}\"? (for example: a city, a "
                      "person, a year, a company, a room, an organisation, a course)")
            k = keyed("kind_probe3", prompt)
            reply = store.get(k)
            if reply is None:
                reply = store.put(k, llm.complete_json(prompt, {"type": "object", "properties": {
                    "answer": {"type": "string"}}, "required": ["answer"]}, max_tokens=40))
            out.append((run, name, r["right"], noun, r["answer"], reply["answer"]))
            print(out[-1], flush=True)
for run in GOLD:
    rows = [o for o in out if o[0] == run]
    print(run, "right kept", sum(o[2] and o[5] == "yes" for o in rows), "/", sum(o[2] for o in rows),
          " wrong caught", sum((not o[2]) and o[5] == "no" for o in rows), "/", sum(not o[2] for o in rows))
