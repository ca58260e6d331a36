"""catalogue/, the made-up college's documents and golden questions (written by experiments/make_catalogue.py and
committed): every file loads in its format with its layout read as the loader promises, every golden answer is in a
document the item names, every hop in its own document, a multi-hop answer is not in its first document, and a
rerun of the generator writes the same files. No model, no embedding.
"""
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from golden import split_of
import pytest

import retrieve
import vector_index as vi
from lab.documents import read_document

CATALOGUE = Path(__file__).resolve().parent.parent / "catalogue"
MINIMUM = {".pdf": 12, ".docx": 10, ".html": 10, ".md": 8}
norm = lambda s: " ".join(s.split()).lower()
says = lambda doc, answers: any(norm(a) in norm(doc.text) for a in answers)


@pytest.fixture(scope="module")
def docs():
    loaded, failed = vi.load_documents(CATALOGUE / "docs", quiet=True)
    assert not failed, failed
    return loaded


@pytest.fixture(scope="module")
def golden():
    return json.loads((CATALOGUE / "golden.json").read_text(encoding="utf-8"))


def test_every_document_loads_and_the_four_formats_are_there(docs):
    files = sorted((CATALOGUE / "docs").iterdir())
    kinds = Counter(f.suffix for f in files)
    assert len(files) >= 40 and len(docs) == len(files)          # none skipped, no two with one id
    assert set(kinds) == set(MINIMUM) and all(kinds[k] >= n for k, n in MINIMUM.items()), kinds
    assert all(len(d.text.split()) >= 40 for d in docs.values())


def pages_of(doc):
    """{page: its text} of a PDF's Doc, from its blocks (a block, a section, runs on across pages: Block.breaks)."""
    out = {}
    for b in doc.blocks:
        cuts = [(b.start, b.page), *b.breaks, (b.end, 0)]
        for (start, page), (end, _) in zip(cuts, cuts[1:]):
            out[page] = out.get(page, "") + doc.text[start:end]
    return out


def test_pdf_pages_running_headers_and_two_columns(docs):
    handbook = docs["student-handbook-pdf"]
    assert handbook.title == "Student Handbook 2026-27"
    assert sorted(pages_of(handbook)) == [1, 2, 3, 4, 5, 6]
    assert "Studying > Late submission" in {b.section for b in handbook.blocks}   # its headings are sections (#61)
    assert "Tarrowmere College · Student Handbook" not in handbook.text and "Page 2" not in handbook.text
    records = vi.chunk_records(handbook, "titled")
    assert {m["page"] for _, _, m in records} == set(range(1, 7))
    assert all(cid.startswith(f"student-handbook-pdf#p{m['page']}-") for cid, _, m in records)
    widest = [max(len(line) for line in pages_of(handbook)[n].splitlines()) for n in (1, 2)]
    assert widest[0] < 0.6 * widest[1]                            # page 1 has two columns, page 2 one
    assert sum(len(d.blocks) >= 3 for d in docs.values() if d.file.endswith(".pdf")) >= 8
    timetable = docs["teaching-timetable-pdf"]
    pages = sorted(pages_of(timetable))
    assert pages == list(range(1, len(pages) + 1)) and len(pages) >= 3   # landscape, a table row per line
    row = "Wednesday | 14:00-17:00 | AST 310 | Biosignatures and Remote Detection | VES 14"   # cells (#61)
    assert row in timetable.text.splitlines()
    assert "Autumn term" in {b.section for b in timetable.blocks}


def test_word_headings_html_boilerplate_and_markdown_sections(docs):
    rules = docs["admissions-rules-docx"]
    assert rules.title == "Admissions Rules 2026-27" and "Admissions Office" not in rules.text.splitlines()[0]
    assert {"Entry requirements > Prerequisite courses", "Interviews > History of Science BA portfolio"} \
        <= {b.section for b in rules.blocks}
    assert "Astrobiology BSc | 9 March 2027 | 36" in rules.text  # a table row, cells joined
    page = docs["ast-310-html"]
    assert page.title == "AST 310 Biosignatures and Remote Detection"
    assert not any(junk in page.text for junk in ("cookies", "Accept all", "Quick links", "Privacy notice", "Home /"))
    assert "Teaching > Schedule" in {b.section for b in page.blocks} and "Wednesday | 14:00-17:00 | VES 14" in page.text
    course = docs["hsc-220"]
    assert course.title == "HSC 220 Instruments and Observatories"
    assert {"Prerequisites", "Teaching > Instructor"} <= {b.section for b in course.blocks}


