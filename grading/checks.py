"""What a results file must be, per script: the checks handin.py prints before it bundles a file and grade.py
grades with (grade.py adds the fingerprints and the re-runs; all three in grading/).

    c = check_file({"path": "results/retrieval.json"}, raw_bytes, Golden(load_golden("golden.json")))
    c["script"], c["valid"], c["recomputed"]   # -> 'retrieve.py', [], [] (lists of problems)

- script: its own recorded command (benchmark.py), else its shape (infer_script);
- valid: the shape its script writes (every row field citations.summarize() needs, the summary's figures, recall per
  method, k and split) and the manifest's sha256;
- recomputed: from the file's rows where it has them (each row's EM/F1 from its answer, its counts and status, the
  questions the script samples, then harness.compare() or, for verify_citations.py, citations.summarize() of them;
  retrieve.py's and router_eval.py's rows: figures.py); otherwise consistency (files written before their script
  wrote rows): rates times counts whole and in range, splits that average to their parents, counts a part of the
  golden set has; bars read recomputed figures;
- a file against its re-run: the fields a re-made row must reproduce (row_changes), the bounds re-run questions put
  on a summary without rows (summary_bounds).
Not handled: experiments/injection.py's file (valid only: no rubric week grades it).
"""
import copy
import hashlib
import json
import math
from pathlib import Path

import harness
from citations import summarize
from generate import DEFAULT_STYLE
from grading.figures import (DRAWN, NUM, check_retrieval, check_router, close, differences, sampled_ids, whole,
                             whose)
from lab.answers import exact_match, f1, normalize_answer
from retrieve import draw_seed, sample_golden
from verify_citations import ROW_TIMING

ROOT = Path(__file__).parent.parent   # the repository (this file is in grading/)
# file shapes -> the script that writes them and its command, for files that do not record their command.
# Checked in order; a pattern script's file is the one with a key named like a script (flare.py: "flare").
SHAPES = [({"recall", "n", "chunker", "depth"}, "retrieve.py", "python retrieve.py --eval --json {path}"),
          ({"recall", "n", "split"}, "experiments/chain_eval.py",
           "python -m experiments.chain_eval --split {split} --json {path}"),
          ({"questions", "sentences", "cited_sentence_rate", "citation_recall"}, "verify_citations.py",
           "python verify_citations.py --limit {questions} --json {path}"),
          ({"styles"}, "verify_citations.py", "python verify_citations.py --styles {styles} --json {path}"),
          ({"settings", "table", "router", "rows"}, "graphrag.py", "python graphrag.py --eval {n} --json {path}"),
          ({"router", "modes", "settings"}, "router_eval.py", "python router_eval.py --json {path}"),
          ({"settings", "table", "by_kind", "rows"}, "injection.py",
           "python -m experiments.injection --json {path}")]
PATTERN_FILE = {"settings", "model", "table", "per_question", "rows"}
ROW_FIELDS = {"id": str, "type": str, "source": str, "answer": (str, type(None)), "em": NUM, "f1": NUM,
              "doc_recall": NUM, "sentences": int, "cited": int, "supported": int, "citations": int, "precise": int,
              "invalid": int, "idk": bool, "error": bool, "calls": int, "prompt_tokens": int,
              "completion_tokens": int, "seconds": NUM, "judge_seconds": NUM}  # question_row (newer rows: "status" too)
# a re-run row against the student's: what the model and retrieval decide
COMPARED = ("answer", "em", "f1", "doc_recall", "sentences", "cited", "supported", "citations", "precise", "invalid",
            "idk", "error", "status", "sentence_status")
