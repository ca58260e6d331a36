"""The demo page: ask a question, pick a pattern, watch how the answer was made and check every citation.

    python app.py                                   # http://127.0.0.1:7860, the default corpus
    python app.py --port 7861 --corpus tests/fixtures/corpus --golden tests/fixtures/golden.json
    python app.py --check-concurrency 5 --json results/app_concurrency_engine.json   # 5 questions at once

Expected: "serving http://127.0.0.1:7860 (engine embedded, model ...)" in ~15 s (gradio, torch and the
embedding model load), then a page with a question box, a pattern picker (single, smart router,
parallel, iterative, FLARE, Self-RAG, CRAG, and GraphRAG when `python graphrag.py --build` has built a
graph for the corpus), the answer with every [S#] as a chip coloured by the judge's verdict (green
supports, red does not, grey-striped an ID the model invented; hover or click for the cited chunk and
the sentence it backs), uncited sentences flagged, and a trace panel (route, sub-questions and hops,
retrievals and their triggers, LLM calls, tokens, seconds). The status line counts LLM calls and tokens
while the model works, then says when citations are being checked. Measured on 2 shared cores (embedded
Qwen2.5-Coder-1.5B): `single` 26-83 s per golden question, judge included; `smart router` on a two-hop
fixture question 108 s (4 LLM calls, then 2 judge calls). `--check-concurrency 5`: all 5 answered one
after another, none lost, 222 s, peak RSS 2.9 GB (results/app_concurrency_engine.json).

The HTML comes from page.py (pure functions); this file serves it.
Why Gradio rather than Streamlit: a generator handler streams progress with no front-end code; its
request queue with concurrency_limit=1 makes concurrent questions wait their turn for the one
llama.cpp engine instead of fighting over it (Streamlit reruns a script per browser session and
would need our own lock and polling); and every event is also an HTTP API (`gradio_client`), which
the concurrency check and the tests use. The app adds no retrieval or prompting of its own: it calls
multihop, flare, self_rag, crag, graphrag and citations.verify, and renders their dicts.

Bad input: an empty question or one over MAX_QUESTION_CHARS gets a message and is never queued; a
question that does not look English is answered anyway, under a notice that the corpus is English;
a question sent while the model is busy is told so and queued (at most QUEUE_MAX wait). Not handled:
cancelling a running answer (the model call finishes; the next question then starts).
"""
import argparse
import re
import resource
import sys
import threading
import time
from pathlib import Path

import answer_check
import citations
import disputes
import llm
import patterns
from generate import check_question
from lab import cache, steps
from page import CSS, render_answer, render_engine, render_live, render_pending, render_status, render_trace
from retrieve import CORPUS_DIR, DEFAULT_CHUNKER, GOLDEN, load_golden, retrieve_chunks
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


def warm(corpus, chunker=DEFAULT_CHUNKER):
    """Load what the first question would otherwise wait for (the embedder, the index, BM25, the chain's links,
    the learned router), so its first steps show within a second or two."""
    retrieve_chunks("warm up", 1, corpus=corpus, chunker=chunker, method="chain")
    load_router()


def choices_for(corpus):
    """The pattern picker's choices for this corpus, {label: function(question, corpus)} from the registry
    (patterns.on_page: GraphRAG only where a graph has been built)."""
    return {label: (lambda q, c, p=p: p.answer(q, corpus=c)) for label, p in patterns.on_page(corpus).items()}


# ---- the server ----

_BUSY = threading.Lock()   # one answer at a time through the single engine, whoever asks (page or API)
_RUNS = []                 # (start, end, RSS MB after, first step shown) of every answer: the checks read them
_NOW = {}                  # the question being answered and since when: the busy notice says so


