"""Replay a committed result from the cache with the model refused, and compare it field by field.

    python -m grading.replay results/citations_json_30.json verify_citations.py --limit 30 --styles json
    python -m grading.replay results/benchmark.json benchmark.py
    python -m grading.replay --all              # every table of grading/tables.py, from the committed cache
    python -m grading.replay --all --record     # ... and keep the cache keys each read in results/keys/ (make replay)
    python -m grading.replay --make benchmark router_eval   # re-make tables with the model (resumes from .rag/cache)
    python -m grading.replay --all --record --from .rag/cache && python -m grading.replay --snapshot   # then commit

Runs the script in this process with every model call refused (llm.ScriptedModel that raises, named as the real
model so that the cache keys are the real ones), with `--json` pointed at a scratch file, then compares that file
with the committed one. Expected output: the script's own output, then
    ## verify_citations.py --limit 30 --styles json vs results/citations_json_30.json: exit 0; model calls refused: 0;
       586 fields compared, 0 differ
Timings (any key naming seconds or ms), engine labels, dates, machines, commands, the model calls a run made (a
replay makes none) and chart file names are not compared: they describe the run, not its figures. Exit status: 0
when no call was refused and no compared field differs, else 1.
After an edit that moves cache keys (`python -m lab.cache --rekey MODULE`, a new input in a key), this is how one
checks that the committed figures still come from the cache: a miss shows as a refused call.
--all replays each table of grading/tables.TABLES that has no `made_at` from a scratch copy of results/cache/ (the
committed snapshot: a fresh clone needs no copy step, and the snapshot is never written), one line per table:
    results/citations_json_30.json   verify_citations.py --limit 30 --styles json   refused 0  fields 586  differ 0
then the tables named as not replayable, with their commit. --record keeps the keys each replay read (a cache hit),
and the code key of the command's own module (a table that reads no cache, retrieval's, is current while that is),
which tests/test_tables.py checks against today's code with no model and no replay.
--snapshot rewrites results/cache to hold exactly the entries the recorded tables read (from .rag/cache, else the
snapshot itself), so a fresh clone replays every table and carries nothing else.
--make NAME ... runs each named table's command (all of them with no name) with the real model and writes its results
file, as a student's run would: a long one resumes from .rag/cache, and `--all --record` then replays it.
Not handled: results written without --json (ordering_ab's plots), scripts that take no --json.
"""
import argparse
import contextlib
import json
import re
import runpy
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

import llm
from grading import tables
from lab.cache import Cache, code_key, modules, moved

ROOT = Path(__file__).parent.parent   # the repository (this file is in grading/)
# keys that describe the run, not its figures
SKIP = re.compile(r"seconds|(^|_)ms(_|$)|wall|^(engine|host|gguf|build|charts|png|date|machine|command|llm_calls_now)$")


def fields(value, path=""):
    """{'/a/0/b': leaf} of a JSON value, leaving out keys SKIP names. fields({'a': [1], 'ms_p95': 2}) -> {'/a/0': 1}"""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() if not SKIP.search(str(key))
                for k, v in fields(item, f"{path}/{key}").items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in fields(item, f"{path}/{i}").items()}
    return {path: value}


def compare(committed, replayed):
    """[(field, committed value, replayed value)] of the fields that differ (a float within 1e-9 is equal)."""
    a, b = fields(committed), fields(replayed)
    same = lambda x, y: x == y or (isinstance(x, float) and isinstance(y, float) and abs(x - y) <= 1e-9)
    return len(a.keys() | b.keys()), [(k, a.get(k), b.get(k)) for k in sorted(a.keys() | b.keys())
                                      if not same(a.get(k), b.get(k))]


def refusing_model():
    """A scripted stand-in that refuses every call, named as the real model (the keys name it)."""
    def refuse(messages, schema):
        raise llm.LLMError("replay: not in the cache (the model is refused)")
    model = llm.ScriptedModel(refuse)
    model.name = llm.engine_info()["model"]
    return model


