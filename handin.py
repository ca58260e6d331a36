"""Hand in: your results files in one archive, with a manifest that says what made them (grade.py grades it).

    python handin.py                          # the results files rubric.json's weeks expect -> handin-<you>.tar.gz
    python handin.py results/retrieval.json results/citations_json_30.json --out me.zip
    python handin.py --student ada --corpus DIR --golden FILE   # scripts run on another corpus / golden file

Expected output (~3 s, no model loaded): one line per file (the script that wrote it, whether the file says so or
its shape does, its sha256, and "checks: ok" or the first problem grade.py will find without re-running), one per
expected file not found (with the command that writes it), the fingerprints, then `wrote handin-<you>.tar.gz`.
A file that fails a check is handed in all the same.

The archive: manifest.json and files/<path>. The manifest records per file the script, command (benchmark.py
records its own, otherwise inferred from the shape), settings, size and sha256; the model (llm.engine_info() and
the GGUF's sha256: engine.GGUF_SHA256 for the bundled one, another RAG_GGUF is hashed); the corpus and golden
fingerprints (sha256 over the .txt/.md files' names and contents, and of the golden file); the installed version
of every package requirements.txt pins; the git commit and the paths that differ from it.
The checks (check_file), shared with grade.py: the shape its script writes, and every total recomputed from the
file's own rows (harness.compare, answers.f1) or, for a file without rows, checked for consistency.
Not handled: files over 50 MB, two files of the same name outside the repository, an Ollama model's digest.
"""
import argparse
import getpass
import hashlib
import io
import json
import math
import re
import subprocess
import sys
import tarfile
import zipfile
import zlib
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import harness
import links
from cache import portable
from answers import exact_match, f1
from generate import DEFAULT_STYLE
from retrieve import load_golden, sample_golden
from vector_index import CorpusError

HERE = Path(__file__).parent
RUBRIC = HERE / "rubric.json"
CORPUS_DIR, GOLDEN = HERE / "corpus", HERE / "golden.json"
MAX_MB = 50
ARCHIVE = re.compile(r"handin-.*\.(tar\.gz|zip)$")   # our own output: never counted as a change to the tree
# file shapes -> the script that writes them and its command, for files that do not record their command.
# Checked in order; a pattern script's file is the one with a key named like a script (flare.py: "flare").
SHAPES = [({"recall", "n", "chunker", "depth"}, "retrieve.py", "python retrieve.py --eval --json {path}"),
          ({"recall", "n", "split"}, "chain_eval.py", "python chain_eval.py --split {split} --json {path}"),
          ({"questions", "sentences", "cited_sentence_rate", "citation_recall"}, "verify_citations.py",
           "python verify_citations.py --limit {questions} --json {path}"),
          ({"styles"}, "verify_citations.py", "python verify_citations.py --styles {styles} --json {path}"),
          ({"settings", "table", "router", "rows"}, "graphrag.py", "python graphrag.py --eval {n} --json {path}"),
          ({"router", "modes", "settings"}, "router_eval.py", "python router_eval.py --json {path}"),
          ({"settings", "table", "by_kind", "rows"}, "injection.py", "python injection.py --json {path}")]
PATTERN_FILE = {"settings", "model", "table", "per_question", "rows"}
NUM = (int, float)
ROW_FIELDS = {"id": str, "type": str, "source": str, "answer": (str, type(None)), "em": NUM, "f1": NUM,
              "doc_recall": NUM, "sentences": int, "cited": int, "supported": int, "citations": int, "precise": int,
              "invalid": int, "idk": bool, "error": bool, "calls": int, "prompt_tokens": int,
              "completion_tokens": int, "seconds": NUM, "judge_seconds": NUM}  # question_row (newer rows: "status" too)
SUMMARY = ("questions", "sentences", "cited_sentence_rate", "invalid_ids", "citation_recall", "citation_precision",
           "answer_em", "answer_f1", "doc_recall", "idk_answers", "failed_answers", "llm_calls")  # summarize()


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def corpus_fingerprint(folder):
    """sha256 over the sorted names and contents of the .txt/.md files the lab reads (vector_index.load_documents:
    hidden parts skipped) -> {"files": n, "sha256": ...}; a copy of the folder anywhere gives the same value."""
    folder, h, n = Path(folder), hashlib.sha256(), 0
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if p.is_file() and p.suffix.lower() in (".txt", ".md") and not any(s.startswith(".") for s in rel.parts):
            h.update(f"{rel.as_posix()}\0{sha256(p.read_bytes())}\n".encode())
            n += 1
    return {"files": n, "sha256": h.hexdigest()}


