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

The HTML comes from page.py (pure functions) and what is done with a question (checked, queued, answered,
stopped) from handlers.py; this file lays the page out and serves it.
Why Gradio rather than Streamlit: a generator handler streams progress with no front-end code; its queue
runs each question's handler, and a line of our own (lab/turns.py) lets one at a time reach the one llama.cpp
engine and tells each waiting question its place, which a generator can redraw (Streamlit reruns a script per
browser session and would need polling); and every event is also an HTTP API (`gradio_client`), which
the concurrency check and the tests use. The app adds no retrieval or prompting of its own: it calls
multihop, flare, self_rag, crag and graphrag, then (live.py) the disagreement, citation and answer checks, and renders
their dicts.

Bad input: an empty question or one over MAX_QUESTION_CHARS (handlers.py) gets a message and is never queued; a
question that does not look English is answered anyway, under a notice that the corpus is English;
at most QUEUE_MAX questions wait. A Stop pressed while the judge reads a passage takes effect when that
call returns (a call for logprobs is not streamed): the page says "stopping" at once.
"""
import argparse
import sys
from pathlib import Path

import assembly
import generate
import llm
import patterns
from handlers import DEFAULT_PATTERN, announce, answer_steps, concurrency_check, gate, halt
from handlers import _LINE, check_input  # noqa: F401 (re-exported: the tests read app._LINE and app.check_input)
from lab import cache
from layers import links
from page import CSS, render_engine, render_status
from retrieve import CORPUS_DIR, DEFAULT_CHUNKER, GOLDEN, load_golden
from router import load_router
from vector_index import CorpusError, build_index

QUEUE_MAX = 16              # questions waiting at most; more are refused (bounds memory under load)


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


def golden_for(corpus, golden=None):
    """Whose questions the page offers as examples: `golden` when given; golden.json for the default corpus; for
    another folder its own golden.json (in it, or beside it, as `make app CORPUS=DIR` finds it), else none: the
    Wikipedia questions would mean nothing on your folder.
    golden_for(Path('parity/sources')) -> Path('parity/golden.json'); golden_for(Path('my-pdfs')) -> None"""
    if golden is not None:
        return Path(golden)
    if Path(corpus).resolve() == Path(CORPUS_DIR).resolve():
        return Path(GOLDEN)
    return next((p for p in (Path(corpus) / "golden.json", Path(corpus).parent / "golden.json") if p.is_file()), None)


def build(corpus=CORPUS_DIR, golden=None):
    """The gradio Blocks app for one corpus (engine resolved now, so the page says which one answers). Its example
    questions come from golden_for(corpus, golden)."""
    import os
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no calls home from an offline machine
    import gradio as gr
    choices, info = choices_for(corpus), llm.engine_info()
    examples, golden = [], golden_for(corpus, golden)
    try:
        items = load_golden(golden) if golden else []
        multi = [[g["question"]] for g in items if g["type"] == "multi"][:3]
        examples = multi + [[g["question"]] for g in items if g["type"] == "single"][:4 - len(multi)]
    except (OSError, ValueError, CorpusError):
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


def main():
    ap = argparse.ArgumentParser(description="Serve the demo page: ask, pick a pattern, see chips, verdicts and the "
                                 "trace.")
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on (keep 127.0.0.1 unless you mean to "
                    "share)")
    ap.add_argument("--port", type=int, default=7860, help="port to listen on (0: the first free one from 7860 up)")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR,
                    help="folder of documents, .txt .md .pdf .docx .html (its index is built "
                    "or updated at start)")
    ap.add_argument("--golden", type=Path, help="golden file whose questions are offered as examples (default: "
                    "golden.json for corpus/, else the folder's own golden.json in it or beside it, else none)")
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
    if not (golden := golden_for(args.corpus, args.golden)):
        sys.exit(f"app: --check-concurrency needs questions: no golden.json in or beside {args.corpus}; pass --golden")
    questions = [g["question"] for g in load_golden(golden) if g["type"] == "multi"][:args.check_concurrency]
    figures = concurrency_check(url, questions, args.pattern)
    print(f"{'questions':>10}{'answered':>10}{'lost':>6}{'max live':>10}{'total s':>9}{'RSS MB':>8}{'peak MB':>9}")
    print(f"{figures['questions']:>10}{figures['answered']:>10}{figures['lost']:>6}{figures['max_concurrent_runs']:>10}"
          f"{figures['seconds_total']:>9.1f}{figures['rss_mb_after']:>8.0f}{figures['rss_mb_peak']:>9.0f}")
    if args.json:
        cache.write_json(args.json, figures)
    demo.close()


if __name__ == "__main__":
    main()
