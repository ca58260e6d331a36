"""The week pages read as lessons: the same sections in the same order, short, with real output that a test re-makes,
and a way on to the next week. The README stays one screen.

The output blocks are re-made by grading/lessons.py: commands on the fixture folder, the model's replies replayed
from tests/fixtures/lessons/PAGE.jsonl (the embedded engine's real words, recorded with
`python -m grading.lessons --record PAGE`; a replay, never a model), so a page and its script cannot drift apart.
"""
import re
import statistics
from pathlib import Path

import pytest

from grading import lessons

ROOT = Path(__file__).resolve().parent.parent
WEEKS = sorted((ROOT / "labs").glob("week*.md"), key=lambda p: int(re.match(r"week(\d+)", p.name).group(1)))
SECTIONS = ["What this week is for", "Open the files", "Run it", "What you should see", "Measured", "What to try",
            "The question to answer"]
MAX_WORDS, MAX_MEDIAN = 1000, 20


def prose(text):
    """A page's prose: fenced blocks, tables, HTML comments, headings and link-only lines left out."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    return "\n".join(line for line in text.splitlines()
                     if not line.startswith(("|", "#")) and line.strip())


def words(text):
    return re.findall(r"[A-Za-z0-9][\w'’.,/:-]*", text)


def sentences(text):
    """Sentences of prose: split after . ! or ? before a space and a capital, a digit or a quote, and at
    list items."""
    text = re.sub(r"`[^`]*`", "CODE", text)                  # code spans are one word
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)     # a link is its text
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z0-9\"(])|\n\s*[-*\d.]+\s+|\n\n", text)
    return [p for p in parts if len(words(p)) >= 3]


def test_the_prose_measures_count_what_a_reader_reads():
    page = "# T\n\nOne two three. Four five six seven.\n\n| a | b |\n|---|---|\n\n```\nx y z\n```\n- Eight nine ten.\n"
    assert len(words(prose(page))) == 10
    assert [len(words(s)) for s in sentences(prose(page))] == [3, 4, 3]


@pytest.mark.parametrize("page", WEEKS, ids=lambda p: p.name)
def test_each_week_page_is_a_lesson(page):
    text = page.read_text(encoding="utf-8")
    heads = re.findall(r"^## (.+)$", re.sub(r"```.*?```", "", text, flags=re.S), flags=re.M)
    assert heads == SECTIONS, heads
    body = prose(text)
    assert len(words(body)) <= MAX_WORDS, len(words(body))
    assert statistics.median(len(words(s)) for s in sentences(body)) <= MAX_MEDIAN
    assert lessons.blocks(page), "no output block (<!-- output: COMMAND --> above a fenced block)"
    assert "labs/design/" in text or "(design/" in text, "no link to the design record"


@pytest.mark.parametrize("n", range(len(WEEKS)), ids=lambda n: WEEKS[n].name)
def test_each_week_page_links_to_the_previous_and_next(n):
    last = WEEKS[n].read_text(encoding="utf-8").rstrip().splitlines()[-1]
    before = WEEKS[n - 1].name if n else "../README.md"
    after = WEEKS[n + 1].name if n + 1 < len(WEEKS) else "instructors.md"
    assert f"]({before})" in last and f"]({after})" in last, last


@pytest.mark.parametrize("page", WEEKS, ids=lambda p: p.name)
def test_each_output_block_is_what_its_command_prints(page, tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_INDEX_DIR", str(tmp_path))   # empty caches and index, as the recording had
    lost = lessons.check(page)
    assert lost and not any(lost.values()), lost


def test_the_block_check_finds_a_line_the_output_lacks():
    out = "model: scripted m\nanswer: Tomas Vell\n  1. It was Tomas Vell. [S1]\nllm calls 1  12.5 s\n"
    assert lessons.missing(["model: embedded m", "...", "llm calls 1  3.1 s"], out, "embedded") == []
    assert lessons.missing(["answer: Edric Vell"], out) == ["answer: Edric Vell"]
    assert lessons.missing(["  1. It was...", "answer: Tomas Vell"], out) == ["answer: Tomas Vell"]   # in order


def test_the_readme_is_one_screen_with_short_cells():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 160
    cells = [c for line in text.splitlines() if line.startswith("|") for c in line.strip("|").split("|")]
    long = [c.strip()[:60] for c in cells if len(words(c)) > 30]
    assert cells and not long, long


def test_no_week_page_lists_an_experiment_in_its_file_table():
    for page in WEEKS:
        text = page.read_text(encoding="utf-8")
        section = text.split("## Open the files", 1)[-1].split("\n## ", 1)[0]
        tables = [line for line in section.splitlines() if line.startswith("|")]
        assert tables and not [x for x in tables if "experiments/" in x], page.name


def test_every_experiment_is_listed_once_in_its_readme():
    listed = re.findall(r"`(experiments/\w+\.py)`", (ROOT / "experiments" / "README.md").read_text(encoding="utf-8"))
    files = {f"experiments/{p.name}" for p in (ROOT / "experiments").glob("*.py") if p.name != "__init__.py"}
    assert sorted(listed) == sorted(files), set(listed) ^ files
