"""The pages quote what the results files say (issue 60): each figure of a quoted table (the benchmark, week 2's
fusion table, week 5's citation table, week 6's route table) is read beside the file it names and checked against
it, offline. A page that names a file must agree with it; whether the file is stale is tests/test_tables.py's
business."""
import functools
import json
import re
from pathlib import Path

import pytest

import benchmark

ROOT = Path(__file__).parent.parent


def tables_of(text):
    """[(header cells, [row cells])] of every Markdown table in a text."""
    out, rows = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            out.append((rows[0], [r for r in rows[1:] if not set("".join(r)) <= set("-: ")]))
            rows = []
    return out


def cell(value, fmt):
    return "n/a" if value is None else format(value, fmt)


def benchmark_columns():
    """{the page's column header: (summary key, format)} as benchmark.py writes its Markdown table."""
    return {benchmark.HEADERS.get(h, h): (k, f) for k, h, f in benchmark.COLUMNS}


def mismatches(text, table):
    """(figures checked, [(pattern, column, on the page, in the file)]) of a page's pattern tables against a
    benchmark run's `all` table."""
    columns, checked, wrong = benchmark_columns(), 0, []
    for header, rows in tables_of(text):
        if header[0] != "pattern":
            continue
        for row in rows:
            for name, got in zip(header[1:], row[1:]):
                if name in columns:
                    key, fmt = columns[name]
                    want = cell(table[row[0]].get(key), fmt)
                    checked += 1
                    if got != want:
                        wrong.append((row[0], name, got, want))
    return checked, wrong


@pytest.mark.parametrize("page, results", [("labs/benchmark.md", "results/benchmark.json")])
def test_a_benchmark_table_on_a_page_is_its_results_file(page, results):
    table = json.loads((ROOT / results).read_text(encoding="utf-8"))["table"]["all"]
    checked, wrong = mismatches((ROOT / page).read_text(encoding="utf-8"), table)
    assert checked >= 50 and wrong == []


def test_a_figure_that_is_not_the_files_is_caught():
    text = "| pattern | F1 | EM |\n|---|---:|---:|\n| single | 0.999 | 0.417 |\n"
    checked, wrong = mismatches(text, {"single": {"answer_f1": 0.5072, "answer_em": 0.41666}})
    assert checked == 2 and wrong == [("single", "F1", "0.999", "0.507")]


def figures_row(page, first_cell):
    """{header: cell} of the table row of `page` whose first cell is `first_cell` (bold marks dropped)."""
    for header, rows in tables_of((ROOT / page).read_text(encoding="utf-8")):
        for row in rows:
            if row[0].replace("*", "") == first_cell:
                return dict(zip(header, (c.replace("*", "") for c in row)))
    raise AssertionError(f"{page}: no row {first_cell!r}")


def test_the_citation_table_of_week_5_is_its_results_file():
    run = json.loads((ROOT / "results/citations_json_30.json").read_text(encoding="utf-8"))
    row = figures_row("labs/week5-verify.md", "the `judge_answers` layer")   # "The second row is that file."
    assert (row["sentences"], row["cited"], row["invalid IDs"]) == (
        str(run["sentences"]), cell(run["cited_sentence_rate"], ".3f"), str(run["invalid_ids"]))
    assert (row["citation recall"], row["citation precision"]) == (
        cell(run["citation_recall"], ".3f"), cell(run["citation_precision"], ".3f"))


@pytest.mark.parametrize("label, mode", [("single-shot `generate()`", "single"),
                                         ("parallel decomposition", "parallel"), ("iterative retrieval", "iterative")])
def test_the_route_table_of_week_6_is_router_evals_file(label, mode):
    m = json.loads((ROOT / "results/router_eval.json").read_text(encoding="utf-8"))["modes"][mode]
    row = figures_row("labs/week6-multihop.md", label)
    recall = " / ".join(cell(m["by_source"][s]["recall"], ".3f") for s in ("hotpotqa", "musique"))
    assert (row["F1"], row["supporting-doc recall, HotpotQA / MuSiQue"]) == (cell(m["f1"], ".3f"), recall)
    assert (row["LLM calls"], row["s/question"]) == (cell(m["llm_calls"], ".1f"), cell(m["seconds"], ".1f"))


