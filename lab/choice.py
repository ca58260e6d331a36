"""A disputed answer as a choice: each answer with its sources (file, page, section), the date each source gives
itself and which side is newer; the lines the CLI prints and the page shows. The dispute itself is disputes.check();
no model call here.

    describe(d, passages) -> 'The sources disagree; the answer is one of:\n  - Imre Dolanski: S1 (velloran, ...'
"""
from lab import dates, own


def sides(d, passages, whole=None):
    """A disputed answer as a choice: [{"answer", "sources": [{"id", "title", "where", "date"}], "date", "newer"}],
    one per group of check()'s dict d. A source's "where" is its file with page and section when it has them;
    its "date" is the latest the document gives itself (lab/dates.py: 'last updated 3 March 2024'), read from the
    passage, else from its document's whole text in `whole` ({doc: text}, disputes.documents). A side's "date" is
    its sources' latest; "newer" marks the one side whose date is the latest, when at least two sides are dated."""
    by_id, whole = {p["id"]: p for p in [*passages, *d.get("more", [])]}, whole or {}
    out = []
    for g in d["answers"]:
        if g.get("own"):
            out.append({"answer": g["answer"], "date": "", "newer": False, "sources": [
                {"id": own.OWN, "title": "", "where": f"its own knowledge, no document; p = {g['own']:.2f}", "date": "",
                 "past_prompt": False}]})
            continue
        shown = []
        for sid in g["sources"]:
            p = by_id.get(sid, {})
            when = dates.stated_date(p.get("text", "")) or dates.stated_date(whole.get(p.get("doc"), ""))
            shown.append({"id": sid, "title": p.get("title") or p.get("doc") or "", "where": p.get("where") or
                          p.get("doc") or "", "date": dates.shown(when), "past_prompt": sid.startswith("W")})
        out.append({"answer": g["answer"], "sources": shown,
                    "date": max((s["date"] for s in shown if s["date"]), default=""), "newer": False})
    dated = sorted({o["date"] for o in out if o["date"]})
    if len(dated) >= 2:
        for o in out:
            o["newer"] = o["date"] == dated[-1]
    return out


def source_text(s):
    """'S1 (velloran.md p. 2 · Design, dated 2024-03-03)' for one source of a side."""
    bits = [b for b in (s["where"] or s["title"],
                        f"dated {s['date']}" if s["date"] else "",
                        "past the passages the model read" if s["past_prompt"] else "") if b]
    return f"{s['id']} ({', '.join(bits)})" if bits else s["id"]


def who(d):
    """Who disagrees in check()'s dict d: "sources", or "sources and the model's own knowledge" with an own side."""
    return "sources and the model's own knowledge" if any(g.get("own") for g in d["answers"]) else "sources"


def describe(d, passages=(), whole=None):
    """The CLI's lines for a disputed answer, a choice: each answer with its sources and dates, the newer marked.
    The sources disagree; the answer is one of:
      - Imre Dolanski: S1 (velloran, dated 2024-03-03) -- the newer
      - Baxter Quill: W1 (records, past the passages the model read)"""
    lines = [f"The {who(d)} disagree; the answer is one of:"]
    for side in sides(d, passages, whole):
        lines.append(f"  - {side['answer']}: " + "; ".join(source_text(s) for s in side["sources"])
                     + (" -- the newer" if side["newer"] else ""))
    return "\n".join(lines)
