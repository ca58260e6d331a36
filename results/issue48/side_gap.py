"""Probe (dev only): how close to the question is the sentence in which each side of a dispute states its answer?
For every disputed row of the given disputes_eval JSON files, each side's best cosine (MiniLM) between the question
and a sentence of one of its sources that names the side's answer, and the gap between the best side and each
other side. Clean questions' disputes are false ones; counterfactual ones are real. No model call (the dispute
check replays from the cache).

    python results/issue48/side_gap.py results/issue48/golden_dev60_v4.json results/issue48/cf_dev_30_v4.json
"""
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import numpy as np  # noqa: E402

import disputes  # noqa: E402

disputes.SIDE_MARGIN = 9.0   # every side, as before the rule
import harness  # noqa: E402
from lab.answers import named_in  # noqa: E402
from retrieve import CORPUS_DIR, GOLDEN  # noqa: E402
from vector_index import embed  # noqa: E402


def sentences(text):
    return [s for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


def side_sims(question, d, passages):
    by_id = {p["id"]: p for p in [*passages, *d.get("more", [])]}
    q = embed([question])[0]
    out = []
    for g in d["answers"]:
        best = -1.0
        for pid in g["sources"]:
            found = [s for s in sentences(by_id[pid]["text"]) if named_in(s, g["answer"], 1.0)] if pid in by_id else []
            if found:
                best = max(best, float(np.max(embed(found) @ q)))
        out.append(round(best, 3))
    return out


def main(paths):
    golden = {x["id"]: x for x in json.loads(GOLDEN.read_text())}
    for path in paths:
        data = json.loads(Path(path).read_text())
        folders = data.get("counterfactual") or [None]
        items = {}
        for f in folders:
            if f:
                items.update({(x["id"], x["ratio"]): (x, Path(f) / "corpus") for x in
                              json.loads((Path(f) / "golden.json").read_text())})
        for r in data["rows"]:
            if not r["disputed"]:
                continue
            item, corpus = items[(r["id"], r["ratio"])] if "ratio" in r else (golden[r["id"]], CORPUS_DIR)
            name, fn, settings = harness.run_args(corpus=corpus)
            result = harness.cached_answer(name, fn, item, settings)["result"]
            d = disputes.check(result, corpus=corpus)
            sims = side_sims(item["question"], d, result["passages"])
            top = max(sims)
            print(json.dumps({"kind": "cf" if "ratio" in r else "clean", "id": r["id"], "false": r.get("false"),
                              "sides": [g["answer"] for g in d["answers"]], "sims": sims,
                              "second_gap": round(top - sorted(sims)[-2], 3) if len(sims) > 1 else None}))


if __name__ == "__main__":
    main(sys.argv[1:])
