"""lab/links.py and retrieve.py's `chain` method: names, links, the chained ranking, its trace and its updates.

Runs on the fixture corpus with the real embedder and no language model (chain makes no model call)."""
import re
import sys

from golden import split_of
import page
import retrieve
from lab import links, steps
from layers import links as links_layer
from lab.cache import Cache
from vector_index import build_index

Q = "In which village was the designer of Ashford Bridge born?"


def test_names_are_capitalised_runs_without_sentence_openers():
    assert links.names("In 1968, Viorst signed the Writers and Editors War Tax Protest.") == [
        "viorst", "writers and editors war tax protest"]
    assert links.names("The Journal of Psychotherapy Integration is published by the American Psychological "
                       "Association.") == ["american psychological association", "journal of psychotherapy integration"]
    assert links.names("it rained. nothing here") == []


def test_split_of_is_a_stable_half():
    items = [{"id": f"q{n}"} for n in range(200)]
    halves = [split_of(x) for x in items]
    assert halves == [split_of(x) for x in items] and 70 < halves.count("dev") < 130


def test_chain_follows_the_title_hop_one_names(corpus):
    q = "Who was mayor in 2020 of the town where Edric Vell lived?"
    fused = retrieve.retrieve_chunks(q, 2, corpus=corpus, method="fused")
    chained = links_layer.retrieve_chunks(q, 2, corpus=corpus)
    assert [p["doc"] for p in fused] == ["edric-vell", "tomas-vell"]    # hop 1 alone misses the town
    assert [p["doc"] for p in chained] == ["edric-vell", "corran"]
    s2 = chained[1]
    assert s2["via"] == {"from": "S1", "kind": "title", "name": "corran"} and "link" in s2["found_by"]
    assert chained[0]["via"] is None and chained[0]["chunk_id"] == fused[0]["chunk_id"]  # hop 1's top leads
    assert links_layer.link_line(s2) == "S2 reached from S1 via 'corran' (its title)"


def test_a_name_the_question_already_says_links_nothing(corpus):
    r = retrieve.get_retriever(corpus)
    i = next(n for n, m in enumerate(r.metas) if m["doc"] == "ashford-bridge")
    free = links_layer.links_of(r).reached(i, r.texts[i], links.normalize("Where does the river flow?"))
    asked = links_layer.links_of(r).reached(i, r.texts[i], links.normalize("Where does the River Lente flow?"))
    lente = next(n for n, m in enumerate(r.metas) if m["doc"] == "river-lente")
    assert free[lente][1] == "title" and asked[lente][1] == "title"   # a title link stands either way
    corran = next(n for n, m in enumerate(r.metas) if m["doc"] == "corran")
    assert corran in free                                           # 'Corran' is the title of corran.md
    port = next(n for n, m in enumerate(r.metas) if m["doc"] == "port-sallow")
    shared = links_layer.links_of(r).reached(port, r.texts[port], "")
    river_lente = shared[lente]
    assert river_lente[0] > links.TITLE_BONUS   # named title plus the shared name 'river lente'
    named = links_layer.links_of(r).reached(port, r.texts[port], "river lente")
    assert lente not in {j for j, v in named.items() if v[1] == "name"}


def test_a_changed_document_updates_its_links(own_corpus):
    build_index(own_corpus, "titled", progress=False)
    assert links_layer.retrieve_chunks(Q, 2, corpus=own_corpus)[1]["doc"] == "tomas-vell"
    first = links_layer.links_of(retrieve.get_retriever(own_corpus)).computed
    doc = own_corpus / "ashford-bridge.txt"
    doc.write_text(doc.read_text().replace("Tomas Vell", "an unnamed engineer"))
    build_index(own_corpus, "titled", progress=False)
    r = retrieve.get_retriever(own_corpus)
    after = links_layer.retrieve_chunks(Q, 2, corpus=own_corpus)
    # only the changed chunk is read anew (the cache is shared)
    assert links_layer.links_of(r).computed == 1 and first in (0, len(r.ids))
    assert not any(p["via"] and p["via"]["name"] == "tomas vell" for p in after)
    (own_corpus / "hartmoor.txt").rename(own_corpus / "gone.bak")   # a removed title links nowhere
    build_index(own_corpus, "titled", progress=False)
    i = next(n for n, m in enumerate(retrieve.get_retriever(own_corpus).metas) if m["doc"] == "tomas-vell")
    r = retrieve.get_retriever(own_corpus)
    assert "hartmoor" not in {v[2] for v in links_layer.links_of(r).reached(i, r.texts[i], "").values()}


