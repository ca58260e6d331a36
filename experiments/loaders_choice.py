"""Which library reads each format: extraction quality and speed on generated files whose text is known, and speed
with two cheap checks on real files of this machine. lab/documents.py uses the winners (requirements.txt says why).

    python -m experiments.loaders_choice                  # ~1 min, writes results/loaders_choice.txt
    python -m experiments.loaders_choice --json /tmp/loaders.json

Expected output: one table per format, one row per library, then the choice:
    chosen (...): pdf pypdfium2, docx python-docx, html bs4+lxml (documents.py)
What is measured:
- generated files (reportlab, fpdf2, python-docx, HTML written here) of seeded catalogue-like sentences with a few
  non-ASCII characters, their text known page by page (PDF) or whole, their headings too; recall: the share of the
  known words returned; in-order: the longest in-order matches (difflib), so columns or cells read out of order score
  low; junk: words returned that are neither the text nor a page's running header/footer (HTML: menus, banners,
  sidebars, footers are junk), per known word; headings: the share returned as headings at their level;
- real files found here: PDFs of /usr/share/doc (pages/s, words run together, words split at a line end) and
  rustdoc/mdBook pages (the recall of <main>'s words, the leak of <nav>-only words);
- speed: best of 3 rounds. lab/documents.py's own readers stand for pypdfium2, python-docx and BeautifulSoup.
A library that is not installed is one "skipped" row (`pip install pypdf pdfplumber trafilatura docx2txt fpdf2`).
"""
import argparse
import datetime
import difflib
import glob
import importlib.metadata as md
import json
import os
import random
import re
import shlex
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).parent.parent
OUT = ROOT / "results" / "loaders_choice.txt"
SEED = 0
ROUNDS = 3
REAL_PDFS = ["/usr/share/doc/libtasn1-doc/libtasn1.pdf", "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"]
REAL_HTML = ["/root/.rustup/toolchains/*/share/doc/rust/html/book/ch*.html",       # mdBook pages
             "/root/.rustup/toolchains/*/share/doc/rust/html/std/collections/*.html"]   # rustdoc pages
REAL_HTML_N = 20   # pages of each kind
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"    # an embedded subset font when there is one
WORD = re.compile(r"\w+")
HEADER, FOOTER = "Northfield College Handbook 2026", "Page"
BOILER = ("Home Courses Apply now Contact us Search the site | Cookie preferences: we use cookies to improve your "
          "visit, accept all or manage | Related links Library hours Campus map Parking permits | Copyright 2026 "
          "Northfield College Registered charity Follow us on social media Privacy notice Accessibility statement")
PEOPLE = ["Dr Amara Okafor", "Prof. Lena Varga", "Dr Tomás Ibarra", "Ms Ruth O’Neill", "Dr Kenji Mori"]
COURSES = ["Astrobiology I", "Organic Chemistry", "Planetary Geology", "Microbial Ecology", "Cell Biology",
           "Statistics for Scientists", "Radio Astronomy", "Café Lumière Seminar", "Exoplanet Atmospheres"]
PLACES = ["Hartley Building", "Lovelace Hall", "the Observatory", "Mercer Annex"]


def sentences(rng, n):
    """n catalogue-like sentences, seeded: known words with some accents, an apostrophe and an en dash."""
    forms = [lambda: f"{rng.choice(COURSES)} is taught by {rng.choice(PEOPLE)} in {rng.choice(PLACES)} room "
                     f"{rng.randint(100, 450)}.",
             lambda: f"Students who enrol in {rng.choice(COURSES)} must first pass {rng.choice(COURSES)} with a "
                     f"grade of {rng.choice('ABC')} or better.",
             lambda: f"The seminar meets on {rng.choice(['Mondays', 'Tuesdays', 'Thursdays'])} from "
                     f"{rng.randint(9, 15)}:00 to {rng.randint(16, 18)}:00 during the 2026–27 session.",
             lambda: f"A naïve approach to {rng.choice(COURSES).lower()} is discussed in week {rng.randint(1, 12)}, "
                     "together with the reading list and the laboratory safety rules."]
    return " ".join(rng.choice(forms)() for _ in range(n))


