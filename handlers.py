"""What the demo page does with a question (app.py lays the page out and wires these to its buttons): the question
checked, its place in the line to the one engine said, its answer drawn as the model writes it and each citation's
verdict as the judge gives it, its Stop; and the check that N questions at once all wait their turn and are answered.

    choices = app.choices_for(corpus)
    for status, answer, trace in answer_steps("Who designed Ashford Bridge?", "single", corpus, choices):
        ...                                  # HTML for the status line, the answer pane and the trace panel
    python app.py --check-concurrency 5      # concurrency_check(): answered, lost, max live at once, memory

Expected from answer_steps, in the status line: "retrieving and answering with single…", then "writing the answer,
N sentences so far…" with the LLM calls, tokens and seconds, then "done in N s: N sentences, N citations checked"
beside the answer with its chips and the trace. Bad input ends at once with "Not asked: ..." and never raises; a
question that does not look English is answered under a notice. A page that is closed stops its question.
"""
import re
import resource
import time
from pathlib import Path

import llm
import patterns
from generate import check_question
from lab import turns
from live import Live
from page import render_answer, render_live, render_pending, render_status, render_trace

MAX_QUESTION_CHARS = 1000   # a question, not a document: longer input is refused before it reaches the queue
POLL_SECONDS = 0.5          # how often the status line refreshes while the model works
ENGLISH_WORDS = set("the of in a an is was were are who what which where when how why did does do to for by and "
                    "on at from with whose that many much name born first same than".split())
DEFAULT_PATTERN = patterns.PATTERNS[patterns.DEFAULT].label   # "smart router"


def not_english(question):
    """True when a question looks non-English: mostly non-ASCII letters, or 4+ words and no common English
    word. '¿Quién diseñó el puente Ashford?' -> True; 'Who designed Ashford Bridge?' -> False"""
    letters = [ch for ch in question if ch.isalpha()]
    words = re.findall(r"[^\W\d_]+", question.lower())
    return bool(letters) and (sum(ch.isascii() for ch in letters) < 0.7 * len(letters)
                              or (len(words) >= 4 and not ENGLISH_WORDS & set(words)))


def check_input(question):
    """-> (question stripped, notice or None); ValueError with the message the page shows."""
    question = check_question(question)  # raises "the question is empty"
    if len(question) > MAX_QUESTION_CHARS:
        raise ValueError(f"the question is {len(question):,} characters long; the limit is {MAX_QUESTION_CHARS:,} "
                         f"(ask a question, do not paste a document)")
    notice = ("The corpus is in English: this question does not look English, so retrieval may miss and the "
              "answer may be poor. It is answered anyway.") if not_english(question) else None
    return question, notice


# ---- one question through the line to the engine ----

_LINE = turns.Turns()      # one answer at a time through the single engine, whoever asks (page or API), in order
_RUNS = []                 # (start, end, RSS MB after, first step shown) of every answer: concurrency_check reads it


def answer_steps(question, pattern, corpus, choices, who=None):
    """The handler: yields (status, answer, trace) HTML as it goes. Bad input ends with a message, never raises.
    `who` (the page's session) is whose Stop stops it. While others are before it in the line, it says its place."""
    keep = None  # outputs left as they are (gr.skip() once gradio is loaded)
    try:
        import gradio as gr
        keep = gr.skip()
        question, notice = check_input(question)
        if pattern not in choices:
            raise ValueError(f"unknown pattern {pattern!r}: choose one of {', '.join(choices)}")
    except ValueError as e:
        yield render_status(f"Not asked: {e}.", "error"), keep, keep
        return
    turn, said = _LINE.join(who if who is not None else object()), None
    try:
        while (ahead := _LINE.wait(turn, POLL_SECONDS)) and not turn.stop.is_set():
            if ahead != said:  # the place, again whenever it changes
                said = ahead
                yield render_status(f"queued, {ahead} ahead: it starts when "
                                    f"{'that one is' if ahead == 1 else 'those are'} done", "queued"), keep, keep
        if turn.stop.is_set():
            yield render_status("Stopped before it started: nothing was asked of the model.", "stopped"), keep, keep
            return
        yield from _answer(question, pattern, corpus, choices, notice, turn, keep)
    finally:
        _LINE.leave(turn)


def _so_far(live, notice, state):
    """The answer pane for what `live` holds now: the sentences written so far, or the whole answer with the
    verdicts reached so far."""
    if live.result is not None:
        return render_answer(live.result, live.verdicts, notice, live=state)
    written = {"answer": live.short or "", "sentences": [{"text": t, "cites": ids} for t, ids in live.written]}
    return render_answer(written, None, notice, live=state) if written["sentences"] or written["answer"] \
        else render_pending()


