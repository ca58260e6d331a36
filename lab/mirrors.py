"""A page and its copy: pages under one title (a mirror, an outdated copy, a planted twin), and the value one of
them has where the other has the answer, and the same section of a copy. Used by disputes.py; no model call.

    changed_value('... in Ford County, Kansas.', '... in Ford County, Britain.', 'Kansas') -> 'Britain'
"""
import difflib

from lab.answers import answers_match, named_in, normalize_answer

MIRROR_RATIO = 0.9   # two texts this alike (difflib's ratio of their words) are one page and its copy
TWIN_RATIO = 0.7     # a copy's chunk at least this alike a cited chunk (alike()) is its same section: on dev,
#                      a copy's same section is 0.80-1.00 alike, another at most 0.58 (results/issue48/twin_probe.txt)


def alike(a, b):
    """How alike two texts are, word by word (difflib's ratio, 0..1): a page's section against the same section of its
    copy reads near 1 (a value changed), against another section of it far lower."""
    return difflib.SequenceMatcher(None, a.split(), b.split(), autojunk=False).ratio()


def match_either(a, b, question=""):
    """answers.answers_match either way round: neither answer is taken as the source's (disputes.agree's first test)."""
    return answers_match(a, b, question) or answers_match(b, a, question)


def cited_titles(result):
    """The titles of the passages the answer's sentences cite."""
    by_id = {p["id"]: p for p in result.get("passages", [])}
    return {by_id[c]["title"] for s in result.get("sentences", []) for c in s.get("cites", [])
            if c in by_id and by_id[c].get("title")}


def mirrored(passages, cited):
    """The cited titles that two or more documents among the passages carry: a page and its mirror, or its
    outdated copy, which may state the fact differently."""
    docs = {}
    for p in passages:
        docs.setdefault(p.get("title"), set()).add(p.get("doc"))
    return {t for t in cited if len(docs.get(t, ())) >= 2}


def changed_value(text, copy, answer):
    """The words a near-copy of `text` (same words but a few, difflib) has in place of `answer`, or None: 'in Ford
    County, Kansas.' against 'in Ford County, Britain.' for 'Kansas' -> 'Britain'. An outdated page or a planted copy
    whose extraction the judge missed still shows its other value, with no model call."""
    a, b = text.split(), copy.split()
    if not a or not b:
        return None
    match = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if match.ratio() < MIRROR_RATIO:
        return None
    said = set(normalize_answer(answer).split())
    for op, i1, i2, j1, j2 in match.get_opcodes():
        if op == "replace" and said & set(normalize_answer(" ".join(a[i1:i2])).split()):
            value = " ".join(b[j1:j2]).strip(" .,;:()\"'")
            return value or None
    return None


def mirror_answers(said, passages, titles, shown=""):
    """{passage id: value} read off pages under a mirrored title (changed_value): a page with no answer of its own
    shows the value it has where its twin has the answer; a page whose own answer was taken to agree with its
    twin's, though the two texts differ right there, shows its value instead. The shown answer counts as the
    answer of a page that names it (the judge may find no answer in either twin); that page then shows it too."""
    by_id = {p["id"]: p for p in passages}
    answered = dict(said)
    seeds = list(said) + [(p["id"], shown) for p in passages if shown and p.get("title") in titles
                          and p["id"] not in answered and named_in(p["text"], shown, 1.0)]
    out = {}
    for p in passages:
        if p.get("title") not in titles:
            continue
        for pid, answer in seeds:
            q = by_id.get(pid)
            if not q or pid == p["id"] or q.get("title") != p.get("title"):
                continue
            value = changed_value(q["text"], p["text"], answer)
            fresh = p["id"] not in answered or match_either(answered[p["id"]], answer)
            if value and not match_either(value, answer) and fresh:
                out[p["id"]] = value
                if pid not in answered:
                    out[pid] = answer
                break
    return out


def with_mirrors(said, passages, titles, shown=""):
    """said with mirror_answers() applied: values added and replaced, in passage order."""
    fixed = {**dict(said), **mirror_answers(said, passages, titles, shown)}
    order = [p["id"] for p in passages]
    return sorted(fixed.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))


def twin_sections(passages, retriever, titles):
    """The same section, in each other document under a cited title, of each prompt passage of that title: the chunk
    of the copy most alike the passage (alike() >= TWIN_RATIO), best first. When the prompt holds a section of
    three copies, its fourth copy's same section is the one that can disagree, and the rankings may not reach it.
    `retriever` has the index's chunks: texts, metas ({"doc", "title"}), by_doc and passage(i) (retrieve.Retriever);
    none with TWIN_RATIO above 1."""
    docs, under = {p.get("doc") for p in passages}, {}
    if TWIN_RATIO > 1:
        return []
    for doc, chunks in retriever.by_doc.items():
        if doc not in docs and retriever.metas[chunks[0]]["title"] in titles:
            under.setdefault(retriever.metas[chunks[0]]["title"], []).append(doc)
    found = {}
    for p in passages:
        for doc in under.get(p.get("title"), []):
            ratio, i = max((alike(p["text"], retriever.texts[i]), i) for i in retriever.by_doc[doc])
            if ratio >= TWIN_RATIO:
                found[i] = max(ratio, found.get(i, 0.0))
    return [retriever.passage(i) for i in sorted(found, key=lambda i: -found[i])]
