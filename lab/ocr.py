"""Reads a PDF page that has no text layer (a scan) by OCR, on the CPU, offline: rapidocr-onnxruntime, whose
detection, orientation and recognition models ship inside its wheel.

    from lab.ocr import ocr_pages
    ocr_pages(raw, [3], key="9f2c...")   # {3: ([(None, 'Room | Use | Seats'), (2, 'Opening hours'), ...], 0.97)}

Expected output: for each page asked, its lines (heading level or None, text) and the recogniser's mean confidence;
about 5-10 s a page on 2 cores, once: the text is cached by the file's hash under .rag/ocr/ (or $RAG_INDEX_DIR/ocr/),
so a re-index reads it from disk. A tqdm bar on stderr (a terminal's) counts the file's pages and says how many
pages this run has read and at how many pages per second (a folder of one-page scans adds up).
How a page becomes lines: the detector finds the lines of text; each is turned upright (a page turned by a little, or
upside down, reads); each line is cut into words at the white gaps between them and every word is recognised on its
own (the bundled recogniser, trained mostly on Chinese, drops most spaces between English words when it reads a
whole line: 'TheCoastlinkfleet'); boxes side by side on one row with a wide gap are cells of a table row, joined
with ' | ' as the other readers join cells;
a short line (not cells) in bolder strokes than the page's text is a heading, its level by stroke width.
Not handled: handwriting, multi-column reading order, languages other than English.
"""
import hashlib
import json
import os
import re
import time
from pathlib import Path

OCR_VERSION = "6"        # part of the cache's key: bump it when the way a page is read changes
DPI = 200                # scans are rendered at this resolution for the detector (150-dpi scans are upsampled)
MIN_CONFIDENCE = 0.6     # a page read with a lower mean confidence is skipped with one line
CELL_GAP = 0.6           # boxes on one row further apart than this many line heights are table cells
EDGE = 0.035             # a line wholly in the top or bottom 3.5% of the page is a printed header or footer
WORD_GAP = 0.32          # a white gap wider than this share of a line's ink height parts two words
HEADING_STROKE = 1.6     # a line alone on its row drawn this much bolder than the page's text is a heading
HEADING_WORDS = 14       # ... when it is this short and ends without a full stop
_ENGINE = None
_READ = [0, 0.0]         # pages this process has read by OCR, and their seconds: the bar's running rate


def cache_file(key):
    from lab.cache import index_dir
    return Path(index_dir()) / "ocr" / f"{key}.json"


def ocr_pages(raw, page_numbers, key=None, dpi=DPI):
    """PDF bytes, 1-based page numbers -> {page: ([(level, line)], confidence)}; pages read before are taken from
    the cache under key (the file's hash; None: no cache)."""
    import pypdfium2 as pdfium
    path = cache_file(key) if key else None
    cached = json.loads(path.read_text()) if path and path.exists() else {}
    if cached.get("version") != OCR_VERSION:
        cached = {"version": OCR_VERSION, "pages": {}}
    out, todo = {}, [n for n in page_numbers if str(n) not in cached["pages"]]
    for n in page_numbers:
        if str(n) in cached["pages"]:
            lines, score = cached["pages"][str(n)]
            out[n] = ([tuple(x) for x in lines], score)
    if not todo:
        return out
    from tqdm import tqdm
    pdf = pdfium.PdfDocument(raw)
    try:
        bar = tqdm(todo, desc="OCR", unit="page", disable=None, leave=False)   # on stderr when it is a terminal
        for n in bar:
            start = time.time()
            image = pdf[n - 1].render(scale=dpi / 72, grayscale=True).to_pil()
            out[n] = read_image(image)
            _READ[0], _READ[1] = _READ[0] + 1, _READ[1] + time.time() - start
            bar.set_postfix_str(f"{_READ[0]} pages read, {_READ[0] / _READ[1]:.2f} pages/s")
            cached["pages"][str(n)] = out[n]
            if path:   # written after every page: a run stopped halfway keeps what it read
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp")
                tmp.write_text(json.dumps(cached))
                os.replace(tmp, path)
    finally:
        pdf.close()
    return out


def engine():
    """The OCR engine, loaded once (its models come from the wheel; ~0.3 s)."""
    global _ENGINE
    if _ENGINE is None:
        from rapidocr_onnxruntime import RapidOCR
        _ENGINE = RapidOCR()
    return _ENGINE