def _answer(question, pattern, corpus, choices, notice, turn, keep):
    start, before = time.time(), llm.stats()
    live = Live(lambda q: choices[pattern](q, corpus), turn.stop, corpus)
    live.stage = f"retrieving and answering with {pattern}"
    live.start(question)
    yield render_status(f"{live.stage}…"), render_pending(), render_live([], pattern)  # the last answer goes
    first_step, shown, pane, told = None, 0, None, False
    try:
        while live.running():
            live.changed.wait(POLL_SECONDS)   # set as soon as a sentence or a verdict comes
            live.changed.clear()
            now, seen = llm.stats(), list(live.steps)
            first_step = first_step or (time.time() if seen else None)
            if turn.stop.is_set():  # said at once; the engine stops at its next token or prompt batch
                if not told:
                    told = True
                    yield (render_status(f"stopping after {time.time() - start:.0f} s: the model call is being "
                                         f"aborted", "stopped"), _so_far(live, notice, "stopped"), keep)
                continue
            tokens = (now['prompt_tokens'] + now['completion_tokens']
                      - before['prompt_tokens'] - before['completion_tokens'])
            n = len(live.written)
            stage = live.stage if live.result is not None or not n else \
                f"writing the answer, {n} sentence{'s' * (n != 1)} so far"
            status = render_status(f"{stage}… {now['calls'] - before['calls']} LLM calls, "
                                   f"{tokens:,} tokens, {time.time() - start:.0f} s")
            now_pane = _so_far(live, notice, "checking" if live.result is not None else "writing")
            # the steps so far (route, passages retrieved, hops...), redrawn when one more has come
            yield (status, now_pane if now_pane != pane else keep,
                   render_live(seen, pattern) if len(seen) > shown else keep)
            shown, pane = len(seen), now_pane
    except GeneratorExit:   # the page was closed (or the event cancelled): nobody waits for the answer, so stop it
        turn.stop.set()
        raise
    finally:
        live.join()  # a closed page must not let the next question start under a running one
        _RUNS.append((start, time.time(), memory_mb()[0], first_step))
        _LINE.leave(turn)  # the engine is free: the next question starts while this one's last lines are drawn
    yield from _last(live, pattern, notice, start, keep)


def _last(live, pattern, notice, start, keep):
    """The final (status, answer, trace): done, failed, or stopped with what there was."""
    r, info, took = live.result, llm.engine_info(), time.time() - start
    if live.stopped or live.stop.is_set():   # also a Stop that came as the last check returned: said as stopped
        trace = (render_trace(r, pattern, live.judge, info, live.checks) if r
                 else render_live(list(live.steps), pattern))
        yield (render_status(f"stopped after {took:.0f} s: what the model had written is shown, unchecked; "
                             f"nothing of the stopped call was kept", "stopped"), _so_far(live, notice, "stopped"),
               trace)
        return
    if live.error:
        yield render_status(f"Failed: {live.error}", "error"), keep, keep
        return
    checked = (f"citation check failed: {live.judge_error}" if live.judge_error
               else f"{sum(len(s['cites']) for s in r['sentences'])} citations checked")
    if live.dispute_error:
        checked += f", disagreement check failed: {live.dispute_error}"
    yield (render_status(f"done in {took:.0f} s: {len(r['sentences'])} sentences, {checked}", "done"),
           render_answer(r, live.verdicts, notice, live.dispute, live.checked),
           render_trace(r, pattern, live.judge, info, live.checks))


def announce(question):
    """Answered at once, outside the queue: a bad question's message, or its place in the line."""
    try:
        _, notice = check_input(question)
    except ValueError as e:
        return render_status(f"Not asked: {e}.", "error")
    if len(_LINE):
        return render_status(f"The model is busy: yours is queued, {len(_LINE)} ahead.", "queued")
    return render_status("queued" + (f" ({notice})" if notice else ""))


def halt(who):
    """The Stop button: stops this page's question, running or queued; -> the status line."""
    if not _LINE.stop(who):
        return render_status("Nothing of yours is running: nothing to stop.", "idle")
    return render_status("stopping: the model call is being aborted", "stopped")


def gate(question):
    """Between announce() and the answer: a bad question ends the chain here, quietly (announce() said why)."""
    try:
        check_input(question)
    except ValueError as e:  # the status line shows it already: stop the chain quietly
        import gradio as gr
        raise gr.Error(str(e), visible=False, print_exception=False)


def memory_mb():
    """(current RSS, peak RSS) of this process in MB; peak from getrusage (Linux reports KB)."""
    try:
        rss = int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize() / 2**20
    except OSError:
        rss = float("nan")
    return rss, max(rss, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def concurrency_check(url, questions, pattern=DEFAULT_PATTERN, timeout=1800):
    """Fire all questions at once through the HTTP API; -> figures: answered, lost, max overlap of runs, memory."""
    from gradio_client import Client
    client, runs_before = Client(url, verbose=False), len(_RUNS)
    rss_before, _ = memory_mb()
    start = time.time()
    jobs = [client.submit(q, pattern, api_name="/answer") for q in questions]
    finished = []
    for job in jobs:
        status, answer, _ = job.result(timeout=timeout)
        finished.append({"seconds": round(time.time() - start, 1), "answered": "chip" in answer or "uncited" in answer,
                         "status": re.sub(r"<[^>]+>", "", status)})
    runs = _RUNS[runs_before:]
    # live at once, incl. itself
    overlap = max((sum(a < e and s < b for s, e, *_ in runs) for a, b, *_ in runs), default=0)
    rss_after, peak = memory_mb()
    return {"questions": len(questions), "answered": sum(f["answered"] for f in finished),
            "lost": len(questions) - len(finished), "runs_recorded": len(runs), "max_concurrent_runs": overlap,
            "pattern": pattern, "engine": llm.engine_info(), "seconds_total": round(time.time() - start, 1),
            "rss_mb_before": round(rss_before, 1), "rss_mb_after": round(rss_after, 1), "rss_mb_peak": round(peak, 1),
            "per_question": finished,  # seconds: when the client collected each result, in submission order
            "runs": [{"start_s": round(a - start, 1), "end_s": round(b - start, 1), "rss_mb_after": round(m, 1),
                      "first_step_s": round(f - a, 2) if f else None}  # from the run's start to its first step shown
                     for a, b, m, f in runs]}  # server side, in the order the queue ran them
