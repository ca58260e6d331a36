"""Hand in: your results files in one archive, with a manifest that says what made them (grade.py grades it).

    python -m grading.handin   # the results files rubric.json's weeks expect -> handin-<you>.tar.gz
    python -m grading.handin results/retrieval.json results/citations_json_30.json --out me.zip
    python -m grading.handin --student ada --corpus DIR --golden FILE   # scripts run on another corpus / golden file

Expected output (~3 s, no model loaded): one line per file (the script that wrote it, whether the file says so or
its shape does, its sha256, and "checks: ok" or the first problem grade.py will find without re-running:
checks.check_file), one per expected file not found (with the command that writes it), the fingerprints, then
`wrote handin-<you>.tar.gz`. A file that fails a check is handed in all the same.

The archive: manifest.json and files/<path>. The manifest records per file the script, command (benchmark.py
records its own, otherwise inferred from the shape), settings, size and sha256; the model (llm.engine_info() and
the GGUF's sha256: engine.GGUF_SHA256 for the bundled one, another RAG_GGUF is hashed); the corpus and golden
fingerprints (sha256 over the documents' names and contents, and of the golden file); the installed version
of every package requirements.txt pins; the git commit and the paths that differ from it. What grade.py reads of a
hand-in is here too: the archive (read_handin), the manifest against the course's (Course, fingerprints), and the
rubric (the files it names, whether it can be used, its bars).
Not handled: files over 50 MB, two files of the same name outside the repository, an Ollama model's digest.
"""
import argparse
import getpass
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
import zlib
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from grading.checks import NUM, Golden, check_file, infer_script, sha256
from grading.figures import DRAWN
from lab.cache import portable
from lab.documents import EXTENSIONS
from retrieve import CORPUS_DIR, DRAW_ENV, GOLDEN, load_golden
from vector_index import CorpusError

ROOT = Path(__file__).parent.parent   # the repository (this file is in grading/)
RUBRIC = ROOT / "rubric.json"
MAX_MB = 50
ARCHIVE = re.compile(r"handin-.*\.(tar\.gz|zip)$")   # our own output: never counted as a change to the tree
OPS = {">=": lambda a, b: a >= b, ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, "<": lambda a, b: a < b}


def corpus_fingerprint(folder):
    """sha256 over the sorted names and contents of the files the lab reads (lab.documents.EXTENSIONS; hidden
    parts skipped, as vector_index.load_documents) -> {"files": n, "sha256": ...}; a copy of the folder anywhere
    gives the same value."""
    folder, h, n = Path(folder), hashlib.sha256(), 0
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if p.is_file() and p.suffix.lower() in EXTENSIONS and not any(s.startswith(".") for s in rel.parts):
            h.update(f"{rel.as_posix()}\0{sha256(p.read_bytes())}\n".encode())
            n += 1
    return {"files": n, "sha256": h.hexdigest()}


def golden_fingerprint(path):
    return {"sha256": sha256(Path(path).read_bytes())}


def model_info():
    """llm.engine_info() (portable paths) plus the GGUF's sha256 (None for an Ollama model or a scripted one)."""
    from lab import engine
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
    for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
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
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30).stdout
    try:
        commit = git("rev-parse", "HEAD").strip() or None
        changed = [line[3:] for line in git("status", "--porcelain").splitlines() if not ARCHIVE.search(line)]
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None, "changed": []}
    return {"commit": commit, "dirty": bool(changed), "changed": changed[:100]}


def describe(path):
    """One file's manifest entry and its bytes (None when missing or too large)."""
    path = Path(path)
    shown = str(path.resolve().relative_to(ROOT.resolve())) if path.resolve().is_relative_to(ROOT.resolve()) \
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


def problems_of(checked):
    """A checks.check_file result's problems, as handin prints them."""
    return checked["valid"] + (checked["recomputed"] or [])


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


# ---- reading a hand-in (grade.py) ----

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


def handin_name(path):
    """'handin-ada.tar.gz' -> 'ada'"""
    name = path.name
    for suffix in (".tar.gz", ".tgz", ".tar", ".zip"):
        name = name.removesuffix(suffix)
    return name.removeprefix("handin-") or path.name


