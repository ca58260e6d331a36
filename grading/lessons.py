"""The lab pages' output blocks: each one is what the command above it prints, re-made by a test.

    python -m grading.lessons --record labs/week3-generate.md   # run each block's command on the real model
    python -m grading.lessons labs/week3-generate.md            # re-make each block from its replies: no model call

A block is the fenced code block right after a line `<!-- output: COMMAND -->` (COMMAND: `python X.py ...` or
`python -m pkg.X ...`). --record runs each COMMAND in this process with empty caches (a temporary RAG_INDEX_DIR, the
folders the command reads indexed first), keeps every reply the model gave, with its token counts, in
tests/fixtures/lessons/PAGE.jsonl (its first line names the engine and model) and prints the output to paste,
trimmed, into the page. check() runs COMMAND again with those replies (Recorded: the real model's words, replayed;
a request it never saw is an error, not a guess) and returns the lines of the block the output lacks. Lines are
compared in order, seconds masked (they differ run to run, and so does their padding), a line `...` skips output,
and a line ending in `...` matches any output line that starts with what comes before it.
Not handled: a command that reads stdin, or one that needs a server (app.py).
"""
import argparse
import contextlib
import hashlib
import io
import json
import os
import re
import runpy
import shlex
import sys
import tempfile
from pathlib import Path

import llm

ROOT = Path(__file__).parent.parent           # the repository (this file is in grading/)
REPLIES = ROOT / "tests" / "fixtures" / "lessons"
MARK = re.compile(r"^<!-- output: (.+?) -->\n```\w*\n(.*?)^```", re.M | re.S)
SECONDS = re.compile(r"\d+(?:\.\d+)?(?=\s*(?:s|ms|seconds?|s/q|tok/s|chunks/s|q/s)\b)")


def blocks(page):
    """[(command, [lines])] of a page's output blocks, in page order."""
    text = Path(page).read_text(encoding="utf-8")
    return [(cmd.strip(), body.rstrip("\n").splitlines()) for cmd, body in MARK.findall(text)]


def request_key(messages, schema):
    """One request, as both the recorder (llm.chat's arguments) and the replay (the engine's request) see it."""
    turns = [[m.get("role"), m.get("content")] for m in messages]
    return hashlib.sha256(json.dumps([turns, schema], sort_keys=True).encode()).hexdigest()[:24]


