"""Shared test setup: a throw-away index store, the tiny fixture corpus, and the test markers.

The fixture corpus (tests/fixtures/corpus) is nine short made-up documents about a fictional county,
so that no language model can answer from memory and every fact has exactly one source.
"""
import shutil
from pathlib import Path

import pytest

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


def judge_defers(messages, schema):
    """For SCRIPTED models written for a YES/NO judge: True when the request is the answer_check judge asking
    for the source's own answer. Replying {"answer": "not stated"} then hands the decision to the scripted
    verdict whenever the source names the claim's answer (judge._answer_check), and says NO otherwise."""
    import judge
    props = (schema or {}).get("properties", {}) if isinstance(schema, dict) else {}
    return (messages[0].get("content") == judge.SHARED_SYSTEM and set(props) == {"answer"}
            and "enum" not in props["answer"])


NOT_STATED_REPLY = '{"answer": "not stated"}'
