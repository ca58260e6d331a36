"""The one cache-key rule (cache.keyed): a cached row follows the code of the module that made it and of what that
module imports. Editing a pattern's prompt makes its rows stale, and only its rows; a comment or a docstring
changes nothing; `python -m lab.cache --rekey` moves stale entries to the current code on purpose."""
import functools
import json
import shutil

import pytest

import harness
import llm
import patterns
from lab import cache
from lab.cache import Cache, code_key, keyed
from test_benchmark import SCRIPTED_MODEL, embed_once, own_caches  # noqa: F401 (fixtures)


@pytest.fixture
def repo_copy(tmp_path, monkeypatch):
    """The project's modules copied to a folder the test may edit; code keys read from there."""
    root = tmp_path / "repo"
    root.mkdir()
    for path in [*cache.modules().values(), *cache.ROOT.glob("*/__init__.py")]:
        (root / path.relative_to(cache.ROOT)).parent.mkdir(exist_ok=True)
        shutil.copy(path, root / path.relative_to(cache.ROOT))
    monkeypatch.setattr(cache, "ROOT", root)
    forget()
    yield root
    forget()


def forget():
    """A new process's view of the code: the sources read again, the keys computed again."""
    code_key.cache_clear()
    cache.sources.cache_clear()


def edit(root, module, old, new):
    path = root / f"{module}.py"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    forget()


def test_a_prompt_edit_changes_the_key_of_the_patterns_that_run_it(repo_copy):
    keys = lambda: {m: code_key(m) for m in ("multihop", "flare", "lab.links", "harness", "judge")}
    before = keys()
    edit(repo_copy, "decompose", '"""', '"""An edited docstring. ')
    edit(repo_copy, "decompose", "\nimport", "\n# a comment\nimport")
    assert keys() == before   # what runs is unchanged
    edit(repo_copy, "decompose", 'DECOMPOSE_SYSTEM = """', 'DECOMPOSE_SYSTEM = """An edited prompt. ')
    after = keys()
    assert after["multihop"] != before["multihop"]   # multihop imports decompose
    # and so do the rows: the harness checks as the assembly does, which imports every layer (links: multihop)
    assert after["harness"] != before["harness"]
    same = ("flare", "lab.links", "judge")
    assert {m: after[m] for m in same} == {m: before[m] for m in same}


def test_answers_do_not_follow_the_scoring_code_but_rows_do(repo_copy):
    answer, row = code_key("multihop"), code_key("harness")
    edit(repo_copy, "citations", "def summarize(rows):", "def summarize(rows, unused=None):")
    assert code_key("multihop") == answer and code_key("harness") != row


def test_edited_pattern_rows_go_stale_and_are_recomputed(repo_copy, own_caches, corpus, golden_path):  # noqa: F811
    """harness.evaluate through the registry's `parallel` pattern: a rerun is served from the cache, an edited
    decompose prompt recomputes the answer and the row, `python -m lab.cache --rekey multihop` brings the old ones
    back."""
    import json
    item = json.loads(golden_path.read_text())[0]
    p = patterns.PATTERNS["parallel"]
    settings, answer = p.answerer(corpus)
    assert cache.module_of(answer) == "multihop"

    def run():
        with llm.use_model(SCRIPTED_MODEL()) as model:
            rows = harness.evaluate(p.cache, answer, [item], settings, progress=False)
        return rows, len(model.calls)

    first, calls = run()
    assert calls > 0 and run() == (first, 0)
    assert cache.stale(own_caches, root=repo_copy)["answers"] == {"multihop": [1, 0]}
    edit(repo_copy, "decompose", 'DECOMPOSE_SYSTEM = """', 'DECOMPOSE_SYSTEM = """An edited prompt. ')
    assert cache.stale(own_caches, root=repo_copy)["answers"] == {"multihop": [0, 1]}
    again, calls = run()
    assert calls > 0 and again[0]["id"] == item["id"]
    assert cache.stale(own_caches, root=repo_copy)["answers"] == {"multihop": [1, 0]}  # the old one superseded
    edit(repo_copy, "decompose", 'DECOMPOSE_SYSTEM = """An edited prompt. ', 'DECOMPOSE_SYSTEM = """Edited twice. ')
    cache.stale(own_caches, rekey={"multihop"}, root=repo_copy)   # declared unchanged: old entries current again
    assert run()[1] == 0


