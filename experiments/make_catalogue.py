"""Writes catalogue/: the course catalogue of Tarrowmere College, a college made up for the lab, as 76 documents in
four formats with the layout real ones have, golden questions about them that often need two documents, and a
README with the counts. The output is committed, so a clone needs neither this script nor reportlab; a rerun writes
the same bytes.

    python -m experiments.make_catalogue                 # ~2 s: rewrites catalogue/docs/, golden.json, README.md
    python -m experiments.make_catalogue --out /tmp/cat  # the same files elsewhere
    python vector_index.py --corpus catalogue/docs       # index them

What each document says is in experiments/catalogue_facts.py and the questions in experiments/catalogue_golden.py;
this file writes the formats: PDFs (reportlab: a running header and page numbers, tables, one- and two-column
pages), Word files (python-docx: Title and Heading 1-3 styles, tables, a page header), HTML pages (a menu, a cookie
banner, a sidebar and a footer around <main>) and Markdown (# sections, pipe tables).
"""
import argparse
import datetime
import html
import io
import json
import shutil
import zipfile
from collections import Counter
from pathlib import Path

from experiments.catalogue_facts import COLLEGE, documents
from experiments.catalogue_golden import TEST_BUILDINGS, golden

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "catalogue"
DATE = datetime.datetime(2026, 6, 1, 9, 0, tzinfo=datetime.timezone.utc)


def esc(text):
    return html.escape(str(text), quote=False)