def test_chain_cli_prints_the_link(corpus, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["links.py", "Who was mayor in 2020 of the town where Edric Vell lived?",
                                      "--k", "2", "--corpus", str(corpus)])
    links_layer.main()   # `python -m layers.links ...`, in this process (the embedder is loaded once for the suite)
    out = capsys.readouterr().out
    assert "S2 reached from S1 via 'corran' (its title)" in out and "+link" in out


def test_the_page_shows_the_link_taken():
    step = {"step": "retrieve", "hop": 0, "query": Q, "method": "chain", "chunks": ["ashford-bridge#0", "tomas-vell#0"],
            "links": ["S2 reached from S1 via 'tomas vell' (its title)"]}
    assert steps.describe(step).endswith("; S2 reached from S1 via 'tomas vell' (its title)")
    html = page._source_html({"doc": "tomas-vell", "title": "Tomas Vell", "chunk_id": "tomas-vell#0", "text": "x",
                              "via": {"from": "S1", "kind": "title", "name": "tomas vell"}})
    assert "reached from S1 via &#x27;tomas vell&#x27; (its title)" in html


def test_chain_eval_compares_the_variants(corpus, golden_path):
    from experiments import chain_eval
    items = retrieve.load_golden(golden_path)
    report = chain_eval.evaluate(items, [2], corpus, "titled")
    assert (set(report["recall"]) == set(chain_eval.VARIANTS)
            and report["n"] == {"fixture/multi": 3, "multi": 3, "single": 3})
    r = report["recall"]
    assert r["chain"]["2"]["multi"] == 1.0 > r["fused"]["2"]["multi"]   # the Edric Vell question needs its link
    assert all(0 <= v["2"]["single"] <= 1 for v in r.values())
    assert set(report["answer_recall"]) == set(chain_eval.VARIANTS) - {"mdr"}


def test_codes_are_keys_of_their_own_in_any_shape():
    assert links.codes("Students must have passed BIO 214. See MAR/2140, Morvath Tower C-12 and room OSL G12.") == [
        "bio 214", "mar 2140", "c 12", "osl g12"]
    assert links.codes("A 5-star hall, 30 credits, 2026-27, 09:30 to 21:00") == []   # no prefix, numbers alone
    # the code inside a longer capitalised run is a name of its own: the course page and the page that only
    # says the code share it
    assert {"bio 214", "bio 214 microbial diversity"} <= set(links.names("BIO 214 Microbial Diversity"))


def test_names_do_not_cross_lines_and_a_table_header_names_nothing():
    text = "AST 310 Biosignatures\nPrerequisites\nDay | Time | Room\nWednesday | 15:00 | MRK 230"
    got = links.names(text)
    assert "prerequisites" in got and "ast 310 biosignatures" in got and not any("prerequisites " in k for k in got)
    assert "day" not in got and "room" not in got and {"wednesday", "mrk 230"} <= set(got)
    assert "day" not in links.names("| Day | Time |\n|---|---|\n| Monday | 9:00 |")   # Markdown's header too


def _links(tmp_path, docs):
    """Links over hand-made documents: {doc: (title, [chunk texts])}."""
    texts, metas = [], []
    for doc, (title, chunks) in docs.items():
        texts += [f"{title}\n{t}" for t in chunks]
        metas += [{"doc": doc, "title": title, "section": f"part {n}"} for n in range(len(chunks))]
    return texts, links.Links(texts, metas, cache=Cache("links", folder=tmp_path))


def test_a_code_links_to_the_page_titled_with_it_or_describing_it(tmp_path):
    texts, lk = _links(tmp_path, {
        "ast-310": ("AST 310 Biosignatures", ["Students must have passed AST 210 and BIO 214 before enrolling."]),
        "ast-210": ("AST 210 Planetary Habitability", ["The course is taught by Dr Casimir Odunsi."]),
        "science": ("Foundation Science Courses", ["BIO 214 Microbial Diversity is taught in QNL 120."]),
        "other": ("Library guide", ["The library opens at nine."])})
    got = lk.reached(0, texts[0], links.normalize("Who teaches the prerequisite of AST 310?"), ["ast 310"])
    assert set(got) == {1, 2}
    assert got[1][1:] == ("title", "ast 210") and got[2][1:] == ("name", "bio 214")
    # a code the question says links nothing as a shared name: hop 1 has it
    assert set(lk.reached(0, texts[0], links.normalize("Who teaches BIO 214?"), ["bio 214"])) == {1}


