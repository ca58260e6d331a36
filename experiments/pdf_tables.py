"""How a printed PDF's tables come back, by library and way of reading (issue 61 item 1): the rows of the parity
sources' tables that come back from their Chromium-printed PDFs as one line with every cell, in order, as a cell.

    python -m experiments.pdf_tables                 # ~20 s: parity/built/pdf/ against parity/sources/
    python -m experiments.pdf_tables --json results/pdf_tables.json

Expected output: one row per way, rows as cells (share of the sources' table rows), in order (share of the rows
that come back after the row before them, as in the source), seconds per page, licence:
    way                          rows as cells  in order  s/page  licence
    pypdfium2 text layer                 0.000     1.000   0.004  Apache-2.0/BSD
    pdfplumber ruled lines               ...
The ways: pypdfium2's text layer as the lab read PDFs before (a row is a line of words); pdfplumber's find_tables by
drawn lines ('lines'), by word alignment ('text'); pdfplumber's reading of the PDF's tags (the structure tree:
TR, TH, TD), which lab/pdf.py uses first. PyMuPDF's find_tables was not tried: AGPL-3.0, which a course lab that
students copy into their own projects cannot take on. camelot needs Ghostscript, an apt package on every machine.
Not handled: tables that continue over a page break are counted per page piece.
"""
import argparse
import io
import time
from pathlib import Path

from experiments.format_parity import SOURCES, cells, source_facts

ROOT = Path(__file__).resolve().parent.parent
PDFS = ROOT / "parity" / "built" / "pdf"
LICENCES = {"pypdfium2 text layer": "Apache-2.0/BSD", "pdfplumber ruled lines": "MIT",
            "pdfplumber word alignment": "MIT", "pdfplumber tags (lab/pdf.py)": "MIT"}


def by_pypdfium2(raw):
    from lab.documents import pdf_pages
    return "\n".join(pdf_pages(raw)[1]).splitlines()


def by_plumber(raw, strategy):
    import pdfplumber
    out = []
    with pdfplumber.open(io.BytesIO(raw)) as pdf:
        for page in pdf.pages:
            settings = {"vertical_strategy": strategy, "horizontal_strategy": strategy}
            for table in page.extract_tables(settings):
                out += [" | ".join((c or "").strip() for c in row if c and c.strip()) for row in table]
    return out


def by_tags(raw):
    from lab.pdf import pdf_lines
    return [t for page in pdf_lines(raw) for _, t in page]


WAYS = {"pypdfium2 text layer": by_pypdfium2, "pdfplumber ruled lines": lambda raw: by_plumber(raw, "lines"),
        "pdfplumber word alignment": lambda raw: by_plumber(raw, "text"), "pdfplumber tags (lab/pdf.py)": by_tags}


def main():
    ap = argparse.ArgumentParser(description="PDF table rows as cells, by library and way of reading.")
    ap.add_argument("--pdfs", type=Path, default=PDFS, help="folder of printed PDFs named as the sources")
    ap.add_argument("--sources", type=Path, default=SOURCES, help="the .md sources")
    ap.add_argument("--json", type=Path, help="write the rows here")
    args = ap.parse_args()
    import pypdfium2 as pdfium
    files = sorted(args.pdfs.glob("*.pdf"))
    pages = sum(len(pdfium.PdfDocument(str(p))) for p in files)
    from lab.cache import portable
    print(f"pdfs {portable(str(args.pdfs.resolve()))} ({len(files)} files, {pages} pages)  "
          f"sources {portable(str(args.sources.resolve()))}")
    rows = []
    for way, read in WAYS.items():
        want = found = ordered = 0
        start = time.time()
        for path in files:
            source_rows = source_facts(args.sources / f"{path.stem}.md")[0]
            got = [cells(x) for x in read(path.read_bytes())]
            pos = 0
            for r in source_rows:   # in order: found after the row found before it
                found += r in got
                if r in got[pos:]:
                    ordered += 1
                    pos = got.index(r, pos) + 1
            want += len(source_rows)
        rows.append({"way": way, "rows_as_cells": round(found / max(want, 1), 3), "rows": want,
                     "in_order": round(ordered / max(want, 1), 3),
                     "s_per_page": round((time.time() - start) / pages, 4),
                     "licence": LICENCES[way]})
    print(f"{'way':<30}{'rows as cells':>14}{'in order':>10}{'s/page':>8}  licence")
    for r in rows:
        print(f"{r['way']:<30}{r['rows_as_cells']:>14.3f}{r['in_order']:>10.3f}{r['s_per_page']:>8.3f}  {r['licence']}")
    if args.json:
        from lab.cache import write_json
        write_json(args.json, {"pdfs": str(args.pdfs.resolve()), "rows": rows})


if __name__ == "__main__":
    main()
