"""The shape of the house: the project's modules import each other without a cycle, lazy imports included."""
import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent


def import_graph(root=ROOT):
    """{module: {modules of the project it imports}} for the top-level .py files, every import statement counted
    (inside functions too: a lazy import still ties the two files together)."""
    mods = {p.stem for p in root.glob("*.py")}
    graph = nx.DiGraph()
    for p in sorted(root.glob("*.py")):
        graph.add_node(p.stem)
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module.split(".")[0]]
            else:
                continue
            graph.add_edges_from((p.stem, n) for n in names if n in mods and n != p.stem)
    return graph


def test_no_import_cycle_among_the_modules():
    graph = import_graph()
    assert len(graph) > 30 and graph.has_edge("harness", "citations")  # the walk did read the house
    cycles = sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)
    assert not cycles, f"import cycles: {cycles}"


def test_the_walk_finds_a_cycle_when_there_is_one(tmp_path):
    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from a import g\n")  # lazy, still a cycle
    (tmp_path / "c.py").write_text("import os\nimport a\n")
    graph = import_graph(tmp_path)
    assert [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1] == [["a", "b"]]


def test_pattern_names_live_in_one_registry():
    """No module lists other modules' patterns: a literal holding three or more names or labels of patterns whose
    answer function lives elsewhere (multihop.py may list its own modes). Every pattern is in patterns.PATTERNS."""
    import patterns
    listed = {}
    for path in sorted(ROOT.glob("*.py")):
        theirs = {x for p in patterns.PATTERNS.values() if p.fn.__module__ != path.stem for x in (p.name, p.label) if x}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            items = (node.keys if isinstance(node, ast.Dict)
                     else node.elts if isinstance(node, (ast.List, ast.Tuple, ast.Set)) else [])
            found = {i.value for i in items if isinstance(i, ast.Constant) and i.value in theirs}
            if len(found) >= 3:
                listed.setdefault(path.name, []).append(sorted(found))
    assert not listed, listed
    assert {"seed", "single", "smart", "chain", "flare", "self_rag", "crag", "graph_local"} <= set(patterns.PATTERNS)


def file_table(root=ROOT):
    """labs/files.md's table: {file: week} for every `x.py` its rows name."""
    import re
    rows = [line for line in (root / "labs" / "files.md").read_text(encoding="utf-8").splitlines()
            if line.startswith("| ") and not line.startswith("| week ")]
    return {f: line.split("|")[1].strip() for line in rows for f in re.findall(r"`([a-z0-9_]+\.py)`", line)}


def test_the_file_table_names_every_module():
    named = set(file_table())
    assert named == {p.name for p in ROOT.glob("*.py")}, set(named) ^ {p.name for p in ROOT.glob("*.py")}


def test_each_week_page_names_that_weeks_files_and_the_readme_links_each_week():
    """labs/weekN-*.md's file table holds exactly the files labs/files.md gives week N, and the README's week table
    has one row per week, linking to that page and naming only that week's files."""
    import re
    weeks = {}
    for f, w in file_table().items():
        weeks.setdefault(w, set()).add(f)
    numbered = sorted(w for w in weeks if w.isdigit())
    assert numbered == [str(n) for n in range(1, len(numbered) + 1)] and len(numbered) >= 9, numbered
    readme_rows = {line.split("|")[1].strip(): line for line in (ROOT / "README.md").read_text(encoding="utf-8")
                   .splitlines() if re.match(r"\| (\d+|data) \|", line)}
    assert set(readme_rows) == {*numbered, "data"}, sorted(readme_rows)
    for w in numbered:
        pages = list((ROOT / "labs").glob(f"week{w}-*.md"))
        assert len(pages) == 1, (w, pages)
        page = pages[0].read_text(encoding="utf-8")
        top = page[:page.index("\n## ")]            # the table at the top of the page, before its first section
        assert set(re.findall(r"`([a-z0-9_]+\.py)`", top)) == weeks[w], (w, pages[0].name)
        assert f"(labs/{pages[0].name})" in readme_rows[w], w
        named = set(re.findall(r"`([a-z0-9_]+\.py)`", readme_rows[w]))
        assert named and named <= weeks[w], (w, named - weeks[w])


def test_committed_results_hold_no_absolute_paths():
    """Results files are read on other machines: every path in them is repo-relative (cache.write_json)."""
    import json

    def strings(value):
        if isinstance(value, dict):
            yield from (s for v in value.values() for s in strings(v))
        elif isinstance(value, list):
            yield from (s for v in value for s in strings(v))
        elif isinstance(value, str):
            yield value
    found = {p.name: s for p in sorted((ROOT / "results").glob("*.json"))
             for s in strings(json.loads(p.read_text(encoding="utf-8")))
             if s.startswith(("/tmp/", "/work/", "/root/", "/home/"))}
    assert not found, found
