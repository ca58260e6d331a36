"""lab/documents.py and vector_index.py on real files of each format: text, pages, heading paths, chunk IDs, spans, the
files the lab skips with one line, and the .txt corpus left exactly as it was.

The files are tests/fixtures/documents/ (one per format) and tests/fixtures/documents_bad/ (one per kind of file the
lab skips), written by tests/fixtures/make_documents.py and committed.
"""
import hashlib
import shutil

import pytest

from lab import chunks, documents
import vector_index as vi
from conftest import FIXTURES

GOOD, BAD = FIXTURES / "documents", FIXTURES / "documents_bad"
GOOD_IDS = {"handbook-pdf", "rules-docx", "astrobiology-html", "field-notes", "plain"}
CORPUS_DIGEST = (2884, "34d0daeeee299901")   # corpus/'s titled chunks (id, text, hash) as main made them before #33


def records(name, chunker="titled"):
    """{chunk id: (text, metadata)} of one fixture file."""
    doc = documents.read_document(GOOD / name)
    return doc, {cid: (text, meta) for cid, text, meta in vi.chunk_records(doc, chunker)}


def span_ok(doc, text, meta, chunker="titled"):
    """The chunk's text is the document's text at its span (whitespace aside; titled: after the title line)."""
    body = text.split("\n", 1)[1] if chunker == "titled" else text
    return " ".join(doc.text[meta["start"]:meta["end"]].split()) == " ".join(body.split())


def test_pdf_pages_title_ids_and_spans():
    doc, recs = records("handbook.pdf")
    assert doc.id == "handbook-pdf" and doc.title == "Student Handbook" and doc.file == "handbook.pdf"
    assert [b.page for b in doc.blocks] == [1, 2, 3]
    assert list(recs) == ["handbook-pdf#p1-0", "handbook-pdf#p2-0", "handbook-pdf#p3-0"]
    text, meta = recs["handbook-pdf#p2-0"]
    assert "close on 14 March" in text and "Mercer Library" not in text and "River Osk" not in text
    assert meta["page"] == 2 and meta["section"] == "Admissions" and meta["file"] == "handbook.pdf"   # its heading
    assert all(span_ok(doc, t, m) for t, m in recs.values())
    # the running header and the page numbers are on every page: dropped
    assert "Student Handbook 2026" not in doc.text and "Page 2" not in doc.text
    assert documents.where(meta) == "handbook.pdf p. 2 · Admissions"


def test_only_numbers_that_count_with_the_pages_are_dropped_as_page_numbers():
    pages = ["Fees\nLab fee | 30\n30\n1", "Rooms\nNorth Hall\n2", "Times\nMonday 09:00\n3"]
    assert documents.strip_running(pages) == ["Fees\nLab fee | 30\n30", "Rooms\nNorth Hall", "Times\nMonday 09:00"]
    printed = ["Intro\nfoo\n7", "Body\nbar\n8"]        # numbering that starts at 7: still page numbers
    assert documents.strip_running(printed) == ["Intro\nfoo", "Body\nbar"]
    assert documents.strip_running(["One page\nends with a count of\n30"]) == ["One page\nends with a count of\n30"]
    two = ["College · MAR 260 outline\nTeaching\nA | B", "College · MAR 260 outline\nSchedule\nA | B"]
    assert documents.strip_running(two) == ["Teaching\nA | B", "Schedule\nA | B"]   # 2 pages: a header both open with