@pytest.mark.parametrize("label, source", [("HotpotQA multi-hop (n=100)", "hotpotqa/multi"),
                                           ("MuSiQue multi-hop (n=100)", "musique/multi"),
                                           ("MuSiQue single-hop (n=104)", "musique/single")])
def test_the_fusion_table_of_week_2_is_its_results_file(label, source):
    recall = json.loads((ROOT / "results/retrieval.json").read_text(encoding="utf-8"))["recall"]
    row = figures_row("labs/week2-retrieve.md", label)
    methods = {"BM25": "bm25", "dense": "dense", "the seed's interleave": "seed_interleave", "fused (RRF)": "fused"}
    assert {h: row[h] for h in methods} == {h: cell(recall[m]["4"][source], ".3f") for h, m in methods.items()}


RESULTS_FILE = re.compile(r"results/[\w./-]+\.(?:json|txt|md)")
DECIMAL = re.compile(r"(?<![\w.])\d*\.\d+(?![\w.])")
COMMIT = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")


def blocks(text):
    """A page's paragraphs, list items and table rows, each one string; fenced blocks (recorded output) left out."""
    out, now, fenced = [], [], False
    for line in text.splitlines() + [""]:
        if line.startswith("```"):
            fenced = not fenced
            continue
        starts = re.match(r"\s*(?:[-*|]|\d+\.)\s", line)
        if not fenced and line.strip() and not starts:
            now.append(line)
            continue
        out.append(" ".join(now))
        now = [line] if starts and not fenced else []
    return [b for b in out if b]


@functools.lru_cache(maxsize=None)
def read_results(path, root=ROOT):
    """(text, [its JSON numbers]) of a results file, read once per test run; ("", []) when it is missing."""
    text = (root / path).read_text(encoding="utf-8") if (root / path).is_file() else ""
    numbers = []
    if path.endswith(".json") and text:
        json.loads(text, parse_float=numbers.append, parse_int=lambda s: numbers.append(s) or 0)
    return text, numbers


def in_file(figure, path, root=ROOT):
    """Whether a quoted decimal is in a results file: its text, or a number of its JSON at the quote's precision."""
    text, numbers = read_results(path, root)
    places = len(figure.split(".")[1])
    return figure in text or any(round(float(n), places) == float(figure) for n in numbers)


def unsourced(text, replayed, root=ROOT):
    """The blocks of a page that quote a decimal beside a results file and say neither the commit that made it nor
    only files a replay re-makes (grading.tables, each held current by tests/test_tables.py) that hold the figure."""
    out = []
    for block in blocks(text):
        files, figures = RESULTS_FILE.findall(block), DECIMAL.findall(block)
        if not files or not figures or COMMIT.search(block):
            continue
        if not set(files) <= replayed or not all(any(in_file(f, p, root) for p in files) for f in figures):
            out.append(block)
    return out


def test_every_figure_beside_a_results_file_is_that_files_or_names_its_commit():
    from grading.tables import TABLES
    replayed = {t.file for t in TABLES if not t.made_at}
    pages = [ROOT / "README.md", *sorted((ROOT / "labs").glob("*.md")), *sorted((ROOT / "labs/design").glob("*.md"))]
    for page in pages:   # the lessons, and the design records beside them
        assert unsourced(page.read_text(encoding="utf-8"), replayed) == [], page.name


def test_a_figure_with_no_source_is_caught(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results/eval.json").write_text(json.dumps({"modes": {"single": {"f1": 0.55521}}}))
    replayed = {"results/eval.json"}
    page = "F1 0.555 (results/eval.json).\n\nF1 0.999 (results/eval.json).\n\n| single | 0.56 | results/eval.json |"
    assert unsourced(page, replayed, tmp_path) == ["F1 0.999 (results/eval.json)."]
    page = "- recall 0.91 (`results/old.txt`)\n- recall 0.91 (`results/old.txt`, commit 09783ea)"
    assert unsourced(page, replayed, tmp_path) == ["- recall 0.91 (`results/old.txt`)"]