def golden_fingerprint(path):
    return {"sha256": sha256(Path(path).read_bytes())}


def infer_script(data, path="PATH"):
    """(script, command, how it is known) for a results file's JSON: its own recorded command (benchmark.py's
    run.command), else its shape. {'recall':..,'n':..,'chunker':..,'depth':..} -> ('retrieve.py',
    'python retrieve.py --eval --json PATH', 'inferred')"""
    if not isinstance(data, dict):
        return "unknown", None, "inferred"
    command = data["run"].get("command") if isinstance(data.get("run"), dict) else None
    if isinstance(command, str) and len(command.split()) > 1:
        return Path(command.split()[1]).name, command, "file"
    rows = data.get("rows") if isinstance(data.get("rows"), dict) else {}
    fill = {"path": path, "split": data.get("split"), "questions": data.get("questions"),
            "styles": ",".join(data["styles"]) if isinstance(data.get("styles"), dict) else "",
            "n": len(next(iter(rows.values()), []))}
    own = [k for k in data if k not in PATTERN_FILE and (HERE / f"{k}.py").exists()] * (PATTERN_FILE <= set(data))
    for keys, script, template in [(set(), f"{k}.py", f"python {k}.py --eval {{n}} --json {{path}}")
                                   for k in own] + SHAPES:
        if keys <= set(data):
            return script, template.format(**fill), "inferred"
    return "unknown", None, "inferred"


# ---- the checks a file must pass without a re-run (grade.py adds fingerprints and re-runs) ----

class Golden:
    """A golden set as the checks read it: its items, by id, and the lcm of their supporting-document counts (a
    recall averaged over n questions, times n and this, is a whole number of documents)."""
    def __init__(self, items):
        self.golden, self.by_id = items, {g["id"]: g for g in items}
        self.lcm = math.lcm(*{len(g["supporting_docs"]) for g in items})


def whole(x):
    return abs(x - round(x)) < 1e-6 * max(1.0, abs(x))


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def differences(have, want, path):
    """Where two nested dicts of numbers differ: ['table.all.flare.answer_f1: 0.6 in the file, 0.4 recomputed']"""
    if isinstance(want, dict):
        if not isinstance(have, dict) or set(have) != set(want):
            return [f"{path}: holds {sorted(have) if isinstance(have, dict) else have!r}, expected {sorted(want)}"]
        return [d for k in want for d in differences(have[k], want[k], f"{path}.{k}")]
    ok = isinstance(have, NUM) and isinstance(want, NUM) and close(have, want) or have == want
    return [] if ok else [f"{path}: {have!r} in the file, {want!r} recomputed"]


def row_problem(r):
    if not isinstance(r, dict):
        return "not an object"
    for key, kind in ROW_FIELDS.items():
        if key not in r or not isinstance(r[key], kind):
            return f"missing or mistyped {key!r}"


def implied_status(r):
    """The status citations.answer_status gives a row with these counts."""
    if r["error"] or r["idk"]:
        return "failed" if r["error"] else "idk"
    return "unverified" if not r["supported"] else "verified" if r["supported"] == r["sentences"] else "partly verified"


def sampled_ids(golden, n):
    """The question lists a script sampling n golden questions evaluates: of all types, or of one (--split)."""
    return [[g["id"] for g in sample_golden([g for g in golden if kind in ("all", g["type"])], n)]
            for kind in ("all", "single", "multi")]


