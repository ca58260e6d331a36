"""Word and HTML files as lines: (heading level or None, line), a table row's cells joined by ' | '. lab/documents.py
cuts them into sections (read_docx, read_html).

    from lab.office import docx_parts, html_parts
    docx_parts(raw)   # ('Programme Rules', [(None, 'These rules ...'), (1, 'Admissions'), (None, 'AST 201 | ...')])

Expected output: the title and the lines in document order. python-docx reads Word (Title and Heading 1-9 styles);
BeautifulSoup on lxml reads HTML's main text without menus, headers, footers, sidebars and cookie banners (chosen by
python -m experiments.loaders_choice). Not handled: text boxes and footnotes in Word, text drawn by scripts in HTML.
"""
import io
import re

BOILERPLATE = re.compile(r"(^|[-_ ])(nav|navbar|navigation|menu|breadcrumbs?|footer|site-footer|sidebar|cookies?|"
                         r"cookie-notice|consent|social|skip-link|advert|ads)([-_ ]|$)", re.I)
DROP_TAGS = ["script", "style", "noscript", "template", "svg", "form", "nav", "header", "footer", "aside", "iframe",
             "button", "select"]
BLOCK_TAGS = {"p", "div", "section", "article", "main", "li", "tr", "pre", "blockquote", "dd", "dt", "figcaption",
              "caption", "body", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "table"}


def docx_parts(raw):
    """Word bytes -> (title, [(heading level or None, line)]) by python-docx: the Title style (or the file's title
    property) is the title; Heading 1-9 styles are headings; a table row is a line, its cells joined by " | "."""
    import zipfile

    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph
    try:
        d = docx.Document(io.BytesIO(raw))
    except (zipfile.BadZipFile, KeyError, ValueError) as e:
        raise ValueError(f"corrupt Word file ({type(e).__name__}: {str(e)[:60]})") from None
    parts, title = [], (d.core_properties.title or "").strip()
    for block in d.element.body.iterchildren():
        tag = block.tag.rsplit("}", 1)[-1]
        if tag == "p":
            p = Paragraph(block, d)
            text, style = " ".join(p.text.split()), p.style.name if p.style is not None else ""
            if text and style == "Title" and not title:
                title = text
            elif text:
                m = re.fullmatch(r"Heading (\d)", style)
                parts.append((int(m.group(1)) if m else None, text))
        elif tag == "tbl":
            for row in Table(block, d).rows:
                grid = row.cells   # a merged cell is the same cell again at each grid column it spans
                cells = [" ".join(c.text.split()) for n, c in enumerate(grid) if n == 0 or c._tc is not grid[n - 1]._tc]
                cells = [c for c in cells if c]
                if cells:
                    parts.append((None, " | ".join(cells)))
    return title, parts


def html_parts(raw):
    """HTML bytes -> (title, [(heading level or None, line)]) of its main text, boilerplate dropped."""
    from bs4 import BeautifulSoup, Comment, Declaration, Doctype, ProcessingInstruction
    soup = BeautifulSoup(raw, "lxml")
    page_title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup(DROP_TAGS):
        tag.decompose()
    boiler = lambda t: (t.get("role") in ("navigation", "banner", "contentinfo")
                        or BOILERPLATE.search(" ".join(t.get("class") or [])) or BOILERPLATE.search(t.get("id") or ""))
    for tag in soup.find_all(boiler):
        if not tag.decomposed and tag.name not in ("body", "html", "main") and not tag.find(["main", "article", "h1"]):
            tag.decompose()   # a wrapper that holds the page's main text stays
    root = soup.find("main") or soup.find(attrs={"role": "main"}) or soup.find("article") or soup.body or soup
    lines, current, block, cell = [], [], None, None
    for s in root.find_all(string=True):
        if isinstance(s, (Comment, Declaration, Doctype, ProcessingInstruction)) or not s.strip():
            continue
        owner = next((p for p in s.parents if p.name in BLOCK_TAGS), None)
        in_cell = next((p for p in s.parents if p.name in ("td", "th")), None)
        if owner is not block and current:
            lines.append((block, " ".join(current)))
            current = []
        text = " ".join(s.split())
        current.append(f"| {text}" if current and in_cell is not None and in_cell is not cell else text)
        block, cell = owner, in_cell
    if current:
        lines.append((block, " ".join(current)))
    heading = lambda b: int(b.name[1]) if b is not None and re.fullmatch(r"h[1-6]", b.name) else None
    parts = [(heading(b), t) for b, t in lines]
    h1 = next((i for i, (level, _) in enumerate(parts) if level == 1), None)
    title = parts.pop(h1)[1] if h1 is not None else page_title   # the title, like a .txt file's line 1
    return title, parts