def test_an_answer_follows_the_code_of_its_layers_and_a_rekey_moves_it(repo_copy, tmp_path):
    """harness.answer_key keys an answer by its module and the layers it passes through ('multihop+layers.links'):
    an edit to the layer makes it stale, and --rekey moves it like any other entry (the layers' code keys were
    once hashed into its inputs, where no rekey could reach them)."""
    answer = functools.partial(patterns.PATTERNS["smart"].fn)
    answer.layers = ("layers.links",)
    item = {"question": "Who?", "id": "q1"}
    key = harness.answer_key("smart", answer, {}, item)
    assert key.module == f"{cache.module_of(answer)}+layers.links"
    folder = tmp_path / "cache"
    Cache("answers", folder).put(key, {"result": "kept"})
    edit(repo_copy, "layers/links", "\nimport", "\nimport os  # noqa: F401\nimport")
    assert harness.answer_key("smart", answer, {}, item) != key   # the layer's code changed
    assert cache.stale(folder, root=repo_copy) == {"answers": {key.module: [0, 1]}}
    cache.stale(folder, rekey={key.module}, root=repo_copy)
    assert Cache("answers", folder).get(harness.answer_key("smart", answer, {}, item)) == {"result": "kept"}


def test_keys_name_repository_paths_relative_and_remember_their_module():
    inside = keyed("flare", "answer", {"corpus": str(cache.ROOT / "corpus")})
    assert inside == keyed("flare", "answer", {"corpus": "corpus"}) and inside.module == "flare"
    store_line = Cache._line(inside, 1)
    assert '"m": "flare"' in store_line and inside.rest in store_line


def test_module_of_unwraps_partials_and_wrappers():
    import flare
    fn = functools.partial(flare.flare_answer, k=2)
    assert cache.module_of(fn) == "flare"
    assert cache.module_of(functools.wraps(fn)(lambda q: q)) == "flare"
    assert keyed("test_keys", "x").module == "test_keys"   # outside the repository: keyed by name, not followed
    with pytest.raises(ValueError, match="not a module"):
        code_key("no_such_module")


def test_moved_caches_open_in_another_folder_and_come_back(tmp_path):
    """cache.moved: inside the block the named caches open under its folder (Cache.shared too, one per folder),
    others stay; blocks nest, and each restores what it found."""
    home = cache.folder_of("judge")
    with cache.moved(["judge", "rows"], tmp_path / "a"):
        assert cache.Cache.shared("judge").path == tmp_path / "a" / "judge.jsonl"
        assert cache.folder_of("rows") == tmp_path / "a" and cache.folder_of("answers") == home
        with cache.moved(["judge"], tmp_path / "b"):
            assert cache.Cache("judge").path.parent == tmp_path / "b" and cache.folder_of("rows") == tmp_path / "a"
            assert cache.Cache.shared("judge") is cache.Cache.shared("judge")   # loaded once per folder
        assert cache.Cache.shared("judge").path.parent == tmp_path / "a"
    assert cache.folder_of("judge") == cache.folder_of("rows") == home


def write_tree(root, files):
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize("line", ["from lab.b import f", "import lab.b", "from lab import b"])
def test_a_package_modules_code_is_in_the_key_of_a_top_level_module_importing_it(tmp_path, line):
    root = write_tree(tmp_path, {"a.py": f"{line}\n", "lab/__init__.py": '"""The package."""\n',
                                 "lab/b.py": "def f():\n    return 1\n", "lab/c.py": "X = 1\n"})
    assert set(cache.modules(root)) == {"a", "lab.b", "lab.c"}
    assert [name for name, _ in cache.code_modules("a", root)] == ["a", "lab.b"]
    before = code_key("a", root)
    write_tree(root, {"lab/c.py": "X = 2\n"})   # a module a does not import
    forget()
    assert code_key("a", root) == before
    write_tree(root, {"lab/b.py": "def f():\n    return 2\n"})
    code_key.cache_clear()
    assert code_key("a", root) == before   # this process keys by the code it started with, even after an edit
    forget()
    assert code_key("a", root) != before and code_key("lab.b", root) != before


