"""A PDF page as lines the way the other formats give them: headings with their level, table rows as 'a | b | c'
(header row first), the rest of the text in reading order. lab/documents.read_pdf cuts the lines into page and
section blocks; lab/ocr.py gives the same lines for a page that has no text layer.

    from lab.pdf import pdf_lines
    pages = pdf_lines(raw)   # pages[0] -> [(None, 'The fleet has five vessels.'), (2, 'Vessels'),
                             #              (None, 'Vessel | Built | Cars'), (None, 'MV Gannet Rock | 2004 | 42')]

Expected output: one list per page of (heading level or None, line); [] for a page with no text layer.
Three ways in, the best the file allows (chosen by python -m experiments.pdf_tables, results/pdf_tables.txt):
- tagged PDF (Chromium, Word and LibreOffice print tags): the structure tree says which text is a heading (H1-H6),
  a table row (TR) and its cells (TH, TD), a paragraph; read in the tree's order, so nothing is guessed. Running
  headers and footers are artifacts, outside the tree.
- untagged: pdfplumber finds tables by their drawn lines, and the text around them in reading order by position; a
  line in a larger font than the body (or all bold and short) is a heading, its level by size.
- the PDF's outline (bookmarks), when it has one, says which lines of untagged pages are headings, and their levels.
Also here: pdf_pages (pypdfium2: the title, each page's text layer, and the one-line reasons for an encrypted, corrupt
or too long file) and strip_running (running headers, footers and page numbers).
Not handled: tables without drawn lines in untagged PDFs (their rows stay lines of words), multi-column reading order
in untagged PDFs, headings printed as images.
"""
import io
import re
from collections import Counter

PAGE_NUMBER = re.compile(r"(?:page|p\.|pg\.?)?\s*[-–]?\s*\d+\s*[-–]?(?:\s*(?:/|of)\s*\d+)?", re.I)
HEADING_RATIO = 1.15     # a line whose font is this much larger than the body's is a heading (untagged PDFs)
HEADING_WORDS = 14       # a larger or bold line is a heading only when this short (and not ending as a sentence)
MAX_PAGES = 200          # lab/documents.MAX_PAGES: a PDF with more pages is refused
EDGE = 0.04              # the top and bottom 4% of a page: where printed headers and footers sit
TAG_COVERAGE = 0.8       # a page is read by its tags when they cover this share of its characters


def pdf_lines(raw, pages=None):
    """PDF bytes -> [[(heading level or None, line)] per page]. ValueError for a file pdfplumber cannot open."""
    import pdfplumber
    try:
        pdf = pdfplumber.open(io.BytesIO(raw))
        pdf_pages = pdf.pages if pages is None else pdf.pages[:pages]
    except Exception as e:   # pdfminer raises many kinds on a broken file (pypdfium2 has read it first)
        raise ValueError(f"corrupt PDF ({type(e).__name__})") from None
    with pdf:
        tagged = tagged_lines(pdf, pdf_pages) or [None] * len(pdf_pages)
        plain = None
        out = []
        for n, page in enumerate(pdf_pages):
            if tagged[n] is not None:
                out.append(tagged[n])
                continue
            plain = plain if plain is not None else body_font(pdf_pages)
            out.append(layout_lines(page, plain))
    untagged = [n for n, t in enumerate(tagged) if t is None]
    return heading_levels(outline_levels(raw, out, untagged) if untagged else out)


# ---- tagged PDFs: the structure tree ----