def test_a_section_that_runs_on_to_a_new_page_is_one_block_with_its_table_header_once():
    """Issue 61: a table cut by a page break. The section is one block over both pages, so its chunks are cut as the
    same section's are in Markdown (cut at the page too, the page-2 row alone was a chunk of its own, which lost to
    others at rank 4); the header row the printer repeated atop page 2 is left out; the chunk cites both pages."""
    parts = [(1, 1, "Luggage"), (1, None, "Item | Charge"), (1, None, "Bikes | 3.00"),
             (2, None, "Item | Charge"), (2, None, "Kayaks | 12.00"), (2, 1, "Tides"), (2, None, "High water.")]
    text, blocks = documents.paged(parts)
    assert [(b.page, b.section, text[b.start:b.end].strip()) for b in blocks] == [
        (1, "Luggage", "Luggage\nItem | Charge\nBikes | 3.00\n\nKayaks | 12.00"), (2, "Tides", "Tides\nHigh water.")]
    recs = chunks.chunk_records(documents.Doc("rules-pdf", "Rules", text, "h", "rules.pdf", blocks), "sentence")
    assert [(cid, t) for cid, t, _ in recs] == [
        ("rules-pdf#p1-0", "Luggage\nItem | Charge\nBikes | 3.00\nKayaks | 12.00"),
        ("rules-pdf#p2-0", "Tides\nHigh water.")]
    assert documents.where(recs[0][2]) == "rules.pdf pp. 1-2 · Luggage"
    assert documents.where(recs[1][2]) == "rules.pdf p. 2 · Tides"
    assert documents.paged([(1, None, "No heading."), (2, None, "Still none.")])[0] == "No heading.\n\nStill none."
    # a row like the header, on a page the table did not run on to, is kept
    assert "Item | Charge" in documents.paged([(1, None, "Prose."), (2, None, "Item | Charge"), (2, None, "A | 1")])[0]


def test_pdf_chunks_are_numbered_within_their_page(monkeypatch):
    monkeypatch.setattr(chunks, "CHUNK_WORDS", 12)
    doc, recs = records("handbook.pdf", "sentence")
    assert [c for c in recs if c.startswith("handbook-pdf#p2-")] == [f"handbook-pdf#p2-{k}" for k in range(3)]
    assert [m["n"] for _, m in recs.values()] == list(range(len(recs)))   # n still counts the document's chunks
    assert all(m["total"] == len(recs) and span_ok(doc, t, m, "sentence") for t, m in recs.values())


def test_docx_title_sections_tables_and_no_page_header():
    doc, recs = records("rules.docx")
    assert doc.id == "rules-docx" and doc.title == "Programme Rules"
    sections = {m.get("section", ""): t for t, m in recs.values()}
    assert "Chemistry 101" in sections["Admissions > Prerequisites"]
    assert "14 March" in sections["Admissions > Deadlines"] and "Chemistry" not in sections["Admissions > Deadlines"]
    assert "AST 201 | Planetary Habitability | Lovelace Hall 4" in sections["Assessment"]
    assert "These rules apply" in sections[""]
    assert "Northfield College" not in doc.text   # the page header is not the document's text
    assert list(recs) == [f"rules-docx#{n}" for n in range(4)] and all(span_ok(doc, t, m) for t, m in recs.values())
    meta = recs["rules-docx#1"][1]
    assert documents.where(meta) == "rules.docx · Admissions > Prerequisites"


def test_html_main_text_sections_and_no_boilerplate():
    doc, recs = records("astrobiology.html")
    assert doc.id == "astrobiology-html" and doc.title == "Astrobiology BSc"
    for junk in ("Apply now", "cookies", "Copyright", "parking permits", "do not index me", "position: fixed"):
        assert junk not in doc.text, junk
    sections = {m.get("section", ""): t for t, m in recs.values()}
    assert set(sections) == {"", "Admissions > Prerequisites", "Timetable"}
    assert "Chemistry 101" in sections["Admissions > Prerequisites"]
    assert "Planetary Habitability | Tuesday | Lovelace Hall 4" in sections["Timetable"]
    assert sections[""] == "Astrobiology BSc\nThe Astrobiology BSc runs for three years and admits forty students " \
                           "each autumn."   # the title once (the titled prefix), not again from the <h1>
    assert all(span_ok(doc, t, m) for t, m in recs.values())