def words(text):
    return WORD.findall(text.lower())


def score(truth, got, allowed=""):
    """(recall, in-order, junk) of extracted text against the known text; `allowed` words are not junk."""
    t, g = words(truth), words(got)
    common = sum((Counter(t) & Counter(g)).values())
    blocks = difflib.SequenceMatcher(None, t, g, autojunk=False).get_matching_blocks()
    ok = set(t) | set(words(allowed))
    return common, sum(b.size for b in blocks), sum(w not in ok for w in g), len(t)


def make_pdfs(folder, rng):
    """Four PDFs: one column justified, two columns, a table (reportlab), and fpdf2 with an embedded font.
    -> [(path, [known text of each page], [], words that are not junk)]"""
    from reportlab.lib.enums import TA_JUSTIFY
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
    from reportlab.platypus import BaseDocTemplate, Frame, FrameBreak, PageBreak, PageTemplate, Paragraph, Table
    out, W, H, m = [], *A4, 56
    styles = getSampleStyleSheet()
    body = ParagraphStyle("b", parent=styles["BodyText"], alignment=TA_JUSTIFY)

    def build(name, pages, columns):
        w = (W - 2 * m - 18) / columns
        frames = [Frame(m + c * (w + 18), m, w, H - 2 * m) for c in range(columns)]
        deco = lambda c, d: (c.setFont("Helvetica", 8), c.drawString(m, H - 36, HEADER),
                             c.drawRightString(W - m, 30, f"{FOOTER} {d.page}"))
        doc = BaseDocTemplate(str(folder / name), pagesize=A4, invariant=1)
        doc.addPageTemplates([PageTemplate(frames=frames, onPage=deco)])
        story, known = [], []
        for n, page in enumerate(pages):
            story += [PageBreak()] if n else []
            for c, col in enumerate(page):
                story += [FrameBreak()] if c else []
                story += [x if isinstance(x, Table) else Paragraph(x, styles["Heading2"] if x.startswith("§")
                                                                   else body) for x in col]
            known.append(" ".join(" ".join(" ".join(r) for r in x._cellvalues) if isinstance(x, Table) else x
                                  for col in page for x in col))
        doc.build(story)
        out.append((folder / name, known, [], f"{HEADER} {FOOTER} {len(pages)}"))

    build("one-column.pdf", [[[f"§ Section {n}", *(sentences(rng, 5) for _ in range(3))]] for n in range(8)], 1)
    build("two-columns.pdf", [[[f"§ Part {n}", sentences(rng, 6)], [sentences(rng, 7)]] for n in range(6)], 2)
    rows = [["Code", "Course", "Credits", "Room"]] + [[f"AST {100 + i}", rng.choice(COURSES), str(rng.randint(5, 20)),
                                                      f"{rng.choice(PLACES)} {rng.randint(1, 40)}"] for i in range(25)]
    build("table.pdf", [[["§ Timetable", Table(rows)]]], 1)
    try:
        from fpdf import FPDF
    except ImportError:
        print("fpdf2 not installed: its file is left out (pip install fpdf2)", file=sys.stderr)
        return out
    pdf, known = FPDF(), []
    font = "DejaVu" if Path(FONT).exists() else "Helvetica"
    if font == "DejaVu":
        pdf.add_font("DejaVu", fname=FONT)
    for n in range(4):
        pdf.add_page()
        pdf.set_font(font, size=14)
        pdf.cell(0, 10, f"Chapter {n}", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font(font, size=10)
        paras = [sentences(rng, 4) for _ in range(3)]
        for p in paras:
            pdf.multi_cell(0, 5, p, align="J", new_x="LMARGIN", new_y="NEXT")
        known.append(f"Chapter {n} " + " ".join(paras))
    pdf.set_creation_date(datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc))
    pdf.output(str(folder / "fpdf2-ttf.pdf"))
    out.append((folder / "fpdf2-ttf.pdf", known, [], ""))
    return out


