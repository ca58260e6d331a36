"""The steps of a chain: a multi-hop answer stands on pages reached through an earlier hop's answer (the designer's
page gives the village). A passage that gives that earlier answer is a step, not a rival side of a dispute. Used
by disputes.py; no model call.

    not_hops([{"answer": "AST 210", "sources": ["S1"]}, {"answer": "Prof. Odunsi-Hale", "sources": ["S2"]}],
             passages)   # S2 titled 'AST 210 Planetary Habitability' -> only the teacher's side
"""
from lab.answers import normalize_answer


def names_page(answer, title):
    """The answer is what the page is about: its title, or the title's first words ('AST 210' for 'AST 210
    Planetary Habitability')."""
    a, t = normalize_answer(answer), normalize_answer(title or "")
    return bool(a and t) and (t == a or t.startswith(a + " "))


def not_hops(groups, passages):
    """The groups left when a side whose answer is the subject of a page another side stands on is dropped: it
    answers an earlier hop of the question (the designer, whose page gives the village), not the question. A side
    is kept when the other side's answer is likewise the subject of one of its own pages."""
    by_id = {p["id"]: p for p in passages}
    pages = [{by_id[s].get("title") for s in g["sources"] if s in by_id} for g in groups]
    hop = [any(names_page(g["answer"], t) for j, ts in enumerate(pages) if j != i for t in ts)
           for i, g in enumerate(groups)]
    under = [any(names_page(h["answer"], t) for j, h in enumerate(groups) if j != i for t in pages[i])
             for i in range(len(groups))]
    return [g for g, a, b in zip(groups, hop, under) if not a or b]