SUMMARY = ("questions", "sentences", "cited_sentence_rate", "invalid_ids", "citation_recall", "citation_precision",
           "answer_em", "answer_f1", "doc_recall", "idk_answers", "failed_answers", "llm_calls")  # summarize()


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def infer_script(data, path="PATH"):
    """(script, command, how it is known) for a results file's JSON: its own recorded command (benchmark.py's
    run.command; `python -m experiments.NAME` is experiments/NAME.py), else its shape.
    {'recall':..,'n':..,'chunker':..,'depth':..} -> ('retrieve.py', 'python retrieve.py --eval --json PATH',
    'inferred')"""
    if not isinstance(data, dict):
        return "unknown", None, "inferred"
    command = data["run"].get("command") if isinstance(data.get("run"), dict) else None
    if isinstance(command, str) and len(words := command.split()) > 1:
        script = words[2].replace(".", "/") + ".py" if words[1] == "-m" and len(words) > 2 else Path(words[1]).name
        return script, command, "file"
    rows = data.get("rows") if isinstance(data.get("rows"), dict) else {}
    fill = {"path": path, "split": data.get("split"), "questions": data.get("questions"),
            "styles": ",".join(data["styles"]) if isinstance(data.get("styles"), dict) else "",
            "n": len(next(iter(rows.values()), []))}
    own = [k for k in data if k not in PATTERN_FILE and (ROOT / f"{k}.py").exists()] * (PATTERN_FILE <= set(data))
    for keys, script, template in [(set(), f"{k}.py", f"python {k}.py --eval {{n}} --json {{path}}")
                                   for k in own] + SHAPES:
        if keys <= set(data):
            return script, template.format(**fill), "inferred"
    return "unknown", None, "inferred"


# ---- the checks ----

class Golden:
    """A golden set as the checks read it: its items, by id, and the lcm of their supporting-document counts (a
    recall averaged over n questions, times n and this, is a whole number of documents); `student`, whose draw of
    it the sampled questions must be (retrieve.draw_seed; "" the course's default draw)."""
    def __init__(self, items, student=""):
        self.golden, self.by_id, self.student = items, {g["id"]: g for g in items}, student
        self.lcm = math.lcm(*{len(g["supporting_docs"]) for g in items})

    def of(self, student):
        """The same set, checked against `student`'s draw."""
        mine = copy.copy(self)
        mine.student = student or ""
        return mine


def row_problem(r, optional=()):
    """Why a row is not one citations.question_row makes (None when it is); `optional` fields may be absent."""
    if not isinstance(r, dict):
        return "not an object"
    for key, kind in ROW_FIELDS.items():
        if key in r and not isinstance(r[key], kind) or key not in r and key not in optional:
            return f"missing or mistyped {key!r}"


def implied_status(r):
    """The sentence-level status citations.answer_status gives a row with these counts (its sentence_status)."""
    if r["error"] or r["idk"]:
        return "failed" if r["error"] else "idk"
    return "unverified" if not r["supported"] else "verified" if r["supported"] == r["sentences"] else "partly verified"


