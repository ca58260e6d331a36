"""Grade hand-ins: is each file the one its script writes, run on the course's corpus, golden set and model; do its
totals come from its own rows; do sampled rows come out the same when re-run; does it clear the week's bar?

    python -m grading.grade SUBMISSIONS   # a folder: one handin.py archive (.tar.gz, .zip) or folder per student
    python -m grading.grade SUBMISSIONS --rerun 3 --json grades.json
    python -m grading.grade SUBMISSIONS --rubric my_rubric.json --corpus DIR --golden FILE --out DIR
    python -m grading.grade SUBMISSIONS --rerun 3 --reference DIR   # the course's reference run (default: results/;
                                                                    # python -m grading.reference --build DIR makes one)

Expected output: the course's fingerprints and reference, one line per student (score / max, then a line for every
item that lost points and a "rows:" line per file: its rows' classes against the reference, its claims, the draw's
miss chance), then the class table; it writes OUT/<student>/results.json (Gradescope: tests with name, score,
max_score, output; the total score), OUT/class.csv and OUT/class.md (OUT defaults to SUBMISSIONS-graded).
Without --rerun it takes seconds. With it, per hand-in: a row-less retrieve.py report is re-evaluated whole
(~30 s, no model), and the re-run model rows' recorded cost (each row's answer and judge seconds, ~20-260 s on
2 cores with the embedded model) is kept within --budget (120 s). A re-run starts on a cold engine (no prompt
cached), so it took about twice its rows' recorded seconds here: ~4 min of model time per distinct hand-in.

Per file, rubric.json's items: valid and recomputed (checks.py), fingerprints (handin.fingerprints), the week's
bars, read from the recomputed figures. Per hand-in, the re-run item (rerun.py): --rerun N rows sampled, seeded
(the same for identical hand-ins), dealt across its files within --budget, re-made by the reference code in
scratch caches and each "reproduced" or "differs"; rubric.json's tolerance lets a share of model rows differ
(llama.cpp's sums drift across thread counts and builds). A row identical across students (same settings, same
question) is re-run once per grading run.
Every row against the course's reference run (reference.py: identical, within tolerance, differs, not checked; the
differing rows re-run first) and what it claims (claims.py, no model call): a file with a differing row not re-run
and reproduced, or a claim that does not hold, loses every point of its week (labs/instructors.md says why), unless
the row passes drift.py's checks, none of which depends on the machine (honest drift). Each student's files must
hold that student's own draw of golden questions (RAG_STUDENT, named by the hand-in's file name; --default-draw:
the course's one draw for all): a hand-in made for another student loses the weeks whose questions are drawn.
Not handled: rows a registry pattern does not make (graphrag.py's "multihop" and "graphrag-auto"), pattern files
run with non-default flags (checked, not re-run), keys with dots in rubric paths.
"""
import argparse
import csv
import json
import sys
import tempfile
import traceback
from pathlib import Path

from grading import drift, handin
from grading.checks import DRAWN, check_file
from grading.claims import Chunks, check as check_claims
from grading.reference import (CLASSES, DEFAULT as REFERENCE, Reference, classify, escape_line, file_rows, lost,
                               tally)
from grading.rerun import Reruns, rerun_test, scored
from retrieve import CORPUS_DIR, GOLDEN
from vector_index import CorpusError


# ---- the rubric ----

def test(name, score, max_score, lines):
    """A Gradescope test; a lost point's reason is the first line of its output."""
    return {"name": name, "score": score, "max_score": max_score, "output": "\n".join(lines)}


def reason(problems, limit=5):
    more = f" (and {len(problems) - limit} more)" if len(problems) > limit else ""
    return [f"{len(problems)} problem(s): " + "; ".join(problems[:limit]) + more] + problems[limit:limit + 20]