def read_image(image, flipped=False, sideways=False):
    """A page image (PIL) -> ([(level, line)], mean confidence); ([], 0.0) when no text is found. The page's way up is
    its lines' majority vote (one line's own vote can be wrong: a long line squeezed into the classifier's window): a
    page whose lines mostly stand on end is turned by 90 degrees, then one whose lines are mostly upside down by 180."""
    import numpy as np
    eng, img = engine(), np.array(image.convert("RGB"))
    boxes, _ = eng.text_det(img)
    if boxes is None or len(boxes) == 0:
        return [], 0.0
    if not sideways and sum(standing(box) for box in boxes) > len(boxes) / 2:
        return read_image(image.rotate(90, expand=True), flipped, sideways=True)   # a page turned a quarter
    boxes = eng.sorted_boxes(boxes)
    crops = eng.get_crop_img_list(img, boxes)
    _, turned, _ = eng.text_cls([c.copy() for c in crops])
    if not flipped and sum(label == "180" for label, _ in turned) > len(turned) / 2:
        return read_image(image.rotate(180), flipped=True, sideways=True)   # upside down: read it turned, in order
    pieces = [words(c) for c in crops]
    flat = [w for p in pieces for w in p]
    results, _ = eng.text_rec(flat)
    found, k, chars, weighted = [], 0, 0, 0.0
    for box, p, crop in zip(boxes, pieces, crops):
        got = results[k:k + len(p)]
        k += len(p)
        text = tidy(" ".join(t for t, s in got if t.strip()))
        if not text:
            continue
        chars += len(text)
        weighted += sum(s * len(t) for t, s in got)
        xs, ys = [pt[0] for pt in box], [pt[1] for pt in box]
        if max(ys) < EDGE * img.shape[0] or min(ys) > (1 - EDGE) * img.shape[0]:
            continue   # a printed header or footer in the page's edge (Chromium's date, title, address, page count)
        found.append((min(xs), max(xs), min(ys), max(ys), text, stroke(crop)))
    if not found:
        return [], 0.0
    return rows(found), round(weighted / max(chars, 1), 4)


def standing(box):
    """A detected line's box (4 corners) is taller than wide, as the recogniser's crop step counts it (1.5 times):
    the line runs up or down the page."""
    import numpy as np
    (a, b, c, d) = np.asarray(box, dtype=float)
    wide = max(np.linalg.norm(a - b), np.linalg.norm(c - d))
    tall = max(np.linalg.norm(a - d), np.linalg.norm(b - c))
    return tall >= 1.5 * wide


def words(crop):
    """A line's image -> its words' images, cut at white gaps wider than WORD_GAP of the ink's height (letters are
    1-3 px apart, words about 0.4 of the font size)."""
    import numpy as np
    grey = crop.mean(axis=2) if crop.ndim == 3 else crop
    lo, hi = np.percentile(grey, 2), np.percentile(grey, 98)
    if hi - lo < 40:   # no contrast: one piece
        return [crop]
    ink = grey < (lo + hi) / 2
    inked_rows = np.where(ink.any(axis=1))[0]
    height = inked_rows[-1] - inked_rows[0] + 1 if len(inked_rows) else crop.shape[0]
    cols = ink.any(axis=0)
    gap = max(3, int(WORD_GAP * height))
    cuts, run, start = [], 0, None
    for x, c in enumerate(cols):
        if c:
            if start is None:
                start = x
            elif run >= gap:
                cuts.append((start, x - run))
                start = x
            run = 0
        else:
            run += 1
    if start is not None:
        cuts.append((start, len(cols) - run))
    pad = max(2, int(0.15 * height))
    return [crop[:, max(0, a - pad):min(crop.shape[1], b + pad)] for a, b in cuts if b > a] or [crop]


def stroke(crop):
    """How thick a line's letters are drawn: the median run of ink across its x-height band, in pixels (body text
    at 200 dpi: 3; bold: 5; an 18 pt heading: 7). Headings are told by it, as box heights vary with the letters."""
    import numpy as np
    grey = crop.mean(axis=2) if crop.ndim == 3 else crop
    ink = grey < 128
    density = ink.sum(axis=1)
    if not density.any():
        return 0
    runs = []
    for row in ink[density >= 0.35 * density.max()]:
        edges = np.diff(np.concatenate([[0], row.astype(np.int8), [0]]))
        runs.extend(np.where(edges == -1)[0] - np.where(edges == 1)[0])
    return float(np.median(runs)) if runs else 0


def tidy(text):
    """Spaces the word cuts put where none belong: '5. 10' -> '5.10', '09: 10' -> '09:10', 'season .' -> 'season.'"""
    text = re.sub(r"(\d[.:,]) (?=\d)", r"\1", text)
    return re.sub(r" (?=[.,;:!?)])", "", text)


def rows(found):
    """[(x0, x1, y0, y1, text, stroke)] -> [(level, line)]: boxes on one row (their middles within half a line
    height) left to right; a wide gap between two boxes makes them cells ('a | b'); a short line alone on its row
    drawn in thicker strokes than the page's text (not a row of cells) is a heading; its level is minus its stroke
    in whole pixels, which lab.pdf.heading_levels ranks over the document: 1, 2, ... from the thickest."""
    import statistics
    usual = statistics.median(b[3] - b[2] for b in found)
    body = statistics.median(b[5] for b in found)
    lines = []
    for b in sorted(found, key=lambda b: (b[2] + b[3]) / 2):
        mid = (b[2] + b[3]) / 2
        if lines and abs(mid - lines[-1]["mid"]) < usual / 2:
            lines[-1]["boxes"].append(b)
        else:
            lines.append({"mid": mid, "boxes": [b]})
    out = []
    for line in lines:
        bs = sorted(line["boxes"])
        text = bs[0][4]
        for prev, b in zip(bs, bs[1:]):
            text += (" | " if b[0] - prev[1] > CELL_GAP * usual else " ") + b[4]
        heavy = " | " not in text and all(b[5] >= HEADING_STROKE * body for b in bs) \
            and len(text.split()) <= HEADING_WORDS and not text.endswith((".", ":"))
        out.append((-round(min(b[5] for b in bs)) if heavy else None, text))
    return out


def file_key(raw):
    """The OCR cache's key of a file: its bytes' sha1 (16 hex)."""
    return hashlib.sha1(raw).hexdigest()[:16]
