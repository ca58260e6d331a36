"""PDFs read as the other formats (issue 61): table rows as 'a | b | c' with their header, headings as sections, a
scanned page read by OCR once and cited as such, and a page nothing can be read from skipped with one line.

The PDFs are made here (reportlab, then rendered to image-only pages with pypdfium2 and Pillow, as a scanner would),
except tests/fixtures/pdf/ferry-rooms.pdf: Chromium's print of ferry-rooms.html beside it (a tagged PDF), made by
`chromium --headless --no-sandbox --no-pdf-header-footer --print-to-pdf=ferry-rooms.pdf ferry-rooms.html`.
OCR runs on small A6 pages (~1-3 s each).
"""
import pytest

from lab import chunks, documents, ocr
import vector_index as vi
from conftest import FIXTURES

TAGGED = FIXTURES / "pdf" / "ferry-rooms.pdf"
ROWS = [["Room", "Use", "Seats"], ["T-01", "Waiting lounge", "80"], ["T-02", "Ticket office", "6"]]


def ruled_pdf(path, size="A6"):
    """An untagged PDF (reportlab): a title, two headings in a larger bold font, a table with drawn lines."""
    from reportlab.lib import colors, pagesizes
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Table, TableStyle
    st = getSampleStyleSheet()
    table = Table(ROWS)
    table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black)]))
    story = [Paragraph("Harbour Rooms", st["Title"]), Paragraph("Terminal building", st["Heading2"]),
             Paragraph("The terminal opens at six.", st["BodyText"]), table,
             Paragraph("Pier", st["Heading2"]), Paragraph("The pier has a linkspan.", st["BodyText"])]
    SimpleDocTemplate(str(path), pagesize=getattr(pagesizes, size), title="Harbour Rooms", invariant=1,
                      leftMargin=20, rightMargin=20, topMargin=20, bottomMargin=20).build(story)
    return path


def scanned(pdf_path, out, angle=0.3, dpi=150, blank_pages=()):
    """The PDF's pages as pictures only (no text layer): rendered in greyscale, turned by `angle` degrees; a page
    number in blank_pages is a white picture with nothing on it."""
    import pypdfium2 as pdfium
    from PIL import Image
    pdf = pdfium.PdfDocument(str(pdf_path))
    images = []
    for i in range(len(pdf)):
        image = pdf[i].render(scale=dpi / 72, grayscale=True).to_pil().convert("L")
        images.append(Image.new("L", image.size, 255) if i + 1 in blank_pages
                      else image.rotate(angle, expand=angle % 180 == 90, fillcolor=255))
    pdf.close()
    images[0].save(out, "PDF", resolution=dpi, save_all=True, append_images=images[1:])
    return out


def test_a_drawn_table_comes_back_as_rows_of_cells_under_its_heading(tmp_path):
    doc = documents.read_document(ruled_pdf(tmp_path / "rooms.pdf"))
    lines = doc.text.splitlines()
    assert [" | ".join(r) for r in ROWS] == [x for x in lines if " | " in x]   # every row, every cell, in order
    assert doc.text.count("Waiting lounge") == 1                                 # not also as a line of words
    assert doc.title == "Harbour Rooms" and "Harbour Rooms" not in doc.text
    assert {b.section for b in doc.blocks} >= {"Terminal building", "Pier"}
    recs = {text: meta for _, text, meta in chunks.chunk_records(doc, "titled")}
    row = next(t for t in recs if "T-02" in t)
    assert "Terminal building" == recs[row]["section"] and "The pier" not in row   # chunks end at the section
    assert documents.where(recs[row]) == "rooms.pdf p. 1 · Terminal building"


def test_a_tagged_pdf_gives_its_rows_and_heading_path():
    doc = documents.read_document(TAGGED)
    assert doc.title == "Terminal Rooms" and not doc.text.startswith("Terminal Rooms")
    assert "T-01 | Waiting lounge with a hearing loop | 80" in doc.text.splitlines()
    assert [b.section for b in doc.blocks] == ["", "Ground floor > Public rooms", "Upper floor"]
    units = chunks.units(doc.text[doc.blocks[1].start:doc.blocks[1].end])
    t02 = next(u for u in units if u[0].startswith("T-02"))
    assert "Room | Use | Seats" in t02[3]   # the row's chunk carries the table's header row


