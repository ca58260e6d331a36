"""What each lab page's first command executes, by week: the function lines of its own week's files, of earlier weeks'
and of later weeks', so that no week silently grows again (issue 59).

    python -m grading.week_lines                  # every labs/weekN-*.md page: ~35 s (~10 s loading, ~3 s a page)
    python -m grading.week_lines labs/week4-judge.md --without-index        # one page, its index build left out
    python -m grading.week_lines --json results/issue59/week_lines_before.json \\
        | tee results/issue59/week_lines_before.txt

Each page's first output block's command (grading.lessons.blocks) runs as grading.lessons.check runs it: an empty
temporary RAG_INDEX_DIR, the folders it reads indexed first, the model's replies replayed from
tests/fixtures/lessons/PAGE.jsonl (no model call; a page with no replies gets a stand-in that refuses every call).
coverage.py starts just before the command and stops just after it, in a fresh process started for that page alone
(spawned, not forked: a fork of a process with torch's, Chroma's or pytest-xdist's threads can deadlock): what one
page loaded and cached in memory would otherwise hide lines from the next. A line counts when it was executed
and lies in the body of a function or method (ast): what a file runs on import (imports, constants, `def` lines)
does not, and a nested function's lines count once. Files take the week labs/files.md's table gives them; a file
the table does not name, or names with `–`, `data` or any other mark, has no week. Relative to the page's week (from
its file name, weekN-...) a file is this week's, an earlier week's, a later week's, plumbing (PLUMBING: the model's
door, engine, cache, streaming, steps, turns: shown, not counted) or other (no week, not plumbing: counted against
the page like a later week). tests/, experiments/ and grading/ are left out.

Expected output: the settings, then one row per page (week 9's first command starts a server: skipped), e.g.
    week  command                                   this  earlier  week files  later  other  plumbing  block  meets ...
       2  retrieve.py "In which village was the...    92       45         137      0      0         1  ok     yes
       4  verify_citations.py --ask "Who design...   193      238         431    289      0       277  DIFF 1  no  ...
then the top-level files over 300 lines (wc -l). `block` is whether the command printed its block's lines as
grading.lessons.check compares them (a DIFF of a line or two is a figure the page has not caught up with; more means
the run was not the page's, and its counts mean little). `meets`: issue 59's acceptance for weeks 2-8, later 0,
other 0, week files (this + earlier) <= 450. The index build of the folders the command reads counts too, as in
issue 59's own table (empty caches: a student's first run builds it); --without-index leaves it out.
Not handled: a page whose first command starts a server (app.py): skipped, and said so.
"""
import argparse
import ast
import multiprocessing
import os
import re
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import llm
from grading import lessons
from lab.cache import write_json

ROOT = Path(__file__).parent.parent   # the repository (this file is in grading/)
FILES_MD = ROOT / "labs" / "files.md"
# the plumbing every week may run: reported, never counted (llm.py's door, the engine, the cache, streaming...)
PLUMBING = ("llm.py", "lab/engine.py", "lab/cache.py", "lab/native.py", "lab/partial.py", "lab/steps.py",
            "lab/turns.py")
LEFT_OUT = ("tests", "experiments", "grading", ".venv")   # folders whose files are not measured
SERVERS = ("app.py",)          # a first command naming one of these starts a server: the page is skipped
ACCEPTED_WEEKS = range(2, 9)   # the weeks the acceptance holds: weeks 2-8
MAX_WEEK_LINES = 450           # at most this many function lines of week files (its own week and earlier ones)
MAX_FILE_LINES = 300           # a top-level file over this many lines is listed (STYLE.md: ~300 lines at most)
COMMAND_WIDTH = 40             # the table's command column
FIXTURE_FLAGS = re.compile(r"\s--(corpus|golden) tests/fixtures/\S+")   # the same on every page: left out of the table
CLASSES = ("this", "earlier", "later", "other", "plumbing")


def week_of_files(text):
    """{file: week or None} from labs/files.md's table: the first column is the week, the second names files in
    backticks; a week that is not a number ('–', 'data', a layer's mark) is None.

    >>> week_of_files("| week | file |\\n|---|---|\\n| 2 | `retrieve.py` |\\n| – | `lab/cache.py`, `x.json` |")
    {'retrieve.py': 2, 'lab/cache.py': None}
    """
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 2 or set(cells[0]) <= set("-: "):
            continue
        week = int(cells[0]) if cells[0].isdigit() else None
        out.update((f, week) for f in re.findall(r"`([\w./-]+\.py)`", cells[1]))
    return out


