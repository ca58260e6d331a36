"""How soon the demo page shows an answer: seconds from Ask to the first complete sentence on the page, to the first
verdict chip, and to done, for each question, in Chromium, on the real engine; the page as it was (a git ref)
against the page as it is, in one run, question by question in turn.

    python -m experiments.bench_page --before 55f8139 --json results/issue46/bench_page_native.json
    python -m experiments.bench_page --build wheel --json results/issue46/bench_page_wheel.json
    python -m experiments.bench_page --stop 5 --same-as results/issue46/bench_page_native.json \
        --json results/issue46/bench_stop_native.json

Questions: the README's demo question (the Makefile's QUESTION) and the first --questions two-hop questions of
golden.json; pattern smart router. Each side is `python app.py` started as a user starts it, from its own checkout
(--before: a git worktree at that ref, sharing this .venv), with its own copy of .rag and no judge cache, so neither
side reads verdicts the other computed. The times are read in the page itself: a MutationObserver (OBSERVE_JS)
stamps the first moment the answer pane holds a sentence, a green or red chip, and the status says done. Expected:
~2 min per question per side on 2 cores; the table, then the JSON.
"""
import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from lab.cache import write_json  # noqa: E402
from lab import answers  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# the page's answer and status, watched from the browser: ms since Ask of each first, and every state seen
OBSERVE_JS = """() => {
  const t0 = performance.now(), log = window.__answerLog = {states: [], first: {}};
  const look = () => {
    const a = document.querySelector('#answer'), s = document.querySelector('#status [data-kind]');
    const n = q => a ? a.querySelectorAll(q).length : 0;
    const state = {ms: Math.round(performance.now() - t0), sentences: n('[data-sentence]'),
                   checking: n('details.chip[data-verdict="checking"]'),
                   verdicts: n('details.chip[data-verdict="supported"],details.chip[data-verdict="unsupported"]'),
                   status: s ? s.dataset.kind : null};
    const last = log.states[log.states.length - 1];
    const keys = ['sentences', 'checking', 'verdicts', 'status'];
    if (!last || keys.some(k => last[k] !== state[k])) log.states.push(state);
    if (state.sentences && log.first.sentence === undefined) log.first.sentence = state.ms;
    if (state.verdicts && log.first.verdict === undefined) log.first.verdict = state.ms;
    if (['busy', 'queued'].includes(state.status)) log.asked = true;   // an end shown before Ask does not count
    if (log.asked && ['done', 'error', 'stopped'].includes(state.status) && log.first.end === undefined) {
      log.first.end = state.ms; log.end = state.status; }
  };
  new MutationObserver(look).observe(document.body, {subtree: true, childList: true, characterData: true,
                                                     attributes: true});
}"""


def readme_question():
    return re.search(r"^QUESTION \?= (.+)$", (ROOT / "Makefile").read_text(), re.M).group(1).strip()


def golden_items(n):
    """The first n two-hop questions of golden.json."""
    return [g for g in json.loads((ROOT / "golden.json").read_text()) if g["type"] == "multi"][:n]


def questions(n):
    return [readme_question()] + [g["question"] for g in golden_items(n)]


def checkout(ref, into):
    """A worktree of this repository at `ref`, with this .venv (and so the native build) linked in."""
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(into), ref], check=True,
                   capture_output=True)
    (into / ".venv").symlink_to(ROOT / ".venv")
    return into


def index_copy(into):
    """This checkout's .rag (the built index) without its judge cache: answers are computed, not replayed."""
    shutil.copytree(ROOT / ".rag", into, ignore=shutil.ignore_patterns("judge.jsonl*", "answers.jsonl*"))
    return into


class Side:
    """`python app.py` from one checkout, on a free port, until close()."""

    def __init__(self, name, root, index, build):
        self.name, self.port = name, free_port()
        env = {**os.environ, "RAG_LLM": "embedded", "RAG_INDEX_DIR": str(index), "RAG_ENGINE_BUILD": build}
        self.proc = subprocess.Popen([str(ROOT / ".venv" / "bin" / "python"), "app.py", "--port", str(self.port)],
                                     cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = ""
        while "serving" not in line and self.proc.poll() is None:
            line = self.proc.stdout.readline()
        if "serving" not in line:
            raise SystemExit(f"bench_page: app.py of {name} did not start (exit {self.proc.poll()})")
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.port}/"

    def close(self):
        self.proc.terminate()
        self.proc.wait(30)