def test_markdown_sections_ignore_a_hash_in_a_code_block():
    doc, recs = records("field-notes.md")
    assert doc.id == "field-notes" and doc.title == "Field Notes"
    assert [m.get("section", "") for _, m in recs.values()] == ["", "Equipment", "Safety"]
    assert "# a comment in a code block" in recs["field-notes#1"][0]
    assert list(recs) == ["field-notes#0", "field-notes#1", "field-notes#2"]


def test_markdown_reads_as_the_same_page_in_html(tmp_path):
    """Issue 61: the marks are not text. A Markdown page and its HTML give the same text and the same sections."""
    (tmp_path / "fares.md").write_text("# Fares\nSingle fares **from** Port Ardel.\n\n## Vehicles\n\n"
                                       "| Vehicle | Single |\n|---|---|\n| Car | 19.60 |\n| Van | [24.10](x.html) |\n")
    (tmp_path / "fares.html").write_text("<html><body><h1>Fares</h1><p>Single fares <b>from</b> Port Ardel.</p>"
                                         "<h2>Vehicles</h2><table><tr><th>Vehicle</th><th>Single</th></tr>"
                                         "<tr><td>Car</td><td>19.60</td></tr><tr><td>Van</td><td>24.10</td></tr>"
                                         "</table></body></html>")
    md, html = (documents.read_document(tmp_path / f) for f in ("fares.md", "fares.html"))
    assert md.text == html.text == "Single fares from Port Ardel.\nVehicles\nVehicle | Single\nCar | 19.60\nVan | 24.10"
    assert [b.section for b in md.blocks] == [b.section for b in html.blocks] == ["", "Vehicles"]
    assert md.title == html.title == "Fares"
    raw = (tmp_path / "fares.md").read_bytes()
    assert md.hash != documents.read_text(raw, tmp_path / "fares.md").hash   # read anew: its chunks are re-embedded
    plain = tmp_path / "plain.md"
    plain.write_text("Plain\nNo mark here.\n")   # ... but a .md file with no mark keeps its hash, and its answers
    assert documents.read_document(plain).hash == hashlib.sha1(plain.read_bytes()).hexdigest()[:16]


def test_txt_reads_as_ever():
    doc, recs = records("plain.txt")
    assert (doc.id, doc.title, doc.blocks) == ("plain", "Plain Notes", [])
    assert doc.hash == hashlib.sha1((GOOD / "plain.txt").read_bytes()).hexdigest()[:16]
    (text, meta), = recs.values()
    assert list(recs) == ["plain#0"] and meta["start"] == 0 and meta["end"] == len(doc.text)
    assert "page" not in meta and "section" not in meta and documents.where(meta) == ""


def test_corpus_chunk_ids_and_texts_are_unchanged():
    """corpus/'s chunks (ids, texts, hashes) are byte for byte what they were, so its index and caches stay valid."""
    docs, failed = vi.load_documents(vi.CORPUS_DIR, quiet=True)
    h = hashlib.sha256()
    for d in sorted(docs):
        for cid, text, meta in vi.chunk_records(docs[d], "titled"):
            h.update(f"{cid}\n{text}\n{meta['hash']}\n".encode())
    assert (len(docs), h.hexdigest()[:16]) == CORPUS_DIGEST and not failed


@pytest.mark.parametrize("name,message", [
    ("encrypted.pdf", "encrypted PDF (it needs a password), skipped"),
    ("corrupt.pdf", "corrupt PDF (PDFium: Data format error), skipped"),
    ("corrupt.docx", "corrupt Word file (BadZipFile: File is not a zip file), skipped"),
    ("long.pdf", "300 pages is over the 200-page limit (--max-pages, RAG_MAX_PAGES), skipped"),
    ("cours.html", "mostly not English (25% of its words are common words of other languages, 0% English); "
                   "RAG_ANY_LANGUAGE=1 keeps it, skipped"),
])
def test_a_bad_file_gets_one_line_and_the_rest_is_indexed(tmp_path, capsys, name, message):
    folder = tmp_path / "docs"
    shutil.copytree(GOOD, folder)
    shutil.copy(BAD / name, folder / name)
    r = vi.build_index(folder, "titled", progress=False)
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert err == [f"warning: {folder / name}: {message}"]
    assert r["docs"] == 5 and r["skipped"] == 1
    metas = vi.get_all(vi.get_collection(folder, "titled"), ["metadatas"])["metadatas"]
    assert {m["doc"] for m in metas} == GOOD_IDS


