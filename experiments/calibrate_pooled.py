"""Calibrating "verified" on more than one folder: fit the answer check on the dev rows of several runs together, and
report every run's test rows under it, with no model call.

    python -m experiments.calibrate_pooled results/answer_check.json:golden.json \
        results/issue45/benchmark_catalogue_dev.json:catalogue/golden.json \
        results/issue45/benchmark_bridge_test.json:catalogue/golden.json --write

Each argument is a run's JSON (experiments/answer_check_eval.py's or benchmark.py's: rows with the answer check's
features and the "right" label) and the golden file its questions come from, which says each row's split
(golden.split_of; answer_check_eval's rows say it in their key). A row's "right" label and its "relevant" feature
are read again with today's answer_check (no model call), so a run made before a change to them still counts.

The fit is answer_check_eval.fit on the pooled dev rows, each row's group "<pattern>/<folder of its golden file>"
in the place of its pattern, so the threshold keeps the target precision on each folder's rows and each pattern's
on their own, not only on the pool. The report re-scores each test row under the new calibration as
answer_check.check would: verified when its status was verified or supported, a supported sentence states the
answer, the answer is of the kind asked, and the score reaches the threshold (the other statuses do not read the
calibration). Per group and question type: n, right, verified, their precision, and coverage (the share of right
answers shown verified). --write saves the calibration as the answering model's (models/calibration/), which the
lab then reads; --current fits nothing and reports under the calibration in force, for a before/after.
Not handled: rows whose features an older answer check computed under other names (they are left out and counted).
"""
import argparse
import json
import sys
from pathlib import Path

from layers import answer_check
from experiments.answer_check_eval import fit
from lab.cache import write_json
from golden import split_of
from lab import answers

HELD = ("verified", "supported")   # the statuses a calibration decides between


def load(spec):
    """'run.json:golden.json' -> rows, each with "pattern", "group", "split" and "unanswerable" where given."""
    run, _, golden = spec.partition(":")
    data = json.loads(Path(run).read_text())
    items = {g["id"]: g for g in json.loads(Path(golden).read_text())} if golden else {}
    folder = Path(golden).parent.name or Path(golden).stem if golden else Path(run).stem   # catalogue, golden
    out = []
    for key, rows in data["rows"].items():
        pattern, _, split = key.partition("/")
        for r in rows:
            s = split or (split_of(items[r["id"]]) if r["id"] in items else None)
            if s and r.get("features"):
                r = {**r, "pattern": pattern, "split": s, "group": f"{pattern}/{folder}"}
                if r["id"] in items:   # the model-free parts as today's code reads them: the label, the kind asked
                    item, answer = items[r["id"]], r.get("answer") or ""
                    r["right"] = answers.right(answer, item)
                    fits = answer_check.relevant(item["question"], answer)[0]
                    r["features"] = {**r["features"], "relevant": float(fits)}
                out.append(r)
    return out


def shown_verified(row, cal):
    """Whether answer_check.check would show this row verified under cal (no model call: its parts are in the row)."""
    return row["status"] in HELD and answer_check.passes(row["features"], cal)


def table(rows, cal):
    """{(group, type): figures} of the rows under cal."""
    out = {}
    for key in sorted({(r["group"], r["type"]) for r in rows}) + sorted({(r["group"], "all") for r in rows}):
        rs = [r for r in rows if r["group"] == key[0] and key[1] in ("all", r["type"]) and not r.get("unanswerable")]
        un = [r for r in rows if r["group"] == key[0] and r.get("unanswerable")]
        ver = [r for r in rs if shown_verified(r, cal)]
        right, ok = sum(r["right"] for r in rs), sum(r["right"] for r in ver)
        out[key] = {"n": len(rs), "right": right, "verified": len(ver),
                    "precision": round(ok / len(ver), 3) if ver else None,
                    "coverage": round(ok / right, 3) if right else None,
                    "unanswerable_verified": sum(shown_verified(r, cal) for r in un) if key[1] == "all" else None}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="run.json:golden.json (rows of answer_check_eval or benchmark)")
    ap.add_argument("--target", type=float, default=0.90, help="precision of verified to keep on dev, per group")
    ap.add_argument("--write", action="store_true", help="save the calibration for the answering model")
    ap.add_argument("--current", action="store_true", help="fit nothing: report under the calibration in force")
    ap.add_argument("--json", type=Path, help="write the calibration and both tables here")
    args = ap.parse_args()
    try:
        rows = [r for spec in args.runs for r in load(spec)]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"calibrate_pooled: cannot read a run: {e}")
    names = {tuple(sorted(r["features"])) for r in rows}
    if len(names) > 1:
        keep = max(names, key=lambda n: sum(tuple(sorted(r["features"])) == n for r in rows))
        print(f"left out {sum(tuple(sorted(r['features'])) != keep for r in rows)} rows with other features")
        rows = [r for r in rows if tuple(sorted(r["features"])) == keep]
    dev, test = [r for r in rows if r["split"] == "dev"], [r for r in rows if r["split"] == "test"]
    if args.current:
        cal = answer_check.calibration()
        if not cal:
            sys.exit("calibrate_pooled: the answering model has no calibration to report")
        print(f"the calibration in force ({answer_check.calibration_name(cal)}): threshold {cal['threshold']}, "
              f"by route {cal.get('thresholds', '-')}")
    else:
        cal = fit([{**r, "pattern": r["group"]} for r in dev], args.target)
        cal["fitted_on"] = sorted({r["group"] for r in dev})
        print(f"fitted on {cal['dev_rows']} dev rows ({', '.join(cal['fitted_on'])}): threshold {cal['threshold']}, "
              f"by route {cal['thresholds']}")
    print("  " + ", ".join(f"{f} {c:+.2f}" for f, c in zip(cal["features"], cal["coef"])) + f", intercept "
          f"{cal['intercept']:+.2f}")
    tables = {"dev": table(dev, cal), "test": table(test, cal)}
    for split, figs in tables.items():
        print(f"\n{split:5} {'group':18} {'type':7} {'n':>4} {'right':>6} {'verified':>9} {'precision':>10} "
              f"{'coverage':>9} {'unans ver':>10}")
        for (group, kind), f in figs.items():
            print(f"{'':5} {group:18} {kind:7} {f['n']:>4} {f['right']:>6} {f['verified']:>9} "
                  + "".join(f"{'-' if f[c] is None else f[c]:>{w}}" for c, w in
                            (("precision", 11), ("coverage", 10), ("unanswerable_verified", 11))))
    if args.write and not args.current:
        answer_check.CALIBRATIONS.mkdir(parents=True, exist_ok=True)
        write_json(answer_check.calibration_path(), cal)
    if args.json:
        write_json(args.json, {"calibration": cal, "runs": args.runs,
                               "figures": {s: {f"{g}/{k}": v for (g, k), v in t.items()} for s, t in tables.items()}})


if __name__ == "__main__":
    main()