def write_pdf(path, title, header, parts):
    """A reportlab PDF: the title, then pages of one or two columns (BaseDocTemplate frames), a running header and a
    page number on each; invariant=1 so a rerun writes the same bytes."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4, landscape
    from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
    from reportlab.platypus import (BaseDocTemplate, Frame, ListFlowable, ListItem, NextPageTemplate, PageBreak,
                                    PageTemplate, Paragraph, Table, TableStyle)
    styles = getSampleStyleSheet()
    cell = ParagraphStyle("cell", parent=styles["BodyText"], fontSize=8.5, leading=10.5)
    w, ht = size = landscape(A4) if "timetable" in path.name else A4
    m, gap = 56, 18
    col = (w - 2 * m - gap) / 2
    deco = lambda c, d: (c.saveState(), c.setFont("Helvetica", 8), c.drawString(m, ht - 36, header),
                         c.drawRightString(w - m, 30, f"Page {d.page}"), c.restoreState())
    layouts = {"one": PageTemplate("one", [Frame(m, m, w - 2 * m, ht - 2 * m)], onPage=deco),
               "two": PageTemplate("two", [Frame(m, m, col, ht - 2 * m), Frame(m + col + gap, m, col, ht - 2 * m)],
                                   onPage=deco)}
    layout = parts[0][1] if parts[0][0] == "page" else "one"
    doc = BaseDocTemplate(str(path), pagesize=size, title=title, author=COLLEGE, invariant=1, pageCompression=1,
                          pageTemplates=[layouts[layout]] + [t for k, t in layouts.items() if k != layout])
    story = [Paragraph(esc(title), styles["Title"])]
    for n, part in enumerate(parts):
        if part[0] == "page" and n:
            layout = part[1]
            story += [NextPageTemplate(layout), PageBreak()]
        elif part[0] == "h":
            story.append(Paragraph(esc(part[2]), styles[f"Heading{part[1]}"]))
        elif part[0] == "p":
            story.append(Paragraph(esc(part[1]), styles["BodyText"]))
        elif part[0] == "list":
            story.append(ListFlowable([ListItem(Paragraph(esc(x), styles["BodyText"])) for x in part[1]],
                                      bulletType="bullet"))
        elif part[0] == "table":
            chars = [max(len(row[i]) for row in part[1]) + 4 for i in range(len(part[1][0]))]
            widths = [(w - 2 * m if layout == "one" else col) * n / sum(chars) for n in chars]
            t = Table([[Paragraph(esc(c), cell) for c in row] for row in part[1]], colWidths=widths, repeatRows=1,
                      hAlign="LEFT")
            t.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.4, colors.grey), ("VALIGN", (0, 0), (-1, -1), "TOP"),
                                   ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#dde4ee"))]))
            story.append(t)
    doc.build(story)


def write_docx(path, title, header, parts):
    """A Word file: Title and Heading 1-3 styles, bulleted lists, gridded tables and a page header; fixed dates."""
    from docx import Document
    d = Document()
    props = d.core_properties
    props.title, props.author, props.last_modified_by, props.revision = "", COLLEGE, COLLEGE, 1
    props.created = props.modified = DATE
    d.sections[0].header.paragraphs[0].text = header
    d.add_heading(title, 0)
    for part in parts:
        if part[0] == "h":
            d.add_heading(part[2], part[1])
        elif part[0] == "p":
            d.add_paragraph(part[1])
        elif part[0] == "list":
            for x in part[1]:
                d.add_paragraph(x, style="List Bullet")
        elif part[0] == "table":
            t = d.add_table(rows=len(part[1]), cols=len(part[1][0]))
            t.style = "Table Grid"
            for r, row in enumerate(part[1]):
                for c, value in enumerate(row):
                    t.cell(r, c).text = value
    buf = io.BytesIO()
    d.save(buf)
    src, out = zipfile.ZipFile(buf), io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:   # zip entries dated 1980: the same bytes each run
        for info in src.infolist():
            z.writestr(zipfile.ZipInfo(info.filename, (1980, 1, 1, 0, 0, 0)), src.read(info.filename),
                       zipfile.ZIP_DEFLATED)
    path.write_bytes(out.getvalue())


def html_body(parts):
    out = []
    for part in parts:
        if part[0] == "h":
            out.append(f"<h{part[1] + 1}>{esc(part[2])}</h{part[1] + 1}>")
        elif part[0] == "p":
            out.append(f"<p>{esc(part[1])}</p>")
        elif part[0] == "list":
            out.append("<ul>" + "".join(f"<li>{esc(x)}</li>" for x in part[1]) + "</ul>")
        elif part[0] == "table":
            head, *rows = part[1]
            out.append("<table>\n<tr>" + "".join(f"<th>{esc(c)}</th>" for c in head) + "</tr>\n" + "\n".join(
                "<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows) + "\n</table>")
    return "\n".join(out)


def write_html(path, title, parts):
    """A web page of the college site: the text in <main> among a menu, a cookie banner, a sidebar and a footer."""
    section = "Courses" if path.stem[:3].isalpha() and path.stem[3:4] == "-" else "People"
    path.write_text(f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)} | {COLLEGE}</title>
<link rel="stylesheet" href="/static/site.css"><script src="/static/analytics.js"></script></head>
<body>
<header class="site-header"><a class="logo" href="/">{COLLEGE}</a>
<nav class="main-menu"><a href="/study">Study</a> <a href="/courses">Courses</a> <a href="/people">People</a>
<a href="/campus">Campus</a> <a href="/apply">Apply</a></nav></header>
<div id="cookie-banner" class="cookie-banner"><p>We use cookies to remember your choices and count visits.</p>
<button>Accept all</button> <button>Manage preferences</button></div>
<main id="content">
<nav class="breadcrumbs"><a href="/">Home</a> / <a href="/{section.lower()}">{section}</a></nav>
<h1>{esc(title)}</h1>
{html_body(parts)}
</main>
<aside class="sidebar"><h2>Quick links</h2><ul><li><a href="/calendar">Academic calendar</a></li>
<li><a href="/library">Library</a></li><li><a href="/services">IT help</a></li></ul></aside>
<footer class="site-footer"><p>{COLLEGE}, 4 Lisk Road, Tarrowmere. Privacy notice. Accessibility statement.</p>
</footer>
</body></html>
""", encoding="utf-8")


def write_md(path, title, parts):
    out = [f"# {title}"]
    for part in parts:
        if part[0] == "h":
            out.append(f"{'#' * (part[1] + 1)} {part[2]}")
        elif part[0] == "p":
            out.append(part[1])
        elif part[0] == "list":
            out.append("\n".join(f"- {x}" for x in part[1]))
        elif part[0] == "table":
            rows = [f"| {' | '.join(r)} |" for r in part[1]]
            out.append("\n".join([rows[0], "|" + "---|" * len(part[1][0]), *rows[1:]]))
    path.write_text("\n\n".join(out) + "\n", encoding="utf-8")


