"""vector_index.py: loading, chunking, incremental builds, recovery and bad input, on the fixture corpus."""
import subprocess
import sys
from pathlib import Path

import pytest

import vector_index as vi
from lab import chunks

ROOT = Path(__file__).parent.parent


def test_load_documents_reads_title_and_body(own_corpus):
    docs, failed = vi.load_documents(own_corpus)
    assert failed == [] and len(docs) == 9
    assert docs["tomas-vell"].title == "Tomas Vell"
    assert docs["tomas-vell"].text.startswith("Tomas Vell (1831-1899)")
    assert docs["corran"].title == "Corran"  # markdown heading marks stripped


def test_chunkers_known_answers():
    doc = vi.Doc("d", "Title", "One two. Three four? " * 100, "h")
    fixed = vi.chunk(doc, "fixed")
    assert all(len(c.split()) <= chunks.CHUNK_WORDS for c in fixed)
    assert fixed[0].split()[-chunks.OVERLAP_WORDS:] == fixed[1].split()[:chunks.OVERLAP_WORDS]  # windows overlap
    sentence = vi.chunk(doc, "sentence")
    assert all(c.endswith(("?", ".")) for c in sentence)  # never cut inside a sentence
    assert " ".join(sentence).split() == doc.text.split()  # nothing lost or repeated
    titled = vi.chunk(doc, "titled")
    assert [t.split("\n", 1)[1] for t in titled] == sentence and all(t.startswith("Title\n") for t in titled)
    assert vi.split_sentences("A b. C d? e f") == ["A b.", "C d? e f"]
    with pytest.raises(vi.CorpusError):
        vi.chunk(doc, "nonsense")


def test_embed_is_unit_length_and_semantic():
    v = vi.embed(["a bridge over a river", "a stone bridge crossing the water", "cheese fair in September"])
    assert v.shape == (3, 384)
    assert abs(float((v[0] ** 2).sum()) - 1) < 1e-4
    assert v[0] @ v[1] > v[0] @ v[2]


def test_collection_names_keep_corpora_apart(tmp_path):
    assert vi.collection_name(vi.CORPUS_DIR, "titled") == "corpus-titled"
    a, b = vi.collection_name(tmp_path / "x", "titled"), vi.collection_name(tmp_path / "y" / "x", "titled")
    assert a != b and a.endswith("-titled")


def test_incremental_build(own_corpus):
    first = vi.build_index(own_corpus, "titled", progress=False)
    assert first["embedded"] == first["chunks"] > first["docs"] == 9  # the long document splits
    again = vi.build_index(own_corpus, "titled", progress=False)
    assert again["embedded"] == 0 and again["deleted"] == 0 and again["kept"] == 9
    (own_corpus / "medra.txt").write_text("Medra\nMedra is an island with 412 residents.\n")
    (own_corpus / "hartmoor.txt").unlink()
    (own_corpus / "new-doc.txt").write_text("New Doc\nA new document.\n")
    third = vi.build_index(own_corpus, "titled", progress=False)
    assert third["embedded"] == 2 and third["deleted"] == 2 and third["kept"] == 7
    col = vi.get_collection(own_corpus, "titled")
    docs = {m["doc"] for m in col.get(include=["metadatas"])["metadatas"]}
    assert "hartmoor" not in docs and "new-doc" in docs
    assert "412 residents" in col.get(ids=["medra#0"])["documents"][0]


def test_partial_document_is_completed_on_rerun(own_corpus):
    """A build killed halfway leaves a document with some of its chunks: the next run completes it."""
    vi.build_index(own_corpus, "titled", progress=False)
    col = vi.get_collection(own_corpus, "titled")
    ids = sorted(i for i in col.get()["ids"] if i.startswith("brannock-hills#"))
    assert len(ids) >= 2
    col.delete(ids=ids[1:])
    r = vi.build_index(own_corpus, "titled", progress=False)
    assert r["embedded"] == len(ids) and r["kept"] == 8
    assert sorted(i for i in col.get()["ids"] if i.startswith("brannock-hills#")) == ids