def test_a_scanned_page_is_read_by_ocr_once_and_cited_as_ocr(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_INDEX_DIR", str(tmp_path / "index"))
    scan = scanned(ruled_pdf(tmp_path / "rooms.pdf"), tmp_path / "scan.pdf", angle=0.4)
    doc = documents.read_document(scan)
    assert "Waiting lounge" in doc.text and "linkspan" in doc.text and "T-02 | Ticket office | 6" in doc.text
    assert doc.blocks and all(b.ocr and b.page == 1 for b in doc.blocks)
    meta = chunks.chunk_records(doc, "titled")[0][2]
    assert meta["ocr"] is True and documents.where(meta).startswith("scan.pdf p. 1 (OCR)")
    assert list((tmp_path / "index" / "ocr").glob("*.json"))

    def no_ocr(image):
        raise AssertionError("OCR ran again")
    monkeypatch.setattr(ocr, "read_image", no_ocr)
    assert documents.read_document(scan).text == doc.text   # from the cache


@pytest.mark.parametrize("angle", [180, 90, 270])
def test_a_turned_scan_reads_in_order(tmp_path, monkeypatch, angle):
    monkeypatch.setenv("RAG_INDEX_DIR", str(tmp_path / "index"))
    doc = documents.read_document(scanned(ruled_pdf(tmp_path / "rooms.pdf"), tmp_path / "turned.pdf", angle=angle))
    assert "Waiting lounge" in doc.text and "linkspan" in doc.text
    assert doc.text.index("Waiting lounge") < doc.text.index("linkspan") and "T-02 | Ticket office | 6" in doc.text


def test_a_page_ocr_cannot_read_gets_one_line_and_the_rest_is_indexed(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAG_INDEX_DIR", str(tmp_path / "index"))
    from reportlab.lib.pagesizes import A6
    from reportlab.pdfgen import canvas
    two = tmp_path / "two.pdf"
    c = canvas.Canvas(str(two), pagesize=A6, invariant=1)
    c.setFont("Helvetica", 12)
    c.drawString(20, 300, "Crew mess rules: boots off in the mess.")
    c.showPage()
    c.drawString(20, 300, "anything")
    c.showPage()
    c.save()
    folder = tmp_path / "docs"
    folder.mkdir()
    scanned(two, folder / "notes.pdf", blank_pages={2})
    r = vi.build_index(folder, "titled", progress=False)
    err = [x for x in capsys.readouterr().err.splitlines() if x.startswith("warning:")]
    assert err == [f"warning: {folder / 'notes.pdf'}: page 2 could not be read by OCR with confidence (0.00), left out"]
    assert r["docs"] == 1 and r["skipped"] == 0 and r["chunks"] >= 1
    metas = vi.get_all(vi.get_collection(folder, "titled"), ["metadatas"])["metadatas"]
    assert {m["page"] for m in metas} == {1} and all(m["ocr"] for m in metas)


def test_an_image_only_pdf_with_nothing_to_read_is_skipped_with_its_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_INDEX_DIR", str(tmp_path / "index"))
    blank = scanned(ruled_pdf(tmp_path / "rooms.pdf"), tmp_path / "blank.pdf", blank_pages={1})
    with pytest.raises(ValueError, match="no text layer, and OCR found no text it could read with confidence"):
        documents.read_document(blank)


def test_ocr_rows_join_cells_on_a_wide_gap_and_headings_by_stroke():
    found = [(0, 200, 0, 40, "Opening hours", 7.0), (0, 100, 60, 90, "Day", 3.0), (160, 260, 61, 91, "Hours", 3.0),
             (0, 400, 100, 130, "The office opens at nine and the lift", 3.0), (0, 90, 140, 170, "works.", 3.0)]
    assert ocr.rows(found) == [(-7, "Opening hours"), (None, "Day | Hours"),
                               (None, "The office opens at nine and the lift"), (None, "works.")]


def test_an_untagged_pdf_with_an_outline_takes_its_headings_from_it(tmp_path):
    """Every line in one font: only the outline (bookmarks) says which lines are headings, and their levels."""
    from reportlab.lib.pagesizes import A6
    from reportlab.pdfgen import canvas
    path = tmp_path / "fares.pdf"
    c = canvas.Canvas(str(path), pagesize=A6, invariant=1)
    c.setFont("Helvetica", 10)
    for y, line in ((380, "Fares"), (365, "A single is valid on the day."), (350, "Refunds"),
                    (335, "Unused singles are refunded."), (320, "Seasons"), (305, "A season covers two stops.")):
        c.drawString(20, y, line)
    for title, level in (("Fares", 0), ("Refunds", 1), ("Seasons", 0)):
        c.bookmarkPage(title)
        c.addOutlineEntry(title, title, level)
    c.showPage()
    c.save()
    doc = documents.read_document(path)
    assert [b.section for b in doc.blocks] == ["Fares", "Fares > Refunds", "Seasons"]
    assert "Unused singles are refunded." in doc.text[doc.blocks[1].start:doc.blocks[1].end]
