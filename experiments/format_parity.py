"""Format parity (issue 61): one folder of known sources read as Markdown, HTML, Word, PDF printed by Chromium and
scanned PDF. Does a PDF answer as well as its Markdown, do tables stay tables, do headings become sections, are scans
read? Retrieval only: no language model is called.

    python -m experiments.make_parity                     # build parity/built/ first (~40 s, needs Chromium)
    python -m experiments.format_parity                   # ~6 min on 2 cores (OCR of the scans ~2 min, embedding)
    python -m experiments.format_parity --json results/format_parity_after.json
    python -m experiments.format_parity --folder catalogue/docs --golden catalogue/golden.json   # top-4 answer only

Expected output: the settings, then one table, one row per format:
    format  docs pages  top-4 answer  rows as cells  sections  OCR CER  s/page
    md        16    16         0.805          1.000     1.000        -   0.002
    pdf       16    16          ...
What each column is:
- top-4 answer: share of the golden questions for which a passage of one of its supporting documents, among the 4 that
  retrieve.retrieve_chunks(q, 4, chunker="titled") returns, holds the answer or an alias (normalised as
  lab.answers.normalize_answer, as whole words). Each format gets its own index in a temporary RAG_INDEX_DIR.
- rows as cells: share of the sources' table rows (header rows too) that come back as one line of the document's
  text with every cell, in order, as a cell: 'a | b | c' (a Markdown row's outer pipes aside).
- sections: share of the sources' headings below the title (## and deeper) that are a part of some block's section.
- OCR CER: characters edited / characters of the source's text (Levenshtein), on text with whitespace collapsed and
  table pipes and Markdown marks removed; for the formats read from a PDF.
- s/page: seconds to read the folder (lab.documents, OCR cache empty) / pages (a file without pages counts one).
Not handled: answers that need two documents (the parity golden file has single-hop questions only).
"""
import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILT = ROOT / "parity" / "built"
SOURCES = ROOT / "parity" / "sources"
GOLDEN = ROOT / "parity" / "golden.json"
FORMATS = ("md", "html", "docx", "pdf", "scan")
K = 4


def source_facts(path):
    """A .md source -> (table rows as tuples of cells, headings below the title, plain text in reading order)."""
    from markdown_it import MarkdownIt
    text = path.read_text()
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    rows, heads, plain, row = [], [], [], None
    for n, t in enumerate(tokens):
        if t.type == "heading_open" and int(t.tag[1]) >= 2:
            heads.append(tokens[n + 1].content.strip())
        elif t.type == "tr_open":
            row = []
        elif t.type == "tr_close":
            rows.append(tuple(row))
            plain.append(" ".join(row))
            row = None
        elif t.type == "inline":
            (row if row is not None else plain).append(t.content.strip())
    return rows, heads, " ".join(plain)


def cells(line):
    """'| a |  b |' -> ('a', 'b'); 'a | b' -> ('a', 'b')."""
    return tuple(" ".join(c.split()) for c in line.strip().strip("|").split("|"))


def stem(doc_id):
    """A document id back to its source's name: 'ferry-fleet-pdf' -> 'ferry-fleet'."""
    return re.sub(r"-(pdf|docx|html|htm)$", "", doc_id)


def flat(text):
    """Text for the character error rate: pipes and Markdown marks gone, whitespace collapsed."""
    return " ".join(re.sub(r"(?m)[|#]|^\s*:?-{3,}.*$", " ", text).split())


def levenshtein(a, b):
    """Edits that turn a into b. levenshtein('kitten', 'sitting') -> 3"""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def pages_of(path):
    if path.suffix.lower() != ".pdf":
        return 1
    import pypdfium2 as pdfium
    pdf = pdfium.PdfDocument(str(path))
    n = len(pdf)
    pdf.close()
    return n


def hit(passage_text, answers):
    from lab.answers import normalize_answer
    text = f" {normalize_answer(passage_text)} "
    return any(f" {normalize_answer(a)} " in text for a in answers if normalize_answer(a))


