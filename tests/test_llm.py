"""Tests for llm.py and lab/engine.py: the scripted model, the GGUF checks, the Ollama path over HTTP, the real engine.

    pytest tests/test_llm.py -m "not engine"   # offline logic, ~2 s
    pytest tests/test_llm.py                   # plus the real 1.5B engine, ~30-60 s on 2 cores
"""
import hashlib
import json
import socket
import subprocess
import sys
import threading
from pathlib import Path

import ollama
import pytest

import llm
from lab import engine

ROOT = Path(__file__).parent.parent
ANSWER_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    """Each test picks its engine explicitly; a developer's own settings must not leak in."""
    for name in ("RAG_LLM", "RAG_MODEL", "RAG_GGUF", "OLLAMA_HOST"):
        monkeypatch.delenv(name, raising=False)


def dead_url():
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


# ---- scripted model: control flow and counters, offline ----

def test_scripted_replies_counters_and_engine_info():
    scripted = llm.ScriptedModel(["Paris", '{"answer": "Rome"}'])
    with llm.use_model(scripted), llm.counting() as c:
        assert llm.engine_info() == {"engine": "scripted", "model": "scripted", "host": "in-process", "gguf": None}
        response = llm.chat([{"role": "user", "content": "Capital of France?"}])
        assert isinstance(response, ollama.ChatResponse)  # the real client's type, through the transport
        assert response.message.content == "Paris"
        assert llm.complete_json("Capital of Italy?", ANSWER_SCHEMA, system="Be brief.") == {"answer": "Rome"}
    assert c["calls"] == 2 and c["prompt_tokens"] == 3 + 5 and c["completion_tokens"] == 1 + 2 and c["seconds"] >= 0
    assert scripted.calls[1][0][0] == {"role": "system", "content": "Be brief."}
    assert scripted.calls[0][1] is None and scripted.calls[1][1] == ANSWER_SCHEMA


def test_scripted_function_sees_messages_and_schema():
    def reply(messages, schema):
        return json.dumps({"answer": messages[-1]["content"].upper()}) if schema else "plain"

    with llm.use_model(llm.ScriptedModel(reply)):
        assert llm.complete("hi") == "plain"
        assert llm.complete_json("shout", ANSWER_SCHEMA) == {"answer": "SHOUT"}


def test_stats_and_reset():
    llm.reset_stats()
    with llm.use_model(llm.ScriptedModel(["a b c"])):
        llm.complete("one two")
    assert llm.stats()["calls"] == 1 and llm.stats()["completion_tokens"] == 3
    llm.reset_stats()
    assert llm.stats() == {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0}


def test_complete_json_unparsable_reply_is_one_line_error():
    truncated = '{"answer": "The Eiffel Tower is in Par'
    with llm.use_model(llm.ScriptedModel([truncated])), pytest.raises(llm.LLMError) as e:
        llm.complete_json("Where?", ANSWER_SCHEMA)
    assert truncated[:30] in str(e.value) and "\n" not in str(e.value)


def test_complete_json_half_an_emoji_comes_back_writable_as_utf8():
    reply = '{"answer": "party \\ud83c at \\ud83c\\udf89"}'   # the first half of an emoji alone, then a whole one
    with llm.use_model(llm.ScriptedModel([reply])):
        out = llm.complete_json("Where?", ANSWER_SCHEMA)
    assert out == {"answer": "party ? at \U0001f389"}
    json.dumps(out, ensure_ascii=False).encode("utf-8")   # a cache line: raised UnicodeEncodeError before


def test_scripted_logprobs_and_running_out():
    with llm.use_model(llm.ScriptedModel([[("Par", -0.1), ("is", -2.5)]])):
        response = llm.chat([{"role": "user", "content": "Capital?"}], logprobs=True)
        assert response.message.content == "Paris"
        assert llm.token_logprobs(response) == [("Par", -0.1), ("is", -2.5)]
        with pytest.raises(llm.LLMError, match="ran out of replies"):
            llm.complete("again")


def test_engine_info_is_scripted_only_inside_the_block(monkeypatch):
    monkeypatch.setenv("RAG_LLM", "embedded")
    with llm.use_model(llm.ScriptedModel([])):
        assert llm.engine_info()["engine"] == "scripted"
    assert llm.engine_info()["engine"] == "embedded"  # resolving the route loads nothing


def test_import_has_no_side_effects():
    code = "import sys, llm; assert 'xllamacpp' not in sys.modules; assert not llm._ENGINES"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "" and out.stderr == ""


# ---- the bundled GGUF: assembly and the sha256 refusal ----