def write(folder):
    """Every document of catalogue_facts.documents() into folder, in the writer of its extension."""
    writers = {".pdf": write_pdf, ".docx": write_docx, ".html": lambda f, t, _, parts: write_html(f, t, parts),
               ".md": lambda f, t, _, parts: write_md(f, t, parts)}
    for name, (title, header, parts) in sorted(documents().items()):
        writers[Path(name).suffix](folder / name, title, header, parts)


def readme(docs, items):
    """catalogue/README.md: what the folder is, its counts by format and by question type, how it was made."""
    kinds = Counter(f.suffix for f in docs.iterdir())
    hops = Counter(i["hops"] for i in items)
    formats = f"{kinds['.pdf']} PDF, {kinds['.docx']} Word (.docx), {kinds['.html']} HTML and {kinds['.md']} Markdown"
    questions = (f"{hops[1]} single-hop and {len(items) - hops[1]} multi-hop ({hops[2]} of two hops, {hops[3]} of "
                 "three)")
    half = {s: Counter(i["hops"] for i in items if i["split"] == s) for s in ("dev", "test")}
    halves = "; ".join(f"{s} {sum(n.values())} ({n[1]} single-hop, {n[2]} two-hop, {n[3]} three-hop)"
                       for s, n in half.items())
    return f"""# The Tarrowmere College catalogue

A second corpus for the lab, beside `corpus/`: the course catalogue of {COLLEGE}, a college made up for the lab.
Every name, course code, room, date and figure in it is invented, so no language model can answer its questions
from memory: only what is retrieved can.

- `docs/`: {sum(kinds.values())} documents, {formats}: programme brochures, course
  outlines, staff profiles, buildings and rooms, the teaching and examination timetables, admissions rules, fees,
  the examination regulations, the student handbook. They have the layout real ones have: PDFs with a running
  header, page numbers, tables and two-column pages; Word files with Title and Heading 1-3 styles, tables and a
  page header; web pages with a menu, a cookie banner, a sidebar and a footer around `<main>`.
- `golden.json`: {len(items)} questions in the shape of the lab's `golden.json` (`"source": "catalogue"`),
  {questions}, each hop with the document that answers it. The facts are spread so
  that a multi-hop question needs two documents: a course page names its prerequisites by code only, an
  instructor's office is only on the staff profile, and only `buildings-and-rooms.pdf` says which building a room
  is in.
- The questions are split by entity (each item's `"split"`, with the `"entities"` it passes through): no course,
  person, room, building, programme or society is in both halves. The test half is the four buildings
  {", ".join(sorted(TEST_BUILDINGS))} and every room, office, instructor, course, programme and society in them:
  {halves}. Choose on dev, report on test (`--split test` where a script has it).

Generated by `python -m experiments.make_catalogue` (the facts are in `experiments/catalogue_facts.py`, the questions
in `experiments/catalogue_golden.py`); a rerun writes the same bytes. Index and evaluate it with
`python vector_index.py --corpus catalogue/docs` and
`python retrieve.py --corpus catalogue/docs --golden catalogue/golden.json --eval`.
"""


def main():
    ap = argparse.ArgumentParser(description="Write catalogue/: the documents of a made-up college and golden "
                                             "questions about them.")
    ap.add_argument("--out", type=Path, default=OUT, help="the folder to write docs/ and golden.json into "
                                                          "(default: catalogue/)")
    args = ap.parse_args()
    docs = args.out / "docs"
    shutil.rmtree(docs, ignore_errors=True)
    docs.mkdir(parents=True)
    write(docs)
    items = golden()
    (args.out / "golden.json").write_text(json.dumps(items, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (args.out / "README.md").write_text(readme(docs, items), encoding="utf-8")
    kinds, multi = Counter(f.suffix[1:] for f in docs.iterdir()), sum(i["type"] == "multi" for i in items)
    print(f"{args.out}: {sum(kinds.values())} documents ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}), "
          f"{len(items)} questions ({len(items) - multi} single, {multi} multi)")


if __name__ == "__main__":
    main()