def test_boilerplate_in_many_documents_links_nothing(tmp_path):
    courses = {f"c{n}": (f"Course {n}", [f"A pass at the Summer Bridging School counts. Taught by Dr Vell {n}."])
               for n in range(12)}
    courses["c0"] = ("Course 0", ["A pass at the Summer Bridging School counts. Taught by Dr Anwen Rooke."])
    courses["staff"] = ("Staff", ["Dr Anwen Rooke keeps office hours on Friday."])
    texts, lk = _links(tmp_path, courses)
    # in 12 of 13 documents (though in one chunk of each): not a link; a name two documents share is one
    assert lk.docs_of["summer bridging school"] == 12
    got = {v[2] for v in lk.reached(0, texts[0], "").values()}
    assert got == {"dr anwen rooke"}


def test_the_rest_of_a_question_is_what_the_linking_passage_does_not_say():
    seed = "AST 310 Biosignatures\nPrerequisites\nStudents must have passed AST 210 before enrolling. A pass counts."
    said = links.said_by(seed, "ast 210")
    assert "A pass counts" not in said and "Prerequisites" in said and "passed AST 210" in said
    assert links.rest_of("Who teaches the prerequisite of AST 310?", said) == "Who teaches the of"
    # the linking sentence, not the whole chunk: 'office' stays asked though the chunk's next sentence says it
    seed = "PHY 226 Optics\nTeaching\nThe course is taught by Dr Fen Oduya. Office hours are on the staff page."
    rest = links.rest_of("Where is the office of the instructor who teaches PHY 226?", links.said_by(seed, "fen oduya"))
    assert rest == "Where office of instructor who"
    assert links.rest_of("What is AST 210?", "AST 210") is None   # nothing left to ask: keep the whole question


def test_a_reached_document_is_shown_by_its_chunk_for_what_the_question_still_asks(tmp_path):
    import numpy as np
    texts, lk = _links(tmp_path, {
        "ast-310": ("AST 310 Biosignatures", ["Prerequisite\nThe prerequisite of this course is AST 210."]),
        "ast-210": ("AST 210 Habitability", ["Prerequisite\nThe prerequisite of this course is AST 110.",
                                            "Teaching\nDr Odunsi teaches this course."])})
    words = lambda t: set(re.findall(r"\w+", t.lower()))
    overlap = lambda q, chunks: {c: len(words(q) & words(texts[c])) / 10 for c in chunks}
    q = "Who teaches the prerequisite of AST 310?"
    args = ([(0, 1.0)], lambda chunks: overlap(q, chunks), np.zeros(len(texts)), lk, texts, q, 2)
    whole = links.chain_rank(*args)
    assert [j for j, _, _ in whole] == [0, 1]     # by the whole question: AST 210's prerequisite again
    rest = links.chain_rank(*args, rescore=lambda t, chunks: {c: 10 * v for c, v in overlap(t, chunks).items()})
    assert [j for j, _, _ in rest] == [0, 2] and rest[1][2] == whole[1][2]   # its teaching, by the same link
    lk.located["ast-210"] = False     # a prose text cut by length: its pieces are not sections, the choice stands
    prose = links.chain_rank(*args, rescore=lambda t, cs: {c: 10 * v for c, v in overlap(t, cs).items()})
    assert [(j, via) for j, _, via in prose] == [(j, via) for j, _, via in whole]


def test_answer_bearing_recall_reads_each_hops_answer_in_the_passages():
    item = {"type": "multi", "answer": "Casimir Odunsi-Hale", "aliases": ["Odunsi-Hale"],
            "decomposition": [{"answer": "AST 210"}, {"answer": "Casimir Odunsi-Hale"}]}
    assert retrieve.hop_answers(item) == [["AST 210"], ["Casimir Odunsi-Hale", "Odunsi-Hale"]]
    hop1 = {"text": "Students must have passed AST 210."}
    assert retrieve.answers_held([hop1], retrieve.hop_answers(item)) == (0.0, 0.0)
    both = [hop1, {"text": "Taught by Prof. Odunsi-Hale."}]
    assert retrieve.answers_held(both, retrieve.hop_answers(item)) == (1.0, 1.0)
    assert retrieve.answers_held([{"text": "AST 2100 ... Odunsi-Hale"}], retrieve.hop_answers(item)) == (1.0, 0.0)
    assert retrieve.hop_answers({"type": "multi", "answer": "yes", "aliases": []}) == []   # names nothing