def function_lines(source):
    """The line numbers of `source` that lie inside a function's or method's body (nested ones included once).

    >>> sorted(function_lines("X = 1\\ndef f():\\n    def g():\\n        return X\\n    return g\\n"))
    [3, 4, 5]
    """
    lines = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines.update(range(node.body[0].lineno, node.end_lineno + 1))
    return lines


def page_week(page):
    """The week of a page from its file name: labs/week4-verify.md -> 4."""
    return int(re.match(r"week(\d+)-", Path(page).name).group(1))


def pages(root=ROOT):
    """labs/weekN-*.md in week order."""
    return sorted((root / "labs").glob("week*-*.md"), key=page_week)


def kind(file, week, weeks):
    """What `file` (a repository path) is to a page of week `week`: this, earlier, later, plumbing or other."""
    if file in PLUMBING:
        return "plumbing"
    w = weeks.get(file)
    if w is None:
        return "other"
    return "this" if w == week else "earlier" if w < week else "later"


def refuse(messages, schema):
    raise llm.LLMError("week_lines: this page has no recorded replies (tests/fixtures/lessons/), so no model is asked")


def executed(page, with_index=True):
    """Run the page's first command as grading.lessons.check does, under coverage.py -> (command, {file: executed
    function lines}, [block lines the output lacks]). with_index: coverage starts before the folders are indexed,
    so the index build counts too."""
    import coverage
    command, block = lessons.blocks(page)[0]
    path = lessons.replies_of(page)
    model = lessons.Recorded(path) if path.exists() else llm.ScriptedModel(refuse)
    cov = coverage.Coverage(data_file=None, include=[f"{ROOT}/*.py", f"{ROOT}/*/*.py"],
                            omit=[f"{ROOT}/{d}/*" for d in LEFT_OUT])
    before = os.environ.get("RAG_INDEX_DIR")
    with tempfile.TemporaryDirectory() as store:
        os.environ["RAG_INDEX_DIR"] = store   # empty caches and index, as the recording had
        try:
            if with_index:
                cov.start()
            lessons.indexed(command)
            with llm.use_model(model):
                if not with_index:
                    cov.start()
                try:
                    printed = lessons.run(command)
                finally:
                    cov.stop()
        finally:
            os.environ.pop("RAG_INDEX_DIR") if before is None else os.environ.update(RAG_INDEX_DIR=before)
    data, counts = cov.get_data(), {}
    for name in data.measured_files():
        file = Path(name).resolve().relative_to(ROOT.resolve())
        if file.parts[0] in LEFT_OUT:
            continue
        n = len(set(data.lines(name)) & function_lines(Path(name).read_text(encoding="utf-8")))
        if n:
            counts[file.as_posix()] = n
    lost = lessons.missing(block, printed, model.header["engine"] if path.exists() else None)
    return command, counts, lost


def measure(page, weeks, with_index=True):
    """One page's row: its command, the lines of each class, and each file's count with its week and class."""
    week = page_week(page)
    command, counts, lost = executed(page, with_index)
    files = {f: {"week": weeks.get(f), "kind": kind(f, week, weeks), "lines": n} for f, n in sorted(counts.items())}
    total = {c: sum(x["lines"] for x in files.values() if x["kind"] == c) for c in CLASSES}
    row = {"page": Path(page).name, "week": week, "command": command, **total,
           "week_files": total["this"] + total["earlier"], "block_missing": lost, "files": files}
    if week in ACCEPTED_WEEKS:
        row["meets"] = row["later"] == 0 and row["other"] == 0 and row["week_files"] <= MAX_WEEK_LINES
    return row