def check_rows(data, course):
    """benchmark.py, the pattern scripts (harness.pattern_main), graphrag.py: rows per method and their table."""
    table, rows = data.get("table"), data.get("rows")
    if not isinstance(table, dict) or not isinstance(rows, dict) or not rows:
        return ["no 'table' and 'rows' objects"], None, data, []
    valid = [f"rows.{m}[{i}]: {bad}" for m, rs in rows.items() for i, r in enumerate(rs if isinstance(rs, list)
             else [None]) if (bad := row_problem(r))]
    if valid or not set(table) <= {"all", "single", "multi"}:
        return valid or [f"table splits {sorted(table)}: expected all, single, multi"], None, data, []
    wrong, units = [], []
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
            if "status" in r and r["status"] != implied_status(r):
                wrong.append(f"{where}: status {r['status']!r}, its counts say {implied_status(r)!r}")
            units.append({"family": "rows", "method": m, "id": r["id"], "row": r})
    failed = {(f.get("pattern"), f.get("id")) for f in data.get("failed") or [] if isinstance(f, dict)}
    asked = data.get("questions")
    for m, rs in rows.items():
        ids = [r["id"] for r in rs]
        lists = [[q for q in asked if (m, q) not in failed]] if isinstance(asked, list) else \
            sampled_ids(course.golden, len(ids))
        if ids not in lists:
            wrong.append(f"rows.{m}: its {len(ids)} questions are not the ones the script samples from the course's "
                         f"golden set (one added, dropped, swapped or reordered)")
    if isinstance(asked, list) and asked not in sampled_ids(course.golden, len(asked)):
        wrong.append(f"questions: not the {len(asked)} the script samples from the golden set")
    recomputed = harness.compare({m: rs for m, rs in rows.items() if rs}, tuple(table))
    wrong += differences(table, recomputed, "table")
    return [], wrong, {**data, "table": recomputed}, units


def check_summary(data, course, styles_of_command):
    """verify_citations.py: citations.summarize() of rows the file does not hold, one per style."""
    by_style = data["styles"] if isinstance(data.get("styles"), dict) else {styles_of_command[0]: data}
    valid = [f"{s}: missing or mistyped {k!r}" for s, v in by_style.items() for k in SUMMARY
             if not isinstance(v, dict) or not isinstance(v.get(k), NUM)]
    if valid:
        return valid, None, data, []
    wrong, units = [], []
    for style, s in by_style.items():
        n, sentences = s["questions"], s["sentences"]
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
        units += [{"family": "summary", "method": style, "id": g["id"], "summary": s}
                  for g in sample_golden(course.golden, n)]
    return [], wrong, data, units


def split_counts(items):
    out = {}
    for g in items:
        for s in ("all", g["type"], f"{g['source']}/{g['type']}"):
            out[s] = out.get(s, 0) + 1
    return out


def parts_of(split, keys):
    """The splits one is made of: all <- single, multi; multi <- hotpotqa/multi, musique/multi; a leaf: []."""
    if "/" in split:
        return []
    return [s for s in ("single", "multi") if s in keys] if split == "all" else [s for s in keys
                                                                               if s.endswith("/" + split)]


def check_retrieval(data, course):
    """retrieve.py --eval: recall[method][k][split] and n[split], no per-question rows."""
    recall, n = data.get("recall"), data.get("n")
    ok = isinstance(recall, dict) and isinstance(n, dict) and all(isinstance(v, int) for v in n.values())
    ok = ok and all(isinstance(by_k, dict) and all(isinstance(sp, dict) and set(sp) == set(n) and all(
        isinstance(x, NUM) for x in sp.values()) for sp in by_k.values()) for by_k in recall.values())
    if not ok:
        return ["'recall' must map method -> k -> every split of 'n' -> a number"], None, data, []
    wrong = [f"n.{t}: {n[t]}, its parts add up to {sum(n[s] for s in ps)}" for t in n
             if (ps := parts_of(t, n)) and sum(n[s] for s in ps) != n[t]]
    for m, by_k in recall.items():
        for k, sp in by_k.items():
            where = f"recall.{m}.{k}"
            wrong += [f"{where}.{s}: {x} is outside [0, 1]" for s, x in sp.items() if not 0 <= x <= 1]
            wrong += [f"{where}.{s}: {x} times {n[s]} questions is not a whole count of documents"
                      for s, x in sp.items() if not whole(x * n[s] * course.lcm)]
            for t, ps in ((t, parts_of(t, sp)) for t in sp):
                mean = sum(sp[s] * n[s] for s in ps) / max(1, n[t])
                if ps and not close(mean, sp[t]):
                    wrong.append(f"{where}.{t}: {sp[t]:.4f}, its parts average {mean:.4f}")
        ks = sorted(by_k, key=lambda k: int(k) if k.isdigit() else 0)
        if m in ("bm25", "dense"):   # their top-k lists are prefixes of each other: recall cannot fall with k
            wrong += [f"recall.{m}: falls from k={a} to k={b} on {s}" for a, b in zip(ks, ks[1:])
                      for s in by_k[a] if by_k[b][s] < by_k[a][s] - 1e-9]
    halves = [course.golden] + [[g for g in course.golden if links.split_of(g) == h] for h in ("dev", "test")]
    items = next((p for base in halves for p in (base, base[:n.get("all", 0)]) if split_counts(p) == n), None)
    if items is None:
        wrong.append(f"n {n} matches no part of the golden set that retrieve.py --eval scores "
                     f"(all, a --split half, the first --limit)")
    units = [{"family": "retrieval", "method": "eval", "id": "all", "items": items}] if items else []
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


