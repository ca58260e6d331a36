"""The shape of the house: the project's modules import each other without a cycle, lazy imports included, and by the
layout's rule (lab/ beneath the week scripts, experiments/ and grading/ beside them, imported by none)."""
import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent


def modules(root=ROOT):
    """{module: path}: the top-level .py files and those of the packages beside them (lab/cache.py -> 'lab.cache')."""
    found = {p.stem: p for p in root.glob("*.py")}
    found.update((f"{p.parent.name}.{p.stem}", p) for p in root.glob("*/*.py")
                 if p.name != "__init__.py" and (p.parent / "__init__.py").exists())
    return found


def import_graph(root=ROOT):
    """{module: {modules of the project it imports}} for the project's modules (modules()), every import statement
    counted (inside functions too: a lazy import still ties the two files together)."""
    mods = modules(root)
    graph = nx.DiGraph()
    for name, path in sorted(mods.items()):
        graph.add_node(name)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            graph.add_edges_from((name, n) for n in names if n in mods and n != name)
    return graph


def test_no_import_cycle_among_the_modules():
    graph = import_graph()
    assert len(graph) > 30 and graph.has_edge("harness", "citations")  # the walk did read the house
    cycles = sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)
    assert not cycles, f"import cycles: {cycles}"


def test_the_walk_finds_a_cycle_when_there_is_one(tmp_path):
    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from a import g\n")  # lazy, still a cycle
    (tmp_path / "c.py").write_text("import os\nimport a\nfrom pkg import d\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "d.py").write_text("import pkg.e\n")
    (tmp_path / "pkg" / "e.py").write_text("from c import x\n")
    graph = import_graph(tmp_path)
    cycles = sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)
    assert cycles == [["a", "b"], ["c", "pkg.d", "pkg.e"]]   # a package module's imports are followed too


def layout_breaks(graph, weeks=None):
    """The imports that break the layout: lab/ (the plumbing) importing anything outside lab/; a top-level module
    (the week scripts and their libraries) importing experiments/ or grading/; experiments/ and grading/ importing
    each other; a layer (layers/) importing the assembly; a week's file (weeks: {module: week 1-8}) importing a layer
    or the assembly, which put the weeks together and come after them. -> [(importer, imported)]"""
    place = lambda m: m.split(".")[0] if "." in m else "top"
    later = lambda m: place(m) == "layers" or m == "assembly"
    return sorted((a, b) for a, b in graph.edges
                  if (place(a) == "lab" and place(b) != "lab")
                  or (place(a) == "top" and place(b) in ("experiments", "grading"))
                  or {place(a), place(b)} == {"experiments", "grading"}
                  or (place(a) == "layers" and b == "assembly")
                  or ((weeks or {}).get(a) and place(a) == "top" and later(b)))


def week_of_module(root=ROOT):
    """{module: its week 1-8} from labs/files.md (week files only)."""
    return {f[:-3].replace("/", "."): int(w) for f, w in file_table(root).items() if w.isdigit() and int(w) <= 8}


def test_the_layout_plumbing_beneath_the_weeks_measurements_and_grading_beside_them():
    graph = import_graph()
    assert {m.split(".")[0] for m in graph if "." in m} == {"lab", "layers", "experiments", "grading"}
    assert graph.has_edge("vector_index", "lab.cache") and graph.has_edge("grading.grade", "grading.handin")
    assert graph.has_edge("assembly", "layers.quarantine") and week_of_module()["citations"] == 5
    assert not layout_breaks(graph, week_of_module()), layout_breaks(graph, week_of_module())


