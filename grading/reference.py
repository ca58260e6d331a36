"""A hand-in's rows against the course's reference run (grade.py --reference DIR; default: this repository's
committed results/, made by the same code on the same golden set): each row of a results file is matched to the
reference row of the same script, settings and question, and is

- "identical": equal but for the wall-clock fields (seconds, judge_seconds, check_seconds);
- "within" tolerance: every figure a row is scored by equal (answer SQuAD-normalised, EM, F1, doc recall, the
  sentence and citation counts, the status: checks.row_changes; a retrieve.py question's recall), other fields
  not (token counts, verdict wording, fields older rows lack); for a retrieve.py report also questions whose recall
  moved, while they are at most rubric.json's retrieval_tolerance share of its questions (an index built
  elsewhere is an approximate one);
- "differs": grade.py re-runs it first, before the random draw (rerun.py); one not shown to reproduce that passes
  drift.py's checks, none of which depends on the machine it was made on, is "drift" and keeps its points; or
- "unchecked": the reference holds no row of that script, settings and question (grade.py's random draw covers it).

    ref = Reference(Path("results"))
    rows = classify("verify_citations.py", data, ref, rubric["rerun"])   # [{"method", "id", "class", ...}]
    tally(rows, outcomes)   # {"identical": 19, "within": 0, "reproduced": 0, "not reproduced": 3, ...}

A file keeps its points only when each of its differing rows was re-run and reproduced (lost()); a row that differs
and was not re-run (--rerun too small, the budget spent, a row no pattern re-makes, router_eval.py's rows) costs
the file as one that did not reproduce. escape() is the chance that k fabricated rows among the n the reference
cannot check all escape r rows re-run at random (hypergeometric).
The course's reference for every student's draw (run once by the instructor; the lab's caches make a second run
0 model calls, and a file already made is kept, so an interrupted build resumes):

    python -m grading.reference --build REF --dry-run            # what it would run, and its model time estimated
    python -m grading.reference --build REF                      # every graded command on the whole golden pool
    python -m grading.reference --build REF --students ada,bo    # or on each student's draw only (RAG_STUDENT)
    python -m grading.grade SUBMISSIONS --reference REF

Not handled: a hand-in that copies the reference rows is "identical" (it is what the course's code makes: who ran
it is not known; each student's own draw is what tells a copy); a reference that is not what today's code makes
(regenerate it: grading/replay.py shows it).
"""
import argparse
import json
import math
import os
import shlex
import subprocess
import sys
from pathlib import Path

from grading.checks import COMPARED, NUM, close, infer_script, row_changes
from retrieve import DEFAULT_CHUNKER, DRAW_ENV, load_golden

ROOT = Path(__file__).parent.parent   # the repository (this file is in grading/)
DEFAULT = ROOT / "results"
IGNORED = ("corpus", "golden", "limit", "graph", "styles")   # settings that name paths or how many, not what a row is
TIMING = ("seconds", "judge_seconds", "check_seconds")       # wall clock: differs run to run
ROUTER_FIGURES = ("answer", "em", "f1", "recall", "recall_all", "error")   # router_eval.summarize() reads these
CLASSES = ("identical", "within", "reproduced", "not reproduced", "not re-run", "drift", "unchecked")


def settings_key(script, data):
    """What makes a file's rows what they are, as text: its settings less paths and sizes (IGNORED), a retrieve.py
    report's chunker and depth. settings_key("flare.py", {"settings": {"k": 3, "corpus": "c"}}) -> '{"k": 3}'"""
    s = data.get("settings") if isinstance(data.get("settings"), dict) else {}
    if script == "retrieve.py":
        s = {"chunker": data.get("chunker", DEFAULT_CHUNKER), "depth": data.get("depth", 12)}
    return json.dumps({k: v for k, v in s.items() if k not in IGNORED}, sort_keys=True, default=str)


