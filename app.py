"""The demo page: ask a question, pick a pattern, watch how the answer was made and check every citation.

    python app.py                                   # http://127.0.0.1:7860, the default corpus
    python app.py --port 7861 --corpus tests/fixtures/corpus --golden tests/fixtures/golden.json
    python app.py --check-concurrency 5 --json results/app_concurrency_engine.json   # 5 questions at once

Expected: "serving http://127.0.0.1:7860 (engine embedded, model ...)" in ~15 s (gradio, torch and the
embedding model load), then a page with a question box, a pattern picker (single, smart router,
parallel, iterative, FLARE, Self-RAG, CRAG, and GraphRAG when `python graphrag.py --build` has built a
graph for the corpus), Ask and Stop buttons, the answer, and a trace panel (route, sub-questions and hops,
retrievals and their triggers, each check with its seconds, LLM calls, tokens, seconds).

The answer is written on the page as the model writes it: each sentence as soon as it is complete (the model's
JSON read as it streams, lab/partial.py), its [S#] chips grey ("checking…"), and nothing marked as checked.
When it is done, each sentence's chips turn green (supports) or red (does not) as the judge answers for them,
grey-striped for an ID the model invented; hover or click a chip for the cited chunk and the sentence it backs.
Then the answer check, and only then the bold headline. Stop aborts the running model call (the engine stops
at its next token, or while it reads the prompt at the end of its batch of llama.cpp's PROMPT_BATCH tokens),
shows what was written marked "stopped, unchecked", keeps nothing of it, and lets the next question start.
Questions asked while one runs wait in line and say their place ("queued, 1 ahead").

The HTML comes from page.py (pure functions); this file serves it.
Why Gradio rather than Streamlit: a generator handler streams progress with no front-end code; its queue
runs each question's handler, and a line of our own (lab/turns.py) lets one at a time reach the one llama.cpp
engine and tells each waiting question its place, which a generator can redraw (Streamlit reruns a script per
browser session and would need polling); and every event is also an HTTP API (`gradio_client`), which
the concurrency check and the tests use. The app adds no retrieval or prompting of its own: it calls
multihop, flare, self_rag, crag and graphrag, then (live.py) the disagreement, citation and answer checks, and renders
their dicts.

Bad input: an empty question or one over MAX_QUESTION_CHARS gets a message and is never queued; a
question that does not look English is answered anyway, under a notice that the corpus is English;
at most QUEUE_MAX questions wait. A Stop pressed while the judge reads a passage takes effect when that
call returns (a call for logprobs is not streamed): the page says "stopping" at once.
"""
import argparse
import re
import resource
import sys
import time
from pathlib import Path

import assembly
import generate
import llm
import patterns
from generate import check_question
from lab import cache, turns
from live import Live
from layers import links
from page import CSS, render_answer, render_engine, render_live, render_pending, render_status, render_trace
from retrieve import CORPUS_DIR, DEFAULT_CHUNKER, GOLDEN, load_golden
from router import load_router
from vector_index import CorpusError, build_index

MAX_QUESTION_CHARS = 1000   # a question, not a document: longer input is refused before it reaches the queue
QUEUE_MAX = 16              # questions waiting at most; more are refused (bounds memory under load)
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


def warm(corpus, chunker=DEFAULT_CHUNKER, model=True):
    """Load what the first question would otherwise wait for (the embedder, the index, BM25, the chain's links,
    the learned router), so its first steps show within a second or two; with `model`, the model too, with the
    answer's system prompt read into its prompt cache (one call of one token), so the first answer's first
    sentence comes as soon as any other's."""
    links.retrieve_chunks("warm up", 1, corpus=corpus, chunker=chunker)
    load_router()
    if model:
        llm.complete("Question: warm up", system=generate.prompt("", [])[0], max_tokens=1)


def choices_for(corpus):
    """The pattern picker's choices for this corpus, {label: function(question, corpus)} from the registry
    (patterns.on_page: GraphRAG only where a graph has been built)."""
    return {label: (lambda q, c, p=p: assembly.answerer(p, c)[1](q)) for label, p in patterns.on_page(corpus).items()}


# ---- the server ----

_LINE = turns.Turns()      # one answer at a time through the single engine, whoever asks (page or API), in order
_RUNS = []                 # (start, end, RSS MB after, first step shown) of every answer: the checks read them


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
    try:
        check_input(question)
    except ValueError as e:  # the status line shows it already: stop the chain quietly
        import gradio as gr
        raise gr.Error(str(e), visible=False, print_exception=False)