def make_docx(folder, rng, n=8):
    """n Word files: title, headings at levels 1-3, paragraphs, a bullet list, a table, a page header.
    -> [(path, known text, [(level, heading)], words that are not junk)]"""
    from docx import Document
    out = []
    for i in range(n):
        d, known, heads = Document(), [], [(0, f"Programme {i} handbook")]
        d.sections[0].header.paragraphs[0].text = HEADER
        d.add_heading(heads[0][1], 0)
        for s in range(3):
            for level, h in ((1, f"Chapter {s}"), (2, f"Admissions {s}"), (3, f"Prerequisites {s}")):
                d.add_heading(h, level)
                heads.append((level, h))
                para = sentences(rng, 3)
                d.add_paragraph(para)
                known += [h, para]
            items = [rng.choice(COURSES) for _ in range(3)]
            for it in items:
                d.add_paragraph(it, style="List Bullet")
            rows = [[f"AST {rng.randint(100, 400)}", rng.choice(PEOPLE), rng.choice(PLACES)] for _ in range(3)]
            t = d.add_table(rows=3, cols=3)
            for r, row in enumerate(rows):
                for c, v in enumerate(row):
                    t.cell(r, c).text = v
            known += items + [" ".join(r) for r in rows]
        d.save(folder / f"doc{i}.docx")
        out.append((folder / f"doc{i}.docx", heads[0][1] + " " + " ".join(known), heads, HEADER))
    return out


def make_html(folder, rng, n=8):
    """n pages: menus, a cookie banner, a sidebar and a footer around headings, paragraphs and a list; one page is
    div soup (no <nav>/<main>), one is short (two sentences). -> [(path, known text, headings, words not junk)]"""
    out = []
    for i in range(n):
        heads, parts = [(1, f"Course page {i}")], []
        short = i == n - 1
        for s in range(1 if short else 3):
            h2, h3 = f"Overview {s}", f"Assessment {s}"
            p1, p2 = sentences(rng, 1 if short else 3), sentences(rng, 1 if short else 3)
            items = [rng.choice(COURSES) for _ in range(2)]
            heads += [(2, h2)] + ([] if short else [(3, h3)])
            parts.append((h2, p1, h3, p2, items))
        main = f"<h1>{heads[0][1]}</h1>" + "".join(
            f"<h2>{h2}</h2><p>{p1}</p>" + ("" if short else f"<h3>{h3}</h3><p>{p2}</p><ul>"
                                           + "".join(f"<li>{x}</li>" for x in items) + "</ul>")
            for h2, p1, h3, p2, items in parts)
        known = heads[0][1] + " " + " ".join(f"{h2} {p1}" + ("" if short else f" {h3} {p2} {' '.join(items)}")
                                              for h2, p1, h3, p2, items in parts)
        b = BOILER.split(" | ")
        if i == n - 2:   # div soup
            page = (f'<div class="site-top"><div class="main-menu">{b[0]}</div></div><div id="cookie-notice">{b[1]}'
                    f'</div><div id="content">{main}</div><div class="sidebar">{b[2]}</div><div class="site-footer">'
                    f'{b[3]}</div>')
        else:
            page = (f"<header><nav>{b[0]}</nav></header><div class=\"cookie-banner\">{b[1]}</div><main>{main}</main>"
                    f"<aside>{b[2]}</aside><footer>{b[3]}</footer>")
        html = (f"<!doctype html><html><head><title>{heads[0][1]} | Northfield</title><style>p{{color:red}}</style>"
                f"<script>var tracking = 'analytics';</script></head><body>{page}</body></html>")
        (folder / f"page{i}.html").write_text(html, encoding="utf-8")
        out.append((folder / f"page{i}.html", known, heads, ""))   # the boilerplate is junk
    return out