def grade_weeks(rubric, checked, broken=None, gone=None):
    """Every rubric week's items for one hand-in -> Gradescope tests. gone: {path: lines} of the files that lose
    every item of their week (rows that differ from the reference and did not reproduce, claims that do not hold)."""
    tests, gone = [], gone or {}
    for w in rubric["weeks"]:
        label = f"week {w['week']} {w['script']}"
        mine = [c for c in checked if c["script"] == w["script"] or c["script"] in (None, "unknown")
                and Path(c["path"] or "").name == Path(w["file"]).name]   # unreadable: known by its name
        c = next((c for c in mine if Path(c["path"] or "").name == Path(w["file"]).name), (mine or [None])[0])
        items = list(w["points"].items()) + [(t["name"], t["points"]) for t in w.get("thresholds", [])]
        if c is None:
            why = broken or f"missing: no results file of {w['script']} in the hand-in (expected {w['file']}" + (
                f", written by `{w['command']}`)" if w.get("command") else ")")
            tests += [test(f"{label}: {name}", 0, pts, [why]) for name, pts in items]
            continue
        for key, pts in w["points"].items():
            problems = c[key] if key != "recomputed" else c["recomputed"] if c["recomputed"] is not None else [
                "not checked: the file is not valid" if c["valid"] else
                f"cannot recompute: a {w['script']} file holds nothing this grader recomputes"]
            tests.append(test(f"{label}: {key}", 0 if problems else pts, pts,
                              reason(problems) if problems else [f"ok: {c['path']}"] + c["notes"]))
        for t in w.get("thresholds", []):
            ok, line = handin.threshold(t, c["figures"]) if not c["valid"] else (False, "no valid file to read it from")
            tests.append(test(f"{label}: {t['name']}", t["points"] if ok else 0, t["points"], [line]))
        if c["path"] in gone:   # the file's rows are not what the course's code makes: its week's points go
            for t in tests[-len(items):]:
                t.update(score=0, output="\n".join(gone[c["path"]] + [f"(otherwise: {t['output']})"]))
    return tests