def row_checks(data, rows, course, optional=()):
    """{method: rows} -> (shape problems, problems with what the rows say or None): each row's question, type and
    source are the golden set's, its EM and F1 its answer's, its counts and status agree; each method's questions
    are those the script samples (benchmark.py: its "questions" less its "failed")."""
    valid = [f"rows.{m}[{i}]: {bad}" for m, rs in rows.items() for i, r in enumerate(rs if isinstance(rs, list)
             else [None]) if (bad := row_problem(r, optional))]
    if valid:
        return valid, None
    wrong = []
    for m, rs in rows.items():
        for r in rs:
            item, where = course.by_id.get(r["id"]), f"rows.{m} {r['id']}"
            if item is None:
                wrong.append(f"{where}: no such question in the golden set")
                continue
            wrong += [f"{where}: {k} {r[k]!r}, the golden set says {item[k]!r}" for k in ("type", "source")
                      if r[k] != item[k]]
            if r["answer"] is not None:
                wrong += [f"{where}: {k} {r[k]:.3f} but its answer {r['answer']!r} scores {x:.3f}"
                          for k, x in (("em", exact_match(r["answer"], item)), ("f1", f1(r["answer"], item)))
                          if not close(r[k], x)]
            wrong += [f"{where}: {a} {r[a]} > {b} {r[b]}" for a, b in (("cited", "sentences"),
                      ("supported", "sentences"), ("precise", "citations")) if r[a] > r[b]]
            old = "sentence_status" if "sentence_status" in r else "status"   # older rows: "status" was per sentence
            if old in r and r[old] != implied_status(r):
                wrong.append(f"{where}: {old} {r[old]!r}, its counts say {implied_status(r)!r}")
    failed = {(f.get("pattern"), f.get("id")) for f in data.get("failed") or [] if isinstance(f, dict)}
    asked = data.get("questions")
    for m, rs in rows.items():
        ids = [r["id"] for r in rs]
        lists = [[q for q in asked if (m, q) not in failed]] if isinstance(asked, list) else \
            sampled_ids(course.golden, len(ids), course.student)
        if ids not in lists:
            wrong.append(f"rows.{m}: its {len(ids)} questions are not the ones {DRAWN} {whose(course)} (one "
                         f"added, dropped, swapped or reordered, or another's draw)")
    if isinstance(asked, list) and asked not in sampled_ids(course.golden, len(asked), course.student):
        wrong.append(f"questions: not the {len(asked)} {DRAWN} {whose(course)}")
    return [], wrong


def held(made, have):
    """`made` (a recomputed table) with only the figures `have` (the file's) holds at each method: a column that
    a later version of the code adds is not asked of an older file; every figure the file does hold is compared,
    and the bars read the whole recomputed table. Splits and methods are kept whole (differences() names them)."""
    out = {}
    for split, methods in made.items():
        theirs = have.get(split)
        if not (isinstance(methods, dict) and isinstance(theirs, dict)):
            out[split] = methods
            continue
        out[split] = {m: {k: v for k, v in figs.items() if k in theirs[m]}
                      if isinstance(figs, dict) and isinstance(theirs.get(m), dict) else figs
                      for m, figs in methods.items()}
    return out


def check_rows(data, course):
    """benchmark.py, the pattern scripts (harness.pattern_main), graphrag.py: rows per method and their table."""
    table, rows = data.get("table"), data.get("rows")
    if not isinstance(table, dict) or not isinstance(rows, dict) or not rows:
        return ["no 'table' and 'rows' objects"], None, data, []
    valid, wrong = row_checks(data, rows, course)
    if valid or not set(table) <= {"all", "single", "multi"}:
        return valid or [f"table splits {sorted(table)}: expected all, single, multi"], None, data, []
    recomputed = harness.compare({m: rs for m, rs in rows.items() if rs}, tuple(table))
    units = [{"family": "rows", "method": m, "id": r["id"], "row": r} for m, rs in rows.items() for r in rs
             if r["id"] in course.by_id]
    own, wrong = pattern_figures(data), wrong + differences(table, held(recomputed, table), "table")
    if own:
        wrong += own[0]
    return [], wrong, {**data, "table": recomputed, **(own[1] if own else {})}, units