def file_rows(data, script):
    """[(method, row)] of a results file: retrieve.py's per-question rows (method "recall"), otherwise its
    "rows": {method: [rows]} (verify_citations.py's styles, benchmark.py's patterns, a pattern script's generate
    and its own, router_eval.py's modes). A file without rows (an older one) -> []."""
    rows = data.get("rows") if isinstance(data, dict) else None
    if script == "retrieve.py":
        return [("recall", r) for r in rows if isinstance(r, dict) and isinstance(r.get("id"), str)] \
            if isinstance(rows, list) else []
    if not isinstance(rows, dict):
        return []
    return [(m, r) for m, rs in rows.items() if isinstance(rs, list) for r in rs
            if isinstance(r, dict) and isinstance(r.get("id"), str)]


class Reference:
    """The reference rows of a folder of results files (its *.json, the scripts that wrote them known by
    checks.infer_script), by (script, settings_key, method, question id)."""
    def __init__(self, folder=DEFAULT):
        self.folder, self.rows, self.files = Path(folder), {}, []
        for path in sorted(self.folder.glob("*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            script = infer_script(data, path.name)[0]
            found = file_rows(data, script) if script != "unknown" else []
            key = settings_key(script, data) if found else None
            for method, row in found:
                self.rows.setdefault((script, key, method, row["id"]), []).append(row)
            self.files += [path.name] if found else []

    def __len__(self):
        return len(self.rows)


def same(a, b):
    """Two JSON values equal, floats within 1e-9 (checks.close)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, NUM) and isinstance(b, NUM) and not isinstance(a, bool) and not isinstance(b, bool):
        return close(a, b)
    return a == b


def figure_changes(method, ref, row):
    """What a row changes in the figures it is scored by, from the reference row: ["answer 'Hartmoor' -> 'Medra'"].
    Older rows' "status" is the sentence-level one, newer rows' "sentence_status": compared as one."""
    if method == "recall":
        a, b = ref.get("recall") or {}, row.get("recall") or {}
        return [f"{m}@{k} {x} -> {(b.get(m) or {}).get(k)}" for m, v in a.items() for k, x in v.items()
                if not (isinstance((b.get(m) or {}).get(k), NUM) and close(x, b[m][k]))] + (
            ["methods or ks differ"] if {m: sorted(v) for m, v in a.items()} != {m: sorted(v) for m, v in b.items()}
            else [])
    if not any(k in ref for k in ("sentences", "supported")):   # router_eval.py's mode rows
        return [f"{k} {ref.get(k)!r} -> {row.get(k)!r}" for k in ROUTER_FIGURES
                if (k in ref or k in row) and not same(ref.get(k), row.get(k))]
    old = lambda r: {**r, "sentence_status": r["status"], "status": None} if "sentence_status" not in r else r
    ref, row = old(ref), old(row)
    both = [k for k in COMPARED if k in ref and k in row and (k != "status" or None not in (ref[k], row[k]))]
    return row_changes({k: ref[k] for k in both}, row)


def classify(script, data, reference, spec):
    """Every row of one file against the reference -> [{"method", "id", "row", "class", "changes", "ref"}]
    ("class": identical, within, differs or unchecked, as the module's docstring says)."""
    key, out = settings_key(script, data), []
    for method, row in file_rows(data, script):
        refs = reference.rows.get((script, key, method, row["id"])) if reference else None
        if not refs:
            out.append({"method": method, "id": row["id"], "row": row, "class": "unchecked", "changes": [],
                        "ref": None})
            continue
        found = []
        for ref in refs:   # several reference files may hold the row: the closest one decides
            whole = same(*({k: v for k, v in r.items() if k not in TIMING} for r in (ref, row)))
            changes = [] if whole else figure_changes(method, ref, row)
            found.append((0 if whole else 1 if not changes else 2, changes, ref))
        rank, changes, ref = min(found, key=lambda f: f[0])
        out.append({"method": method, "id": row["id"], "row": row, "class": ("identical", "within", "differs")[rank],
                    "changes": changes, "ref": ref})
    moved = [r for r in out if r["method"] == "recall" and r["class"] == "differs"]
    if moved and len(moved) <= spec.get("retrieval_tolerance", 0) * len(out):   # an index built elsewhere
        for r in moved:
            r["class"] = "within"
    return out


def tally(rows, outcomes):
    """Per-row classes and the re-runs' outcomes ({(method, id): True when reproduced}) -> {class: count} over
    CLASSES (a differing row is "reproduced", "not reproduced" or "not re-run")."""
    out = dict.fromkeys(CLASSES, 0)
    for r in rows:
        done = outcomes.get((r["method"], r["id"]))
        out[r["class"] if r["class"] != "differs" else "not re-run" if done is None
            else "reproduced" if done else "not reproduced"] += 1
    return out


def lost(rows, outcomes, limit=3):
    """Why a file loses its points, from its rows (classify) and the re-runs' outcomes: [] when every differing
    row was re-run and reproduced, else lines, the first the reason."""
    bad = [r for r in rows if r["class"] == "differs" and not outcomes.get((r["method"], r["id"]))]
    if not bad:
        return []
    t = tally(rows, outcomes)
    shown = [f"{r['method']} {r['id']} ({'did not reproduce' if (r['method'], r['id']) in outcomes else 'not re-run'}"
             f"): {'; '.join(r['changes'][:3]) or 'fields changed'}"
             + (f"; not honest drift: {r['drift'][0]}" if r.get("drift") else "") for r in bad]
    return [f"{len(bad)} row(s) differ from the course's reference run (reference -> this file) and were not shown "
            f"to reproduce ({t['not reproduced']} re-run and did not reproduce, {t['not re-run']} not re-run): "
            + "; ".join(shown[:limit]) + (f" (and {len(shown) - limit} more)" if len(shown) > limit else "")] \
        + shown[limit:limit + 20]


def escape(n, k, r):
    """The chance that k fabricated rows among n all escape r rows drawn at random from the n (hypergeometric:
    C(n-k, r) / C(n, r)). escape(30, 1, 3) -> 0.9; escape(30, 11, 3) -> 0.239"""
    if k > n or r > n:
        return 0.0
    return math.comb(n - k, r) / math.comb(n, r)


def escape_line(rows, drawn):
    """One line on what the random draw leaves to chance in a file: the rows the reference cannot check (n), the
    ones of them re-run at random (r), and escape() for a few k."""
    n = sum(r["class"] == "unchecked" for r in rows)
    if not n:
        return "every row checked against the reference"
    r = sum((x["method"], x["id"]) in drawn for x in rows if x["class"] == "unchecked")
    ks = sorted({k for k in (1, 3, max(1, n // 4)) if k <= n})
    return (f"{n} row(s) the reference does not hold, {r} of them re-run at random: k fabricated rows among them "
            f"escape with P = " + ", ".join(f"{escape(n, k, r):.2f} (k={k})" for k in ks))


# ---- the course's reference, built ----

SIZES = ("--limit", "--eval", "--router-limit")   # the graded commands' sample sizes: 0 is every question


def reference_command(command, target, pool):
    """A rubric week's command writing its JSON to `target`; pool: every size flag 0 (benchmark.py's default
    --limit too), so it runs the whole golden pool. ("python flare.py --eval 20 --json x", Path("R/f.json"), True)
    -> ['flare.py', '--eval', '0', '--json', 'R/f.json']"""
    words = shlex.split(command)[1:]   # the script and its flags, without "python"
    out = []
    for n, w in enumerate(words):
        prev = words[n - 1] if n else None
        out.append(str(target) if prev == "--json" else "0" if pool and prev in SIZES and w.isdigit() else w)
    if "--json" not in words:
        out += ["--json", str(target)]
    if pool and words and words[0] == "benchmark.py" and "--limit" not in words:
        out += ["--limit", "0"]
    return out


def model_minutes(week, reference, pool):
    """The model time a week's command would take on the whole pool, from the committed reference file's recorded
    seconds per question (answer, judge and check), scaled to the pool's questions of the kinds it holds (single,
    multi); None when it records none."""
    try:
        data = json.loads((reference / Path(week["file"]).name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    rows = [r for _, r in file_rows(data, week["script"])]
    ids = {r["id"] for r in rows}
    kinds = {g["type"] for g in pool if g["id"] in ids}
    spent = sum(r.get(k) or 0 for r in rows for k in TIMING)
    return spent / len(ids) * sum(g["type"] in kinds for g in pool) / 60 if ids and spent else None


def build(out, rubric, students=(), weeks=None, dry=False, reference=DEFAULT, golden=None):
    """Run each graded command for the course's reference, into `out`: on the whole golden pool (no students), or
    once per student on their draw, as `<student>.<file>` (retrieve.py's report, which evaluates every question,
    once). A file already there is kept. Returns the exit code."""
    from retrieve import GOLDEN
    pool = load_golden(golden or GOLDEN)
    out.mkdir(parents=True, exist_ok=True)
    total, failed = 0.0, 0
    for w in rubric["weeks"]:
        if weeks and str(w["week"]) not in weeks or not w.get("command"):
            continue
        for who in students if students and w["script"] != "retrieve.py" else [None]:   # retrieve.py: every question
            name = Path(w["file"]).name
            target = out / (name if who is None else f"{who}.{name}")
            cmd = reference_command(w["command"], target, who is None) + (["--golden", str(golden)] if golden else [])
            minutes = model_minutes(w, reference, pool) if who is None else None
            total += minutes or 0
            shown = (f"{DRAW_ENV}={who} " if who else "") + "python " + shlex.join(cmd)
            if target.exists():
                print(f"kept {target} (made before): {shown}")
                continue
            print(f"$ {shown}" + (f"   (~{minutes / 60:.1f} h of model time, from {name}'s recorded seconds)"
                                  if minutes else ""), flush=True)
            if dry:
                continue
            env = {**os.environ, DRAW_ENV: who or ""}
            code = subprocess.run([sys.executable, *cmd], cwd=ROOT, env=env).returncode
            if code:
                failed += 1
                target.unlink(missing_ok=True)   # a half-made file is not a reference: the next build makes it
                print(f"reference: {shown} failed (exit {code}); the others go on", file=sys.stderr)
    if students == () and total:
        print(f"whole pool ({len(pool)} questions): ~{total / 60:.0f} h of model time on this machine's recorded "
              f"speed, one question at a time")
    return 1 if failed else 0


def main(argv=None):
    from grading.handin import RUBRIC, rubric_problems
    ap = argparse.ArgumentParser(description="Build the course's reference run: every graded command, on the whole "
                                             "golden pool or on each student's draw, into one folder for grade.py.")
    ap.add_argument("--build", type=Path, required=True, metavar="DIR", help="where the reference files go")
    ap.add_argument("--students", help="comma-separated student ids: each one's draw only (default: the whole pool)")
    ap.add_argument("--weeks", help="comma-separated rubric weeks to build (default: all)")
    ap.add_argument("--rubric", type=Path, default=RUBRIC, help="the graded commands (rubric.json)")
    ap.add_argument("--golden", type=Path, help="the golden file (default: golden.json)")
    ap.add_argument("--dry-run", action="store_true", help="print the commands and the model time, run nothing")
    args = ap.parse_args(argv)
    try:
        rubric = json.loads(args.rubric.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        sys.exit(f"reference: cannot read the rubric {args.rubric}: {e}")
    if problems := rubric_problems(rubric):
        sys.exit(f"reference: rubric {args.rubric}: {'; '.join(problems)}")
    students = tuple(s.strip() for s in (args.students or "").split(",") if s.strip())
    weeks = {w.strip() for w in args.weeks.split(",")} if args.weeks else None
    sys.exit(build(args.build, rubric, students, weeks, args.dry_run, golden=args.golden))


if __name__ == "__main__":
    main()