def tagged_lines(pdf, pages):
    """[[(level, line)] or None per page] from the structure tree; None for a page its tags do not cover (and for
    the whole file when it has no tree)."""
    from pdfplumber.utils import extract_text
    chars, total = {}, Counter()    # (page number, mcid) -> chars; page number -> characters that are not spaces
    for page in pages:
        for c in page.chars:
            # an untagged character in the page's margin (Chromium's date, title, address and page count) does not
            # count against the tags' coverage
            margin = c["top"] < EDGE * page.height or c["bottom"] > (1 - EDGE) * page.height
            total[page.page_number] += bool(c["text"].strip()) and not (margin and c.get("mcid") is None)
            if c.get("mcid") is not None:
                chars.setdefault((page.page_number, c["mcid"]), []).append(c)
    try:
        marks = list(structure(pdf))
    except Exception:   # a broken tree is read as no tree
        return None
    groups, seen, used = [], Counter(), set()   # [page, level, key, chars]: a run of marks with one key
    for page, mcid, level, key in marks:
        cs = chars.get((page, mcid))
        if not cs or (page, mcid) in used or page not in total:
            continue
        used.add((page, mcid))
        seen[page] += sum(bool(c["text"].strip()) for c in cs)
        same = next((g for g in reversed(groups) if g[0] == page), None)
        if key is not None and same is not None and same[2] == key:
            same[3].extend(cs)   # read together, so '**2.20**,' stays '2.20,' (pieces joined by their positions)
        else:
            groups.append([page, level, key, list(cs)])
    out, last = {p.page_number: [] for p in pages}, {}
    for page, level, key, cs in groups:
        text = " ".join(extract_text(cs, x_tolerance=1.5).split())
        lines, prev = out[page], last.get(page)
        if key is not None and prev is not None and prev[:2] == key[:2] and lines:
            lines[-1] = (lines[-1][0], lines[-1][1] + (" | " if key[0] == "row" and prev != key else " ") + text)
        elif text:
            lines.append((level, text))
        last[page] = key
    covered = [seen[p.page_number] >= TAG_COVERAGE * total[p.page_number] and total[p.page_number] for p in pages]
    return [out[p.page_number] if ok else None for p, ok in zip(pages, covered)] if any(covered) else None


def structure(pdf):
    """The structure tree's marked pieces of text in reading order: (page number, mcid, heading level, key). Pieces
    with one key join into one line: a paragraph's or heading's with spaces, the cells of one TR (key ('row', tr,
    cell)) with ' | '. Read from the PDF's objects, as each piece names its own page: a table that runs onto the next
    page, and the header row Chromium repeats there, keep their pages (pdfplumber's tree gives every piece of an
    element the element's page)."""
    from pdfminer.pdftypes import PDFObjRef, resolve1
    root = resolve1(pdf.doc.catalog.get("StructTreeRoot"))
    if not isinstance(root, dict):
        return
    page_of = {p.page_obj.pageid: p.page_number for p in pdf.pages}
    roles = resolve1(root.get("RoleMap")) or {}
    name = lambda x: getattr(resolve1(x), "name", str(x))
    stack, visited = [(root.get("K"), None, None, None)], set()
    while stack:
        node, page, level, key = stack.pop()
        if isinstance(node, PDFObjRef):
            if node.objid in visited:
                continue
            visited.add(node.objid)
        node = resolve1(node)
        if isinstance(node, int):
            yield page, node, level, key
        elif isinstance(node, list):
            stack.extend((k, page, level, key) for k in reversed(node))
        elif isinstance(node, dict) and "MCID" in node:   # a marked-content reference, with its own page
            pg = node.get("Pg")
            yield page_of.get(pg.objid, page) if isinstance(pg, PDFObjRef) else page, resolve1(node["MCID"]), level, key
        elif isinstance(node, dict) and "S" in node:
            kind = name(node["S"])
            kind = name(roles.get(kind, kind)) if kind in roles else kind
            pg = node.get("Pg")
            page = page_of.get(pg.objid, page) if isinstance(pg, PDFObjRef) else page
            me = id(node)
            if re.fullmatch(r"H[1-6]?", kind):
                level, key = int(kind[1:] or 1), ("para", me)
            elif kind == "TR":
                key = ("row", me)
            elif kind in ("TD", "TH") and key and key[0] == "row":
                key = ("row", key[1], me)
            elif kind in ("P", "LI", "Caption") and not (key and key[0] == "row"):
                key = ("para", me)
            if "K" in node:
                stack.append((node["K"], page, level, key))