def measure_apart(page, weeks, with_index=True):
    """measure() in a fresh process for the page alone, so that what one page loaded and cached in memory cannot
    hide another's lines (measured together in one process, week 7 lost 53 lines). Spawned: forked from a process
    that runs threads (torch, Chroma, a pytest-xdist worker), a child can wait forever on a lock a thread held."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(measure, page, weeks, with_index).result()


def skipped(page):
    """Why a page is not measured (its first command starts a server), or None."""
    found = lessons.blocks(page)
    if not found:
        return "no output block"
    command = found[0][0]
    return next((f"its first command starts a server ({s})" for s in SERVERS if s in command.split()), None)


def oversized(root=ROOT):
    """{top-level file: lines} of the top-level .py files over MAX_FILE_LINES lines (wc -l), longest first."""
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in root.glob("*.py")}
    return dict(sorted(((f, n) for f, n in sizes.items() if n > MAX_FILE_LINES), key=lambda x: -x[1]))


def short(command):
    """The table's command: `python` and the fixture folders left out, cut to COMMAND_WIDTH characters."""
    text = FIXTURE_FLAGS.sub("", command).removeprefix("python ").removeprefix("-m ")
    return text if len(text) <= COMMAND_WIDTH else text[:COMMAND_WIDTH - 3] + "..."


def outside(row):
    """The later weeks' and other files of a row, most lines first: 'disputes 72 (8), harness 30 (–)'."""
    bad = [(f, x) for f, x in row["files"].items() if x["kind"] in ("later", "other")]
    return ", ".join(f"{Path(f).with_suffix('').as_posix()} {x['lines']} ({x['week'] or '–'})"
                     for f, x in sorted(bad, key=lambda fx: -fx[1]["lines"]))


def table(rows, skips):
    print(f"{'week':>4}  {'command':{COMMAND_WIDTH}}  {'this':>4}  {'earlier':>7}  {'week files':>10}  {'later':>5}  "
          f"{'other':>5}  {'plumbing':>8}  {'block':5}  {'meets':5}  later and other files (lines, week)")
    for r in rows:
        block = "ok" if not r["block_missing"] else f"DIFF {len(r['block_missing'])}"
        meets = {True: "yes", False: "no"}.get(r.get("meets"), "")
        print(f"{r['week']:>4}  {short(r['command']):{COMMAND_WIDTH}}  {r['this']:>4}  {r['earlier']:>7}  "
              f"{r['week_files']:>10}  {r['later']:>5}  {r['other']:>5}  {r['plumbing']:>8}  {block:5}  {meets:5}  "
              f"{outside(r)}")
    for page, why in skips.items():
        print(f"{page_week(page):>4}  {Path(page).name}: skipped, {why}")


def main():
    ap = argparse.ArgumentParser(description="Function lines each lab page's first command executes, by week "
                                             "(coverage.py, the page's recorded replies: no model call).")
    ap.add_argument("pages", nargs="*", type=Path, help="lab pages (default: every labs/weekN-*.md)")
    ap.add_argument("--in-process", action="store_true", help="measure every page in this one process (default: "
                    "a process per page, so one page's loaded modules cannot hide another's lines)")
    ap.add_argument("--without-index", action="store_true", help="leave out the index build of the folders the "
                    "command reads (counted by default, as issue 59's table did: ~140 week-1 lines a page)")
    ap.add_argument("--json", type=Path, help="write every page's row, with its per-file counts, here")
    args = ap.parse_args()
    import coverage
    chosen = args.pages or pages()
    for page in chosen:
        if not page.is_file() or not re.match(r"week\d+-", page.name):
            sys.exit(f"week_lines: {page} is not a lab page (labs/weekN-*.md)")
    weeks = week_of_files(FILES_MD.read_text(encoding="utf-8"))
    where = ("in this process" if args.in_process else "a process per page") + (
", index build counted" if not args.without_index else ", index build left out")
    print(f"pages={len(chosen)} coverage={coverage.__version__} files.md names {len(weeks)} .py files, "
          f"plumbing (not counted): {' '.join(PLUMBING)}; {where}")
    skips = {p: why for p in chosen if (why := skipped(p))}
    rows = []
    for page in chosen:
        if page not in skips:
            rows.append((measure if args.in_process else measure_apart)(page, weeks, not args.without_index))
    table(rows, skips)
    big = oversized()
    print(f"top-level files over {MAX_FILE_LINES} lines (wc -l): "
          + ", ".join(f"{f} {n}" for f, n in big.items())
          + f"; {len(big)} files, {sum(big.values())} lines, {sum(n - MAX_FILE_LINES for n in big.values())} over")
    if args.json:
        write_json(args.json, {"coverage": coverage.__version__, "plumbing": list(PLUMBING),
                               "max_week_lines": MAX_WEEK_LINES, "pages": rows,
                               "skipped": {p.name: why for p, why in skips.items()},
                               "oversized": big})


if __name__ == "__main__":
    main()
