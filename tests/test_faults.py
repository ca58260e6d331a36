"""Faults a student's run meets, each with the protection it tests (remove the protection and the test fails):

- the Ollama server dies mid-run: one-line error, the finished questions stay cached, a rerun resumes
  (harness.evaluate puts each row in the cache as it finishes);
- a Chroma server that accepts connections and never answers: one-line error within CHROMA_TIMEOUT, no
  hang (vector_index.client probes the heartbeat with a timeout; chromadb's own client has none);
  a closed port is covered in test_chroma_server.py;
- the index build killed with SIGKILL midway, then rerun: the same ids and count as a fresh build
  (vector_index.plan_update re-embeds a document whose chunks are not all there);
- two builds at once on one folder: both succeed, the chunks are embedded once (the build's file lock);
- a corrupted cache file (garbage, a torn last line): detected, rewritten, later writes survive (cache.Cache);
- a GGUF whose sha256 does not match: refused before llama.cpp sees it (RAG_GGUF_SHA256 for RAG_GGUF;
  the bundled model's own check is in test_llm.py).
Models here are SCRIPTED (llm.ScriptedModel served over real HTTP), never the real engine. Index builds
in subprocesses use a scripted hash embedding (fast, deterministic): what is tested is the index logic.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import harness
import llm
import vector_index as vi
import verify_citations
from lab import cache, engine
from lab.cache import Cache
from conftest import NOT_STATED_REPLY, judge_defers

ROOT = Path(__file__).parent.parent

# A build in a subprocess: scripted embedding (hash -> unit vector, a pause per batch so a kill lands midway),
# small batches, one line per embedded batch; after "go" exists (if given), build; print the result as JSON.
BUILD = """
import hashlib, json, os, sys, time
import numpy as np
import vector_index as vi
vi.EMBED_BATCH = 8
def embed(texts, batch_size=32):
    time.sleep(float(os.environ.get("PAUSE", "0.05")))
    out = [np.random.default_rng(int(hashlib.sha1(t.encode()).hexdigest()[:8], 16)).standard_normal(384) for t in texts]
    print("batch", flush=True)
    return np.array([v / np.linalg.norm(v) for v in out], dtype=np.float32)
vi.embed = embed
go = os.environ.get("GO")
print("ready", flush=True)
while go and not os.path.exists(go):
    time.sleep(0.02)
r = vi.build_index(sys.argv[1], "titled", progress=False) if sys.argv[2] == "build" else {}
col = vi.get_collection(sys.argv[1], "titled")
data = vi.get_all(col, ["metadatas"])
print("RESULT " + json.dumps({"result": r, "count": col.count(), "ids": data["ids"], "metas": data["metadatas"]}))
"""


def build_process(corpus, index, mode="build", **env):
    return subprocess.Popen([sys.executable, "-c", BUILD, str(corpus), mode], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "RAG_INDEX_DIR": str(index), **env})


def finish(proc, timeout=240):
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-2000:]
    return json.loads(out.split("RESULT ", 1)[1])


def state(run):
    """What must agree between two indexes: sorted ids, and each chunk's document hash and total."""
    return sorted((cid, m["hash"], m["total"]) for cid, m in zip(run["ids"], run["metas"]))


@pytest.fixture(scope="module")
def big_corpus(tmp_path_factory):
    """60 documents of ~5 chunks each (300 chunks): a build takes a few seconds at 8 chunks a batch (do not edit)."""
    folder = tmp_path_factory.mktemp("faults") / "big"
    folder.mkdir()
    for d in range(60):
        sentences = [f"Sentence {s} of document {d} tells about the village number {d * 7 + s}." for s in range(60)]
        (folder / f"doc{d:02d}.txt").write_text(f"Document {d}\n" + " ".join(sentences))
    return folder


@pytest.fixture(scope="module")
def fresh(big_corpus, tmp_path_factory):
    """One uninterrupted build of big_corpus into its own index: what every build below must end up equal to."""
    return finish(build_process(big_corpus, tmp_path_factory.mktemp("fresh")))


# ---- the index build: SIGKILL midway, and two builds at once ----