# ---- untagged PDFs: drawn tables, font sizes ----

def body_font(pages):
    """The body text's font size: the size most characters have (rounded to 0.5 pt)."""
    sizes = Counter(round(c["size"] * 2) / 2 for p in pages for c in p.chars if c["text"].strip())
    return sizes.most_common(1)[0][0] if sizes else 0


def bold(fontname):
    return bool(re.search(r"bold|black|heavy|semibold", fontname or "", re.I))


def layout_lines(page, body):
    """One untagged page -> [(level, line)]: tables by their ruled lines (pdfplumber), each row 'a | b | c'; the text
    outside them as lines by position; a line larger than the body, or bold and short, is a heading (level by size,
    fixed to 1-6 by rank later in heading_levels)."""
    try:
        tables = [t for t in page.find_tables() if len(t.rows) >= 2 and len(t.rows[0].cells) >= 2]
    except Exception:   # a page whose drawings pdfplumber cannot read still has its text
        tables = []
    inside = lambda obj, box: box[0] - 1 <= obj["x0"] and obj["x1"] <= box[2] + 1 and box[1] - 1 <= obj["top"] \
        and obj["bottom"] <= box[3] + 1
    outside = page.filter(lambda o: o.get("object_type") != "char" or not any(inside(o, t.bbox) for t in tables))
    placed = []   # (top, level or None, text)
    for line in outside.extract_text_lines(layout=False, strip=True, return_chars=True):
        chars = [c for c in line["chars"] if c["text"].strip()]
        if not chars or not line["text"].strip():
            continue
        size = max(Counter(round(c["size"] * 2) / 2 for c in chars).items(), key=lambda kv: kv[1])[0]
        heavy = all(bold(c.get("fontname")) for c in chars)
        words = len(line["text"].split())
        heading = body and (size >= body * HEADING_RATIO or heavy) and words <= HEADING_WORDS \
            and not line["text"].rstrip().endswith((".", ":", ",", ";"))   # a sentence is no heading
        placed.append((line["top"], line["bottom"], -size if heading else None, line["text"].strip()))
    for t in tables:
        for r, cells in zip(t.rows, t.extract()):
            text = " | ".join(" ".join((c or "").split()) for c in cells if c and c.strip())
            if text:
                placed.append((r.bbox[1], r.bbox[3], None, text))
    placed.sort(key=lambda x: x[0])
    out, below = [], None
    for top, bottom, level, text in placed:   # a heading wrapped over two lines is one heading
        if out and level is not None and out[-1][0] == level and top - below < 0.5 * (bottom - top):
            out[-1] = (level, f"{out[-1][1]} {text}")
        else:
            out.append((level, text))
        below = bottom
    return out


def heading_levels(pages):
    """Untagged headings carry -size as their level: make them 1, 2, 3 ... by size, largest first (in place)."""
    sizes = sorted({lv for page in pages for lv, _ in page if lv is not None and lv < 0})
    rank = {s: n + 1 for n, s in enumerate(sizes)}
    for page in pages:
        page[:] = [(rank[lv] if lv is not None and lv < 0 else lv, t) for lv, t in page]
    return pages


def outline_levels(raw, pages, which):
    """When the PDF has an outline (bookmarks), its entries are the headings of the pages numbered `which` (0-based):
    a line on the entry's page that reads as the entry's title becomes a heading of the entry's level, and no other
    line of those pages is one (in place)."""
    import pypdfium2 as pdfium
    try:
        doc = pdfium.PdfDocument(raw)
        toc = [(b.level + 1, (b.get_title() or "").strip(), b.get_dest().get_index() if b.get_dest() else None)
               for b in doc.get_toc()]
        doc.close()
    except Exception:
        return pages
    toc = [t for t in toc if t[1] and t[2] is not None and t[2] < len(pages)]
    if not toc:
        return pages
    norm = lambda s: " ".join(s.lower().split())
    wanted = {}
    for level, title, page in toc:
        wanted.setdefault(page, {})[norm(title)] = level
    for n in which:
        titles = wanted.get(n, {})
        pages[n][:] = [(titles.get(norm(t)), t) if " | " not in t else (lv, t) for lv, t in pages[n]]
    return pages


