"""CHROMA_HOST: the same build and retrieval against a real `chroma run` server on loopback."""
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import retrieve
from layers import links as links_layer
import vector_index as vi

CHROMA = Path(sys.executable).parent / "chroma"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def chroma_server(tmp_path, monkeypatch):
    if not CHROMA.exists():
        pytest.skip(f"no chroma CLI at {CHROMA} (it ships with the chromadb package)")
    port = free_port()
    proc = subprocess.Popen([str(CHROMA), "run", "--path", str(tmp_path / "server"), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    monkeypatch.setenv("CHROMA_HOST", "127.0.0.1")
    monkeypatch.setenv("CHROMA_PORT", str(port))
    deadline = time.time() + 30
    while True:
        try:
            vi.client()
            break
        except vi.CorpusError:
            if time.time() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail("chroma server did not start")
            time.sleep(0.3)
    yield port
    proc.terminate()
    proc.wait(10)


def test_build_and_retrieve_through_a_chroma_server(chroma_server, own_corpus, monkeypatch):
    monkeypatch.setenv("RAG_INDEX_DIR", str(own_corpus.parent / "must-stay-empty"))
    r = vi.build_index(own_corpus, "titled", progress=False)
    assert r["embedded"] == r["chunks"] > 0
    assert vi.build_index(own_corpus, "titled", progress=False)["embedded"] == 0
    ps = retrieve.Retriever(own_corpus, "titled").retrieve("Which island has no cars?", k=2)
    assert ps[0]["doc"] == "medra"
    # hop 1 holds 2 chunks: a reached chunk's vector is read from the server
    monkeypatch.setattr(links_layer.links, "CHAIN_DEPTH", 2)
    question = "Who was mayor in 2020 of the town where Edric Vell lived?"
    chained = links_layer.chain(retrieve.Retriever(own_corpus, "titled"), question, 2, vi.embed([question])[0])
    assert [p["doc"] for p in chained] == ["edric-vell", "corran"] and chained[1]["dense"] is None
    assert not (own_corpus.parent / "must-stay-empty" / "chroma").exists()  # nothing went to disk locally


def test_unreachable_chroma_server_is_one_line(monkeypatch):
    monkeypatch.setenv("CHROMA_HOST", "127.0.0.1")
    monkeypatch.setenv("CHROMA_PORT", str(free_port()))
    with pytest.raises(vi.CorpusError, match=r"no Chroma server at 127.0.0.1:\d+ .*chroma run"):
        vi.client()