def grade_student(path, course, rubric, reruns, args, model_ok, student=""):
    """One hand-in -> Gradescope results {"score", "tests", "output"}. Its files' sampled questions must be
    `student`'s own draw of the golden set (retrieve.draw_seed): a hand-in made for another (copied) loses them."""
    try:
        manifest, files = handin.read_handin(path)
    except handin.HandinError as e:
        tests = grade_weeks(rubric, [], broken=str(e))
        if args.rerun:
            tests.append(test(rubric["rerun"].get("name", "re-run"), 0, rubric["rerun"]["points"], [str(e)]))
        return {"score": 0, "tests": tests, "output": str(e)}
    mine = course.of(student)
    checked = [{**check_file(entry, raw, mine), "fingerprints": handin.fingerprints(manifest, raw, course)}
               for entry, raw in files]   # checks.py's checks (on this student's draw), then the fingerprints
    rows, claimed = against(checked, files, course, rubric, args)
    rerun_item, made = None, {"outcomes": {}, "drawn": set()}
    if args.rerun:
        units = [u for c in checked if not c["valid"] for u in c["units"]]
        score, most, lines, made = rerun_test(units, reruns, args.rerun, args.seed, rubric["rerun"], model_ok,
                                              args.budget, args.jobs)
        rerun_item = test(rubric["rerun"].get("name", "re-run"), score, most, lines)
    gone, facts, scripts = {}, {}, {c["path"]: c["script"] for c in checked}
    for path, rs in rows.items():
        done = {(m, i): ok for (f, m, i), ok in made["outcomes"].items() if f == path}
        for r in (r for r in rs if r["class"] == "differs" and not done.get((r["method"], r["id"]))):
            # not shown to reproduce: honest drift keeps its points (drift.py's checks, none machine-bound)
            r["drift"] = drift.honest(scripts[path], r["row"], course.by_id.get(r["id"]), course, args.chunks,
                                      method=r["method"])
            r["class"] = "drift" if not r["drift"] else r["class"]
        bad = claimed[path]["problems"]
        gone[path] = lost(rs, done) + ([f"{len(bad)} problem(s) with what its rows claim (checked with no model "
                                        f"call): " + "; ".join(bad[:3])] + bad[3:20] if bad else [])
        gains = sum(r["class"] == "drift" and bool(r["row"].get("right")) and not (r["ref"] or {}).get("right")
                    for r in rs)   # what a wrong row made right, citing a passage that states the answer, looks like
        facts[path] = {**tally(rs, done), "gains": gains, "claims": {k: v if k != "problems" else len(v)
                                                     for k, v in claimed[path].items()},
                       "escape": escape_line(rs, {(m, i) for f, m, i in made["drawn"] if f == path})}
    for c in checked:   # questions that are not this student's draw: another's run handed in, the week goes
        if drawn := [p for p in c["recomputed"] or [] if DRAWN in p]:
            gone[c["path"]] = [f"its questions are not {student or 'the course'}'s draw of golden questions (a "
                               f"hand-in made for another student): {drawn[0]}"] + gone.get(c["path"], [])
    tests = grade_weeks(rubric, checked, gone={p: g for p, g in gone.items() if g})
    if rerun_item and (drifted := honest_reruns(made, rows)):
        # a re-run that differs from a row the course's reference vouches for is not held against it
        model = [ok or k in drifted for ok, k in zip(made["model"], made["keys"])]
        score, head = scored(rubric["rerun"], made["retrieval"], model, len(drifted))
        rerun_item.update(score=score, output="\n".join([head] + rerun_item["output"].splitlines()[1:]))
    tests += [rerun_item] if rerun_item else []
    graded = {c["path"] for c in checked if any(c["script"] == w["script"] for w in rubric["weeks"])}
    extra = [f"{c['path']} ({c['script']}): no rubric week" for c in checked if c["path"] not in graded]
    notes = handin.about(manifest) + ([f"not graded: {', '.join(extra)}"] if extra else [])
    notes += [rows_line(p, f) for p, f in facts.items()]
    return {"score": round(sum(t["score"] for t in tests), 2), "tests": tests, "output": "\n".join(notes),
            "extra_data": {"rows": facts}}


def honest_reruns(made, rows):
    """The re-run rows that did not reproduce, yet the course's reference vouches for: the row is the reference's own
    (identical, within tolerance: the grading machine did not reproduce its course's run), or differs from it and
    passes drift.py's checks (the grading machine made the course's answer, the student's another, honestly)
    -> {(file, method, id)}. A row the reference lacks is not excused: its re-run is the only check it gets."""
    by = {(path, r["method"], r["id"]): r for path, rs in rows.items() for r in rs}
    return {key for key, ok in zip(made.get("keys", ()), made.get("model", ()))
            if not ok and key in by and by[key]["class"] in ("identical", "within", "drift")}


def against(checked, files, course, rubric, args):
    """Each graded file's rows against the course's reference (reference.classify) and what they claim
    (claims.check) -> ({path: rows}, {path: claims}); the units grade.py may re-run learn their row's class and
    reference row. Files no rubric week grades are left alone."""
    rows, claimed, graded = {}, {}, {w["script"] for w in rubric["weeks"]}
    for c, (_, raw) in zip(checked, files):
        if c["script"] not in graded:
            continue
        try:
            data = json.loads(raw or b"")
        except ValueError:
            continue
        if isinstance(data, dict) and (found := file_rows(data, c["script"])):
            rows[c["path"]] = classify(c["script"], data, args.against, rubric["rerun"])
            claimed[c["path"]] = check_claims(found, data, course, args.chunks)
            by = {(r["method"], r["id"]): r for r in rows[c["path"]]}
            for u in c["units"]:
                r = by.get((u["method"], u["id"]), {})
                u["class"], u["ref"] = r.get("class"), r.get("ref")
    return rows, claimed


