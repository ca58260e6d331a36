"""Read one document file into its text and where each part of it comes from (page, heading path).

    from lab.documents import read_document
    doc = read_document(Path("handbook.pdf"))   # Doc(id='handbook-pdf', title=..., text=..., hash=..., blocks=[...])
    doc.blocks[11]    # Block(start=20431, end=22290, page=12, section='')
    where({"file": "handbook.pdf", "page": 12, "section": "Admissions > Prerequisites"})
                      # -> 'handbook.pdf p. 12 · Admissions > Prerequisites'

The formats and the library that reads each (chosen by `python -m experiments.loaders_choice`, whose figures are in
results/loaders_choice.txt):
- .txt, .md: as the lab always read them: line 1 is the title, the rest the text. Markdown (markdown-it-py:
  CommonMark and its tables) is read as the HTML it renders to, by the HTML reader: its headings cut it into
  sections (a `#` inside a code block is no heading), a table row is 'a | b | c', and no mark ('##', '|---|',
  '**') is left in the text (issue 61: with the marks, Markdown found 0.041 fewer answers than the same pages in HTML).
- .pdf (lab/pdf.py: pdfplumber and pypdfium2; issue 61): a block per section, over the pages it runs on. A tagged
  PDF (Chromium's, Word's) says which text is a heading and which a table row and cell; an untagged one gives tables
  by their drawn lines and headings by their font size, or its outline; a page with no text layer is read by OCR
  (lab/ocr.py) and cited 'p. 3 (OCR)'. The title is the PDF's own (unless it is a file name), else its first heading.
  Table rows are 'a | b | c' in every format, so lab.chunks keeps each row chunk with its table's header row.
- .docx (python-docx): paragraphs and tables in document order; Title and Heading 1-9 styles give the sections.
- .html, .htm (BeautifulSoup on lxml): the main text (<main>, else <article>, else <body>) without scripts, menus,
  headers, footers, sidebars and cookie banners; h1-h6 give the sections.
A block is a span of the document's text that no chunk crosses (lab/chunks.py): a section, with the PDF pages it
runs over (a chunk on two pages cites both: 'pp. 2-3').

A file that cannot be used raises ValueError with the reason in a few words, which vector_index prints on one line
and skips: an encrypted PDF, a PDF with no text OCR can read, a corrupt file, a file over the size or page limit
(MAX_FILE_MB, MAX_BINARY_MB, MAX_PAGES or RAG_MAX_PAGES), a PDF/Word/HTML text that is mostly not English
(not_english: the embedding model reads English; RAG_ANY_LANGUAGE=1 keeps every language). .txt and .md files are
read as the lab always read them, in any language: its corpora and its injected documents (some partly in another
language on purpose) are .txt.
A PDF's page numbers and running header and footer (a line that opens or closes most pages) are dropped; a page OCR
cannot read with confidence is left out and said in Doc.notes (vector_index prints it on one line).
Not handled: passwords, .doc/.pptx/.rtf, text in a text-layer page's images, untagged tables without drawn lines,
PDFs with fewer than 3 pages keep their headers.
"""
import hashlib
import os
import re
from dataclasses import dataclass, field
from typing import NamedTuple

from lab.office import docx_parts, html_parts
from lab.pdf import pdf_pages, strip_running  # noqa: F401 (documents.strip_running, documents.pdf_pages as ever)

TEXT_EXTENSIONS = (".txt", ".md")
EXTENSIONS = (".txt", ".md", ".pdf", ".docx", ".html", ".htm")
MAX_FILE_MB = 5          # a text file (.txt .md .html) or the text of a PDF/Word file over this is skipped (--max-mb)
MAX_BINARY_MB = 100      # a PDF or Word file on disk (its images and fonts count) over this is skipped unread
MAX_PAGES = 200          # a PDF with more pages is skipped (--max-pages, RAG_MAX_PAGES)
READERS = {".pdf": "5", ".docx": "3", ".html": "2", ".htm": "2", ".md": "2"}   # part of such a file's hash: bump
#   its kind's when that reader's output changes (its files are re-embedded, their answers re-made; another kind's
#   are not; a .md file with no mark has no reader in its hash)
TABLES = "1"             # part of the hash of a text with a table: bump it when how tables are chunked changes
MIN_WORDS_JUDGED = 20    # texts shorter than this are never called "not English"
ENGLISH = frozenset("the of and to is was for that with as by at from his her it are were be this which or he she has "
                    "had its their not but have also they who been into than".split())