def test_golden_items_have_the_labs_shape_and_are_mostly_multi_hop(golden):
    assert not [(i.get("id"), retrieve.golden_problem(i)) for i in golden if retrieve.golden_problem(i)]
    assert len(retrieve.load_golden(CATALOGUE / "golden.json")) == len(golden) >= 40
    kinds = Counter(i["type"] for i in golden)
    assert kinds["multi"] >= 20 and kinds["single"] >= 10, kinds
    assert len({i["id"] for i in golden}) == len(golden) and {i["source"] for i in golden} == {"catalogue"}
    for i in golden:
        assert (i["type"] == "single") == (i["hops"] == 1) and len(i["decomposition"]) == i["hops"], i["id"]
        assert i["decomposition"][-1]["answer"] == i["answer"], i["id"]
        assert len(i["supporting_docs"]) == len({h["doc"] for h in i["decomposition"]}) == i["hops"], i["id"]


def test_enough_questions_to_tune_on_and_report_on_split_by_entity(golden):
    """>= 150 questions, >= 100 of two hops and a few of three; no entity in both halves, each item's entities in
    its own half, and both halves big enough to report on."""
    hops = Counter(i["hops"] for i in golden)
    assert len(golden) >= 150 and hops[2] >= 100 and hops[3] >= 3, hops
    sides = {}
    for i in golden:
        assert i["split"] in ("dev", "test") and split_of(i) == i["split"], i["id"]
        for e in i["entities"]:
            sides.setdefault(e, set()).add(i["split"])
    assert not [e for e, s in sides.items() if len(s) > 1]
    test = [i for i in golden if i["split"] == "test"]
    assert sum(i["hops"] == 2 for i in test) >= 40 and sum(i["hops"] == 1 for i in test) >= 20
    assert all(i["entities"] for i in test)   # a test item is about something of the test half


def test_entities_are_read_from_the_question_its_hops_and_its_answer():
    from experiments.catalogue_golden import entities, entity_split
    item = next(i for i in json.loads((CATALOGUE / "golden.json").read_text(encoding="utf-8"))
                if i["question"] == "Who teaches the prerequisite of AST 310?")
    assert entities(item) == ["AST 210", "AST 310", "Casimir Odunsi-Hale"]
    split = entity_split()
    assert split["ARL 140"] == split["Caspar Wendeborn"] == split["GEO 205"] == "test" and split["AST 310"] == "dev"


def test_every_answer_is_in_a_supporting_document_and_every_hop_in_its_own(docs, golden):
    unknown = {d for i in golden for d in i["supporting_docs"]} - set(docs)
    assert not unknown
    unsupported = [i["id"] for i in golden
                   if not any(says(docs[d], [i["answer"], *i["aliases"]]) for d in i["supporting_docs"])]
    assert not unsupported
    hops = [(i["id"], n) for i in golden for n, hop in enumerate(i["decomposition"], 1)
            if hop["doc"] not in i["supporting_docs"] or not says(docs[hop["doc"]], [hop["answer"]])]
    assert not hops


def test_a_multi_hop_answer_is_not_in_its_first_document(docs, golden):
    """The facts are spread: the document that answers the first hop does not also give the final answer."""
    shortcuts = [i["id"] for i in golden if i["type"] == "multi"
                 and says(docs[i["decomposition"][0]["doc"]], [i["answer"], *i["aliases"]])]
    assert not shortcuts


def test_the_generator_rewrites_the_committed_files(tmp_path):
    """Text files byte for byte; a PDF or Word file byte for byte, else (another reportlab or python-docx) its text."""
    run = subprocess.run([sys.executable, "-m", "experiments.make_catalogue", "--out", str(tmp_path)],
                         cwd=CATALOGUE.parent, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    files = lambda root: {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
    assert files(tmp_path) == files(CATALOGUE)
    same = lambda a, b: a.read_bytes() == b.read_bytes() or (
        a.suffix in (".pdf", ".docx") and read_document(a).text == read_document(b).text)
    assert not [f for f in sorted(files(CATALOGUE)) if not same(tmp_path / f, CATALOGUE / f)]