@pytest.mark.parametrize("name,content,reason", [
    ("empty.txt", b"", "empty file"),
    ("blank.txt", b"  \n\n ", "empty file"),
    ("binary.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary file"),
    ("latin1.txt", "Caf\u00e9 cr\u00e8me\nna\u00efve".encode("latin-1"), "not valid UTF-8 (byte 0xe9 at offset 3)"),
    ("notes.pdf", b"%PDF-1.4", "corrupt PDF (PDFium: Data format error)"),
    ("notes.docx", b"PK\x03\x04 not a zip", "corrupt Word file (BadZipFile"),
    ("slides.pptx", b"PK", "unknown extension '.pptx', skipped (only .txt, .md, .pdf, .docx, .html, .htm)"),
])
def test_bad_files_get_one_line_and_the_rest_loads(own_corpus, capsys, name, content, reason):
    (own_corpus / name).write_bytes(content)
    docs, _ = vi.load_documents(own_corpus)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(docs) == 9 and len(err) == 1
    assert name in err[0] and reason in err[0]


def test_big_file_is_skipped_unless_the_limit_is_raised(own_corpus, capsys):
    (own_corpus / "huge.txt").write_text("Huge\n" + "word " * (4 * 2**20))  # 20 MB
    docs, failed = vi.load_documents(own_corpus)
    assert "huge" not in docs and failed == ["huge"]
    err = capsys.readouterr().err
    assert "huge.txt" in err and "20.0 MB is over the 5 MB limit" in err
    docs, _ = vi.load_documents(own_corpus, max_mb=25)
    assert "huge" in docs


def test_a_file_that_turns_bad_keeps_its_indexed_chunks(own_corpus):
    vi.build_index(own_corpus, "titled", progress=False)
    (own_corpus / "medra.txt").write_bytes(b"\xff\xfe broken")
    r = vi.build_index(own_corpus, "titled", progress=False)
    assert r["skipped"] == 1 and r["deleted"] == 0
    assert vi.get_collection(own_corpus, "titled").get(ids=["medra#0"])["ids"] == ["medra#0"]


def test_empty_and_missing_folders_are_one_line_errors(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(vi.CorpusError, match=r"has no documents \(\.txt, \.md, \.pdf"):
        vi.load_documents(tmp_path / "empty")
    with pytest.raises(vi.CorpusError, match="does not exist"):
        vi.load_documents(tmp_path / "nowhere")


def test_missing_index_names_the_command(tmp_path):
    (tmp_path / "c").mkdir()
    with pytest.raises(vi.CorpusError, match=r"python vector_index.py --corpus"):
        vi.get_collection(tmp_path / "c", "titled")


def test_cli_empty_folder_exits_with_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    r = subprocess.run([sys.executable, str(ROOT / "vector_index.py"), "--corpus", str(tmp_path / "empty")],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [f"vector_index: corpus folder {tmp_path / 'empty'} has no documents "
                                             "(.txt, .md, .pdf, .docx, .html, .htm)"]


def test_embedding_leaves_the_cores_to_llama_cpp(monkeypatch):
    """torch embeds on one thread unless RAG_EMBED_THREADS says otherwise: a pool of torch threads beside
    llama.cpp's (one shared libgomp) slowed llama.cpp's generation to 0.77x (experiments/bench_llm.py)."""
    import vector_index
    monkeypatch.delenv("RAG_EMBED_THREADS", raising=False)
    assert vector_index.embed_threads() == 1
    monkeypatch.setenv("RAG_EMBED_THREADS", "2")
    assert vector_index.embed_threads() == 2
    monkeypatch.setenv("RAG_EMBED_THREADS", "0")
    assert vector_index.embed_threads() == 1