# ---- the archive ----

class HandinError(Exception):
    """A hand-in that cannot be read at all (a corrupted archive): one line, zero for every item."""


def read_handin(path):
    """An archive or folder -> (manifest or None, [(manifest entry, bytes or None)]). HandinError when unreadable."""
    path = Path(path)
    try:
        if path.is_dir():
            members = {p.relative_to(path).as_posix(): p.read_bytes() for p in path.rglob("*") if p.is_file()}
        elif path.suffix == ".zip":
            with zipfile.ZipFile(path) as z:
                members = {n: z.read(n) for n in z.namelist() if not n.endswith("/")}
        else:
            with tarfile.open(path, "r:*") as t:
                members = {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}
    except (OSError, EOFError, ValueError, tarfile.TarError, zipfile.BadZipFile, zlib.error) as e:
        raise HandinError(f"cannot open {path.name}: {type(e).__name__}: {e}") from None
    try:
        manifest = json.loads(members.pop("manifest.json", b"null"))
    except ValueError:
        manifest = None
    manifest = manifest if isinstance(manifest, dict) else None
    entries = (manifest or {}).get("files") or []
    listed = {e.get("archived_as") for e in entries}
    for name in sorted(n for n in members if n.endswith(".json") and n not in listed):  # a folder without manifest
        entries.append({"path": name.removeprefix("files/"), "archived_as": name})
    return manifest, [(e, members.get(e.get("archived_as"))) for e in entries]


def default_files(rubric=RUBRIC):
    """The results files rubric.json's weeks expect, as the README's commands write them: [(path, command)]."""
    weeks = json.loads(Path(rubric).read_text(encoding="utf-8"))["weeks"]
    return [(HERE / w["file"], w.get("command")) for w in weeks]


def model_info():
    """llm.engine_info() (portable paths) plus the GGUF's sha256 (None for an Ollama model or a scripted one)."""
    import engine
    import llm
    gguf, sha = llm.engine_info()["gguf"], None
    if gguf and Path(gguf) == engine.gguf_path():
        sha = engine.GGUF_SHA256   # the bundled model: ensure_gguf() refuses to load any other bytes
    elif gguf and Path(gguf).is_file():
        sha = engine.sha256_file(gguf)
    return {**llm.engine_info(portable=True), "gguf_sha256": sha}


def packages():
    """{package: installed version or None} for every package requirements.txt pins, with the pin."""
    out = {}
    for line in (HERE / "requirements.txt").read_text(encoding="utf-8").splitlines():
        if m := re.match(r"\s*([A-Za-z0-9_.\-]+)==(\S+)", line):
            try:
                have = metadata.version(m.group(1))
            except metadata.PackageNotFoundError:
                have = None
            out[m.group(1)] = {"pinned": m.group(2), "installed": have}
    return out


def git_state():
    """{"commit", "dirty", "changed": [paths that differ from the commit, handin archives left out]}."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True, timeout=30).stdout
    try:
        commit = git("rev-parse", "HEAD").strip() or None
        changed = [line[3:] for line in git("status", "--porcelain").splitlines() if not ARCHIVE.search(line)]
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None, "changed": []}
    return {"commit": commit, "dirty": bool(changed), "changed": changed[:100]}


def describe(path):
    """One file's manifest entry and its bytes (None when missing or too large)."""
    path = Path(path)
    shown = str(path.resolve().relative_to(HERE.resolve())) if path.resolve().is_relative_to(HERE.resolve()) \
        else path.name
    entry = {"path": shown, "archived_as": f"files/{shown}"}
    if not path.is_file() or path.stat().st_size > MAX_MB * 2**20:
        return {**entry, "problem": "not found" if not path.is_file() else f"over {MAX_MB} MB"}, None
    data = path.read_bytes()
    try:
        parsed, problem = json.loads(data), None
    except ValueError as e:
        parsed, problem = None, f"bad JSON: {e}"
    script, command, known = infer_script(parsed, shown)
    settings = parsed.get("settings") if isinstance(parsed, dict) else None
    return {**entry, "bytes": len(data), "sha256": sha256(data), "script": script, "command": command,
            "command_from": known, "settings": settings, "problem": problem}, data