class Recorded(llm.ScriptedModel):
    """The replies a real model gave, replayed by request (messages and schema): never a model itself. A request not
    recorded raises LLMError naming the command that records it again."""

    def __init__(self, path):
        lines = [json.loads(x) for x in Path(path).read_text(encoding="utf-8").splitlines() if x.strip()]
        self.header, self.path = lines[0], Path(path)
        self.name = self.header["model"]
        self.kept = {x["key"]: x for x in lines[1:]}
        super().__init__(self._reply)

    def _kept(self, messages, schema):
        got = self.kept.get(request_key(messages, schema))
        if got is None:
            raise llm.LLMError(f"no recorded reply for this request in {self.path.name}: the prompt or its passages "
                               f"changed; record again with python -m grading.lessons --record PAGE")
        return got

    def _reply(self, messages, schema):
        got = self._kept(messages, schema)["reply"]
        return got if isinstance(got, str) else [tuple(p) for p in got]

    def openai_chat(self, request):
        """The recorded reply with the token counts the model reported for it."""
        out = super().openai_chat(request)
        fmt = request.get("response_format") or {}
        schema = fmt.get("json_schema", {}).get("schema") or ("json" if fmt else None)
        prompt, completion = self._kept(request["messages"], schema)["tokens"]
        out["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion}
        return out


@contextlib.contextmanager
def recording(path):
    """Every llm.chat reply of the block, kept in `path` (JSON lines: a header, then {"key", "reply", "tokens"})."""
    real, kept = llm.chat, {}

    def chat(messages, *, schema=None, **kw):
        response = real(messages, schema=schema, **kw)
        pairs = [[lp.token, lp.logprob] for lp in response.logprobs] if response.logprobs else None
        kept[request_key(messages, schema)] = {"reply": pairs or response.message.content,
                                               "tokens": [response.prompt_eval_count, response.eval_count]}
        return response
    llm.chat = chat
    try:
        yield kept
    finally:
        llm.chat = real
        info = llm.engine_info(portable=True)
        lines = [{k: info.get(k) for k in ("engine", "model", "build")}] + [{"key": k, **v} for k, v in kept.items()]
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def run(command):
    """What `command` prints on stdout, run in this process (stderr dropped); SystemExit ends it like an exit."""
    argv = shlex.split(command)
    if argv[0] not in ("python", "python3"):
        raise ValueError(f"not a python command: {command}")
    out, before = io.StringIO(), sys.argv
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            if argv[1] == "-m":
                sys.argv = [argv[2], *argv[3:]]
                runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
            else:
                sys.argv = argv[1:]
                runpy.run_path(str(ROOT / argv[1]), run_name="__main__")
        except SystemExit as e:
            if e.code not in (None, 0):
                print(e.code)
        finally:
            sys.argv = before
    return out.getvalue()


def indexed(command):
    """Build the index of every --corpus folder the command names (tests/fixtures/corpus by default: the pages'
    commands run on the nine-page fixture folder)."""
    from vector_index import build_index
    argv = shlex.split(command)
    if "vector_index.py" in argv:
        return   # week 1's command builds the index itself: its output is the build
    folders = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--corpus"] or ["tests/fixtures/corpus"]
    for f in folders:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            build_index(ROOT / f, "titled", progress=False)


def normal(line, engine=None):
    """A line as compared: seconds masked, runs of spaces as one, the repository's path and a replay's engine name
    ('scripted') put back as recorded."""
    line = SECONDS.sub("#", line.rstrip()).replace(str(ROOT) + "/", "")
    line = re.sub(r"\s+", " ", re.sub(r"store=\S+", "store=.rag", line))   # a column's padding follows its width
    return line.replace("scripted", engine) if engine else line


def missing(expected, output, engine=None):
    """The lines of a block the output lacks, in order (see the module's docstring for `...`)."""
    got, at, lost = [normal(x, engine) for x in output.splitlines()], 0, []
    for want in (normal(x) for x in expected):
        if want.strip() in ("...", "…"):
            continue
        prefix = want[:-3].rstrip() if want.endswith("...") else None
        hit = next((i for i in range(at, len(got)) if (got[i].startswith(prefix) if prefix else got[i] == want)),
                   None)
        if hit is None:
            lost.append(want)
        else:
            at = hit + 1
    return lost


def replies_of(page):
    return REPLIES / f"{Path(page).stem}.jsonl"


def check(page):
    """{command: the block lines its output lacks} for every block of the page, from its recorded replies."""
    out, path = {}, replies_of(page)
    model = Recorded(path) if path.exists() else None
    for command, lines in blocks(page):
        indexed(command)
        with (llm.use_model(model) if model else contextlib.nullcontext()):
            printed = run(command)
        out[command] = missing(lines, printed, model.header["engine"] if model else None)
    return out


def record(page):
    """Run each block's command with empty caches on the real model; keep the replies; -> {command: output}."""
    outputs, before = {}, os.environ.get("RAG_INDEX_DIR")
    with tempfile.TemporaryDirectory() as store:
        os.environ["RAG_INDEX_DIR"] = store
        try:
            with recording(replies_of(page)):
                for command, _ in blocks(page):
                    indexed(command)
                    outputs[command] = run(command)
        finally:
            os.environ.pop("RAG_INDEX_DIR") if before is None else os.environ.update(RAG_INDEX_DIR=before)
    return outputs


def main():
    ap = argparse.ArgumentParser(description="Re-make (or record) the output blocks of the lab pages.")
    ap.add_argument("pages", nargs="+", type=Path, help="lab pages (labs/week*.md)")
    ap.add_argument("--record", action="store_true", help="run the commands on the real model and keep its replies")
    args = ap.parse_args()
    bad = 0
    for page in args.pages:
        if not page.is_file():
            sys.exit(f"lessons: {page} is not a file")
        if args.record:
            for command, printed in record(page).items():
                print(f"## {command}\n{printed}")
            print(f"wrote {replies_of(page).relative_to(ROOT)}")
            continue
        for command, lost in check(page).items():
            bad += bool(lost)
            print(f"{'ok  ' if not lost else 'DIFF'} {page.name}: {command}"
                  + "".join(f"\n  missing: {x}" for x in lost))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