def measure(fmt, folder, sources, golden, cer=False):
    """One format's row."""
    import retrieve
    import vector_index as vi
    facts = {p.stem: source_facts(p) for p in sorted(sources.glob("*.md"))} if sources else {}
    files = sorted(p for p in folder.iterdir() if p.is_file())
    start = time.time()
    docs, failed = vi.load_documents(folder, quiet=False)
    seconds = time.time() - start
    pages = sum(pages_of(p) for p in files)
    by_stem = {stem(d): doc for d, doc in docs.items()}
    want_rows = found_rows = want_heads = found_heads = 0
    edits = ref_chars = 0
    for name, (rows, heads, plain) in facts.items():
        doc = by_stem.get(name)
        lines = {cells(x) for x in doc.text.splitlines()} if doc else set()
        sections = {part for b in (doc.blocks if doc else []) for part in b.section.split(" > ")}
        want_rows += len(rows)
        found_rows += sum(r in lines for r in rows)
        want_heads += len(heads)
        found_heads += sum(h in sections for h in heads)
        if cer:
            ref = flat(plain)
            got = flat(f"{doc.title} {doc.text}") if doc else ""
            edits += levenshtein(ref, got)
            ref_chars += len(ref)
    hits = 0
    if docs:   # a format the reader could not read at all answers nothing
        vi.build_index(folder, "titled", progress=False)
    for g in golden if docs else []:
        found = retrieve.retrieve_chunks(g["question"], K, corpus=folder, chunker="titled")
        hits += any({p["doc"], stem(p["doc"])} & set(g["supporting_docs"])
                    and hit(p["text"], [g["answer"], *g.get("aliases", [])])
                    for p in found)
    return {"format": fmt, "docs": len(docs), "failed": len(failed), "pages": pages,
            "top4_answer": round(hits / len(golden), 3), "questions": len(golden),
            "rows_as_cells": round(found_rows / max(want_rows, 1), 3), "rows": want_rows,
            "sections": round(found_heads / max(want_heads, 1), 3), "headings": want_heads,
            "ocr_cer": round(edits / ref_chars, 4) if cer and ref_chars else None,
            "s_per_page": round(seconds / max(pages, 1), 3)}


def main():
    ap = argparse.ArgumentParser(description="Format parity: retrieval, table rows, sections, OCR CER, s/page.")
    ap.add_argument("--built", type=Path, default=BUILT, help="folder with md/ html/ docx/ pdf/ scan/")
    ap.add_argument("--sources", type=Path, default=SOURCES, help="the .md sources the formats were built from")
    ap.add_argument("--golden", type=Path, default=GOLDEN, help="golden questions about the sources")
    ap.add_argument("--formats", default=",".join(FORMATS), help="comma-separated subset of " + ",".join(FORMATS))
    ap.add_argument("--limit", type=int, default=0, help="first N golden questions only (0: all)")
    ap.add_argument("--folder", type=Path, help="instead: top-4 answer and s/page of this one folder (with --golden), "
                    "e.g. catalogue/docs")
    ap.add_argument("--json", type=Path, help="write the rows here")
    args = ap.parse_args()
    import json
    formats = [f for f in args.formats.split(",") if f]
    if unknown := [f for f in formats if f not in FORMATS]:
        sys.exit(f"format_parity: unknown format(s) {unknown}; choose from {', '.join(FORMATS)}")
    golden = json.loads(args.golden.read_text())[:args.limit or None]
    if args.folder:
        formats, args.built, args.sources = [args.folder.name], args.folder.parent, None
    missing = [f for f in formats if not (args.built / f).is_dir()]
    if missing:
        sys.exit(f"format_parity: {args.built} has no {', '.join(missing)}: run python -m experiments.make_parity")
    from lab.cache import portable
    sources = portable(str(args.sources.resolve())) if args.sources else "-"
    print(f"built {portable(str(args.built.resolve()))}  sources {sources}  "
          f"golden {portable(str(args.golden.resolve()))} ({len(golden)} questions)  k {K}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["RAG_INDEX_DIR"] = tmp   # a fresh index and an empty OCR cache: every format read from scratch
        for f in formats:
            rows.append(measure(f, args.built / f, args.sources, golden, cer=f in ("pdf", "scan")))
            print(f"  {f}: done", file=sys.stderr)
    print(f"{'format':<7}{'docs':>5}{'pages':>6}{'top-4 answer':>14}{'rows as cells':>15}{'sections':>10}"
          f"{'OCR CER':>9}{'s/page':>8}")
    for r in rows:
        cer = f"{r['ocr_cer']:.4f}" if r["ocr_cer"] is not None else "-"
        rows_, heads = (f"{r['rows_as_cells']:.3f}", f"{r['sections']:.3f}") if r["rows"] else ("-", "-")
        print(f"{r['format']:<7}{r['docs']:>5}{r['pages']:>6}{r['top4_answer']:>14.3f}{rows_:>15}{heads:>10}{cer:>9}"
              f"{r['s_per_page']:>8.3f}")
    if args.json:
        from lab.cache import write_json
        write_json(args.json, {"golden": str(args.golden.resolve()), "k": K, "rows": rows})


if __name__ == "__main__":
    main()