def rows_line(path, f):
    """One file's rows in one line: their classes against the reference, their claims, the draw's miss chance."""
    c = f["claims"]
    return (f"{path} ({sum(f[k] for k in CLASSES)} rows): identical {f['identical']}, within tolerance "
            f"{f['within']}, differed and reproduced {f['reproduced']}, differed and did not reproduce "
            f"{f['not reproduced']}, differed and not re-run {f['not re-run']}, differed as honest drift "
            f"{f['drift']}" + (f" ({f['gains']} right where the reference is wrong: worth a look)" if f.get("gains")
                               else "") + f", not checked {f['unchecked']}; "
            f"claims checked on {c['checked']} rows: {c['problems']} problem(s)"
            + (f", {c['without']} rows carry none" if c["without"] else "") + f"; {f['escape']}")


# ---- outputs ----

def class_table(results, rubric):
    """[header, rows...]: student, score, max, then each week's and the re-run's score."""
    groups = list(dict.fromkeys(f"week {w['week']}" for w in rubric["weeks"]))
    groups += ["re-run"] if any(not t["name"].startswith("week ") for r in results.values() for t in r["tests"]) else []
    rows = [["student", "score", "max"] + groups]
    for name, r in results.items():
        part = lambda g: sum(t["score"] for t in r["tests"] if t["name"].startswith(g + " ")
                             or (g == "re-run" and not t["name"].startswith("week ")))
        rows.append([name, r["score"], sum(t["max_score"] for t in r["tests"])] + [round(part(g), 2) for g in groups])
    return rows


