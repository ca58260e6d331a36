"""The table of results/issue47/: each graded hand-in (grade.py --json files of grade_handins.sh) in one row.

    python results/issue47/summarize.py /tmp/h47 > results/issue47/graded.md
"""
import json
import re
import sys
from pathlib import Path

out = Path(sys.argv[1])
times = {}
text = (out / "grading.txt").read_text() if (out / "grading.txt").exists() else ""
for m in re.finditer(r"## (\S+), --rerun (\d)\n(?:.*\n)*?time: ([\d.]+) s", text):
    times[m.group(1), m.group(2)] = float(m.group(3))
print("| hand-ins | --rerun | student | score | rows (citations_json_30.json) | what it lost | grading time |")
print("|---|---|---|---|---|---|---|")
for path in sorted(out.glob("graded-*.json")):
    name = path.stem.removeprefix("graded-")
    kind, _, rerun = name.rpartition("-")
    data = json.loads(path.read_text())
    for who, r in data["students"].items():
        most = sum(t["max_score"] for t in r["tests"])
        rows = next((f for p, f in r.get("extra_data", {}).get("rows", {}).items() if "citations" in p), None)
        shown = (f"identical {rows['identical']}, within {rows['within']}, drift {rows['drift']} "
                 f"({rows.get('gains', 0)} right where the reference is wrong), not re-run {rows['not re-run']}, "
                 f"did not reproduce {rows['not reproduced']}, not checked {rows['unchecked']}") if rows else "-"
        lost = sorted({t["output"].splitlines()[0][:110] for t in r["tests"] if t["score"] < t["max_score"]})
        took = times.get((kind, rerun))
        print(f"| {kind} | {rerun if rerun != 'server' else '3 (server)'} | {who} | {r['score']} / {most} | {shown} | "
              f"{'; '.join(lost) or '-'} | {f'{took:.0f} s' if took else '-'} |")