def pattern_figures(data):
    """A pattern script's own figures beside its table ({"flare": ...}, keyed by its module), recomputed by that
    module's summarize_stats from the file's per_question, whose F1s must be its rows' -> (problems, {key: figures})
    or None (not a pattern script's file)."""
    import importlib

    import patterns
    keys, stats = [k for k in data if k not in PATTERN_FILE], data.get("per_question")
    modules = {p.fn.__module__ for p in patterns.PATTERNS.values()}   # never a module a hand-in names at will
    if set(data) - set(keys) != PATTERN_FILE or len(keys) != 1 or keys[0] not in modules:
        return None
    summarize = getattr(importlib.import_module(keys[0]), "summarize_stats", None)
    if summarize is None or not isinstance(stats, list) or not all(isinstance(q, dict) for q in stats):
        return None
    f1 = {m: {r.get("id"): r.get("f1") for r in rs} for m, rs in data["rows"].items()}
    name = next((m for m in f1 if m != "generate"), None)
    rows_say = lambda q: (f1.get(name, {}).get(q.get("id")), f1.get("generate", {}).get(q.get("id")))
    wrong = [f"per_question[{i}]: {q.get('id')} F1 {q.get('f1')} / generate {q.get('generate_f1')}, its rows say "
             f"{rows_say(q)[0]} / {rows_say(q)[1]}" for i, q in enumerate(stats)
             if (q.get("f1"), q.get("generate_f1")) != rows_say(q)]
    try:
        made = summarize(stats, data.get("settings") or {})[1]
    except (KeyError, TypeError, ValueError) as e:
        return wrong + [f"per_question: {keys[0]}.summarize_stats cannot read it ({type(e).__name__}: {e})"], {}
    return wrong + differences(data[keys[0]], made, keys[0]), {keys[0]: made}


def check_summary(data, course, styles_of_command):
    """verify_citations.py: citations.summarize() per style, recomputed from the file's rows ("rows": {style: rows})
    or, in an older file without them, checked for consistency: every rate times its count is whole, in [0, 1]."""
    rows, several = data.get("rows"), isinstance(data.get("styles"), dict)
    one = next(iter(rows)) if isinstance(rows, dict) and len(rows) == 1 else styles_of_command[0]
    by_style = data["styles"] if several else {one: data}
    valid = [f"{s}: missing or mistyped {k!r}" for s, v in by_style.items() for k in SUMMARY
             if not isinstance(v, dict) or not isinstance(v.get(k), NUM)]
    if not valid and rows is not None and (not isinstance(rows, dict) or set(rows) != set(by_style)):
        valid = [f"rows: {sorted(rows) if isinstance(rows, dict) else rows!r}, not one list per style "
                 f"({', '.join(by_style)})"]
    wrong, units, made = [], [], {}
    if not valid and rows is not None:   # --no-timing files: no wall-clock fields in the rows either
        valid, wrong = row_checks(data, rows, course, optional=ROW_TIMING)
    if valid:
        return valid, None, data, []
    for style, s in by_style.items():
        n, sentences = s["questions"], s["sentences"]
        if rows is not None:
            full = summarize([{**dict.fromkeys(ROW_TIMING, 0), **r} for r in rows[style]])
            made[style] = {k: v for k, v in full.items() if k in s}   # --no-timing: no timing figures to compare
            wrong += differences({k: s[k] for k in made[style]}, made[style], style)
        else:
            counts = {"cited_sentence_rate": sentences, "citation_recall": sentences, "answer_em": n, "llm_calls": n,
                      "doc_recall": n * course.lcm}
            wrong += [f"{style}: {k} {s[k]} times {max(1, c)} is not a whole count: not what its rows give"
                      for k, c in counts.items() if not whole(s[k] * max(1, c))]
            wrong += [f"{style}: {k} {s[k]} is outside [0, 1]" for k in ("cited_sentence_rate", "citation_recall",
                      "citation_precision", "answer_em", "answer_f1", "doc_recall") if not 0 <= s[k] <= 1]
            wrong += [f"{style}: {k} {s[k]} > {n} questions" for k in ("idk_answers", "failed_answers") if s[k] > n]
        if n > len(course.golden):
            wrong.append(f"{style}: {n} questions, the golden set holds {len(course.golden)}")
            continue
        mine = {r.get("id"): r for r in rows[style]} if rows is not None else {}   # a row's cost: rerun.pick
        units += [{"family": "summary", "method": style, "id": g["id"], "summary": s, "row": mine.get(g["id"])}
                  for g in sample_golden(course.golden, n, draw_seed(course.student))]
    if made:   # the bars read the recomputed summary
        data = {**data, **({"styles": {k: {**v, **made[k]} for k, v in by_style.items()}} if several else made[one])}
    return [], wrong, data, units