def write_outputs(out, results, rubric):
    out.mkdir(parents=True, exist_ok=True)
    for name, r in results.items():
        (out / name).mkdir(exist_ok=True)
        (out / name / "results.json").write_text(json.dumps(r, indent=1) + "\n", encoding="utf-8")
    rows = class_table(results, rubric)
    with open(out / "class.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    md = ["| " + " | ".join(map(str, rows[0])) + " |", "|---" * len(rows[0]) + "|"]
    md += ["| " + " | ".join(map(str, r)) + " |" for r in rows[1:]]
    (out / "class.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    return md


def main(argv=None):
    from lab import engine
    ap = argparse.ArgumentParser(description="Grade a folder of hand-ins (handin.py archives or folders).")
    ap.add_argument("submissions", type=Path, help="a folder: one .tar.gz, .zip or folder per student")
    ap.add_argument("--rubric", type=Path, default=handin.RUBRIC, help="weeks, items and points (rubric.json)")
    ap.add_argument("--rerun", type=int, default=0, metavar="N", help="re-run N sampled rows per hand-in (0: none)")
    ap.add_argument("--seed", type=int, default=0, help="which rows are sampled (the same for every hand-in)")
    ap.add_argument("--budget", type=float, default=120, metavar="S",
                    help="per hand-in, the re-run rows' recorded seconds (answer + judge) may add up to S; the seeded "
                         "draw skips a row that does not fit (default 120; 0: no budget)")
    ap.add_argument("--jobs", type=int, default=1, metavar="J",
                    help="re-run J drawn rows at a time: for a model server that answers requests in parallel "
                         "(Ollama with OLLAMA_NUM_PARALLEL=J); the embedded engine and llm.py --serve take one at a "
                         "time (default 1)")
    ap.add_argument("--reference", type=Path, default=REFERENCE,
                    help="the course's reference results (default: this repository's results/): each row is matched "
                         "to the reference row of the same script, settings and question")
    ap.add_argument("--default-draw", action="store_true",
                    help="check every hand-in against the course's default draw of golden questions, not each "
                         "student's own (a course that does not give each student a draw)")
    ap.add_argument("--json", type=Path, help="also write every student's results into this one file")
    ap.add_argument("--out", type=Path, help="where results go (default SUBMISSIONS-graded)")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="the course's corpus")
    ap.add_argument("--golden", type=Path, default=GOLDEN, help="the course's golden file")
    ap.add_argument("--model", default=engine.EMBEDDED_NAME, help="the course's model (llm.engine_info()['model'])")
    ap.add_argument("--gguf-sha256", default=engine.GGUF_SHA256, help="the course's GGUF sha256")
    args = ap.parse_args(argv)
    try:
        rubric = json.loads(args.rubric.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        sys.exit(f"grade: cannot read the rubric {args.rubric}: {e}")
    if problems := handin.rubric_problems(rubric):
        sys.exit(f"grade: rubric {args.rubric}: {'; '.join(problems)}")
    if not args.submissions.is_dir():
        sys.exit(f"grade: {args.submissions} is not a folder of hand-ins")
    try:
        course = handin.Course(args.corpus, args.golden, args.model, args.gguf_sha256)
    except (CorpusError, OSError) as e:
        sys.exit(f"grade: {e}")
    if not args.reference.is_dir():
        sys.exit(f"grade: --reference {args.reference} is not a folder of results files")
    args.against, args.chunks = Reference(args.reference), Chunks(course.corpus)
    out = args.out or args.submissions.with_name(args.submissions.name + "-graded")
    entries = sorted(p for p in args.submissions.iterdir() if p.resolve() != out.resolve()
                     and (p.is_dir() or p.name.endswith((".tar.gz", ".tgz", ".tar", ".zip"))))
    print(f"course: corpus {course.corpus_print['files']} files {course.corpus_print['sha256'][:12]}, golden "
          f"{len(course.golden)} questions {course.golden_print['sha256'][:12]}, model {course.model}; "
          f"{len(entries)} hand-in(s), rerun={args.rerun} seed={args.seed}; reference {args.reference}: "
          f"{len(args.against)} rows of {len(args.against.files)} files")
    model_ok = True
    if args.rerun:
        import llm
        info = llm.engine_info()
        model_ok = info["model"] == course.model
        print(f"re-runs on {info['engine']} {info['model']}" + ("" if model_ok else " (not the course's: model rows "
                                                                                  "are not re-run)"))
    results = {}
    with tempfile.TemporaryDirectory(prefix="grade-") as scratch:
        reruns = Reruns(course, scratch)
        for path in entries:
            name = handin.handin_name(path)
            name = name if name not in results else f"{name}-{len(results)}"   # ada.zip beside handin-ada.tar.gz
            try:
                results[name] = grade_student(path, course, rubric, reruns, args, model_ok,
                                              "" if args.default_draw else handin.handin_name(path))
            except Exception as e:   # one hand-in the grader trips on must not end the grading of the others
                traceback.print_exc()
                why = f"the grader failed on this hand-in: {type(e).__name__}: {e}"
                results[name] = {"score": 0, "tests": grade_weeks(rubric, [], broken=why), "output": why}
            r, lost = results[name], {}
            for t in (t for t in r["tests"] if t["score"] < t["max_score"]):   # one line per reason
                lost.setdefault(t["output"].splitlines()[0], []).append(t)
            print(f"\n{name}: {r['score']} / {sum(t['max_score'] for t in r['tests'])}")
            for why, ts in lost.items():
                print(f"  -{sum(t['max_score'] - t['score'] for t in ts):g} "
                      + (ts[0]["name"] if len(ts) == 1 else f"on {len(ts)} items") + f": {why}")
            for path, f in r.get("extra_data", {}).get("rows", {}).items():
                print(f"  rows: {rows_line(path, f)}")
    if reruns.done:
        print(f"\nre-runs: {len(reruns.done)} made, {reruns.shared} answered from this run's earlier re-runs (shared)")
    print("\n" + "\n".join(write_outputs(out, results, rubric)))
    print(f"wrote {out}/<student>/results.json, {out / 'class.csv'}, {out / 'class.md'}")
    if args.json:
        args.json.write_text(json.dumps({"course": {"corpus": course.corpus_print, "golden": course.golden_print,
                                                    "model": course.model}, "rerun": args.rerun, "seed": args.seed,
                                         "students": results}, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
