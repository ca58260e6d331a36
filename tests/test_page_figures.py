"""The pages quote what the results files say (issue 60): each figure of a quoted table is read beside the file it
names and checked against it, offline. A page that names a file must agree with it; a stale file is
tests/test_tables.py's business."""
import json
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