MARKDOWN = ("Astrobiology handbook\n=====================\n\nIntro.\n\n## Admissions\n\nTwo science courses.\n\n"
            "```bash\n# a comment in a code block\nmake index\n```\n\n#hashtag is no heading\n\n### Prerequisites ###\n"
            "\nChemistry 101.\n\nTimetable\n---------\n\nMondays.\n")
MARKDOWN_HEADS = [(1, "Astrobiology handbook"), (2, "Admissions"), (3, "Prerequisites"), (2, "Timetable")]


def pdf_readers():
    def pypdf_pages(path):
        from pypdf import PdfReader
        return [p.extract_text() or "" for p in PdfReader(path).pages], []

    def pdfium_pages(path):
        from lab import documents
        return documents.pdf_pages(Path(path).read_bytes(), 10**6)[1], []

    def plumber_pages(path):
        import pdfplumber
        with pdfplumber.open(path) as pdf:
            return [p.extract_text() or "" for p in pdf.pages], []
    return {"pypdf": pypdf_pages, "pypdfium2": pdfium_pages, "pdfplumber": plumber_pages}


def docx_readers():
    def python_docx(path):
        from lab import documents
        title, parts = documents.docx_parts(Path(path).read_bytes())
        return title + "\n" + "\n".join(t for _, t in parts), [(0, title)] + [(lv, t) for lv, t in parts if lv]

    def docx2txt(path):
        import docx2txt as d2t
        return d2t.process(str(path)), []

    return {"python-docx": python_docx, "docx2txt": docx2txt}


def html_readers():
    def trafilatura(path):
        import trafilatura as tf
        got = tf.extract(Path(path).read_text(encoding="utf-8"), output_format="markdown", include_tables=True,
                         include_formatting=True) or ""
        heads = [(len(m.group(1)), m.group(2).strip()) for m in re.finditer(r"^(#{1,6}) (.+)$", got, re.M)]
        return got, heads

    def bs4_rule(path):
        from lab import documents
        title, parts = documents.html_parts(Path(path).read_bytes())
        return title + "\n" + "\n".join(t for _, t in parts), [(1, title)] + [(lv, t) for lv, t in parts if lv]

    def bs4_all(path):
        from bs4 import BeautifulSoup
        return BeautifulSoup(Path(path).read_bytes(), "lxml").get_text(" "), []
    return {"trafilatura": trafilatura, "bs4+lxml (documents.py)": bs4_rule, "bs4 get_text": bs4_all}


def markdown_readers():
    def markdown_it(text):
        from markdown_it import MarkdownIt
        toks = MarkdownIt("commonmark").parse(text)
        return [(int(t.tag[1]), toks[i + 1].content) for i, t in enumerate(toks) if t.type == "heading_open"]

    def regex(text):
        return [(len(m.group(1)), m.group(2).strip().rstrip("#").strip())
                for m in re.finditer(r"^(#{1,6})\s+(.+)$", text, re.M)]
    return {"markdown-it-py": markdown_it, "regex ^#": regex}


def timed(fn, items):
    """Best of ROUNDS seconds for fn over every item, and the last round's results."""
    best, results = float("inf"), None
    for _ in range(ROUNDS):
        start = time.perf_counter()
        results = [fn(x) for x in items]
        best = min(best, time.perf_counter() - start)
    return best, results


def version(name):
    dist = {"bs4+lxml (documents.py)": "beautifulsoup4", "bs4 get_text": "beautifulsoup4", "regex ^#": None}
    try:
        return md.version(dist.get(name, name)) if dist.get(name, name) else "-"
    except md.PackageNotFoundError:
        return None