def about(manifest):
    """The manifest's facts worth a grader's eye, as lines."""
    if not isinstance(manifest, dict):
        return ["no manifest.json: not made by handin.py"]
    git, m = manifest.get("git") or {}, manifest.get("model") or {}
    changed = [p for p in git.get("changed", []) if p.endswith(".py")]
    lines = [f"handed in by {manifest.get('student')} on {manifest.get('date')}; git {str(git.get('commit'))[:10]}"
             + (f", code changed: {', '.join(changed[:8])}" if changed else ", no code changed"),
             f"model {m.get('engine')} {m.get('model')} gguf sha256 {str(m.get('gguf_sha256'))[:12]}; python "
             f"{manifest.get('python')}"]
    off = [f"{k} {v.get('installed')} (pinned {v.get('pinned')})" for k, v in (manifest.get("packages") or {}).items()
           if isinstance(v, dict) and str(v.get("installed")).split("+")[0] != v.get("pinned")]  # 2.13.0+cpu: same
    return lines + ([f"packages other than requirements.txt pins: {', '.join(off[:10])}"] if off else [])


class Course(Golden):
    """What hand-ins are graded against: the course's corpus, golden set (checks.Golden) and model, fingerprinted."""
    def __init__(self, corpus, golden, model, gguf_sha256):
        super().__init__(load_golden(golden))
        self.corpus, self.model, self.gguf_sha256 = Path(corpus), model, gguf_sha256
        self.corpus_print, self.golden_print = corpus_fingerprint(corpus), golden_fingerprint(golden)


def fingerprints(manifest, raw, course):
    """What in the manifest (and the file's own "model") is not the course's corpus, golden set and model."""
    if not isinstance(manifest, dict):
        return ["no manifest.json (not made by handin.py): corpus, golden set and model unknown"]
    try:
        data = json.loads(raw or b"")
    except ValueError:
        data = None
    out, have = [], {k: manifest.get(k) or {} for k in ("corpus", "golden", "model")}
    for k, want in (("corpus", course.corpus_print), ("golden", course.golden_print)):
        if have[k].get("sha256") != want["sha256"]:
            out.append(f"{k} {have[k].get('path')} has sha256 {str(have[k].get('sha256'))[:12]}, the course's "
                       f"{want['sha256'][:12]}: run on another {k}")
    model = data.get("model") if isinstance(data, dict) and isinstance(data.get("model"), dict) else have["model"]
    if model.get("model") != course.model:
        out.append(f"model {model.get('model')!r}, the course's {course.model!r}")
    sha = have["model"].get("gguf_sha256")
    if sha and course.gguf_sha256 and sha != course.gguf_sha256 and have["model"].get("model") == model.get("model"):
        out.append(f"GGUF sha256 {sha[:12]}, the course's {course.gguf_sha256[:12]}: other weights")
    return out


# ---- the rubric (rubric.json) ----

def default_files(rubric=RUBRIC):
    """The results files rubric.json's weeks expect, as the weeks' commands write them: [(path, command)]."""
    weeks = json.loads(Path(rubric).read_text(encoding="utf-8"))["weeks"]
    return [(ROOT / w["file"], w.get("command")) for w in weeks]


def rubric_problems(r):
    """What is wrong with a rubric (format: labs/instructors.md, "The rubric"); [] when it can be used."""
    if not isinstance(r, dict) or not isinstance(r.get("weeks"), list) or not r["weeks"]:
        return ["a rubric is an object with a non-empty list 'weeks'"]
    out = [] if isinstance(r.get("rerun", {}).get("points"), NUM) and all(
        0 <= r["rerun"].get(k, 0) <= 1 for k in ("tolerance", "retrieval_tolerance")) \
        else ["'rerun' needs 'points', and 'tolerance' and 'retrieval_tolerance' in [0, 1]"]
    for i, w in enumerate(r["weeks"]):
        out += [f"weeks[{i}]: no {k!r}" for k in ("week", "script", "file", "points") if k not in w]
        out += [f"weeks[{i}].points: unknown item {k!r}" for k in w.get("points", {})
                if k not in ("valid", "fingerprints", "recomputed")]
        out += [f"weeks[{i}].thresholds[{j}]: needs name, value, op ({', '.join(OPS)}), than and points"
                for j, t in enumerate(w.get("thresholds", []))
                if not {"name", "value", "op", "than", "points"} <= set(t) or t["op"] not in OPS]
    return out