def test_a_code_reaches_the_page_that_holds_it_and_the_bridge_is_shown(tmp_path, monkeypatch):
    """'In which building is the office of X?': X's Contact table names the room, the buildings guide's page for that
    room names the building. Its first page is the most like the question, and X's first chunk never says the room."""
    import numpy as np
    texts, lk = _links(tmp_path, {
        "staff": ("Dr Anwen Rooke", ["Dr Anwen Rooke is a lecturer in history.", "Contact\nOffice | MRK 305"]),
        "guide": ("Buildings and rooms", [
            "How rooms are numbered\nEvery room in a building has its code. The office of a porter is in each"
            " building.",
            "Marrick Hall\nMarrick Hall (code MRK) is the oldest building.\nMRK 305 Office 2",
            "Quenby Laboratories\nQNL 120 Laboratory 30"]),
        "library": ("Library guide", ["The library opens at nine."])})
    words = lambda t: set(re.findall(r"\w+", t.lower()))
    q = "In which building is the office of Dr Anwen Rooke?"
    cosine = lambda chunks: {c: len(words(q) & words(texts[c])) / 10 for c in chunks}
    args = ([(0, 1.0), (2, 0.5)], cosine, np.zeros(len(texts)), lk, texts, q, 3)
    assert [j for j, _, _ in links.chain_rank(*args)] == [0, 1, 3]   # X, X's office (the bridge), Marrick Hall's page
    got = links.chain_rank(*args)[2][2]
    assert got["from"] == 1 and got["name"] == "mrk 305"
    monkeypatch.setattr(links, "LINKED_CHUNK", False)   # the page most like the question: not the one that answers
    assert [j for j, _, _ in links.chain_rank(*args)] == [0, 2]
    monkeypatch.setattr(links, "LINKED_CHUNK", True)
    monkeypatch.setattr(links, "SHOW_BRIDGE", False)    # the building, but nothing says it is X's office
    assert [j for j, _, _ in links.chain_rank(*args)] == [0, 3]
    assert "mrk 305" in lk.codes and "dr anwen rooke" not in lk.codes


def test_what_follows_a_titles_colon_names_its_document(tmp_path):
    texts, lk = _links(tmp_path, {
        "dsc-120": ("DSC 120 Statistics", ["The course is taught by Dr Wren Albescu."]),
        "cv": ("Curriculum Vitae: Dr Wren Albescu", ["Albescu earned a PhD at the University of Sorrel Bay."]),
        "cv2": ("Curriculum Vitae: Dr Tobias Kang", ["Kang earned a PhD at Elsmere."])})
    got = lk.reached(0, texts[0], links.normalize("Where did the instructor of DSC 120 earn a PhD?"), ["dsc 120"])
    assert got[1][1:] == ("title", "dr wren albescu") and 2 not in got


def test_what_the_question_still_asks_ranks_the_documents_a_link_reached(tmp_path, monkeypatch):
    """'How many seats does the room where GEO 101 is taught have?': the course page links to its lecturer's profile
    by title (a strong link) and to the buildings page by the room's code; only the second speaks of seats."""
    import numpy as np
    texts, lk = _links(tmp_path, {
        "geo-101": ("GEO 101 Earth Materials", ["Teaching\nTaught by Prof. Ottoline Brisk. Classes meet in ARL 115."]),
        "brisk": ("Prof. Ottoline Brisk", ["Prof. Ottoline Brisk teaches geology."]),
        "guide": ("Buildings and rooms", ["Ashby Rock Laboratory\nARL 115: a room of 36 seats"]),
        "other": ("Library guide", ["The library opens at nine."])})
    words = lambda t: set(re.findall(r"\w+", t.lower()))
    q = "How many seats does the room where GEO 101 is taught have?"
    cosine = lambda chunks: {c: len(words(q) & words(texts[c])) / 20 for c in chunks}
    content = lambda t: words(t) - {"how", "many", "does", "the", "where", "is", "have", "of", "a"}
    rescore = lambda t, chunks: {c: len(content(t) & content(texts[c])) for c in chunks}
    args = ([(0, 1.0)], cosine, np.zeros(len(texts)), lk, texts, q, 2)
    monkeypatch.setattr(links, "REST_RANK", 0.0)
    assert [j for j, _, _ in links.chain_rank(*args, rescore=rescore)] == [0, 1]   # the lecturer: no seats there
    monkeypatch.setattr(links, "REST_RANK", 0.25)
    ranked = links.chain_rank(*args, rescore=rescore)
    assert [j for j, _, _ in ranked] == [0, 2] and ranked[1][2]["name"] == "arl 115"