def test_the_layout_check_finds_an_import_that_breaks_it(tmp_path):
    for folder in ("lab", "experiments", "grading", "layers"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "week.py").write_text("from lab import plumbing\nfrom grading import grade\n")
    (tmp_path / "lab" / "plumbing.py").write_text("def f():\n    import week\n")   # lazy, still an arrow up
    (tmp_path / "experiments" / "bench.py").write_text("import week\nimport lab.plumbing\nimport grading.grade\n")
    (tmp_path / "grading" / "grade.py").write_text("import week\n")
    (tmp_path / "layers" / "extra.py").write_text("import week\nimport assembly\n")
    (tmp_path / "assembly.py").write_text("import week\nfrom layers import extra\n")
    (tmp_path / "step.py").write_text("from layers import extra\n")   # a week's file reaching up to a layer
    assert layout_breaks(import_graph(tmp_path), {"week": 2, "step": 3}) == [
        ("experiments.bench", "grading.grade"), ("lab.plumbing", "week"), ("layers.extra", "assembly"),
        ("step", "layers.extra"), ("week", "grading.grade")]


def test_pattern_names_live_in_one_registry():
    """No module lists other modules' patterns: a literal holding three or more names or labels of patterns whose
    answer function lives elsewhere (multihop.py may list its own modes). Every pattern is in patterns.PATTERNS."""
    import patterns
    listed = {}
    for name, path in sorted(modules().items()):
        theirs = {x for p in patterns.PATTERNS.values() if p.fn.__module__ != name for x in (p.name, p.label) if x}
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
    return {f: line.split("|")[1].strip() for line in rows for f in re.findall(PY_FILE, line)}


PY_FILE = r"`((?:[a-z]+/)?[a-z0-9_]+\.py)`"   # `retrieve.py`, `lab/cache.py`


def test_the_file_table_names_every_module():
    named, files = set(file_table()), {str(p.relative_to(ROOT)) for p in modules().values()}
    assert named == files, named ^ files


def test_each_week_page_names_that_weeks_files_and_the_readme_links_each_week():
    """labs/weekN-*.md's file table holds exactly the files labs/files.md gives week N (experiments/ aside: they are
    listed in experiments/README.md), and the README's week table
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
        table = "\n".join(line for line in page.split("## Open the files", 1)[-1].split("\n## ", 1)[0].splitlines()
                          if line.startswith("|"))    # the file table of its "Open the files" section
        ours = {f for f in weeks[w] if not f.startswith("experiments/")}   # measurements: experiments/README.md
        assert set(re.findall(PY_FILE, table)) == ours, (w, pages[0].name)
        assert f"(labs/{pages[0].name})" in readme_rows[w], w
        named = set(re.findall(PY_FILE, readme_rows[w]))
        assert named and named <= weeks[w], (w, named - weeks[w])


def md_links(text):
    """The relative links of a Markdown text, code spans and fenced blocks left out: [(target, anchor)]."""
    import re
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    out = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if not re.match(r"[a-z]+:", target):
            path, _, anchor = target.partition("#")
            out.append((path, anchor))
    return out


def md_anchors(text):
    """The anchors GitHub gives a Markdown page's headings."""
    import re
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}


def test_the_readme_is_one_screen_of_pages_and_every_link_resolves():
    """README.md stays <= 200 lines; every relative link in it and in labs/*.md names a file of the repo, and an
    anchor names a heading of that page."""
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 200
    pages = [ROOT / "README.md", ROOT / "experiments" / "README.md", *sorted((ROOT / "labs").rglob("*.md"))]
    assert len(pages) >= 10
    broken, count = [], 0
    for page in pages:
        for path, anchor in md_links(page.read_text(encoding="utf-8")):
            count += 1
            target = (page.parent / path).resolve() if path else page
            if not target.is_file() or ROOT not in target.parents:
                broken.append(f"{page.name}: {path}")
            elif anchor and (target.suffix != ".md" or anchor not in md_anchors(target.read_text(encoding="utf-8"))):
                broken.append(f"{page.name}: {path}#{anchor}")
    assert count > 30 and not broken, broken


