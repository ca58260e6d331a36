"""A verify_citations.py results file with its wrong rows made right, three ways (the fabricated hand-ins of
issue 47), for grade.py to grade against the course's reference:

    python results/issue47/fabricate.py IN.json OUT.json --how plain|smarter|stating [--limit N]

- plain: answer, EM, F1 and "right" set to the golden answer's, the file's totals recomputed, the claims kept
  consistent (features.stated 0: no sentence states it) - issue 34's hand-in;
- smarter: also the recorded reply (`written`) is the golden answer, and a sentence stating it is added, cited to
  the row's first passage, which does not state it (rows whose first passage states it are left alone);
- stating: the same sentence, cited to a passage of the row that does state the golden answer (rows with none are
  left alone): what an honest right answer looks like.
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import citations  # noqa: E402
from grading.claims import Chunks  # noqa: E402
from lab.answers import normalize_answer  # noqa: E402
from retrieve import CORPUS_DIR, DEFAULT_CHUNKER, load_golden  # noqa: E402


def states(text, answer):
    return normalize_answer(answer) in normalize_answer(text or "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--how", choices=("plain", "smarter", "stating"), required=True)
    ap.add_argument("--limit", type=int, default=0, help="at most N rows (0: every wrong row)")
    args = ap.parse_args()
    data, gold = json.loads(args.src.read_text()), {g["id"]: g for g in load_golden()}
    chunks, changed = Chunks(CORPUS_DIR), []
    for r in data["rows"]["json"]:
        if r["right"] or r["idk"] or args.limit and len(changed) == args.limit:
            continue
        g = gold[r["id"]]["answer"]
        text = {s["id"]: chunks.text(s["chunk_id"], DEFAULT_CHUNKER) for s in r["sources"]}
        cite = next((i for i, t in text.items() if states(t, g) == (args.how == "stating")), None)
        if args.how != "plain" and cite is None:
            continue
        r.update(answer=g, em=1.0, f1=1.0, right=True)
        r["features"]["stated"] = 0.0
        if args.how != "plain":
            r["written"] = g
            r["verdicts"].append({"text": f"The answer is {g}.", "cites": [cite], "supported": True,
                                  "precise": {cite: True}, "how": "verdict"})
            r.update({k: r[k] + 1 for k in ("sentences", "cited", "supported", "citations", "precise")})
            r["features"]["stated"] = 1.0
        changed.append(r["id"])
    data.update({k: v for k, v in citations.summarize(data["rows"]["json"]).items() if k in data})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{args.how}: {len(changed)} row(s) made right: {', '.join(changed)}")


if __name__ == "__main__":
    main()
