"""What a row claims, checked with no model call (grade.py, on every row of verify_citations.py, benchmark.py and
the pattern scripts): its counts follow from its sentence verdicts, its short answer is stated in a supported
sentence when it says so, and each passage it was given is a chunk of the course's corpus with the same text.

    chunks = Chunks(course.corpus)
    row_claims(row, course.by_id[row["id"]], chunks, "titled")   # -> [] or ["supported 2, its verdicts say 1", ...]

A row carries what it claims since citations.question_row keeps it: "verdicts" (each sentence's text, cited IDs,
supported, precise: {ID: bool}), "invalid_ids" and "sources" (each passage's prompt ID, chunk ID and the sha256 of
the chunk's text). The checks:
- counts: sentences, cited, supported, citations and precise from the verdicts, invalid from invalid_ids; every
  cited ID one of its passages, one precise verdict per cited ID, none precise in an unsupported sentence;
- the short answer: answer_check's "stated" part (a supported sentence states it; for yes/no, the supported
  sentences name what the question is about), recomputed from the verdicts, must be the row's features.stated, and
  a row whose status is "verified" must have it (answer_check never verifies an answer no sentence states);
- the passages: a chunk ID ("doc#3", a PDF's "doc-pdf#p12-0") is one the index makes of a document of the course
  corpus (vector_index.chunk_records with the file's chunker: no model, no index), whose text has the row's sha256
  (citations.text_sha; the seed pattern's BM25 document prefix for a document's first chunk too).
Not handled: rows written before they carried these (the committed results of 2026-12-01 among them: counted as
"no claims", never failed); whether a sentence is supported (the judge's word: a model call, the re-run's job);
a passage CRAG's refinement cut (its chunk ID is checked, not its text); passages from outside the corpus by design
(CRAG's web stand-in "web:...", a web URL, GraphRAG's "community-N" summaries).
"""
import re

from layers.answer_check import stating
from citations import text_sha
from retrieve import DEFAULT_CHUNKER, SEED_PREFIX_CHARS
from vector_index import chunk_records, load_documents

OUTSIDE = re.compile(r"^(web:|community-\d|https?://)")


class Chunks:
    """The course corpus's chunks as the index holds them: the documents read once (vector_index.load_documents),
    each chunked on first use with the index's own IDs (vector_index.chunk_records: `doc#3`, `doc-pdf#p12-0`).
    of("ashford-bridge", "titled") -> ({chunk id: sha of its text}, first chunk's id, sha of the seed pattern's
    prefix) or None (no such document); text("ashford-bridge#0", "titled") -> the chunk's text or None."""
    def __init__(self, corpus):
        self.corpus, self.docs, self.made, self.texts = corpus, None, {}, {}

    def of(self, doc, chunker):
        if self.docs is None:
            self.docs = load_documents(self.corpus, quiet=True)[0]
        if (doc, chunker) not in self.made:
            d = self.docs.get(doc)
            records = [] if d is None else chunk_records(d, chunker)
            self.texts.update(((cid, chunker), t) for cid, t, _ in records)
            self.made[doc, chunker] = None if d is None else (
                {cid: text_sha(t) for cid, t, _ in records}, records[0][0] if records else None,
                text_sha(f"{d.title}\n{d.text}"[:SEED_PREFIX_CHARS]))
        return self.made[doc, chunker]


    def text(self, chunk_id, chunker):
        doc = chunk_id.rpartition("#")[0]
        return self.texts.get((chunk_id, chunker)) if doc and self.of(doc, chunker) else None


def carries(row):
    """Whether a row carries its claims in the shape citations.question_row writes them."""
    verdicts, sources = row.get("verdicts"), row.get("sources")
    return isinstance(verdicts, list) and isinstance(sources, list) and all(
        isinstance(v, dict) and isinstance(v.get("text"), str) and isinstance(v.get("cites"), list)
        and isinstance(v.get("supported"), bool) and isinstance(v.get("precise"), dict)
        and all(isinstance(x, bool) for x in v["precise"].values()) for v in verdicts) and all(
        isinstance(s, dict) and isinstance(s.get("id"), str) and isinstance(s.get("chunk_id"), str)
        and (s.get("sha") is None or isinstance(s["sha"], str)) for s in sources)


