"""Week 1's chunkers: one document cut into chunks, three ways, never across a section.

    from lab.chunks import chunk, chunk_records
    chunk(doc, "titled")           # ['Hartmoor\nHartmoor is a village in the county of Wessmark. ...']
    chunk_records(doc, "titled")   # [('hartmoor#0', text, {'doc': 'hartmoor', 'n': 0, 'total': 1, 'start': 0, ...})]

- fixed: windows of CHUNK_WORDS words, OVERLAP_WORDS shared with the next window;
- sentence: whole sentences packed up to CHUNK_WORDS words (a table's rows packed as sentences are, each chunk
  that starts inside a table led by the table's header row: units());
- titled: the sentence chunks, each prefixed with its document's title (the lab's default).
Each block lab/documents.py gives (a section, with the PDF pages it runs over; the whole text when there is none) is
cut on its own. Chunk IDs: `<doc>#<n>` (n counts the document's chunks from 0), `<doc>#p<page>-<n>` for a PDF (n
counts the chunks that start on the page; one that runs on to the next says `last_page`: 'pp. 2-3').
vector_index.py embeds and stores what this file cuts (and re-exports its names: `vector_index.chunk` as ever).
A block read by OCR (a scanned PDF page) gives its chunks `ocr: True`, which documents.where() shows: 'p. 3 (OCR)'.
Not handled: sentence splitting around abbreviations ('Dr. Smith' ends a sentence).
"""
import re

from lab.documents import RULE, Block, CorpusError, table_rows

CHUNKERS = ("fixed", "sentence", "titled")
CHUNK_WORDS = 120                # well inside MiniLM's 256-token window
OVERLAP_WORDS = 20               # fixed chunker only
CAPTION_WORDS = 10               # a line above a table this short, with no full stop, is its heading (kept with rows)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])")


def split_sentences(text):
    """'A b. C d? e' -> ['A b.', 'C d? e'] (a plain rule: split after . ! ? before a capital)."""
    return [s.strip() for s in SENTENCE_END.split(text) if s.strip()]


def sentence_spans(text):
    """split_sentences with where each sentence is: 'A b. C d' -> [('A b.', 0, 4), ('C d', 5, 8)]."""
    out, prev = [], 0
    for m in [*SENTENCE_END.finditer(text), None]:
        seg_end = m.start() if m else len(text)
        seg = text[prev:seg_end]
        if seg.strip():
            start = prev + len(seg) - len(seg.lstrip())
            out.append((seg.strip(), start, start + len(seg.strip())))
        prev = m.end() if m else prev
    return out


def cut(text, chunker):
    """One block's text -> [(piece, start, end)]. fixed: word windows; sentence: whole sentences up to CHUNK_WORDS."""
    if chunker == "fixed":
        words = [(m.group(), m.start(), m.end()) for m in re.finditer(r"\S+", text)]
        step = CHUNK_WORDS - OVERLAP_WORDS
        return [(" ".join(w for w, _, _ in words[i:i + CHUNK_WORDS]), words[i][1] if words else 0,
                 words[min(i + CHUNK_WORDS, len(words)) - 1][2] if words else 0)
                for i in range(0, max(len(words) - OVERLAP_WORDS, 1), step)]
    if chunker not in CHUNKERS:
        raise CorpusError(f"unknown chunker {chunker!r}: choose one of {', '.join(CHUNKERS)}")
    pieces, current = [], []
    for unit in units(text):
        if current and len(" ".join([c[0] for c in current] + [unit[0]]).split()) > CHUNK_WORDS:
            pieces.append(current)
            current = []
        current.append(unit)
    pieces.append(current)
    return [(join_units(p), p[0][1] if p else 0, p[-1][2] if p else 0) for p in pieces]