def check_file(entry, raw, course):
    """One file (its manifest entry and bytes) against the course's Golden -> {"path", "script", "valid": [problems],
    "recomputed": [problems] or None (nothing to recompute), "figures" (recomputed where possible), "units" (what
    grade.py may re-run), "notes"}."""
    out = {"path": entry.get("path"), "script": entry.get("script"), "valid": [], "notes": [],
           "recomputed": None, "figures": None, "units": []}
    if raw is None:
        out["valid"].append(f"{entry.get('path')} is in the manifest but not in the archive")
        return out
    if entry.get("sha256") and entry["sha256"] != sha256(raw):
        out["valid"].append(f"sha256 {sha256(raw)[:12]} is not the manifest's {entry['sha256'][:12]}: "
                            f"edited after handin.py ran")
    try:
        data = json.loads(raw)
    except ValueError as e:
        out["valid"].append(f"bad JSON: {e}")
        return out
    script, command, _ = infer_script(data, entry.get("path"))
    if out["script"] in (None, "unknown"):
        out["script"] = script
    elif script not in ("unknown", out["script"]):
        out["notes"].append(f"the manifest says {out['script']}, its shape says {script}")
    command = entry.get("command") or command or ""
    styles = command.split("--styles", 1)[1].split()[0].split(",") if "--styles" in command else [DEFAULT_STYLE]
    if out["script"] == "retrieve.py":
        found = check_retrieval(data, course)
    elif out["script"] == "router_eval.py":
        found = check_router(data, course)
    elif out["script"] == "verify_citations.py":
        found = check_summary(data, course, styles)
    elif isinstance(data, dict) and {"table", "rows"} <= set(data) and out["script"] != "injection.py":
        found = check_rows(data, course)
    else:
        found = ([] if isinstance(data, dict) else ["not a JSON object"], None, data, [])
    out["valid"] += found[0]
    out["recomputed"], out["figures"] = found[1], found[2]
    out["units"] = [{**u, "file": out["path"], "data": data} for u in found[3]]
    return out


# ---- a file against its re-run (grade.py re-makes sampled rows with the reference code) ----

def row_changes(have, got):
    """What a re-run changes in a row: ["answer 'Tomas Vell' -> 'Edric Vell'", "supported 2 -> 1"]"""
    out = []
    for k in (k for k in COMPARED if k in have):   # older rows carry no "status"
        a, b = have[k], got.get(k)
        same = (normalize_answer(a or "") == normalize_answer(b or "") if k == "answer"
                else close(a, b) if isinstance(a, NUM) and isinstance(b, NUM) else a == b)
        out += [] if same else [f"{k} {a!r} -> {b!r}"]
    return out


def summary_bounds(s, rows):
    """What a summary's totals cannot be, some of its questions re-run: EM, idk and failed answers at least the
    re-run rows' and at most theirs plus one per question not re-run; sentences, uncited and unsupported ones at
    least the re-run rows'."""
    n, sentences, rest = s["questions"], s["sentences"], s["questions"] - len(rows)
    total = lambda k: sum(r[k] for r in rows)
    have = {"em": round(s["answer_em"] * n), "idk": s["idk_answers"], "error": s["failed_answers"],
            "sentences": sentences, "uncited": round(sentences * (1 - s["cited_sentence_rate"])),
            "unsupported": round(sentences * (1 - s["citation_recall"]))}
    least = {"em": total("em"), "idk": total("idk"), "error": total("error"), "sentences": total("sentences"),
             "uncited": total("sentences") - total("cited"), "unsupported": total("sentences") - total("supported")}
    out = [f"{k}: {have[k]} in the file, the re-run rows alone give {least[k]}" for k in least if have[k] < least[k]]
    return out + [f"{k}: {have[k]} in the file, at most {least[k] + rest} with {rest} questions not re-run"
                  for k in ("em", "idk", "error") if have[k] > least[k] + rest]