def test_wrong_sha256_is_refused_before_loading(tmp_path, monkeypatch):
    fake = tmp_path / engine.GGUF_FILE
    fake.write_bytes(b"GGUF not really a model")
    loads = []

    def server(params):  # stands in for llama.cpp: records that it was asked to load something
        loads.append(params.model.path)
        raise RuntimeError("not a model")

    import xllamacpp
    monkeypatch.setattr(xllamacpp, "Server", server)
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("RAG_LLM", "embedded")
    with pytest.raises(llm.LLMError) as e:
        llm.complete("hi", max_tokens=4)
    message = str(e.value)
    assert str(fake) in message and engine.GGUF_SHA256 in message
    assert hashlib.sha256(fake.read_bytes()).hexdigest() in message and "\n" not in message
    assert loads == []  # llama.cpp never saw the file


def test_assembly_concatenates_in_order_and_leaves_no_temp_file(tmp_path, monkeypatch):
    parts = [tmp_path / f"part{i}.bin" for i in (1, 2, 3)]
    for i, part in enumerate(parts):
        part.write_bytes(bytes([i]) * 1000)
    whole = b"".join(p.read_bytes() for p in parts)
    monkeypatch.setattr(engine, "_part_paths", lambda: parts)
    monkeypatch.setattr(engine, "GGUF_SHA256", hashlib.sha256(whole).hexdigest())
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path / "cache"))
    path = engine.ensure_gguf()
    assert path.read_bytes() == whole
    assert sorted(p.name for p in path.parent.iterdir()) == [engine.GGUF_FILE]


def test_failed_assembly_leaves_nothing_under_the_final_name(tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "_part_paths", lambda: [tmp_path / "missing.bin"])
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(FileNotFoundError):
        engine.ensure_gguf()
    assert list((tmp_path / "cache").iterdir()) == []


def test_missing_rag_gguf_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_LLM", "embedded")
    monkeypatch.setenv("RAG_GGUF", str(tmp_path / "nope.gguf"))
    assert llm.engine_info()["gguf"] == str(tmp_path / "nope.gguf")
    with pytest.raises(llm.LLMError, match="nope.gguf is not a file"):
        llm.complete("hi")


# ---- the Ollama path, over real HTTP on loopback, with the real client ----

def test_forced_ollama_over_http_with_scripted_model_behind(monkeypatch):
    url, stop = llm.serve(model=llm.ScriptedModel(lambda messages, schema: "hello over http"))
    try:
        monkeypatch.setenv("OLLAMA_HOST", url)
        monkeypatch.setenv("RAG_LLM", "ollama")
        monkeypatch.setenv("RAG_MODEL", "scripted")
        assert llm.engine_info() == {"engine": "ollama", "model": "scripted", "host": url, "gguf": None}
        with llm.counting() as c:
            assert llm.complete("hi") == "hello over http"
        assert c["calls"] == 1
        assert ollama.Client(url).generate(model="scripted", prompt="x").response == "hello over http"
        monkeypatch.setenv("RAG_MODEL", "llama3.1:8b")  # a model this server does not have
        with pytest.raises(llm.LLMError, match=r"ollama pull llama3.1:8b.*unset RAG_LLM"):
            llm.engine_info()
        with pytest.raises(llm.LLMError, match=r"ollama pull minicheck.*unset RAG_JUDGE_MODEL"):
            llm.engine_info("minicheck")  # a per-call model (the judge's) names its own setting
    finally:
        stop()