def test_build_killed_midway_recovers_to_the_fresh_index(big_corpus, fresh, tmp_path):
    proc = build_process(big_corpus, tmp_path / "killed")
    batches = 0
    for line in proc.stdout:
        batches += line.strip() == "batch"
        if batches == 12:  # 11 batches written, the 12th embedded: a document is split across the two
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    partial = finish(build_process(big_corpus, tmp_path / "killed", "inspect"))
    per_doc = {}
    for m in partial["metas"]:
        per_doc.setdefault(m["doc"], []).append(m["total"])
    assert 0 < partial["count"] < 300 and any(len(v) < v[0] for v in per_doc.values())  # really midway
    rerun = finish(build_process(big_corpus, tmp_path / "killed"))
    assert rerun["count"] == fresh["count"] == len(set(rerun["ids"])) == fresh["result"]["embedded"]
    assert state(rerun) == state(fresh)
    assert 0 < rerun["result"]["embedded"] < fresh["result"]["embedded"]  # finished documents were kept


def test_two_builds_at_once_embed_each_chunk_once(big_corpus, fresh, tmp_path):
    go = tmp_path / "go"
    procs = [build_process(big_corpus, tmp_path / "shared", GO=str(go), PAUSE="0.1") for _ in range(2)]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    go.touch()  # both start building at the same moment
    a, b = (finish(p) for p in procs)
    assert state(a) == state(b) == state(fresh)
    assert sorted([a["result"]["embedded"], b["result"]["embedded"]]) == [0, fresh["count"]]  # the lock


# ---- servers that go away or never answer ----

def scripted_reply(messages, schema):
    """SCRIPTED: a one-sentence cited answer (its own per question, so no verdict is shared), YES from the judge."""
    if judge_defers(messages, schema):
        return NOT_STATED_REPLY
    if schema and "sentences" in json.dumps(schema):
        question = messages[-1]["content"].rsplit("Question: ", 1)[-1]
        return json.dumps({"sentences": [{"text": f"It answers {question}", "sources": ["S1"]}], "answer": "Vell"})
    return json.dumps({"verdict": "YES"})


def serve_then_die(monkeypatch, die_after):
    """A SCRIPTED model served as an Ollama API over HTTP; the server shuts down for good right after
    answering call `die_after` (0: never)."""
    box = {}

    def reply(messages, schema):
        if len(box["model"].calls) == die_after:
            box["stop"]()  # the listening socket closes; this reply still goes out on its open connection
        return scripted_reply(messages, schema)

    box["model"] = llm.ScriptedModel(reply)
    url, box["stop"] = llm.serve(model=box["model"])
    monkeypatch.setenv("OLLAMA_HOST", url)
    monkeypatch.setenv("RAG_LLM", "ollama")
    monkeypatch.setenv("RAG_MODEL", "scripted")
    return url, box


def test_ollama_dying_mid_run_keeps_finished_rows_and_the_rerun_resumes(own_corpus, golden_path, monkeypatch):
    argv = ["verify_citations.py", "--corpus", str(own_corpus), "--golden", str(golden_path), "--limit", "4"]
    monkeypatch.setattr("sys.argv", argv)
    url, box = serve_then_die(monkeypatch, die_after=4)  # 2 calls a question: answer, then one verdict
    with pytest.raises(SystemExit) as e:
        verify_citations.main()
    message = str(e.value.code)
    assert message.startswith("verify_citations: ollama model scripted at " + url) and "\n" not in message
    assert len(box["model"].calls) == 4
    _, again = serve_then_die(monkeypatch, die_after=0)
    try:
        verify_citations.main()
    finally:
        again["stop"]()
    answered = [m[-1]["content"] for m, s in again["model"].calls if s and "sentences" in json.dumps(s)]
    assert len(answered) == 2  # only the two questions that had not finished were asked again


def test_chroma_server_that_never_answers_is_an_error_not_a_hang(monkeypatch):
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        monkeypatch.setenv("CHROMA_HOST", "127.0.0.1")
        monkeypatch.setenv("CHROMA_PORT", str(silent.getsockname()[1]))
        monkeypatch.setattr(vi, "CHROMA_TIMEOUT", 1)
        start = time.time()
        with pytest.raises(vi.CorpusError, match=r"no Chroma server at 127\.0\.0\.1:\d+ \(\w+\)"):
            _client_with_deadline(30)
        assert time.time() - start < 10


def _client_with_deadline(seconds):
    """vi.client(), failing the test instead of hanging the suite when it does not return."""
    import threading
    box = {}
    thread = threading.Thread(target=lambda: box.update(out=_capture(vi.client)), daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"vi.client() still waiting after {seconds} s: a silent server hangs the run")
    if isinstance(box["out"], BaseException):
        raise box["out"]
    return box["out"]