def lookup(data, paths):
    """A number at a dotted path, the first of several that resolves: ('recall.fused.4.all', report) -> 0.762"""
    for path in paths if isinstance(paths, list) else [paths]:
        value = data
        for key in str(path).split("."):
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, NUM):
            return value
    return None


def threshold(t, data):
    """(passed, line) for one rubric bar, "value op than" against every number or path in `than`."""
    value = lookup(data, t["value"])
    others = [x if isinstance(x, NUM) else lookup(data, x) for x in (t["than"] if isinstance(t["than"], list)
                                                                      else [t["than"]])]
    if value is None or None in others:
        return False, f"the file has no number at {t['value'] if value is None else t['than']}"
    ok = all(OPS[t["op"]](value, o) for o in others)
    return ok, f"{value:.3f} {t['op'] if ok else 'is not ' + t['op']} {', '.join(f'{o:.3f}' for o in others)}"


def main(argv=None):
    ap = argparse.ArgumentParser(description="Bundle your results files and a manifest into one archive to hand in.")
    ap.add_argument("files", nargs="*", type=Path, help="results files (default: those rubric.json's weeks expect)")
    ap.add_argument("--student", default=os.environ.get(DRAW_ENV) or getpass.getuser(),
                    help=f"your name or id, the one {DRAW_ENV} named when you ran the weeks' commands (your own draw "
                         f"of golden questions); default: {DRAW_ENV}, else your login")
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
        golden = Golden(load_golden(args.golden), student)
    except CorpusError as e:
        sys.exit(f"handin: {e}")
    if os.environ.get(DRAW_ENV, student) != student:
        print(f"  note: {DRAW_ENV}={os.environ[DRAW_ENV]}, but this hand-in is {student}'s: the files must hold "
              f"{student}'s draw of golden questions")
    entries, missing, blobs, default_draw = [], [], [], []
    for path, command in wanted:
        entry, data = describe(path)
        if data is None:
            missing.append({"path": entry["path"], "command": command, "problem": entry["problem"]})
            print(f"  {entry['path']:40} {entry['problem']}" + (f": {command}" if command else ""))
            continue
        entries.append(entry)
        blobs.append((entry["archived_as"], data))
        problems = problems_of(check_file(entry, data, golden))
        print(f"  {entry['path']:40} {entry['script']:20} ({entry['command_from']}) sha256 {entry['sha256'][:12]}  "
              + (f"checks: {len(problems)} problem(s), first: {problems[0]}" if problems else "checks: ok"))
        if student and any(DRAWN in p for p in problems) and not any(
                DRAWN in p for p in problems_of(check_file(entry, data, golden.of("")))):
            default_draw.append(command or entry.get("command") or entry["path"])   # run without RAG_STUDENT
    if not entries:
        sys.exit("handin: no results file to hand in: run the weeks' commands (README) or name the files")
    manifest = make_manifest(student, entries, missing, args.corpus, args.golden)
    m = manifest["model"]
    print(f"model {m['engine']} {m['model']} gguf sha256 {(m['gguf_sha256'] or '-')[:12]}; corpus "
          f"{manifest['corpus']['files']} files {manifest['corpus']['sha256'][:12]}; golden "
          f"{manifest['golden']['sha256'][:12]}; git {(manifest['git']['commit'] or '-')[:10]}"
          + (" (changed files)" if manifest["git"]["dirty"] else ""))
    print(f"wrote {write_archive(args.out or ROOT / f'handin-{student}.tar.gz', manifest, blobs)}")
    if default_draw:
        print(f"\n{len(default_draw)} file(s) hold the course's default draw of questions, not {student}'s: they were "
              f"run without {DRAW_ENV}, and lose their weeks. Run them again as {student}, then hand in again:\n"
              f"  export {DRAW_ENV}={student}\n" + "\n".join(f"  {c}" for c in default_draw))


if __name__ == "__main__":
    main()