def test_the_link_check_finds_a_broken_link_and_anchor(tmp_path):
    (tmp_path / "a.md").write_text("# Top\n\n## What you see (`x.py`)\n\n[ok](b.md) [gone](c.md) `[no](d.md)`\n"
                                   "[web](https://example.org) [here](#what-you-see-xpy) [there](b.md#nowhere)\n")
    (tmp_path / "b.md").write_text("# B\n")
    links = md_links((tmp_path / "a.md").read_text())
    assert links == [("b.md", ""), ("c.md", ""), ("", "what-you-see-xpy"), ("b.md", "nowhere")]
    assert "what-you-see-xpy" in md_anchors((tmp_path / "a.md").read_text())
    assert "nowhere" not in md_anchors((tmp_path / "b.md").read_text())


def test_every_command_in_the_pages_and_the_code_names_a_script_that_is_there():
    """`python X.py` and `python -m package.X` in README.md, DATA.md, labs/*.md, the Makefile and every module name a
    file of the repository: a moved script whose command stayed behind shows here (`python -m pytest` and
    placeholders such as `python -m experiments.NAME` aside)."""
    import re
    mods, found, missing = modules(), 0, []
    for path in [ROOT / "README.md", ROOT / "DATA.md", ROOT / "Makefile", ROOT / "experiments" / "README.md",
                 *sorted((ROOT / "labs").rglob("*.md")),
                 *mods.values()]:
        for script, module in re.findall(r"\bpython3? (?:([\w/]+\.py)|-m ([\w.]+))", path.read_text(encoding="utf-8")):
            name = script[:-3].replace("/", ".") if script else module
            if name in ("pytest", "pip", "venv", "compileall") or name.rsplit(".", 1)[-1].isupper():
                continue
            found += 1
            if name not in mods:
                missing.append(f"{path.relative_to(ROOT)}: python {script or '-m ' + module}")
    assert found > 200 and not missing, missing


def test_committed_results_hold_no_absolute_paths():
    """Results files are read on other machines: every path in them is repo-relative (cache.write_json; the
    benchmark's Markdown report names its settings through cache.portable)."""
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
    found.update({p.name: line for p in sorted((ROOT / "results").glob("*.md"))
                  for line in p.read_text(encoding="utf-8").splitlines()
                  if any(d in line for d in ("=/tmp/", "=/work/", "=/root/", "=/home/"))})
    assert not found, found


def documented_commands():
    """{module: {flags}}: every `python X.py ...` / `python -m package.X ...` command in README.md, the lab pages and
    the Makefile, with the --flags each use of it passes (placeholders such as NAME and pytest/pip aside)."""
    import re
    mods, found = modules(), {}
    for path in [ROOT / "README.md", ROOT / "Makefile", ROOT / "experiments" / "README.md",
                 *sorted((ROOT / "labs").rglob("*.md"))]:
        for line in path.read_text(encoding="utf-8").splitlines():
            for script, module, rest in re.findall(r"\bpython3? (?:([\w/]+\.py)|-m ([\w.]+))([^`|;\n]*)", line):
                name = script[:-3].replace("/", ".") if script else module
                if name in mods:
                    found.setdefault(name, set()).update(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", rest))
    return found


def test_every_documented_command_parses_its_flags(monkeypatch):
    """Each documented script answers --help (exit 0), and every flag the pages pass it is one its --help names."""
    import contextlib
    import io
    import re
    import runpy
    import warnings
    commands, bad = documented_commands(), []
    assert len(commands) > 25
    for name, flags in sorted(commands.items()):
        # run as `python -m NAME --help` would, in this process (the imports they share load once)
        out, code = io.StringIO(), None
        monkeypatch.setattr("sys.argv", [name, "--help"])
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()), \
                    warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)   # runpy: "found in sys.modules" (already imported)
                runpy.run_module(name, run_name="__main__", alter_sys=True)
        except SystemExit as e:
            code = e.code
        if code not in (0, None) or "usage:" not in out.getvalue():
            bad.append(f"{name}: --help exited {code} and printed {out.getvalue()[-200:]!r}")
        bad += [f"{name}: the pages pass {f}, its --help has no such flag" for f in sorted(flags - {"--help"})
                if not re.search(re.escape(f) + r"(?![\w-])", out.getvalue())]
    assert not bad, bad