OTHERS = frozenset("""les est une dans pour qui sur avec sont au aux ces cette mais pas ont été
und das ist nicht mit zu ein eine sich auch auf für wird sind werden oder bei nach aus wie
por con una para es lo como pero más fue sus entre también il che della delle per non sono gli
nella degli alla anche het een van niet zijn voor ook dat wordt werd och att det är som för på inte av ett til ikke
er og não uma com em os são pelo pela mais się nie że jest oraz jak ve bir bu için ile olarak yang dan dengan untuk
tidak ini itu dari""".split())   # frequent words of 14 other languages that English text does not use (no particles
                                   # of names: la, le, el, los, de, del, di, du, der, van, von)
LETTERS = re.compile(r"[^\W\d_]+")
ROW = re.compile(r"\S[ \t]*\|[ \t]*\S|^\|.*\|$")   # a line of table cells: 'a | b' (Word, HTML), '| a | b |' (Markdown)
RULE = re.compile(r"\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?")   # a Markdown table's '|---|---|' line


class CorpusError(RuntimeError):
    """A problem with the corpus or the index, phrased as one line that says how to fix it (vector_index.CorpusError
    is this class; a file that cannot be used raises ValueError instead, and is skipped)."""


class Block(NamedTuple):
    start: int      # character span [start, end) of Doc.text
    end: int
    page: int       # 1-based PDF page it starts on, 0 when the format has none
    section: str    # heading path "Admissions > Prerequisites", '' when none
    ocr: bool = False   # the text was read from the page's image by OCR (a scan)
    breaks: tuple = ()  # ((offset, page), ...): where the block runs on to a PDF's next page (a section, as printed)


@dataclass
class Doc:
    id: str
    title: str
    text: str
    hash: str
    file: str = ""                               # the file's name, as shown in citations
    blocks: list = field(default_factory=list)   # [Block]; empty: the whole text is one block
    notes: list = field(default_factory=list)    # what was left out of a file that was read ('page 3 could not ...')


def doc_id(path):
    """handbook.txt -> 'handbook' (as ever); handbook.pdf -> 'handbook-pdf', so both can sit in one folder."""
    return path.stem if path.suffix.lower() in TEXT_EXTENSIONS else f"{path.stem}-{path.suffix.lower()[1:]}"


def where(meta):
    """A chunk's provenance as the CLIs show it, '' when it has neither page nor section.
    {'file': 'handbook.pdf', 'page': 12, 'section': 'Admissions > Prerequisites'}
    -> 'handbook.pdf p. 12 · Admissions > Prerequisites'; with 'last_page': 13, 'handbook.pdf pp. 12-13 · ...'"""
    if not meta.get("page") and not meta.get("section"):
        return ""
    pages = f"pp. {meta['page']}-{meta['last_page']}" if meta.get("last_page") else f"p. {meta.get('page')}"
    page = f" {pages}" + (" (OCR)" if meta.get("ocr") else "") if meta.get("page") else ""
    return f"{meta.get('file') or meta.get('doc', '')}{page}" + (f" · {meta['section']}" if meta.get("section") else "")


def max_pages():
    return int(os.environ.get("RAG_MAX_PAGES") or MAX_PAGES)


def not_english(text):
    """Why a text is mostly not English, or None. A cheap rule, no model: most letters outside the Latin script, or
    frequent words of other languages outnumbering English ones 2:1. Lists and tables of names, which hold neither,
    pass. 'Der Kurs beginnt im Oktober und ist ...' -> 'mostly not English (31% ... )'"""
    words = LETTERS.findall(text.lower())
    if len(words) < MIN_WORDS_JUDGED:
        return None
    letters = sum(map(len, words))
    latin = sum(c.isascii() or "\u00c0" <= c <= "\u024f" for w in words for c in w) / letters
    if latin < 0.5:
        return f"mostly not English ({1 - latin:.0%} of its letters are not Latin script)"
    en, other = (sum(w in s for w in words) / len(words) for s in (ENGLISH, OTHERS))
    if other >= 0.10 and other > 2 * en:
        return f"mostly not English ({other:.0%} of its words are common words of other languages, {en:.0%} English)"
    return None