def measure(files, readers, real=()):
    """One row per reader: recall, in-order, junk (PDFs page by page), headings, speed; PDFs also on the real ones.
    files: [(path, known text or [known text of each page], [(level, heading)], words that are not junk)]"""
    rows = []
    for name, read in readers.items():
        if version(name) is None:
            rows.append({"library": name, "skipped": f"not installed: pip install {name}"})
            continue
        secs, got = timed(read, [f[0] for f in files])
        tot, found = [0, 0, 0, 0], 0
        for (path, known, heads, allowed), (text, got_heads) in zip(files, got):
            pages = known if isinstance(known, list) else [known]
            text = text if isinstance(text, list) else [text]
            for truth, t in zip(pages, text + [""] * (len(pages) - len(text))):
                tot = [a + b for a, b in zip(tot, score(truth, t, allowed))]
            found += len(set(heads) & set(got_heads))
        row = {"library": name, "version": version(name), "recall": tot[0] / tot[3], "in_order": tot[1] / tot[3],
               "junk": tot[2] / tot[3]}
        if isinstance(files[0][1], list):
            row["pages_per_s"] = sum(len(f[1]) for f in files) / secs
        else:
            row.update(headings=found / sum(len(f[2]) for f in files), docs_per_s=len(files) / secs)
        if real:
            rsecs, rgot = timed(read, real)
            text = "\n".join(t for pages, _ in rgot for t in pages)
            row.update(real_pages_per_s=sum(len(p) for p, _ in rgot) / rsecs,
                       long_tokens=sum(len(w) > 20 for w in words(text)),
                       split_words=len(re.findall(r"[a-z]-\n[a-z]", text)))
        rows.append(row)
    return rows


def measure_real_html(paths):
    """Real pages: recall of <main>'s words and the leak of words found only in <nav>, per library, and docs/s."""
    import lxml.etree
    import lxml.html
    rows, truth = [], []
    for p in paths:
        root = lxml.html.fromstring(Path(p).read_bytes())
        lxml.etree.strip_elements(root, "script", "style", "template", "noscript", with_tail=False)   # code, not text
        main = " ".join(" ".join(m.itertext()) for m in root.iter("main"))
        nav = set(words(" ".join(" ".join(n.itertext()) for n in root.iter("nav")))) - set(words(main))
        truth.append((main, nav))
    for name, read in html_readers().items():
        if version(name) is None:
            continue
        secs, got = timed(lambda p: read(p)[0], paths)
        rec = sum(score(m, g)[0] for (m, _), g in zip(truth, got)) / sum(len(words(m)) for m, _ in truth)
        leak = sum(len(nav & set(words(g))) for (_, nav), g in zip(truth, got)) / max(1, sum(len(n) for _, n in truth))
        rows.append({"library": name, "version": version(name), "main_recall": rec, "nav_leak": leak,
                     "docs_per_s": len(paths) / secs})
    return rows


def choose(report):
    """The rule the lab chose by: of the libraries that return (nearly) all the known text in order, with the headings
    where a format has them (HTML: also >= 0.95 of real pages' <main>), the fastest. -> {format: library}"""
    real = {r["library"]: r["main_recall"] for r in report["html_real"]}
    ok = lambda fmt, r: ("skipped" not in r and r["recall"] >= 0.99 and r["in_order"] >= 0.99
                         and r.get("headings", 1) >= 0.99 and (fmt != "html" or real.get(r["library"], 1) >= 0.95))
    speed = lambda r: r.get("real_pages_per_s") or r.get("pages_per_s") or r.get("docs_per_s")
    return {fmt: max((r for r in report[fmt] if ok(fmt, r)), key=speed, default={"library": "none"})["library"]
            for fmt in ("pdf", "docx", "html")}


RATIOS = ("recall", "in_order", "junk", "headings", "main_recall", "nav_leak")
NOTES = """notes: recall, in-order, junk and headings are shares (1.000 = all); speeds are best of 3 rounds here.
- PDF real: long tokens (over 20 letters) count words run together, split words a hyphen left at a line end; both
  PDFs are LaTeX/DocBook manuals with hyphenated justified text. PDFium joins a word hyphenated across lines.
- HTML real: lab/documents.py reads <main> first, so its recall there is near 1 by construction; what trafilatura
  leaves out of <main> is code listings and signatures, which its boilerplate rules take for clutter."""