def units(text):
    """What a chunk is packed from: [(text, start, end, header)]. Prose gives its sentences (header None); a table
    (two or more lines of cells joined by '|', as the readers write rows) gives one unit per row, each with its
    table's header row ('' for the header itself; a Markdown table's '|---|' line belongs to it), so a chunk that
    starts inside a table can say what its columns are.
    'Day | Room\nMon | HAL 1\nTue | HAL 2' -> ('Day | Room', .., ''), ('Mon | HAL 1', .., 'Day | Room'), ...
    A short line just above a table (its heading or caption: 'Autumn examinations') goes with the header.
    A text with no table gives its sentence_spans, as ever (lab/pdf.py gives a PDF's rows as 'a | b | c' too)."""
    lines = [(m.group(), m.start(), m.end()) for m in re.finditer(r"[^\n]+", text)]
    table = table_rows([line for line, _, _ in lines])
    out, prose, header, first = [], 0, "", 0
    for n, (line, s, e) in enumerate(lines):
        if not table[n]:
            continue
        out += [(t, prose + a, prose + b, None) for t, a, b in sentence_spans(text[prose:s])]
        prose = e
        if n == 0 or not table[n - 1]:
            # a short line just above the table without a full stop is its caption or heading: it says what the table is
            above = lines[n - 1][0].strip(" #") if n > 0 else ""
            caption = f"{above}\n" if above and len(above.split()) <= CAPTION_WORDS and not above.endswith(".") else ""
            header, first, row_header = f"{caption}{line}", n, ""
        elif n == first + 1 and RULE.fullmatch(line.strip()):
            header, row_header = f"{header}\n{line}", ""
        else:
            row_header = header
        out.append((line, s, e, row_header))
    return out + [(t, prose + a, prose + b, None) for t, a, b in sentence_spans(text[prose:])]


def join_units(piece):
    """A chunk's text from its units: sentences joined by a space as ever, table rows on lines of their own, and the
    table's header first when the chunk starts below it."""
    if not piece:
        return ""
    text = f"{piece[0][3]}\n{piece[0][0]}" if piece[0][3] else piece[0][0]
    for prev, unit in zip(piece, piece[1:]):
        text += ("\n" if prev[3] is not None or unit[3] is not None else " ") + unit[0]
    return text


def chunk_spans(doc, chunker):
    """Doc -> [(chunk text, start, end, Block)]: each block (a section, over the PDF pages it runs on; the whole text
    when the document has none) cut by the chunker; titled prefixes each piece with the document title. start/end:
    the span in doc.text."""
    out = []
    for b in doc.blocks or [Block(0, len(doc.text), 0, "")]:
        for text, s, e in cut(doc.text[b.start:b.end], chunker):
            out.append((f"{doc.title}\n{text}" if chunker == "titled" else text, b.start + s, b.start + e, b))
    return out


def chunk(doc, chunker):
    """Doc -> list of chunk texts. fixed: word windows; sentence: whole sentences up to CHUNK_WORDS;
    titled: the sentence chunks, each prefixed with the document title. No chunk crosses a section."""
    return [t for t, *_ in chunk_spans(doc, chunker)]


def chunk_records(doc, chunker):
    """Doc -> [(chunk id, text, metadata)]: `hartmoor#0`, `handbook-pdf#p12-0`; metadata with the provenance
    (file, start, end, and page and section when there are)."""
    spans, per_page, out = chunk_spans(doc, chunker), {}, []
    for n, (text, start, end, b) in enumerate(spans):
        # the pages it starts and ends on: a block (a section) runs on across a PDF's pages, Block.breaks says where
        page, last = (max([b.page, *(p for at, p in b.breaks if at <= x)]) for x in (start, end - 1))
        k = per_page[page] = per_page.get(page, -1) + 1
        meta = {"doc": doc.id, "title": doc.title, "n": n, "total": len(spans), "hash": doc.hash,
                "file": doc.file, "start": start, "end": end, **{k: v for k, v in (
                    ("page", page), ("last_page", last * (last > page)), ("section", b.section), ("ocr", b.ocr)) if v}}
        out.append((f"{doc.id}#p{page}-{k}" if page else f"{doc.id}#{n}", text, meta))
    return out