def test_a_module_is_named_by_its_path_in_the_repository(tmp_path):
    assert cache.module_name(cache.ROOT / "lab" / "cache.py", cache.ROOT) == "lab.cache"
    assert cache.module_name(cache.ROOT / "app.py", cache.ROOT) == "app"
    assert cache.module_name(tmp_path / "notebook.py", cache.ROOT) == "notebook"   # outside: its name


def test_a_move_carries_the_entries_current_before_it_and_leaves_stale_ones_stale(tmp_path):
    """carry(): a.py moved nowhere but now imports b from lab/, b.py moved into lab/. Entries current in the tree
    before the move are current after it under the new names; a stale one stays stale; a row (harness) is left to
    be re-scored."""
    before = write_tree(tmp_path / "before", {"a.py": "import b\n", "b.py": "def f():\n    return 1\n",
                                              "harness.py": "import a\n"})
    after = write_tree(tmp_path / "after", {"a.py": "from lab import b\n", "lab/__init__.py": "",
                                            "lab/b.py": "def f():\n    return 1\n", "harness.py": "import a\n"})
    assert cache.renamed(before, after) == {"a": "a", "b": "lab.b", "harness": "harness"}
    folder, rest = tmp_path / "cache", [Cache.key("input", i) for i in range(4)]
    store = Cache("answers", folder)
    for module, r in [("a", rest[0]), ("b", rest[1]), ("harness", rest[2])]:
        store.put(cache.Key(Cache.key(code_key(module, before), r), module, r), {"v": r})
    store.put(cache.Key(Cache.key("older code", rest[3]), "a", rest[3]), {"v": "stale"})
    assert cache.stale(folder, root=after) == {"answers": {"a": [0, 2], "harness": [0, 1]}}   # b: not followed
    assert cache.carry(folder, before, after) == {"answers": {"a": 1, "lab.b": 1}}
    assert cache.stale(folder, root=after) == {"answers": {"a": [1, 1], "harness": [0, 1], "lab.b": [1, 0]}}
    assert Cache("answers", folder).get(Cache.key(code_key("lab.b", after), rest[1])) == {"v": rest[1]}
    assert cache.carry(folder, before, after) == {}   # carried once
    assert cache.prune(folder, root=after) == {"answers": 3}   # a's and harness's stale entries and the old a key
    assert cache.stale(folder, root=after) == {"answers": {"a": [1, 0], "lab.b": [1, 0]}}
    assert Cache("answers", folder).get(Cache.key(code_key("lab.b", after), rest[1])) == {"v": rest[1]}


def test_checkout_writes_a_refs_python_files(tmp_path):
    assert {"vector_index", "retrieve"} <= set(cache.modules(cache.checkout("HEAD", tmp_path)))


def test_what_another_process_wrote_between_two_writes_is_read(tmp_path, monkeypatch):
    """Two Cache objects on one file stand for two processes: an entry the other one appends before this one writes
    its own is still seen through shared() (it was once hidden: the write marked the file as read)."""
    monkeypatch.setenv("RAG_INDEX_DIR", str(tmp_path))
    mine, other = Cache.shared("shared_toy"), Cache("shared_toy", tmp_path / "cache")
    other.put("theirs", 1)
    mine.put("mine", 2)
    assert Cache.shared("shared_toy").get("theirs") == 1 and Cache.shared("shared_toy").get("mine") == 2


def test_a_line_is_the_entry_as_the_file_keeps_it(tmp_path):
    store = Cache("toy", tmp_path)
    key = keyed("golden", "q")
    store.put(key, "A")
    assert store.line(key) == (tmp_path / "toy.jsonl").read_text(encoding="utf-8")
    assert json.loads(store.line(key))["m"] == "golden"