def run(script, args, out):
    """Run `script args --json out` as __main__ with the model refused -> (exit status, calls refused). script: a
    file of the repository (benchmark.py), or "-m" with the module first in args (-m layers.disputes --golden 60);
    out None: no --json (a table's setup)."""
    model, status = refusing_model(), 0
    module = args[0] if script == "-m" else None
    saved, sys.argv = sys.argv, [module or script, *args[bool(module):], *(["--json", str(out)] if out else [])]
    try:
        with llm.use_model(model):
            if module:
                runpy.run_module(module, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(str(ROOT / script), run_name="__main__")
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (1 if e.code else 0)
        if e.code and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    finally:
        sys.argv = saved
    return status, len(model.calls)


def replay(committed, script, args):
    """Replay one committed result; -> (exit status, calls refused, fields compared, differences)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "replay.json"
        status, refused = run(script, args, out)
        if not out.exists():
            return status or 1, refused, 0, [("(no file written)", str(committed), None)]
        n, diffs = compare(json.loads(Path(committed).read_text()), json.loads(out.read_text()))
    return status, refused, n, diffs


@contextlib.contextmanager
def reading(snapshot):
    """In the block, every cache opens from a scratch copy of the folder `snapshot`; yields {cache name: set of
    keys read} (hits of get() and `in` on entries the snapshot held; not what the run computed and put itself, with
    no model: a links layer's names), filled as the block runs."""
    read, get, contains, held = {}, Cache.get, Cache.__contains__, {}

    def noted_get(store, key, default=None):
        if key in held.get(store.path.stem, ()):
            read.setdefault(store.path.stem, set()).add(key)
        return get(store, key, default)

    def noted_contains(store, key):
        if contains(store, key):
            if key in held.get(store.path.stem, ()):
                read.setdefault(store.path.stem, set()).add(key)
            return True
        return False

    with tempfile.TemporaryDirectory() as tmp:
        for f in Path(snapshot).glob("*.jsonl"):
            shutil.copy(f, tmp)
            held[f.stem] = set(Cache(f.stem, tmp).data)   # read from the snapshot; what the run computes is not
        Cache.get, Cache.__contains__ = noted_get, noted_contains
        try:
            with moved([f.stem for f in Path(snapshot).glob("*.jsonl")], tmp):
                yield read
        finally:
            Cache.get, Cache.__contains__ = get, contains


def replay_all(record=False, snapshot=tables.SNAPSHOT, chosen=None):
    """Every replayable table from the snapshot, one line each; record: keep the keys each read (results/keys/).
    -> the number of tables that failed (a refused call, a differing field, a non-zero exit)."""
    failed = 0
    for t in chosen or tables.TABLES:
        if t.made_at:
            print(f"{t.file:40} not replayable from today's code: made at {t.made_at} by {t.command}")
            continue
        script, *args = shlex.split(t.command)
        with reading(snapshot) as read:
            status, refused, n, diffs = 0, 0, 0, [("(setup failed)", t.setup, None)]
            if t.setup:   # what the setup reads is kept too
                first, *more = shlex.split(t.setup)
                status, refused = run(first, more, None)
            if not status:
                status, also, n, diffs = replay(ROOT / t.file, script, args)
                refused += also
        print(f"{t.file:40} {t.command:50} refused {refused}  fields {n}  differ {len(diffs)}"
              + (f"  exit {status}" if status else ""))
        for d in diffs[:10]:
            print(f"   {d}")
        failed += bool(status or refused or diffs)
        if record and not (status or refused or diffs):
            t.keys_file.parent.mkdir(parents=True, exist_ok=True)
            code = {t.module: code_key(t.module)} if t.module in modules() else {}   # a script outside: not followed
            t.keys_file.write_text(json.dumps({"file": t.file, "command": t.command, "code": code, "keys": {
                name: sorted(keys) for name, keys in sorted(read.items())}}, indent=0) + "\n", encoding="utf-8")
    return failed


def make(names, python=sys.executable):
    """Run the named tables' commands (all with none) with the model, each writing its results file; -> the number
    that exited non-zero. Each runs in its own process, as from the shell, so one table's failure stops no other."""
    import subprocess
    known = {t.name: t for t in tables.TABLES}
    if unknown := [n for n in names if n not in known]:
        raise ValueError(f"unknown table {unknown[0]!r}: the tables are {', '.join(known)}")
    failed = 0
    for t in [known[n] for n in names] or tables.TABLES:
        for cmd in ([[python, *shlex.split(t.setup)]] if t.setup else []) + [
                [python, *shlex.split(t.command), "--json", t.file]]:
            print(f"## {' '.join(cmd[1:])}", flush=True)
            if subprocess.run(cmd, cwd=ROOT).returncode != 0:
                failed += 1
                break
    return failed


def main(argv=None):
    ap = argparse.ArgumentParser(description="Replay a committed result from the cache with the model refused and "
                                             "compare it field by field (timings and engine labels aside).")
    ap.add_argument("committed", type=Path, nargs="?", help="the committed results file (e.g. results/benchmark.json)")
    ap.add_argument("script", nargs="?", help="the script that wrote it (e.g. benchmark.py; -m MODULE for a module)")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="the script's flags, without --json")
    ap.add_argument("--all", nargs="*", metavar="NAME", help="every table of grading/tables.py (or these), from "
                    "results/cache/")
    ap.add_argument("--record", action="store_true", help="with --all: keep the keys each replay read (results/keys/)")
    ap.add_argument("--from", dest="source", type=Path, default=tables.SNAPSHOT, metavar="DIR",
                    help="with --all: replay from this cache folder (default results/cache; .rag/cache after --make)")
    ap.add_argument("--snapshot", action="store_true",
                    help="rewrite results/cache to hold exactly what the recorded tables read, from .rag/cache")
    ap.add_argument("--make", nargs="*", metavar="NAME", help="re-make these tables (all with none) with the real "
                    "model: their commands, writing their results files")
    args = ap.parse_args(argv)
    if args.make is not None:
        try:
            sys.exit(1 if make(args.make) else 0)
        except ValueError as e:
            sys.exit(f"replay: {e}")
    if args.snapshot:
        from lab.cache import index_dir
        written, missing = tables.write_snapshot([index_dir() / "cache", tables.SNAPSHOT])
        for name, n in written.items():
            print(f"{name:20} {n:6} entries")
        for name, k in missing:
            print(f"missing: {name} {k}")
        sys.exit(1 if missing else 0)
    if args.all is not None:
        known = {t.name: t for t in tables.TABLES}
        if unknown := [n for n in args.all if n not in known]:
            sys.exit(f"replay: unknown table {unknown[0]!r}: the tables are {', '.join(known)}")
        sys.exit(1 if replay_all(args.record, snapshot=args.source, chosen=[known[n] for n in args.all]) else 0)
    if not args.committed or not args.script:
        sys.exit("replay: name a committed file and the script that wrote it, or --all")
    if not args.committed.is_file():
        sys.exit(f"replay: {args.committed} is not a file")
    if args.script != "-m" and not (ROOT / args.script).is_file():
        sys.exit(f"replay: {args.script} is not a script of {ROOT}")
    status, refused, n, diffs = replay(args.committed, args.script, args.args)
    print(f"## {' '.join([args.script, *args.args])} vs {args.committed}: exit {status}; model calls refused: "
          f"{refused}; {n} fields compared, {len(diffs)} differ")
    for d in diffs[:40]:
        print(f"   {d}")
    sys.exit(0 if status == 0 and refused == 0 and not diffs else 1)


if __name__ == "__main__":
    main()
