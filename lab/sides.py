"""Which answers of a dispute are sides of one disagreement (layers/disputes.py), with no model call. A 1.5B model
asked the question of a passage that does not answer it often answers anyway, from another fact of that passage;
these rules drop such answers. Each side is read in the sentences of its sources that state its answer (stating: a
table's row under its page's title, as the index reads it; a source's whole text when no one sentence names it).

- same_question: a side whose sentence is much further from the question than the closest side's (SIDE_MARGIN)
  answers another question: a paragraph on another singer names its own song in a sentence about something else.
- same_fact: a side none of whose sentences is alike a sentence of another side (SAME_FACT), each side's answer
  masked, states another fact.
  "80" (a line's length) was set against "at least two characters" (a package name's). A planted or outdated copy
  states its value in a sentence that differs from the true one by that value.

`embed` is the index's embedding (vector_index.embed: texts -> rows of unit length), passed in by the layer.
Both keep a side with a source in `keep`: an injected page states its target in a sentence addressed to the model,
far from the question and from the true sentence, and the quarantine must see that side to refuse it.
Not handled: two pages that state one fact in unlike words ("It opened in 1931" under a title, and "The bridge's
opening, in 1932, ...") are read as different facts, and their disagreement is not shown.
"""
import re

from lab.answers import named_in

SIDE_MARGIN = 0.12   # a side whose answer sentence is this much further from the question than the closest side's is
# another question's answer (cosine, MiniLM); chosen on dev (results/issue48/side_gap.txt)
SAME_FACT = 0.70     # a side whose sentences are all less alike than this (cosine, MiniLM) every other side's states
# another fact; chosen on dev (results/issue59/same_fact_dev.txt): 0.80 loses the planted false answer shown of the
# misinformation injections, 0.75 keeps every one; one step below, for planted text worded less like the true page


def lines_of(text):
    """[(line, whether it is a row of a table: documents.table_rows)] of a passage."""
    from lab.documents import table_rows
    lines = text.split("\n")
    return list(zip(lines, table_rows(lines)))


def sentences_of(text):
    """A passage's sentences: each line split as the index splits (vector_index.split_sentences: after . ! ? before
    a capital, so 'Hank Williams, Jr. in 1948' stays one sentence); a row of a table (documents.table_rows) is one."""
    from lab.chunks import split_sentences
    return [s for line, row in lines_of(text) for s in ([line] if row else split_sentences(line))]


def as_read(p, sentence):
    """A sentence of passage p as it is embedded: a table's row under the page's title, as the index reads its
    chunks ('| Office | HAL 326 |' names no one; the question asks whose office); a sentence as it is."""
    rows = {line for line, row in lines_of(p["text"]) if row}
    return f"{p['title']}\n{sentence}" if p.get("title") and sentence in rows else sentence


def stating(group, by_id, masked=False):
    """The sentences in which a group's sources ({id: passage}) state its answer (as_read), or a source's whole
    text when no one sentence names it; [] when no source is a passage (the model's own answer). masked: the answer
    put as X (case-insensitive), so that one statement with two values reads as one: 'Velloran Tower was designed by
    X.' (the answer's own words had made two such sentences 0.66 alike)."""
    mask = (lambda s: re.sub(re.escape(group["answer"]), "X", s, flags=re.I)) if masked else (lambda s: s)
    return [mask(t) for pid in group["sources"] if pid in by_id for t in
            ([as_read(by_id[pid], s) for s in sentences_of(by_id[pid]["text"]) if named_in(s, group["answer"], 1.0)]
             or [by_id[pid]["text"]])]


def vectors(groups, passages, embed, masked=False):
    """Per group, the vectors of its stating() sentences (rows), or None."""
    by_id = {p["id"]: p for p in passages}
    return [embed(texts) if (texts := stating(g, by_id, masked)) else None for g in groups]


def closeness(question, groups, passages, embed):
    """Per group, the best cosine between the question and a sentence stating its answer (-1.0 with none)."""
    q = embed([question])[0]
    return [float((v @ q).max()) if v is not None else -1.0 for v in vectors(groups, passages, embed)]


def same_question(question, groups, passages, embed, margin=None, keep=()):
    """The groups whose closeness() is within `margin` (default SIDE_MARGIN) of the best, and any with a source in
    `keep`."""
    if len(groups) < 2:
        return groups
    margin = SIDE_MARGIN if margin is None else margin
    near = closeness(question, groups, passages, embed)
    return [g for g, c in zip(groups, near) if c >= max(near) - margin or set(g["sources"]) & set(keep)]


def same_fact(question, groups, passages, embed, bar=None, keep=()):
    """The group closest to the question (closeness), the groups with a sentence at least `bar` (default SAME_FACT)
    alike a sentence of another group (stating(), answers masked), and any with no passage or a source in `keep`."""
    if len(groups) < 2:
        return groups
    bar = SAME_FACT if bar is None else bar
    vecs, near = vectors(groups, passages, embed, masked=True), closeness(question, groups, passages, embed)
    anchor = near.index(max(near))

    def alike(i):
        return any(j != i and v is not None and float((vecs[i] @ v.T).max()) >= bar for j, v in enumerate(vecs))
    return [g for i, (g, v) in enumerate(zip(groups, vecs))
            if i == anchor or v is None or set(g["sources"]) & set(keep) or alike(i)]