def build(corpus=CORPUS_DIR, golden=GOLDEN):
    """The gradio Blocks app for one corpus (engine resolved now, so the page says which one answers)."""
    import os
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no calls home from an offline machine
    import gradio as gr
    choices, info = choices_for(corpus), llm.engine_info()
    try:
        items = load_golden(golden)
        examples = [[g["question"]] for g in items if g["type"] == "multi"][:3] + \
                   [[g["question"]] for g in items if g["type"] == "single"][:1]
    except (OSError, ValueError):
        examples = []
    with gr.Blocks(title="RAG lab: how an answer was made") as demo:
        gr.Markdown("## How was this answer made?\nEach `[S#]` chip is one citation, coloured by the judge's "
                    "verdict (green supports, red does not, striped: an ID the model invented). Hover or click a chip.")
        gr.HTML(render_engine(info, corpus), elem_id="engine")
        with gr.Row():
            question = gr.Textbox(label="Question", lines=2, scale=4, elem_id="question")
            pattern = gr.Dropdown(list(choices), value=DEFAULT_PATTERN, label="Pattern", scale=1, elem_id="pattern")
        with gr.Row():
            ask = gr.Button("Ask", variant="primary", elem_id="ask", scale=4)
            stop = gr.Button("Stop", variant="stop", elem_id="stop", scale=1)
        if examples:
            gr.Examples(examples, [question], label="golden questions")
        status = gr.HTML(render_status("ready", "idle"), elem_id="status")
        with gr.Row():
            answer = gr.HTML(elem_id="answer")
            trace = gr.HTML(elem_id="trace")
        def run(q, p, request: gr.Request):
            yield from answer_steps(q, p, corpus, choices, request.session_hash)

        def stop_mine(request: gr.Request):
            return halt(request.session_hash)
        stop.click(stop_mine, None, [status], queue=False, show_progress="hidden")
        for trigger in (ask.click, question.submit):
            trigger(announce, [question], [status], queue=False, show_progress="hidden") \
                .then(gate, [question], None, queue=False, show_progress="hidden") \
                .success(run, [question, pattern], [status, answer, trace], concurrency_limit=QUEUE_MAX,
                         concurrency_id="engine", show_progress="hidden",
                         api_name="answer" if trigger == ask.click else False)
    demo.queue(max_size=QUEUE_MAX)   # every question is let in: _LINE lets one answer at a time and says the place
    return demo


def launch(demo, host="127.0.0.1", port=None, block=True):
    """Serve; -> the local URL (block=False returns at once, for tests and the concurrency check)."""
    _, url, _ = demo.launch(server_name=host, server_port=port, css=CSS, prevent_thread_lock=not block, quiet=True)
    return url


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


def main():
    ap = argparse.ArgumentParser(description="Serve the demo page: ask, pick a pattern, see chips, verdicts and the "
                                 "trace.")
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on (keep 127.0.0.1 unless you mean to "
                    "share)")
    ap.add_argument("--port", type=int, default=7860, help="port to listen on (0: the first free one from 7860 up)")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR,
                    help="folder of documents, .txt .md .pdf .docx .html (its index is built "
                    "or updated at start)")
    ap.add_argument("--golden", type=Path, default=GOLDEN, help="golden file whose questions are offered as examples")
    ap.add_argument("--check-concurrency", type=int, default=0, metavar="N",
                    help="instead of serving: fire N golden multi questions at once at this server, print the figures")
    ap.add_argument("--pattern", default="single", choices=[p.label for p in patterns.PATTERNS.values() if p.label],
                    help="pattern for --check-concurrency")
    ap.add_argument("--json", type=Path, help="with --check-concurrency: write the figures here")
    args = ap.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"app: --corpus {args.corpus} is not a folder")
    if not 0 <= args.port < 65536 or args.check_concurrency < 0:
        sys.exit("app: --port must be 0-65535 and --check-concurrency at least 0")
    try:
        build_index(args.corpus, DEFAULT_CHUNKER, progress=True)  # incremental: ~1 s when nothing changed
        warm(args.corpus)
        demo = build(args.corpus, args.golden)
        info = llm.engine_info()
        url = launch(demo, args.host, args.port or None, block=False)
    except (CorpusError, llm.LLMError, OSError) as e:
        sys.exit(f"app: {e}")
    print(f"serving {url} (engine {info['engine']}, model {info['model']}, corpus {args.corpus})", flush=True)
    if not args.check_concurrency:
        demo.block_thread()
        return
    questions = [g["question"] for g in load_golden(args.golden) if g["type"] == "multi"][:args.check_concurrency]
    figures = concurrency_check(url, questions, args.pattern)
    print(f"{'questions':>10}{'answered':>10}{'lost':>6}{'max live':>10}{'total s':>9}{'RSS MB':>8}{'peak MB':>9}")
    print(f"{figures['questions']:>10}{figures['answered']:>10}{figures['lost']:>6}{figures['max_concurrent_runs']:>10}"
          f"{figures['seconds_total']:>9.1f}{figures['rss_mb_after']:>8.0f}{figures['rss_mb_peak']:>9.0f}")
    if args.json:
        cache.write_json(args.json, figures)
    demo.close()


if __name__ == "__main__":
    main()