def read_document(path, max_bytes=MAX_FILE_MB * 2**20, pages=None, any_language=None, note=None):
    """Path -> Doc, or raise ValueError with the reason the file cannot be used (vector_index prints it). note: called
    with each line Doc.notes holds (what was left out of a file that was read: a scan's page OCR could not read)."""
    kind = path.suffix.lower()
    if kind not in EXTENSIONS:
        raise ValueError(f"unknown extension {path.suffix or '(none)'!r} (only {', '.join(EXTENSIONS)})")
    size, limit = path.stat().st_size, max_bytes if kind not in (".pdf", ".docx") else MAX_BINARY_MB * 2**20
    if size > limit:
        raise ValueError(f"{size / 2**20:.1f} MB is over the {limit / 2**20:.0f} MB limit"
                         + (" (--max-mb)" if limit == max_bytes else ""))
    raw = path.read_bytes()
    if kind in TEXT_EXTENSIONS:
        doc = read_text(raw, path, markdown=kind == ".md")
    else:
        readers = {".pdf": lambda: read_pdf(raw, max_pages() if pages is None else pages),
                   ".docx": lambda: read_docx(raw), ".html": lambda: read_html(raw), ".htm": lambda: read_html(raw)}
        title, text, blocks, *notes = readers[kind]()
        if not text.strip():
            raise ValueError("no text found")
        if len(text.encode()) > max_bytes:
            raise ValueError(f"its text, {len(text.encode()) / 2**20:.1f} MB, is over the "
                             f"{max_bytes / 2**20:.0f} MB limit (--max-mb)")
        keep_all = os.environ.get("RAG_ANY_LANGUAGE") == "1" if any_language is None else any_language
        if not keep_all and (why := not_english(text)):
            raise ValueError(why + "; RAG_ANY_LANGUAGE=1 keeps it")
        doc = Doc(doc_id(path), (title or path.stem).strip()[:200], text,
                  hashlib.sha1(raw + READERS[kind].encode() + tables(text)).hexdigest()[:16], path.name, blocks,
                  notes[0] if notes else [])
        [note(n) for n in doc.notes if note]
    return doc


def table_rows(lines):
    """Which lines are rows of a table: a line of cells joined by '|' next to another such line.
    ['Day | Room', 'Mon | HAL 1', 'A | alone', '', 'x'] -> [True, True, True, False, False]; one line with a '|' in
    prose is no table."""
    cells = [ROW.search(line) is not None for line in lines]
    return [c and ((n > 0 and cells[n - 1]) or (n + 1 < len(lines) and cells[n + 1])) for n, c in enumerate(cells)]


def tables(text):
    """What a text's hash adds so that its chunks are remade when table chunking changes: TABLES when it has a table
    (table_rows), else nothing (a text without a table keeps its hash, and the caches keyed by it)."""
    return f"tables {TABLES}".encode() if any(table_rows(text.splitlines())) else b""


def read_text(raw, path, markdown=False):
    """A .txt/.md file as the lab always read it: line 1 the title, the rest the text. Markdown is read as the HTML
    it stands for (read_markdown): its text without the marks, its headings as sections."""
    if b"\x00" in raw[:8192]:
        raise ValueError("binary file (contains NUL bytes)")
    try:
        content = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ValueError(f"not valid UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start})") from None
    if not content.strip():
        raise ValueError("empty file")
    lines = content.strip().splitlines()
    title = lines[0].strip().lstrip("#").strip()[:200] if lines else path.stem
    body = "\n".join(lines[1:]).strip() or content.strip()
    text, blocks = read_markdown(body) if markdown else (body, [])   # a marked .md file's hash names its reader
    return Doc(path.stem, title or path.stem, text or body, hashlib.sha1(content.encode() + (
        READERS[".md"].encode() if text != body else b"") + tables(text)).hexdigest()[:16], path.name, blocks)