def test_the_limits_can_be_raised(tmp_path, monkeypatch):
    assert documents.read_document(BAD / "long.pdf", pages=300).blocks[-1].page == 300
    monkeypatch.setenv("RAG_MAX_PAGES", "300")
    assert len(documents.read_document(BAD / "long.pdf").blocks) == 300
    monkeypatch.setenv("RAG_ANY_LANGUAGE", "1")
    assert documents.read_document(BAD / "cours.html").title == "Astrobiologie"
    docs, failed = vi.load_documents(BAD, quiet=True, max_pages=300, any_language=True)
    assert set(docs) == {"long-pdf", "cours-html", "scanned-pdf"} and len(failed) == 3   # a scan is read by OCR


def test_the_scanned_fixture_is_read_by_ocr():
    doc = documents.read_document(BAD / "scanned.pdf")   # once skipped ("no text layer"); issue 61 reads it
    assert "library committee, 3 May 2026" in doc.text and "Minutes" in doc.text and doc.blocks[0].ocr


def test_not_english_rule():
    french = "Le cours commence en octobre et il est ouvert à tous les étudiants qui ont fini la première année. " * 2
    german = "Der Kurs beginnt im Oktober und ist für alle Studierenden offen, die das erste Jahr beendet haben. " * 2
    russian = "Курс начинается в октябре и открыт для всех студентов, которые закончили первый год обучения. " * 2
    english = "The course starts in October and is open to every student who has finished the first year. " * 2
    names = "Los Angeles Lakers, El Paso Locomotive, De Graafschap, Le Mans, La Paz, Van Gogh Museum, " * 3
    assert "other languages" in documents.not_english(french) and "other languages" in documents.not_english(german)
    assert "not Latin script" in documents.not_english(russian)
    assert documents.not_english(english) is None and documents.not_english(names) is None
    assert documents.not_english("Le cours commence en octobre.") is None   # too short to judge
    corpus = [p.read_text(encoding="utf-8") for p in sorted(vi.CORPUS_DIR.glob("*.txt"))]
    assert sum(documents.not_english(t) is not None for t in corpus) == 0   # 2,884 English paragraphs, lists included


def test_a_folder_of_documents_indexes_incrementally_with_provenance(tmp_path):
    folder = tmp_path / "docs"
    shutil.copytree(GOOD, folder)
    first = vi.build_index(folder, "titled", progress=False)
    assert first["docs"] == 5 and first["embedded"] == first["chunks"] == 14 and first["skipped"] == 0
    col = vi.get_collection(folder, "titled")
    meta = col.get(ids=["handbook-pdf#p2-0"], include=["metadatas"])["metadatas"][0]
    assert (meta["page"], meta["file"], meta["doc"]) == (2, "handbook.pdf", "handbook-pdf")
    assert col.get(ids=["rules-docx#1"], include=["metadatas"])["metadatas"][0]["section"] == \
        "Admissions > Prerequisites"
    again = vi.build_index(folder, "titled", progress=False)
    assert (again["embedded"], again["deleted"], again["kept"]) == (0, 0, 5)
    html = (folder / "astrobiology.html").read_text(encoding="utf-8")
    (folder / "astrobiology.html").write_text(html.replace("forty students", "fifty students"), encoding="utf-8")
    third = vi.build_index(folder, "titled", progress=False)   # only the changed file's chunks are embedded again
    assert (third["embedded"], third["deleted"], third["kept"]) == (3, 3, 4)
    assert "fifty" in col.get(ids=["astrobiology-html#0"])["documents"][0]