def counts(row):
    """The problems of a row's counts against its verdicts, cited IDs against its passages."""
    verdicts, given = row["verdicts"], {s["id"] for s in row["sources"]}
    want = {"sentences": len(verdicts), "cited": sum(bool(v["cites"]) for v in verdicts),
            "supported": sum(v["supported"] for v in verdicts),
            "citations": sum(len(v["precise"]) for v in verdicts),
            "precise": sum(sum(v["precise"].values()) for v in verdicts)}
    if isinstance(row.get("invalid_ids"), list):
        want["invalid"] = len(row["invalid_ids"])
    out = [f"{k} {row[k]}, its verdicts say {x}" for k, x in want.items() if row.get(k) != x]
    for i, v in enumerate(verdicts):
        out += [f"sentence {i + 1} cites {c}, not one of the passages it was given" for c in v["cites"]
                if c not in given]
        if set(v["precise"]) != set(v["cites"]):
            out.append(f"sentence {i + 1}: precise verdicts for {sorted(v['precise'])}, cites {v['cites']}")
        if not v["supported"] and any(v["precise"].values()):
            out.append(f"sentence {i + 1}: a precise citation in an unsupported sentence")
    if isinstance(row.get("chunk_ids"), list) and row["chunk_ids"] != [s["chunk_id"] for s in row["sources"]]:
        out.append("chunk_ids are not its passages' chunk IDs")
    return out


def answer_stated(row, item):
    """The problem with what a row says of its short answer (answer_check.stated, recomputed), or None."""
    feats = row.get("features")
    if row.get("idk") or row.get("error") or not isinstance(row.get("answer"), str):
        return None
    says = bool(stating({"answer": row["answer"], "question": item["question"]}, row["verdicts"]))
    claims = bool(feats["stated"]) if isinstance(feats, dict) and "stated" in feats else None
    if claims is not None and claims != says:
        return (f"it says a supported sentence states its short answer {row['answer']!r}; none does" if claims
                else f"it says no supported sentence states its short answer {row['answer']!r}; one does")
    if row.get("status") == "verified" and not says:
        return f"status 'verified', yet no supported sentence states its short answer {row['answer']!r}"
    return None


def passages(row, chunks, chunker):
    """The problems of a row's passages against the course corpus's chunks."""
    out = []
    for s in row["sources"]:
        cid = s["chunk_id"]
        if OUTSIDE.match(cid):
            continue
        doc = cid.rpartition("#")[0]
        have = chunks.of(doc, chunker) if doc else None
        if have is None:
            out.append(f"passage {s['id']}: {cid} is not a chunk of the course corpus"
                       + (f" (no document {doc!r})" if doc else ""))
        elif cid not in have[0]:
            out.append(f"passage {s['id']}: {cid}: {doc} has {len(have[0])} {chunker} chunk(s)")
        elif s["sha"] is not None and s["sha"] not in (have[0][cid], have[2] if cid == have[1] else None):
            out.append(f"passage {s['id']}: {cid}: its text (sha256 {s['sha']}) is not the course corpus's "
                       f"({have[0][cid]})")
    return out


def row_claims(row, item, chunks, chunker=DEFAULT_CHUNKER):
    """Every problem with what one row claims ([] when none), or None when it carries no claims (an older row)."""
    if not carries(row):
        return None
    stated = answer_stated(row, item)
    return counts(row) + ([stated] if stated else []) + passages(row, chunks, chunker)


def check(rows, data, course, chunks):
    """One file's rows (reference.file_rows) -> {"checked": rows that carry claims, "without": rows that do not,
    "problems": ["json fx-3: supported 2, its verdicts say 1", ...]}. router_eval.py's and retrieve.py's rows
    carry no verdicts: they count as without."""
    settings = data.get("settings") if isinstance(data.get("settings"), dict) else {}
    chunker, out = settings.get("chunker") or DEFAULT_CHUNKER, {"checked": 0, "without": 0, "problems": []}
    for method, row in rows:
        item = course.by_id.get(row["id"])
        found = row_claims(row, item, chunks, chunker) if item else None
        out["checked" if found is not None else "without"] += 1
        out["problems"] += [f"{method} {row['id']}: {p}" for p in found or []]
    return out