def read_markdown(text):
    """Markdown -> (text, [Block]) as the HTML reader reads the page it renders to (markdown-it-py: CommonMark and
    its tables): '## Fares' is the section 'Fares', not a line '## Fares'; a table row is 'a | b | c', without the
    outer pipes or the '|---|' line; emphasis and link marks are dropped. So a Markdown file and the same page in
    HTML give the same chunks; a text with no mark at all is kept line for line, as a .txt file is.
    'x\\n## B\\n| a | b |\\n|---|---|\\n| 1 | 2 |' -> ('x\\nB\\na | b\\n1 | 2', blocks '' and 'B')."""
    from markdown_it import MarkdownIt
    md = MarkdownIt("commonmark").enable("table")
    tokens = md.parse(text)
    if all(t.type.startswith("paragraph") or t.children and {c.type for c in t.children} <= {"text", "softbreak"}
           for t in tokens):
        return text, []   # no mark at all: read as a .txt file is, line for line
    _, parts = html_parts(f"<h1>title</h1>{md.renderer.render(tokens, md.options, {})}".encode())
    return assemble(parts)   # the title is line 1's (the <h1> above); a '# H' in the text is a section


def sections(heads, text):
    """[(offset, level, heading)] of a text -> [Block] cut at each heading, each with its heading path. A text before
    the first heading is a block without a section; a heading with nothing under it but a subheading joins the
    subheading's block ('Admissions' then 'Prerequisites' -> one block 'Admissions > Prerequisites')."""
    blocks, stack, held = [], [], None
    if heads and heads[0][0] > 0:
        blocks.append(Block(0, heads[0][0], 0, ""))
    for n, (start, level, head) in enumerate(heads):
        stack = [(lv, h) for lv, h in stack if lv < level] + [(level, head)]
        end = heads[n + 1][0] if n + 1 < len(heads) else len(text)
        empty = not text[start:end].replace(head, "", 1).strip(" \t\n#=-")
        if n + 1 < len(heads) and heads[n + 1][1] > level and empty:
            held = start if held is None else held
            continue
        blocks.append(Block(start if held is None else held, end, 0, " > ".join(h for _, h in stack)))
        held = None
    return blocks


def assemble(parts):
    """[(heading level or None, line)] -> (text, [Block]): lines joined by newlines, cut into sections at headings."""
    text, heads, pos = [], [], 0
    for level, line in parts:
        if level is not None:
            heads.append((pos, level, line))
        text.append(line)
        pos += len(line) + 1
    joined = "\n".join(text)
    return joined, sections(heads, joined) if heads else []


def read_pdf(raw, pages=MAX_PAGES):
    """PDF bytes -> (title, text, Blocks, notes): each page's lines from lab/pdf.py (headings, rows 'a | b | c'), a page
    without a text layer read by OCR (lab/ocr.py); blocks cut at pages and at headings, so a block has one page and
    one section. The title is the PDF's own, else its first heading; a first line that says the title is dropped, like
    HTML's <h1>. A page OCR cannot read with confidence is left out, with a note that says so."""
    from lab import ocr
    from lab.pdf import heading_levels, pdf_lines
    title, texts = pdf_pages(raw, pages)
    if re.fullmatch(r"[\w.-]+", title) and (re.search(r"[-_.]", title) or title.islower()):
        title = ""   # a file's name as its title (Pillow writes one): the first heading says more
    lines = pdf_lines(raw, len(texts))
    scans = [n for n, (t, page) in enumerate(zip(texts, lines), 1) if not t.strip() and not page]
    read = ocr.ocr_pages(raw, scans, ocr.file_key(raw)) if scans else {}   # keyed by OCR_VERSION, not READERS
    unread = [n for n in scans if read[n][1] < ocr.MIN_CONFIDENCE or not read[n][0]]
    for n in scans:
        lines[n - 1] = [tuple(x) for x in read[n][0]] if n not in unread else []
    heading_levels(lines)   # OCR's headings, by stroke, ranked over the whole document
    if not any(lines):
        raise ValueError("no text layer, and OCR found no text it could read with confidence" if scans
                         else "no text found")
    kept = strip_running(["\n".join(t for _, t in page) for page in lines])
    lines = [keep_lines(page, k) for page, k in zip(lines, kept)]   # a table's header row repeated atop pages stays
    first = next((page[0] for page in lines if page), (None, ""))
    untitled = title.lower() in ("", "untitled")   # reportlab's default: 'untitled'
    levels = [lv for page in lines for lv, _ in page if lv is not None]
    says_title = " ".join(first[1].split()).lower() == " ".join(title.split()).lower()
    if first[0] is not None and (says_title or (untitled and levels.count(min(levels)) == 1)):
        title = first[1] if untitled else title   # a heading of one of a kind at the top is the title, as HTML's <h1>
        lines[next(n for n, page in enumerate(lines) if page)].pop(0)
    elif untitled:
        title = first[1]
    parts = [(n, level, t) for n, page in enumerate(lines, 1) for level, t in page]
    text, blocks = paged(parts, {n for n in scans if n not in unread})
    notes = [f"page {n} could not be read by OCR with confidence ({read[n][1]:.2f}), left out" for n in unread]
    return title, text, blocks, notes