def test_an_older_index_gets_its_provenance_without_embedding(own_corpus):
    """An index built before issue 33 has no file/start/end in its metadata: the next build fills them in."""
    vi.build_index(own_corpus, "titled", progress=False)
    col = vi.get_collection(own_corpus, "titled")
    got = vi.get_all(col, ["metadatas", "documents", "embeddings"])
    col.delete(ids=got["ids"])
    old = [{k: m[k] for k in ("doc", "title", "n", "total", "hash")} for m in got["metadatas"]]
    col.add(ids=got["ids"], documents=got["documents"], embeddings=got["embeddings"], metadatas=old)
    r = vi.build_index(own_corpus, "titled", progress=False)
    assert (r["embedded"], r["deleted"], r["kept"]) == (0, 0, 9)
    meta = col.get(ids=["tomas-vell#0"], include=["metadatas"])["metadatas"][0]
    assert meta["file"] == "tomas-vell.txt" and meta["start"] == 0 and meta["end"] > 50


def test_a_table_cut_across_chunks_keeps_its_header_row(monkeypatch):
    text = ("Exams are in May.\nSpring examinations\nCourse | Date | Room\n"
            + "\n".join(f"AST {n} | {n - 300} May | HAL 104" for n in range(301, 311)) + "\nBring a pen.")
    monkeypatch.setattr(chunks, "CHUNK_WORDS", 30)
    pieces = [p for p, _, _ in vi.cut(text, "titled")]
    rows = [p for p in pieces if "AST 3" in p]
    assert len(rows) >= 3 and sum(p.count("AST 3") for p in rows) == 10   # every row once
    # each chunk with rows says what its columns are and which table it is (the short line above it)
    assert all(p.startswith("Spring examinations\nCourse | Date | Room\n") for p in rows[1:])
    assert pieces[0].startswith("Exams are in May.") and pieces[-1].endswith("Bring a pen.")
    md = "| Day | Room |\n|---|---|\n" + "\n".join(f"| Mon | HAL {n} |" for n in range(30))
    assert all(p.startswith("| Day | Room |\n|---|---|\n") for p, _, _ in vi.cut(md, "titled"))   # with its rule


def test_an_html_table_row_chunk_has_its_header(monkeypatch):
    monkeypatch.setattr(chunks, "CHUNK_WORDS", 3)   # one row a chunk
    texts = [t for t, _ in records("astrobiology.html")[1].values()]
    row = next(t for t in texts if "Lovelace Hall 4" in t)
    assert "Course | Day | Room\nPlanetary Habitability | Tuesday | Lovelace Hall 4" in row
    assert sum("Course | Day | Room" in t for t in texts) == 2   # the header's own chunk, and the row's


def test_only_a_text_with_a_table_gets_a_new_hash():
    assert documents.tables("a ref |title=Census| in prose\nand more") == b""   # one '|' line is no table
    assert documents.tables("Day | Room\nMon | HAL 1") != b""


def test_a_word_row_keeps_equal_cells_and_reads_a_merged_cell_once(tmp_path):
    import docx
    d = docx.Document()
    t = d.add_table(rows=2, cols=3)
    for c, text in zip(t.rows[0].cells, ["Kessock Junction", "Yes", "Yes"]):
        c.text = text
    t.cell(1, 0).merge(t.cell(1, 1)).text = "Closed on Sundays"
    t.cell(1, 2).text = "No"
    d.save(tmp_path / "stations.docx")
    lines = documents.read_document(tmp_path / "stations.docx").text.splitlines()
    assert lines == ["Kessock Junction | Yes | Yes", "Closed on Sundays | No"]