def make_manifest(student, entries, missing, corpus, golden):
    return {"made_by": "handin.py", "student": student,
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "files": entries,
            "missing": missing, "model": model_info(),
            "corpus": {"path": portable(str(corpus.resolve())), **corpus_fingerprint(corpus)},
            "golden": {"path": portable(str(golden.resolve())), **golden_fingerprint(golden)},
            "packages": packages(), "git": git_state(), "python": sys.version.split()[0]}


def write_archive(out, manifest, blobs):
    """manifest.json + files/<path> into a .zip (by suffix) or a .tar.gz."""
    members = [("manifest.json", json.dumps(manifest, indent=1).encode())] + list(blobs)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".zip":
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for name, data in members:
                z.writestr(name, data)
        return out
    with tarfile.open(out, "w:gz") as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 0
            t.addfile(info, io.BytesIO(data))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description="Bundle your results files and a manifest into one archive to hand in.")
    ap.add_argument("files", nargs="*", type=Path, help="results files (default: those rubric.json's weeks expect)")
    ap.add_argument("--student", default=getpass.getuser(), help="your name or id (default: your login)")
    ap.add_argument("--out", type=Path, help="the archive, .tar.gz or .zip (default handin-<student>.tar.gz)")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="the corpus the scripts ran on")
    ap.add_argument("--golden", type=Path, default=GOLDEN, help="the golden file the scripts ran on")
    ap.add_argument("--rubric", type=Path, default=RUBRIC, help="whose files are the default")
    args = ap.parse_args(argv)
    student = re.sub(r"[^A-Za-z0-9_.-]+", "_", args.student) or "student"
    wanted = [(p, None) for p in args.files] if args.files else default_files(args.rubric)
    print(f"student={student} corpus={args.corpus} golden={args.golden} files={len(wanted)}")
    if not args.corpus.is_dir() or not args.golden.is_file():
        sys.exit(f"handin: no corpus folder {args.corpus} or golden file {args.golden}: pass --corpus and --golden")
    try:
        golden = Golden(load_golden(args.golden))
    except CorpusError as e:
        sys.exit(f"handin: {e}")
    entries, missing, blobs = [], [], []
    for path, command in wanted:
        entry, data = describe(path)
        if data is None:
            missing.append({"path": entry["path"], "command": command, "problem": entry["problem"]})
            print(f"  {entry['path']:40} {entry['problem']}" + (f": {command}" if command else ""))
            continue
        entries.append(entry)
        blobs.append((entry["archived_as"], data))
        c = check_file(entry, data, golden)
        problems = c["valid"] + (c["recomputed"] or [])
        print(f"  {entry['path']:40} {entry['script']:20} ({entry['command_from']}) sha256 {entry['sha256'][:12]}  "
              + (f"checks: {len(problems)} problem(s), first: {problems[0]}" if problems else "checks: ok"))
    if not entries:
        sys.exit("handin: no results file to hand in: run the weeks' commands (README) or name the files")
    manifest = make_manifest(student, entries, missing, args.corpus, args.golden)
    m = manifest["model"]
    print(f"model {m['engine']} {m['model']} gguf sha256 {(m['gguf_sha256'] or '-')[:12]}; corpus "
          f"{manifest['corpus']['files']} files {manifest['corpus']['sha256'][:12]}; golden "
          f"{manifest['golden']['sha256'][:12]}; git {(manifest['git']['commit'] or '-')[:10]}"
          + (" (changed files)" if manifest["git"]["dirty"] else ""))
    print(f"wrote {write_archive(args.out or HERE / f'handin-{student}.tar.gz', manifest, blobs)}")


if __name__ == "__main__":
    main()
