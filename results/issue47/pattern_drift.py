"""A pattern script's rows made on one build against the course's reference made on another: each row's class
(grading/reference.py) and, for the rows that differ, drift.py's verdict (the rows of patterns that write their own
queries are checked by their recorded retrievals).

    python results/issue47/pattern_drift.py HANDIN.json REFERENCE.json [--script flare.py] [--json OUT]
"""
import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from grading import drift, handin  # noqa: E402
from grading.claims import Chunks  # noqa: E402
from grading.reference import Reference, classify  # noqa: E402
from lab import engine  # noqa: E402
from retrieve import CORPUS_DIR, GOLDEN  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("handin", type=Path)
    ap.add_argument("reference", type=Path)
    ap.add_argument("--script", default="flare.py")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    course = handin.Course(CORPUS_DIR, GOLDEN, engine.EMBEDDED_NAME, engine.GGUF_SHA256)
    with tempfile.TemporaryDirectory() as ref:
        shutil.copy(args.reference, Path(ref) / args.reference.name)
        rows = classify(args.script, json.loads(args.handin.read_text()), Reference(Path(ref)),
                        {"retrieval_tolerance": 0.01})
    chunks, out = Chunks(course.corpus), []
    for r in rows:
        why = drift.honest(args.script, r["row"], course.by_id.get(r["id"]), course, chunks, method=r["method"]) \
            if r["class"] == "differs" else None
        out.append({"method": r["method"], "id": r["id"], "class": r["class"], "changes": r["changes"][:3],
                    "drift": why, "recorded": len(r["row"].get("retrievals") or [])})
        print(f"{r['method']:10} {r['id']:40} {r['class']:10} retrievals {out[-1]['recorded']:2d}"
              + (f"  changes: {'; '.join(r['changes'][:2])}" if r["changes"] else "")
              + ("" if why is None else "  -> honest drift" if not why else f"  -> NOT: {why[0]}"))
    n = {c: sum(o["class"] == c for o in out) for c in ("identical", "within", "differs", "unchecked")}
    honest = sum(o["drift"] == [] for o in out)
    print(f"\n{len(out)} rows: {n}; of the {n['differs']} that differ, {honest} pass as honest drift")
    if args.json:
        args.json.write_text(json.dumps({"rows": out, "classes": n, "honest": honest}, indent=1) + "\n")


if __name__ == "__main__":
    main()