def test_forced_ollama_without_server_is_one_line_error(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", dead_url())
    monkeypatch.setenv("RAG_LLM", "ollama")
    with pytest.raises(llm.LLMError) as e:
        llm.complete("hi")
    assert "ollama serve" in str(e.value) and "ollama pull" in str(e.value) and "\n" not in str(e.value)


def test_auto_falls_back_to_embedded_without_server(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", dead_url())
    assert llm.engine_info()["engine"] == "embedded"


def test_unknown_rag_llm_is_refused(monkeypatch):
    monkeypatch.setenv("RAG_LLM", "gpt5")
    with pytest.raises(llm.LLMError, match="auto, ollama or embedded"):
        llm.engine_info()


# ---- the real embedded engine (Qwen2.5-Coder-1.5B), kept short ----

@pytest.fixture
def embedded(monkeypatch):
    monkeypatch.setenv("RAG_LLM", "embedded")
    monkeypatch.delenv("RAG_CACHE_DIR", raising=False)
    assert llm.engine_info()["engine"] == "embedded"


@pytest.mark.engine
def test_engine_short_answer_is_deterministic(embedded):
    question = "What is the capital of France? Answer with one word."
    first = llm.complete(question, max_tokens=16)
    assert "Paris" in first
    assert llm.complete(question, max_tokens=16) == first


@pytest.mark.engine
def test_engine_json_schema_reply_parses(embedded):
    reply = llm.complete_json("What is the capital of Japan? Reply in JSON.", ANSWER_SCHEMA, max_tokens=32)
    assert "Tokyo" in reply["answer"]


@pytest.mark.engine
def test_engine_logprobs(embedded):
    response = llm.chat([{"role": "user", "content": "Name a primary color."}], logprobs=True, top_logprobs=2,
                        max_tokens=8)
    pairs = llm.token_logprobs(response)
    assert pairs and all(lp <= 0 for _, lp in pairs)
    assert "".join(token for token, _ in pairs) == response.message.content
    assert len(response.logprobs[0].top_logprobs) == 2
    plain = llm.chat([{"role": "user", "content": "Name a primary color."}], logprobs=True, max_tokens=8)
    assert [t for t, _ in llm.token_logprobs(plain)] == [t for t, _ in pairs]  # logprobs=True alone is enough


@pytest.mark.engine
def test_engine_served_over_http_to_the_real_client(embedded, monkeypatch):
    url, stop = llm.serve()
    try:
        monkeypatch.setenv("OLLAMA_HOST", url)
        monkeypatch.setenv("RAG_LLM", "ollama")
        monkeypatch.setenv("RAG_MODEL", engine.EMBEDDED_NAME)
        assert llm.engine_info()["engine"] == "ollama"
        response = llm.chat([{"role": "user", "content": "What is 2+2? Digits only."}], max_tokens=8)
        assert "4" in response.message.content and response.eval_count > 0 and response.done
    finally:
        stop()


def test_trace_writes_one_line_per_call_with_new_and_cached_tokens(tmp_path):
    trace = tmp_path / "trace.jsonl"
    request = {"messages": [{"role": "system", "content": "You check answers and claims against a source."}]}
    out = {"timings": {"prompt_n": 28, "cache_n": 606, "predicted_n": 8, "prompt_ms": 850.4, "predicted_ms": 355.2}}
    engine.trace(str(trace), request, out, 1.2104)
    engine.trace(str(trace), request, {}, 0.5)
    lines = [json.loads(x) for x in trace.read_text().splitlines()]
    assert lines[0] == {"system": "You check answers and claims against", "prompt_new": 28, "cached": 606,
                        "generated": 8, "prompt_ms": 850, "gen_ms": 355, "seconds": 1.21}
    assert lines[1]["prompt_new"] is None and len(lines) == 2


@pytest.mark.engine
def test_engine_resumes_from_an_earlier_prompt_not_only_the_last(embedded, monkeypatch, tmp_path):
    # the judge's pattern: one long system prompt, then a source. Source A, then source B, then A again with another
    # task: the third request must take A's tokens from llama.cpp's RAM cache, not read them again. llama.cpp only
    # looks there when the slot would lose most of its prompt, which a shared system prompt never lets happen
    # unless slot_prompt_similarity sends every request through the cache (engine_params).
    trace = tmp_path / "trace.jsonl"
    monkeypatch.setenv("RAG_TRACE", str(trace))
    system = "You check claims against a source. Reply YES or NO. " + " ".join(
        f"Rule {i}: the source must name the same person, place and number as the claim." for i in range(12))
    source_a = "Source: " + " ".join(f"Ashford Bridge stands in Corran and has {i} arches." for i in range(12))
    source_b = "Source: " + " ".join(f"Medra is an island with {i} lighthouses." for i in range(12))
    for user in (f"{source_a}\nClaim: Ashford Bridge is in Corran.", f"{source_b}\nClaim: Medra is an island.",
                 f"{source_a}\nClaim: Ashford Bridge has arches."):
        llm.chat([{"role": "system", "content": system}, {"role": "user", "content": user}], max_tokens=2)
    first, second, third = [json.loads(x) for x in trace.read_text().splitlines()[-3:]]
    assert second["cached"] >= first["cached"]                      # the system prompt, at least
    assert third["cached"] > second["cached"] + 100                 # and source A, from the first request
    assert third["prompt_new"] < first["prompt_new"] - 100


def test_a_streamed_reply_arrives_piece_by_piece_and_adds_up_to_the_same_response():
    reply = "The answer is Paris, of course."
    with llm.use_model(llm.ScriptedModel([reply, reply])):
        whole = llm.chat([{"role": "user", "content": "x"}])
        seen = []
        streamed = llm.chat([{"role": "user", "content": "x"}], on_text=seen.append)
    assert streamed.message.content == whole.message.content == reply
    assert seen[0] == "The " and seen[-1] == reply and len(seen) == 6
    assert (streamed.eval_count, streamed.prompt_eval_count, streamed.done) == (whole.eval_count,
                                                                                  whole.prompt_eval_count, True)


def test_a_cancelled_stream_stops_the_model_and_the_next_call_runs():
    cancel, seen = threading.Event(), []

    def on_text(text):
        seen.append(text)
        if len(seen) == 3:
            cancel.set()
    model = llm.ScriptedModel(["one two three four five six seven eight nine ten", "next"], delay=0.01)
    with llm.use_model(model):
        with llm.counting() as cost, pytest.raises(llm.Stopped):
            llm.chat([{"role": "user", "content": "x"}], on_text=on_text, cancel=cancel)
        assert seen[-1] == "one two three " and cost["calls"] == 0   # nothing of it is counted or kept
        assert llm.complete("y") == "next"


def test_the_served_engine_streams_to_a_real_ollama_client():
    url, stop = llm.serve(model=llm.ScriptedModel(lambda messages, schema: "hello over a stream"))
    try:
        parts = list(ollama.Client(url).chat(model="scripted", messages=[{"role": "user", "content": "x"}],
                                             stream=True))
        assert [p.message.content for p in parts] == ["hello ", "over ", "a ", "stream", ""] and parts[-1].done
    finally:
        stop()


@pytest.mark.engine
def test_engine_streams_the_same_reply_and_stops_when_cancelled(embedded):
    messages = [{"role": "user", "content": "Name three rivers of Europe, one sentence."}]
    llm.chat(messages, max_tokens=40)   # from here on, each call resumes from the same cached prompt
    whole, seen = llm.chat(messages, max_tokens=40), []
    assert llm.chat(messages, max_tokens=40, on_text=seen.append).message.content == whole.message.content
    assert len(seen) > 3
    cancel = threading.Event()
    with pytest.raises(llm.Stopped):
        llm.chat([{"role": "user", "content": "Count from 1 to 300."}], max_tokens=600, cancel=cancel,
                 on_text=lambda text: cancel.set() if len(text) > 20 else None)
    assert llm.chat(messages, max_tokens=40).message.content == whole.message.content   # the engine is free


@pytest.mark.engine
def test_engine_stops_while_it_reads_a_long_prompt(embedded):
    """A cancel set 0.3 s into a ~2,500-token prompt (~25 s of reading here) stops llama.cpp before it writes a token,
    at the end of its first prompt batch: PROMPT_BATCH tokens, not the whole prompt (llama.cpp's default batch)."""
    words = " ".join(f"w{(i * 7919) % 1000}" for i in range(650))   # a prompt no earlier test has cached
    body = {"model": llm._embedded().name, "stream": True, "options": {"num_predict": 40},
            "messages": [{"role": "user", "content": f"{threading.get_ident()} Repeat these: {words}"}]}
    cancel = threading.Event()
    token = engine.STOP.set(cancel)
    try:
        threading.Timer(0.3, cancel.set).start()
        chunks = list(engine.stream_api(llm._embedded(), "/api/chat", body))
    finally:
        engine.STOP.reset(token)
    assert chunks[-1]["done"] and not [c for c in chunks[:-1] if c["message"]["content"]]
    # where it stops: llama.cpp reports each batch read; the first ends well before the prompt does
    progress = []
    llm._embedded().openai_chat_stream(
        {**engine._chat_request("/api/chat", {**body, "messages": [{"role": "user", "content": f"again {words}"}]}),
         "return_progress": True},
        lambda chunk: bool((p := chunk.get("prompt_progress")) and p["processed"] > p["cache"]
                           and not progress.append(p)))   # True: stop at the first batch read
    assert progress and 0 < progress[0]["processed"] - progress[0]["cache"] <= llm.PROMPT_BATCH < progress[0]["total"]
    assert llm.chat([{"role": "user", "content": "Say OK."}], max_tokens=4).message.content   # the engine is free


def test_ctrl_c_in_a_cli_streams_every_call_and_ends_with_one_line(capsys):
    import signal
    model = llm.ScriptedModel(["one two three four five six seven eight nine ten"] * 2, delay=0.2)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)   # a pytest-xdist worker ignores SIGINT
    with llm.use_model(model), pytest.raises(SystemExit) as stopped:
        with llm.ctrl_c("generate"):
            assert llm._STREAM_ALL
            threading.Timer(0.5, signal.raise_signal, [signal.SIGINT]).start()   # Ctrl-C, mid-reply
            llm.complete("x")
    signal.signal(signal.SIGINT, previous)
    assert stopped.value.code == 130 and not llm._STREAM_ALL
    assert capsys.readouterr().err.strip() == ("generate: stopped (Ctrl-C): the model call was aborted, nothing of "
                                              "it was kept")


def test_a_call_for_logprobs_is_not_streamed_even_in_a_cli():
    with llm.use_model(llm.ScriptedModel([[("Yes", -0.1)], [("Yes", -0.1)]])):
        with llm.ctrl_c("verify_citations"):
            response = llm.chat([{"role": "user", "content": "x"}], logprobs=True, top_logprobs=1)
            assert llm.token_logprobs(response) == [("Yes", -0.1)]   # the judge's verdicts read these
            assert llm.complete("y") == "Yes"                          # a plain call streams