def table(title, rows, cols):
    fmt = lambda c, v: (f"{'-':>15}" if v is None else f"{v:15.3f}" if c in RATIOS else f"{v:15.1f}"
                        if isinstance(v, float) else f"{v:15}")
    lines = [title, f"{'library':26}{'version':>9}" + "".join(f"{c.replace('_per_s', '/s'):>15}" for c in cols)]
    for r in rows:
        if "skipped" in r:
            lines.append(f"{r['library']:26}  skipped ({r['skipped']})")
        else:
            lines.append(f"{r['library']:26}{r.get('version') or '-':>9}" + "".join(fmt(c, r.get(c)) for c in cols))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description="Compare the document-reading libraries on files of known text.")
    ap.add_argument("--out", type=Path, default=OUT, help="the report (default results/loaders_choice.txt)")
    ap.add_argument("--json", type=Path, help="the same figures as JSON")
    args = ap.parse_args()
    rng = random.Random(SEED)
    real_pdfs = [p for p in REAL_PDFS if Path(p).exists()]
    real_html = [p for pattern in REAL_HTML for p in sorted(glob.glob(pattern))[:REAL_HTML_N]]
    print(f"rounds={ROUNDS} real_pdfs={len(real_pdfs)} real_html={len(real_html)}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        pdfs, docxs, htmls = make_pdfs(folder, rng), make_docx(folder, rng), make_html(folder, rng)
        report = {"pdf": measure(pdfs, pdf_readers(), real_pdfs),
                  "docx": measure(docxs, docx_readers()),
                  "html": measure(htmls, html_readers()),
                  "html_real": measure_real_html(real_html) if real_html else [],
                  "markdown": [{"library": n, "version": version(n) or "-",
                                "headings": len(set(fn(MARKDOWN)) & set(MARKDOWN_HEADS)) / len(MARKDOWN_HEADS),
                                "false_headings": len(set(fn(MARKDOWN)) - set(MARKDOWN_HEADS))}
                               for n, fn in markdown_readers().items()]}
    pages = sum(len(f[1]) for f in pdfs)
    text = "\n\n".join([
        f"command: python -m experiments.loaders_choice {shlex.join(sys.argv[1:])}".rstrip()
        + f"  ({os.cpu_count()} cores, Python {sys.version.split()[0]})",
        table(f"PDF: {len(pdfs)} generated files, {pages} pages of known text (one column justified, two columns, a "
              f"table, fpdf2 with an embedded TTF font); real: {len(real_pdfs)} PDFs of /usr/share/doc", report["pdf"],
              ["recall", "in_order", "junk", "pages_per_s", "real_pages_per_s", "long_tokens", "split_words"]),
        table(f"DOCX: {len(docxs)} generated files (title, headings 1-3, paragraphs, bullets, tables, a page header)",
              report["docx"], ["recall", "in_order", "junk", "headings", "docs_per_s"]),
        table(f"HTML: {len(htmls)} generated pages (menus, cookie banner, sidebar, footer; one div soup, one short)",
              report["html"], ["recall", "in_order", "junk", "headings", "docs_per_s"]),
        table(f"HTML, real: {len(real_html)} rustdoc/mdBook pages of this machine (truth: <main>'s words; leak: "
              "words only in <nav>)", report["html_real"], ["main_recall", "nav_leak", "docs_per_s"]),
        table("Markdown: headings of a file with setext headings, closing #s, a # comment in a code block, #hashtag",
              report["markdown"], ["headings", "false_headings"]),
        "chosen (all the known text in order, the headings, then the fastest; choose()): "
        + ", ".join(f"{fmt} {lib}" for fmt, lib in choose(report).items()), NOTES])
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n", encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
