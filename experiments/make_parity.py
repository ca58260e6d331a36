"""Builds parity/'s Markdown sources in five formats, as the format-parity check (issue 61) builds an unseen folder:
Markdown as written, HTML (markdown-it-py; half the sources' tables with drawn cell borders, half as the browser
draws a bare <table>, without lines), PDF printed from that HTML by headless Chromium, Word (python-docx:
Title and Heading styles, real tables) and scanned PDF (each printed page rendered at 150 dpi in greyscale, turned by
under half a degree, saved as an image-only PDF by Pillow: no text layer).

    python -m experiments.make_parity                      # ~40 s: parity/built/{md,html,pdf,docx,scan}/
    python -m experiments.make_parity --out /tmp/parity    # elsewhere
    python -m experiments.format_parity                    # then measure the formats (experiments/format_parity.py)

Expected output: one line per format with its file count and pages, e.g. `pdf    16 files  19 pages`.
Needs Debian's Chromium (`apt-get install chromium`) for the PDFs; everything else is in requirements.txt. The
turns are seeded (a rerun writes the same scans); the PDFs carry Chromium's date in their metadata only.
Not handled: Markdown beyond headings, paragraphs and pipe tables (lists and code print, but Word gets them as
plain paragraphs).
"""
import argparse
import random
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "parity" / "sources"
OUT = ROOT / "parity" / "built"
FORMATS = ("md", "html", "pdf", "docx", "scan")
DPI = 150                 # the scans' resolution, as the hidden check makes them
MAX_TURN = 0.45           # degrees: every scanned page is turned by a seeded angle in [-MAX_TURN, MAX_TURN]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--no-pdf-header-footer"]
CSS = "body{font-family:sans-serif;max-width:46em;margin:2em auto;line-height:1.4}"
RULED = "table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #888;padding:4px 8px;text-align:left}"


def markdown():
    """A markdown-it parser, with pipe tables on (CommonMark alone has none)."""
    from markdown_it import MarkdownIt
    return MarkdownIt("commonmark").enable("table")


def to_html(source, ruled=True):
    """A .md source -> a standalone HTML page; its '# ' line is the <h1> and the <title>. ruled: tables with drawn
    cell borders (else the browser's default table: no lines at all)."""
    import html
    text = source.read_text()
    title = text.splitlines()[0].lstrip("# ").strip()
    body = markdown().render(text)
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{CSS}{RULED if ruled else ''}</style></head>\n<body><main>\n{body}</main></body></html>\n")


def to_docx(source, path):
    """A .md source -> a Word file: the '# ' line in the Title style, '##'/'###' as Heading 1/2, tables as tables."""
    import docx
    text = source.read_text()
    tokens = markdown().parse(text)
    d = docx.Document()
    table, row = None, None
    for n, t in enumerate(tokens):
        if t.type == "heading_open":
            level = int(t.tag[1]) - 1
            d.add_heading(tokens[n + 1].content, level)    # level 0 is Word's Title style
        elif t.type == "paragraph_open" and table is None:
            d.add_paragraph(tokens[n + 1].content.replace("\n", " "))
        elif t.type == "table_open":
            table = []
        elif t.type == "tr_open":
            row = []
        elif t.type == "inline" and row is not None:
            row.append(t.content)
        elif t.type == "tr_close":
            table.append(row)
            row = None
        elif t.type == "table_close":
            grid = d.add_table(rows=len(table), cols=len(table[0]))
            grid.style = "Table Grid"
            for r, cells in enumerate(table):
                for c, cell in enumerate(cells):
                    grid.cell(r, c).text = cell
            table = None
    d.core_properties.title = text.splitlines()[0].lstrip("# ").strip()
    d.save(path)


def print_pdf(html_path, pdf_path, chromium):
    """Headless Chromium prints the page to PDF (A4/Letter as Chromium's default, no date/URL header)."""
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([chromium, *CHROMIUM_ARGS, f"--user-data-dir={profile}", f"--print-to-pdf={pdf_path}",
                        html_path.resolve().as_uri()], check=True, capture_output=True, timeout=120)


def scan(pdf_path, out_path, rng, dpi=DPI):
    """A PDF -> an image-only PDF of its pages: rendered at dpi in greyscale, each turned by under MAX_TURN degrees
    (white fills the corners). Returns the page count."""
    import pypdfium2 as pdfium
    pdf = pdfium.PdfDocument(str(pdf_path))
    images = []
    for i in range(len(pdf)):
        image = pdf[i].render(scale=dpi / 72, grayscale=True).to_pil().convert("L")
        images.append(image.rotate(rng.uniform(-MAX_TURN, MAX_TURN), expand=False, fillcolor=255))
    pdf.close()
    images[0].save(out_path, "PDF", resolution=dpi, save_all=True, append_images=images[1:])
    return len(images)


def build(out=OUT, sources=SOURCES, seed=61):
    """Every source in every format under out/<format>/; {format: (files, pages)}."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        raise SystemExit("make_parity: Chromium is needed to print the PDFs: apt-get install chromium")
    import pypdfium2 as pdfium
    rng, counts = random.Random(seed), {}
    for f in FORMATS:
        shutil.rmtree(out / f, ignore_errors=True)
        (out / f).mkdir(parents=True)
    for n, source in enumerate(sorted(sources.glob("*.md"))):
        shutil.copy(source, out / "md" / source.name)
        html_path = out / "html" / f"{source.stem}.html"
        html_path.write_text(to_html(source, ruled=n % 2 == 0))   # half the tables with drawn lines, half without
        to_docx(source, out / "docx" / f"{source.stem}.docx")
        print_pdf(html_path, out / "pdf" / f"{source.stem}.pdf", chromium)
        scan(out / "pdf" / f"{source.stem}.pdf", out / "scan" / f"{source.stem}.pdf", rng)
    for f in FORMATS:
        files = sorted((out / f).iterdir())
        pages = sum(len(pdfium.PdfDocument(str(p))) for p in files) if f in ("pdf", "scan") else len(files)
        counts[f] = (len(files), pages)
    return counts


def main():
    ap = argparse.ArgumentParser(description="Build parity/sources in five formats (md, html, pdf, docx, scan).")
    ap.add_argument("--out", type=Path, default=OUT, help="folder for md/ html/ pdf/ docx/ scan/")
    ap.add_argument("--sources", type=Path, default=SOURCES, help="folder of .md sources")
    ap.add_argument("--seed", type=int, default=61, help="seed of the scans' turns")
    args = ap.parse_args()
    from lab.cache import portable
    print(f"sources {portable(str(args.sources.resolve()))}  out {portable(str(args.out.resolve()))}  dpi {DPI}  "
          f"turn <= {MAX_TURN} deg  seed {args.seed}")
    for f, (files, pages) in build(args.out, args.sources, args.seed).items():
        print(f"{f:<6} {files:>3} files {pages:>4} pages")


if __name__ == "__main__":
    main()