def free_port():
    """A port nothing listens on (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def time_question(browser, url, question, timeout_s=900):
    """Ask on a fresh page; -> {first_sentence_s, first_verdict_s, done_s, end, states}."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(url)
        page.fill("#question textarea", question)
        page.evaluate(OBSERVE_JS)
        page.click("#ask")
        page.wait_for_function("() => window.__answerLog.end !== undefined", timeout=timeout_s * 1000, polling=200)
        log = page.evaluate("() => window.__answerLog")
        said = said_on(page)
    finally:
        page.close()
    sec = lambda ms: None if ms is None else round(ms / 1000, 1)
    first = log["first"]
    return {"first_sentence_s": sec(first.get("sentence")), "first_verdict_s": sec(first.get("verdict")),
            "done_s": sec(first.get("end")), "end": log["end"], "answer": said, "states": log["states"]}


def said_on(page):
    """The short answer as the model wrote it, from the answer pane's headline (data-said); None without one."""
    headline = page.query_selector("#answer [data-said]")
    return headline.get_attribute("data-said") if headline else None


def time_stop(browser, url, item, stop_at=5.0, timeout_s=900):
    """Ask, press Stop `stop_at` s after Ask, then ask the same question again on the same page: -> seconds from
    Stop to the status saying stopped and to the call having ended (the line free), then the next answer's done
    seconds, its short answer and whether it is right by the lab's label (answers.right). An answer done
    before the Stop is said so ("stopped": false)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(url)
        page.fill("#question textarea", item["question"])
        page.click("#ask")
        page.wait_for_timeout(stop_at * 1000)
        kind = "document.querySelector('#status [data-kind]').dataset.kind"
        t0 = time.perf_counter()
        page.click("#stop")
        page.wait_for_function(f"() => ['stopped', 'done'].includes({kind})", timeout=60_000, polling=50)
        shown = time.perf_counter() - t0
        if page.query_selector('#status [data-kind="done"]'):
            return {"question": item["question"], "stopped": False}
        page.wait_for_function(f"() => {kind} === 'stopped' && "   # the final line, once the call has ended
                               "document.querySelector('#status').innerText.includes('stopped after')",
                               timeout=timeout_s * 1000, polling=50)
        ended = time.perf_counter() - t0
        had = len(page.query_selector_all("#answer [data-sentence]"))
        page.evaluate(OBSERVE_JS)
        page.click("#ask")
        page.wait_for_function("() => window.__answerLog.end !== undefined", timeout=timeout_s * 1000, polling=200)
        log = page.evaluate("() => window.__answerLog")
        said_text = said_on(page) or ""
    finally:
        page.close()
    return {"question": item["question"], "stopped": True, "gold": item["answer"], "stop_at_s": stop_at,
            "stopped_shown_s": round(shown, 2), "call_ended_s": round(ended, 2), "sentences_when_stopped": had,
            "next_done_s": round(log["first"]["end"] / 1000, 1), "next_end": log["end"], "next_answer": said_text,
            "next_right": answers.right(said_text, item)}


def p50(xs):
    xs = [x for x in xs if x is not None]
    return round(statistics.median(xs), 1) if xs else None


def main():
    ap = argparse.ArgumentParser(description="Seconds from Ask to the first sentence, first verdict and done on the "
                                 "demo page, in Chromium on the real engine: a git ref's page against this one.")
    ap.add_argument("--before", metavar="REF", help="git ref of the page to compare with (omit: this page only)")
    ap.add_argument("--questions", type=int, default=5, help="two-hop golden questions after the README's (5)")
    ap.add_argument("--build", default="native", choices=["native", "wheel"], help="llama.cpp build (native)")
    ap.add_argument("--stop", type=float, metavar="S", help="instead: on each golden question, press Stop S s after "
                    "Ask, time the stop, then ask it again and check the answer (this page only)")
    ap.add_argument("--same-as", type=Path, metavar="JSON", help="with --stop: a page bench's JSON (this page's rows) "
                    "to say whether each answer after a stop is the answer given without one")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    if not CHROMIUM:
        sys.exit("bench_page: Chromium is not installed: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright
    asked, work = questions(args.questions), Path(tempfile.mkdtemp(prefix="bench-page-"))
    sides = []
    try:
        roots = ([("before", checkout(args.before, work / "before"))] if args.before else []) + [("now", ROOT)]
        for name, root in roots:
            sides.append(Side(name, root, index_copy(work / f"rag-{name}"), args.build))
            print(f"{name}: serving {sides[-1].url} from {root}", file=sys.stderr, flush=True)
        rows = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            if args.stop is not None:
                for n, item in enumerate(golden_items(args.questions)):
                    rows.append(time_stop(browser, sides[-1].url, item, args.stop))
                    shown = {k: v for k, v in rows[-1].items() if k != "question"}
                    print(f"{n + 1}/{args.questions}: {json.dumps(shown)}", file=sys.stderr, flush=True)
                asked = []
            for n, q in enumerate(asked):
                for side in sides:  # in turn, question by question: drift on the machine falls on both
                    row = {"question": q, "side": side.name, **time_question(browser, side.url, q)}
                    rows.append(row)
                    print(f"{n + 1}/{len(asked)} {side.name:>6}: first sentence {row['first_sentence_s']} s, "
                          f"first verdict {row['first_verdict_s']} s, {row['end']} {row['done_s']} s",
                          file=sys.stderr, flush=True)
            browser.close()
    finally:
        for side in sides:
            side.close()
        if args.before:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(work / "before")],
                           capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    if args.stop is not None:
        return stop_table(rows, args)
    summary = {}
    print(f"{'side':>7}{'n':>4}{'first sentence p50':>20}{'first verdict p50':>19}{'done p50':>10}")
    for side in [s.name for s in sides]:
        mine = [r for r in rows if r["side"] == side]
        summary[side] = {k: p50(r[k] for r in mine) for k in ("first_sentence_s", "first_verdict_s", "done_s")}
        print(f"{side:>7}{len(mine):>4}{summary[side]['first_sentence_s']!s:>20}"
              f"{summary[side]['first_verdict_s']!s:>19}{summary[side]['done_s']!s:>10}")
    if args.before:
        ratios = [a["done_s"] / b["done_s"] for a, b in zip(rows[1::2], rows[0::2]) if a["done_s"] and b["done_s"]]
        summary["done_ratio_now_over_before_p50"] = round(statistics.median(ratios), 3) if ratios else None
        print(f"done, now / before, per question: {[round(r, 2) for r in ratios]}; p50 "
              f"{summary['done_ratio_now_over_before_p50']}")
    if args.json:
        write_json(args.json, {"build": args.build, "pattern": "smart router", "before": args.before,
                               "engine": "embedded, RAG_LLM=embedded", "summary": summary, "rows": rows})


def stop_table(rows, args):
    """The stop rows, and with --same-as a page bench's JSON: whether each next answer is the one that page gave
    without a stop."""
    unstopped = {}
    if args.same_as:
        unstopped = {r["question"]: r.get("answer") for r in json.loads(args.same_as.read_text())["rows"]
                     if r["side"] == "now"}
    stopped = [r for r in rows if r["stopped"]]
    for r in stopped:
        r["answer_without_stop"] = unstopped.get(r["question"])
        r["next_same"] = r["next_answer"] == r["answer_without_stop"] if r["question"] in unstopped else None
    print(f"{'stop at':>8}{'stopped shown':>15}{'call ended':>12}{'next done':>11}{'next same':>11}{'next right':>12}")
    for r in stopped:
        print(f"{r['stop_at_s']:>8}{r['stopped_shown_s']:>15}{r['call_ended_s']:>12}{r['next_done_s']:>11}"
              f"{r['next_same']!s:>11}{r['next_right']!s:>12}")
    summary = {"n": len(rows), "done_before_the_stop": len(rows) - len(stopped),
               "stopped_shown_s_max": max((r["stopped_shown_s"] for r in stopped), default=None),
               "call_ended_s_p50": p50(r["call_ended_s"] for r in stopped),
               "call_ended_s_max": max((r["call_ended_s"] for r in stopped), default=None),
               "next_same": sum(bool(r["next_same"]) for r in stopped),
               "next_right": sum(r["next_right"] for r in stopped)}
    print(json.dumps(summary))
    if args.json:
        write_json(args.json, {"build": args.build, "pattern": "smart router", "stop_at_s": args.stop,
                               "engine": "embedded, RAG_LLM=embedded", "summary": summary, "rows": rows})


if __name__ == "__main__":
    main()