def _capture(fn):
    try:
        return fn()
    except BaseException as e:
        return e


# ---- files on disk: the cache and the model ----

def test_corrupted_cache_is_detected_rewritten_and_later_writes_survive(tmp_path, capsys):
    path = tmp_path / "rows.jsonl"
    good = [json.dumps({"k": f"k{i}", "v": {"n": i}}) for i in range(3)]
    path.write_bytes(b"\n".join([good[0].encode(), b"\xff\xfe garbage \x00", good[1].encode(), b"[1, 2]",
                                 b'{"v": "no key"}', good[2].encode(), b'{"k": "torn", "v": {"n"']))  # no newline
    c = Cache("rows", folder=tmp_path)
    assert {k: c.get(k) for k in ("k0", "k1", "k2")} == {f"k{i}": {"n": i} for i in range(3)} and len(c) == 3
    assert "4 corrupted line(s) dropped" in capsys.readouterr().err
    c.put("after", {"n": 9})  # appended after the torn line would have glued onto it and been lost
    again = Cache("rows", folder=tmp_path)
    assert again.get("after") == {"n": 9} and len(again) == 4
    assert capsys.readouterr().err == ""  # the file is clean now


def test_gguf_with_the_wrong_sha256_is_refused_before_loading(tmp_path, monkeypatch):
    fake = tmp_path / "tiny.gguf"
    fake.write_bytes(b"GGUF\x03 not a real model")
    loads = []
    import xllamacpp
    monkeypatch.setattr(xllamacpp, "Server", lambda params: loads.append(params) or pytest.fail("loaded"))
    monkeypatch.setenv("RAG_LLM", "embedded")
    monkeypatch.setenv("RAG_GGUF", str(fake))
    monkeypatch.setenv("RAG_GGUF_SHA256", "0" * 64)
    with pytest.raises(llm.LLMError) as e:
        llm.complete("hi", max_tokens=4)
    assert f"RAG_GGUF={fake} has sha256" in str(e.value) and "0" * 64 in str(e.value) and "\n" not in str(e.value)
    assert loads == []
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path))  # the bundled model: a truncated file is refused too
    (tmp_path / engine.GGUF_FILE).write_bytes(b"GGUF truncated")
    with pytest.raises(llm.LLMError, match="expected " + engine.GGUF_SHA256):
        engine.ensure_gguf()


# ---- determinism: the same question twice from scratch gives the same figures ----

@pytest.mark.slow
@pytest.mark.engine
def test_real_engine_two_fresh_runs_give_identical_json(corpus, golden_path, tmp_path):
    """Two runs of verify_citations.py --no-timing, each with its own empty cache (nothing reused): byte-identical
    JSON. The 10-question check on corpus/ is the command in labs/reliability.md, Determinism (~10 min)."""
    out = []
    for run in ("a", "b"):
        out.append(tmp_path / f"{run}.json")
        p = subprocess.run([sys.executable, "verify_citations.py", "--corpus", str(corpus),
                            "--golden", str(golden_path), "--limit", "1", "--no-timing", "--json", str(out[-1])],
                           cwd=ROOT, capture_output=True, text=True,
                           env={**os.environ, "RAG_INDEX_DIR": str(tmp_path / run), "RAG_LLM": "embedded"}, timeout=600)
        assert p.returncode == 0, p.stderr[-2000:]
    assert out[0].read_bytes() == out[1].read_bytes()
    a = json.loads(out[0].read_text())
    assert a["questions"] == 1 and a["sentences"] > 0 and "seconds_p50" not in a


def test_results_json_carries_no_machine_paths(tmp_path):
    root = harness.HERE.resolve()
    out = tmp_path / "r.json"
    cache.write_json(out, {"model": {"gguf": "/root/.cache/rag-lab/qwen.gguf", "host": None},
                        "settings": {"corpus": str(root / "corpus"), "golden": str(root / "golden.json"),
                                     "other": "/elsewhere/corpus", "name": "Montréal"}, "rows": [(1, str(root))]})
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["model"] == {"gguf": "qwen.gguf", "host": None}
    assert data["settings"] == {"corpus": "corpus", "golden": "golden.json", "other": "/elsewhere/corpus",
                                "name": "Montréal"}  # a path outside the repository is the user's: kept
    assert data["rows"] == [[1, "."]]
