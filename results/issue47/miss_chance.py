"""How often the grader's sampled re-run misses k fabricated rows it has no other way to see (rows the reference
does not hold, whose cited passages state the golden answer), over many --seed values, against the chance the
grader prints (reference.escape).

    python results/issue47/miss_chance.py HANDIN [--seeds 1000] [--rerun 3] [--budget 120] [--json OUT]

It runs the grader's own draw (rerun.pick, over the hand-in's runnable rows, dealt across its files within the
budget) with no model call: which rows would be re-run. A fabricated row is caught when it is drawn (its re-run
makes the course model's answer, not the gold one it claims). The fabricated rows are the wrong rows of
verify_citations.py's file, the first k in file order.
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from grading import handin, rerun  # noqa: E402
from grading.checks import check_file  # noqa: E402
from grading.reference import escape  # noqa: E402
from lab import engine  # noqa: E402
from retrieve import CORPUS_DIR, GOLDEN  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("handin", type=Path)
    ap.add_argument("--seeds", type=int, default=1000)
    ap.add_argument("--rerun", type=int, default=3)
    ap.add_argument("--budget", type=float, default=120)
    ap.add_argument("--student", default="", help="whose draw the files hold (default: the course's)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    course = handin.Course(CORPUS_DIR, GOLDEN, engine.EMBEDDED_NAME, engine.GGUF_SHA256)
    _, files = handin.read_handin(args.handin)
    units = [u for entry, raw in files for u in check_file(entry, raw, course.of(args.student))["units"]]
    runnable = [u for u in units if u["family"] != "retrieval" and u["id"] in course.by_id
                and not isinstance(rerun.answerer(u, course), str)]
    wrong = [u for u in runnable if u["file"].endswith("citations_json_30.json") and u["row"]
             and not u["row"].get("right") and not u["row"].get("idk")]
    out = {"handin": args.handin.name, "runnable": len(runnable), "seeds": args.seeds, "rerun": args.rerun,
           "budget": args.budget, "rows": []}
    print(f"{len(runnable)} runnable rows; {len(wrong)} wrong rows in citations_json_30.json (fabrication targets)")
    draws = [rerun.pick(runnable, args.rerun, seed, args.budget)[0] for seed in range(args.seeds)]   # once for every k
    in_file = sum(u["file"] == wrong[0]["file"] for u in runnable)
    print(f"{'k':>3}{'missed over seeds':>20}{'P printed (mean)':>18}{'P whole hand-in':>17}")
    for k in (1, 2, 3, 5, 10):
        if k > len(wrong):
            break
        fake = {id(u) for u in wrong[:k]}
        missed, printed = 0, []
        for picked in draws:
            missed += not any(id(u) in fake for u in picked)
            printed.append(escape(in_file, k, sum(u["file"] == wrong[0]["file"] for u in picked)))
        whole = escape(len(runnable), k, args.rerun)
        out["rows"].append({"k": k, "missed": missed / args.seeds, "printed_mean": sum(printed) / len(printed),
                            "escape_whole": whole})
        print(f"{k:3d}{missed / args.seeds:20.3f}{sum(printed) / len(printed):18.3f}{whole:17.3f}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