def keep_lines(page, kept):
    """The page's (level, line) parts that strip_running kept (it only drops lines, so they align in order), and
    every table row ('a | b'): a long table's header, repeated atop each page, is no running header."""
    want, out = kept.splitlines(), []
    for part in page:
        if want and part[1] == want[0]:
            out.append(part)
            want.pop(0)
        elif " | " in part[1]:
            out.append(part)
    return out


def paged(parts, ocr_pages=()):
    """[(page, level, line)] -> (text, [Block]): pages apart by a blank line, cut at headings into sections that
    run on across pages (Block.breaks says where each page starts), so a section's chunks are cut as in Markdown,
    Word or HTML, not at a page break too (which left a page's last row or two a short chunk of its own). A table's
    header row that the printer repeated atop the next page is left out there: the source has it once.
    'p. 3 (OCR)' for a page OCR read."""
    text, heads, starts, pos, page, header, in_table = [], [], {}, 0, None, None, False
    for n, level, line in parts:
        row = level is None and ROW.search(line) is not None
        if n != page and in_table and row and line == header:
            continue   # the printed table's header again at the top of the page
        if n != page and text:
            text.append("")
            pos += 1
        if n != page:
            starts[n], page = pos, n
        if level is not None:
            heads.append((pos, level, line))
        header = header if in_table and row else line if row else None
        in_table = row
        text.append(line)
        pos += len(line) + 1
    joined = "\n".join(text)
    spans = sections(heads, joined) if heads else [Block(0, len(joined), 0, "")]
    pages = sorted(starts.items())
    bounds = [(n, s, pages[i + 1][1] - 1 if i + 1 < len(pages) else len(joined)) for i, (n, s) in enumerate(pages)]
    blocks = []
    for b in spans:
        here = []   # the section's block, which runs on across pages; cut again only where OCR starts or stops
        for n, s, e in bounds:
            lo, hi = max(b.start, s), min(b.end, e)
            if not joined[lo:hi].strip():
                continue
            if here and here[-1].ocr == (n in ocr_pages):
                here[-1] = here[-1]._replace(end=hi, breaks=(*here[-1].breaks, (lo, n)))
            else:
                here.append(Block(lo, hi, n, b.section, n in ocr_pages))
        blocks += here
    return joined, blocks


def read_docx(raw):
    """Word bytes -> (title, text, section blocks): paragraphs and table rows in order; headings by style."""
    title, parts = docx_parts(raw)
    text, blocks = assemble(parts)
    return title or (parts[0][1] if parts else ""), text, blocks


def read_html(raw):
    """HTML bytes -> (title, main text, section blocks). The first <h1> is the title (else <title>), kept out of the
    text like a .txt file's first line; the other headings make the heading path."""
    title, parts = html_parts(raw)
    text, blocks = assemble(parts)
    return title, text, blocks
