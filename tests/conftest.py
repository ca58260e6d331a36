"""Shared test setup: a throw-away index store, the tiny fixture corpus, and the test markers.

The fixture corpus (tests/fixtures/corpus) is nine short made-up documents about a fictional county,
so that no language model can answer from memory and every fact has exactly one source.
"""
import re
import shutil
from pathlib import Path

import pytest
from layers import judge_answers

FIXTURES = Path(__file__).parent / "fixtures"


def pytest_configure(config):
    config.addinivalue_line("markers", "engine: runs the real embedded language model (seconds per test)")
    config.addinivalue_line("markers", "browser: drives headless Chromium")
    config.addinivalue_line("markers", "slow: a longer real-engine run (20-80 s): `make test-slow` and CI run them, "
                                       "`make test` leaves them out")


@pytest.fixture(autouse=True, scope="session")
def _isolated_store(tmp_path_factory):
    """Every test writes its indexes and caches under a temporary folder, never under .rag/."""
    mp = pytest.MonkeyPatch()
    root = tmp_path_factory.mktemp("rag")
    mp.setenv("RAG_INDEX_DIR", str(root / "index"))
    mp.delenv("CHROMA_HOST", raising=False)
    yield root
    mp.undo()


@pytest.fixture(autouse=True)
def _real_engine_only_when_marked(request, monkeypatch):
    """A test not marked engine or slow that reaches the embedded model fails at once, instead of silently spending
    seconds of real generation (its model calls belong in a ScriptedModel block)."""
    if request.node.get_closest_marker("engine") or request.node.get_closest_marker("slow"):
        return
    import llm
    message = "this test reached the real embedded engine: script it (llm.use_model) or mark it engine"
    real_chat = llm._Embedded.openai_chat

    def chat(self, body):   # the engine's own refusals (a missing or mismatched GGUF) still run, before it loads
        if self.server is not None:
            pytest.fail(message)
        return real_chat(self, body)
    monkeypatch.setattr(llm._Embedded, "openai_chat", chat)
    monkeypatch.setattr(llm, "engine_params", lambda *a, **k: pytest.fail(message))


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    """A copy of the fixture corpus with its titled index built (shared, do not modify)."""
    from vector_index import build_index
    path = tmp_path_factory.mktemp("fixture") / "corpus"
    shutil.copytree(FIXTURES / "corpus", path)
    build_index(path, "titled", progress=False)
    return path


@pytest.fixture
def own_corpus(tmp_path):
    """A private copy of the fixture corpus that a test may edit."""
    path = tmp_path / "corpus"
    shutil.copytree(FIXTURES / "corpus", path)
    return path


@pytest.fixture
def golden_path():
    return FIXTURES / "golden.json"


CHECK_LINE = re.compile(r"\nCheck: (?:answer from|does) ((?:\[S\d+\])+)(?: to | state: )(.*)$", re.S)
SOURCE_TAG = re.compile(r'<source id="(S\d+)"[^>]*>(.*?)</source>', re.S)


def judge_view(messages):
    """(source, task) of a judge request, for SCRIPTED judges: the source it is about and the claim or question
    after it, whether the judge asked the source on its own ("Source: ...\nClaim: ...") or inside the answer's
    prompt (context_checks: "Check: does [S2] state: ..."; the source is then the cited passages' text only)."""
    user = messages[-1]["content"]
    if m := CHECK_LINE.search(user):
        texts = dict(SOURCE_TAG.findall(user))
        return "\n\n".join(texts.get(i, "") for i in re.findall(r"S\d+", m.group(1))), m.group(2)
    for sep in ("\nClaim: ", "\nQuestion: "):
        if sep in user:
            source, _, task = user.partition(sep)
            return source, task
    return user, ""


def judge_defers(messages, schema):
    """For SCRIPTED models written for a YES/NO judge: True when the request is the answer_check judge asking
    for the source's own answer (on its own, or inside the answer's prompt). Replying {"answer": "not stated"}
    then hands the decision to the scripted verdict whenever the source names the claim's answer
    (judge_answers._answer_check), and says NO otherwise."""
    props = (schema or {}).get("properties", {}) if isinstance(schema, dict) else {}
    asks = (messages[0].get("content") == judge_answers.SHARED_SYSTEM
            or "\nCheck: answer from [" in messages[-1]["content"])
    return asks and set(props) == {"answer"} and "enum" not in props["answer"]


NOT_STATED_REPLY = '{"answer": "not stated"}'