def answer_steps(question, pattern, corpus, choices):
    """The handler: yields (status, answer, trace) HTML as it goes. Bad input ends with a message, never raises."""
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
    with _BUSY:
        start, before, box = time.time(), llm.stats(), {"stage": f"retrieving and answering with {pattern}"}
        _NOW.update(question=question, since=start)

        def work():  # any failure becomes a message on the page; the server keeps serving
            try:
                with steps.watch() as box["steps"]:  # each step shows on the page as soon as it is appended
                    box["result"] = choices[pattern](question, corpus)
            except Exception as e:
                box["error"] = str(e) if isinstance(e, (ValueError, CorpusError, llm.LLMError)) else repr(e)
                return
            # the disagreement check first: a side of it that reads like an instruction is quarantined by verify()
            box["stage"] = "checking whether the sources disagree (one call per passage about the question)"
            with llm.counting() as cost:
                try:
                    box["dispute"] = disputes.check(box["result"])
                except Exception as e:  # the answer shows without the chip; the status line says why
                    box["dispute_error"] = str(e)
                box["stage"] = "checking citations (one judge call per citation)"
                try:
                    box["verdicts"] = citations.verify(box["result"], box.get("dispute"))
                    box["stage"] = "checking the answer itself (the cited passages asked the question)"
                    box["checked"] = answer_check.check(box["result"], box["verdicts"], box.get("dispute"))
                except Exception as e:  # the answer still shows, its chips marked unchecked
                    box["judge_error"] = str(e)
            box["judge"] = cost
        worker = threading.Thread(target=work, daemon=True)
        worker.start()
        yield render_status(f"{box['stage']}…"), render_pending(), render_live([], pattern)  # the last answer goes
        first_step, shown = None, 0
        try:
            while worker.is_alive():
                worker.join(POLL_SECONDS)
                now, seen = llm.stats(), list(box.get("steps") or [])
                first_step = first_step or (time.time() if seen else None)
                tokens = (now['prompt_tokens'] + now['completion_tokens']
                          - before['prompt_tokens'] - before['completion_tokens'])
                status = render_status(f"{box['stage']}… {now['calls'] - before['calls']} LLM calls, "
                                       f"{tokens:,} tokens, {time.time() - start:.0f} s")
                # the steps so far (route, passages retrieved, hops...), redrawn when one more has come
                yield status, keep, (render_live(seen, pattern) if len(seen) > shown else keep)
                shown = len(seen)
        finally:
            worker.join()  # a closed page must not let the next question start under a running one
            _RUNS.append((start, time.time(), memory_mb()[0], first_step))
            _NOW.clear()
    if "error" in box:
        yield render_status(f"Failed: {box['error']}", "error"), keep, keep
        return
    r, info = box["result"], llm.engine_info()
    verdicts = box.get("verdicts")
    checked = (f"citation check failed: {box['judge_error']}" if "judge_error" in box
               else f"{sum(len(s['cites']) for s in r['sentences'])} citations checked")
    if "dispute_error" in box:
        checked += f", disagreement check failed: {box['dispute_error']}"
    yield (render_status(f"done in {time.time() - start:.0f} s: {len(r['sentences'])} sentences, {checked}", "done"),
           render_answer(r, verdicts, notice, box.get("dispute"), box.get("checked")),
           render_trace(r, pattern, box.get("judge"), info))


def announce(question):
    """Answered at once, outside the queue: a bad question's message, or that the model is busy."""
    try:
        _, notice = check_input(question)
    except ValueError as e:
        return render_status(f"Not asked: {e}.", "error")
    if _NOW:
        return render_status(f"The model is busy answering another question (for {time.time() - _NOW['since']:.0f} s): "
                             f"yours is queued and starts when it is done.", "queued")
    return render_status("queued" + (f" ({notice})" if notice else ""))


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
        ask = gr.Button("Ask", variant="primary", elem_id="ask")
        if examples:
            gr.Examples(examples, [question], label="golden questions")
        status = gr.HTML(render_status("ready", "idle"), elem_id="status")
        with gr.Row():
            answer = gr.HTML(elem_id="answer")
            trace = gr.HTML(elem_id="trace")
        run = lambda q, p: (yield from answer_steps(q, p, corpus, choices))
        for trigger in (ask.click, question.submit):
            trigger(announce, [question], [status], queue=False, show_progress="hidden") \
                .then(gate, [question], None, queue=False, show_progress="hidden") \
                .success(run, [question, pattern], [status, answer, trace], concurrency_limit=1,
                         concurrency_id="engine", show_progress="minimal",
                         api_name="answer" if trigger == ask.click else False)
    demo.queue(max_size=QUEUE_MAX, default_concurrency_limit=1)
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