def opens(line):
    """Whether a line both pages of a 2-page PDF open or close with is a running header rather than something said
    twice: it is not a table row and has a word of letters ('Tarrowmere College · MAR 260 course outline')."""
    return " | " not in line and re.search(r"[^\W\d_]{3}", line) is not None


def strip_running(texts, edge=2):
    """Pages' texts without their running header and footer: among the first and last `edge` lines of each page, a
    page number ('Page 3', '3 of 40', '- 3 -') that counts with the pages, and a line that opens or closes at least
    60% of the pages word for word (3 pages or more), or both pages of 2 (a line with a word: opens()).
    ['Guide\nPage 1\nWelcome', 'Guide\nPage 2\nRules', 'Guide\nPage 3\nMaps'] -> ['Welcome', 'Rules', 'Maps'].
    A number alone that does not count with the pages (a table's last cell) stays."""
    pages = [t.splitlines() for t in texts]
    at_edges = lambda lines: {" ".join(x.split()) for x in lines[:edge] + lines[-edge:] if x.strip()}
    counts = Counter(x for lines in pages for x in at_edges(lines))
    full = sum(bool(t) for t in texts)
    running = {x for x, c in counts.items() if (full >= 3 and c >= 0.6 * full) or (full == 2 and c == 2 and opens(x))}
    edges = lambda lines: [x for i, x in enumerate(lines) if i < edge or i >= len(lines) - edge]
    numbered = lambda x: int(re.search(r"\d+", x).group()) if PAGE_NUMBER.fullmatch(x.strip()) else None
    offsets = Counter(o for n, lines in enumerate(pages, 1)
                      for o in {numbered(x) - n for x in edges(lines) if numbered(x) is not None})
    # printed numbers may start at another number than 1: the offset most pages share, seen on 2 pages at least
    offset = max(offsets, key=lambda o: (offsets[o], o == 0), default=0)
    offset = offset if offsets[offset] >= 2 else 0
    drop = lambda x, n: " ".join(x.split()) in running or (numbered(x) is not None and numbered(x) - n == offset)
    return ["\n".join(x for i, x in enumerate(lines) if not ((i < edge or i >= len(lines) - edge) and drop(x, n)))
            .strip() for n, lines in enumerate(pages, 1)]


def pdf_pages(raw, pages=MAX_PAGES):
    """PDF bytes -> (its metadata title, [text of each page]) read by pypdfium2 (PDFium, Chromium's PDF engine)."""
    import pypdfium2 as pdfium
    try:
        pdf = pdfium.PdfDocument(raw)
    except pdfium.PdfiumError as e:
        if "password" in str(e).lower():
            raise ValueError("encrypted PDF (it needs a password)") from None
        raise ValueError(f"corrupt PDF ({str(e).rstrip('.').split('(')[-1].rstrip(')')})") from None
    try:
        if len(pdf) > pages:
            raise ValueError(f"{len(pdf)} pages is over the {pages}-page limit (--max-pages, RAG_MAX_PAGES)")
        texts = []
        for i in range(len(pdf)):
            page = pdf[i]
            tp = page.get_textpage()
            # PDFium marks a word it joined across a line end with U+FFFE, and ends lines with \r\n
            texts.append(tp.get_text_range().replace("\ufffe", "").replace("\r\n", "\n").replace("\r", "\n").strip())
            tp.close()
            page.close()
        return (pdf.get_metadata_dict().get("Title") or "").strip(), texts
    finally:
        pdf.close()
