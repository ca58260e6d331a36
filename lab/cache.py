"""What the lab keeps on disk: one small cache shared by every script (judge verdicts, benchmark rows, graph
extractions), the one rule that ties a cached value to the code that computed it (keyed), and the results
files (write_json).

    from lab.cache import Cache, keyed
    verdicts = Cache("judge")
    key = keyed("judge", "verdict", model, claim, source)   # judge.py's code (and its imports') + the inputs
    if key not in verdicts:
        verdicts.put(key, {"verdict": True})
    verdicts.get(key)   # -> {'verdict': True}

The rule: a value is keyed by code_key(module), a hash of the module that computes it and of every project
module it imports, plus the inputs that decide it (model, settings, question). No hand-kept version numbers:
an edit to a prompt or to code that runs makes the rows it touches stale; a docstring or comment does not.
`python -m lab.cache` lists what is stale per module; `python -m lab.cache --rekey MODULE` re-keys one module's
stale entries to its current code, for an edit that does not change results (a rename, a move), after
checking that a replay gives the same figures. A value that follows the code of several modules names them all
('multihop+layers.links': an answer and the layers it passes through, harness.answer_key), so a re-key moves it
too (until issue 60 the layers' code keys were hashed into its inputs, where no re-key could reach them).

A cache is an append-only JSON-lines file under `.rag/cache/` (or `$RAG_INDEX_DIR/cache/`), one
`{"k": key, "v": value}` per line, so a run killed mid-write loses at most the line it was writing.
On load, lines that do not parse (a torn write, a corrupted file) are dropped with one warning and the
file is rewritten clean. Writes take a file lock, so two processes can share a cache.
Not handled: eviction (delete the file to start over) and values that are not JSON.
"""
import ast
import contextlib
import functools
import hashlib
import json
import os
import sys
from pathlib import Path

from filelock import FileLock

ROOT = Path(__file__).parent.parent   # the repository: lab/ is one of its packages


def index_dir():
    """Where the lab keeps what it builds and caches: .rag/ beside the code, or $RAG_INDEX_DIR."""
    return Path(os.environ.get("RAG_INDEX_DIR") or ROOT / ".rag")


_MOVED = {}   # cache name -> the folder it opens under inside a moved() block


@contextlib.contextmanager
def moved(names, folder):
    """In the block, the caches called `names` open under `folder` instead of .rag/cache: a re-run's scratch caches
    (grading/rerun.py), a test's. with moved(["judge", "rows"], tmp): ...  Blocks nest; each restores what it found."""
    saved = dict(_MOVED)
    _MOVED.update(dict.fromkeys(names, Path(folder)))
    try:
        yield
    finally:
        _MOVED.clear()
        _MOVED.update(saved)


def folder_of(name):
    """The folder Cache(name) opens under now: a moved() block's, else .rag/cache (or $RAG_INDEX_DIR/cache)."""
    return _MOVED.get(name) or index_dir() / "cache"


class Cache:
    def __init__(self, name, folder=None):
        self.path = Path(folder or folder_of(name)) / f"{name}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.lock = FileLock(str(self.path) + ".lock")
        self.data, self.meta = {}, {}   # meta: key -> (module, inputs hash) for keyed() entries
        self.hits = self.misses = 0
        self._load()

    @staticmethod
    def key(*parts):
        """Content hash of any JSON-able parts: key('a', 1) -> '9c6c...' (64 hex)."""
        return hashlib.sha256(json.dumps(parts, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def _load(self):
        self._seen = self._stat()   # the file as this object last read or wrote it (shared() compares)
        if not self.path.exists():
            return
        bad = 0
        with self.lock:
            for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    item = json.loads(line)
                    self.data[item["k"]] = item["v"]
                    if "m" in item:
                        self.meta[item["k"]] = (item["m"], item["r"])
                except (ValueError, KeyError, TypeError):
                    bad += 1
            if bad:
                print(f"warning: cache {self.path}: {bad} corrupted line(s) dropped, file rewritten "
                      f"({len(self.data)} entries kept)", file=sys.stderr)
                tmp = self.path.with_suffix(".tmp")
                tmp.write_text("".join(self.line(k) for k in self.data), encoding="utf-8")
                os.replace(tmp, self.path)

    @staticmethod
    def _line(k, v):
        meta = {"m": k.module, "r": k.rest} if isinstance(k, Key) else {}
        return json.dumps({"k": k, "v": v, **meta}, ensure_ascii=False) + "\n"

    def _key(self, k):
        return Key(k, *self.meta[k]) if k in self.meta else k

    @staticmethod
    def shared(name):
        """The process's one Cache(name) for the folder it opens under now (judge verdicts, answers: caches read on
        every call), loaded once and read again only when the file changed beside it (another process, a re-key)."""
        store = _opened(name, str(folder_of(name)))
        if store._seen != store._stat():
            store._load()
        return store

    def _stat(self):
        try:
            st = self.path.stat()
            return st.st_size, st.st_mtime_ns
        except FileNotFoundError:
            return None

    def __contains__(self, key):
        return key in self.data

    def __len__(self):
        return len(self.data)

    def get(self, key, default=None):
        if key in self.data:
            self.hits += 1
            return self.data[key]
        self.misses += 1
        return default

    def put_many(self, items):
        """put() for many (key, value) pairs under one lock and one write."""
        items = list(items)
        if items:
            self.data.update(items)
            self.meta.update((k, (k.module, k.rest)) for k, _ in items if isinstance(k, Key))
            with self.lock:
                unchanged = self._stat() == self._seen   # no other process wrote since this one last read
                with open(self.path, "a", encoding="utf-8") as f:
                    f.write("".join(self._line(k, v) for k, v in items))
                # what another process wrote in between is not held here: leave _seen behind, so shared() reads again
                if unchanged:
                    self._seen = self._stat()

    def put(self, key, value):
        """Keep value under key; a Key (keyed()) also records its module and inputs hash, for --rekey."""
        self.put_many([(key, value)])
        return value

    def line(self, key):
        """The JSON line the file keeps for a held entry, with its module and inputs hash when keyed()."""
        return self._line(self._key(key), self.data[key])


@functools.lru_cache(maxsize=None)
def _opened(name, folder):
    return Cache(name, folder)


def ranked(collection, ids, metas, qvec, n):
    """collection.query(qvec, n) -> {'ids': [...], 'distances': [...]}, kept in the 'rankings' cache by what the
    collection holds (each chunk's ID and its document's content hash, from metas: an edited file is another index)
    and the query vector. Chroma's HNSW search is approximate and no two builds of one index are the same graph: on a
    fresh clone a few queries rank otherwise (results/issue60/hnsw_probe.txt). Kept, a ranking replays as it was
    made, like a model's answer."""
    store = Cache.shared("rankings")
    held = hashlib.sha256("\n".join(f"{c} {m.get('hash', '')}" for c, m in zip(ids, metas)).encode()).hexdigest()
    key = Cache.key("ranked", collection.name, held, n, [round(float(x), 6) for x in qvec])
    if (hit := store.get(key)) is None:
        r = collection.query(query_embeddings=[qvec], n_results=n, include=["distances"])
        hit = store.put(key, {"ids": r["ids"][0], "distances": r["distances"][0]})
    return hit


class Key(str):
    """A cache key (a str) that remembers the module whose code it follows and the hash of its inputs."""
    def __new__(cls, key, module, rest):
        k = super().__new__(cls, key)
        k.module, k.rest = module, rest
        return k


def keyed(module, *parts):
    """The one key rule: `module`'s code (code_key) plus the inputs (JSON-able parts; paths inside the repository
    made relative, so a clone elsewhere shares the keys). keyed("flare", "answer", settings, model, q) -> Key.
    "smart+layers.links" follows the code of both, and --rekey moves such an entry as it moves any other.
    A module outside the repository (a notebook's, a test's) is keyed by its name only: its code is not followed."""
    rest = Cache.key(*portable(list(parts)))
    return Key(Cache.key(code_key(module) if _in_repo(module) else f"outside:{module}", rest), module, rest)


@functools.lru_cache(maxsize=None)
def _in_repo(module, root=None):
    return all(m in modules(root) for m in module.split("+"))


def modules(root=None):
    """{module: path} of the project's code: the .py files at the top of `root` (the repository) and in its packages
    (a folder with an __init__.py, whose own code is not followed). {'retrieve': .../retrieve.py,
    'lab.cache': .../lab/cache.py, ...}"""
    root = Path(root or ROOT)
    found = {p.stem: p for p in root.glob("*.py")}
    found.update((f"{p.parent.name}.{p.stem}", p) for p in root.glob("*/*.py")
                 if p.name != "__init__.py" and (p.parent / "__init__.py").exists())
    return found


def module_name(path, root=None):
    """The module a file of the repository is: lab/cache.py -> 'lab.cache', app.py -> 'app'; a file outside it: its
    name, app.py -> 'app'."""
    path, root = Path(path).resolve(), Path(root or ROOT).resolve()
    return ".".join(path.relative_to(root).with_suffix("").parts) if path.is_relative_to(root) else path.stem


def module_of(fn):
    """The project module whose code a function runs: functools.partial and functools.wraps unwrapped, a script run
    as __main__ by its file (`python -m experiments.judge_eval` -> 'experiments.judge_eval').
    module_of(functools.partial(flare.flare_answer, k=4)) -> 'flare'"""
    while isinstance(fn, functools.partial) or hasattr(fn, "__wrapped__"):
        fn = fn.func if isinstance(fn, functools.partial) else fn.__wrapped__
    name = fn.__module__
    if name == "__main__":
        name = module_name(sys.modules["__main__"].__file__)
    return name


def portable(value):
    """The payload with machine-specific paths made portable, for results committed from any machine: a path
    inside the repository becomes relative to it, a GGUF file its file name. Other values are unchanged."""
    if isinstance(value, dict):
        return {k: portable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [portable(v) for v in value]
    if isinstance(value, str) and value.startswith("/"):
        if value.endswith(".gguf"):
            return Path(value).name
        root = str(ROOT.resolve())
        if value == root or value.startswith(root + "/"):
            return str(Path(value).relative_to(root))
    return value


def write_json(path, payload):
    """Write a results file (portable paths, see portable()) and say where."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(portable(payload), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path}")


def _imports(tree, known):
    """The project modules an AST imports, anywhere in the file (a lazy import still runs that code): `import
    retrieve`, `from lab.cache import keyed`, `import lab.cache` and `from lab import cache` each name one."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
    return out & set(known)


def _code(tree):
    """The AST without docstrings, as text: what runs, not how it is written or explained."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


SCORING = ("harness", "citations")  # they check and score answers, they do not make them: an answer's key does
                                   # not follow them, the row's key does (harness.row_key)


@functools.lru_cache(maxsize=None)
def sources(root=None):
    """{module: its source} of every project module (modules()), read once per process, at its first code key: so a
    process keys all it writes by the code it started with, even when the files change while it runs (a merge under
    a long table run)."""
    return {name: path.read_text(encoding="utf-8") for name, path in modules(root).items()}


def code_modules(module, root=None):
    """The project modules code_key(module) hashes, with their syntax trees: module and what it imports,
    directly or through others (a SCORING module only when module is one). 'multihop+layers.links': both modules
    and what either imports (an answer and the layers it passes through, harness.answer_key)."""
    known, named = sources(root), module.split("+")
    if unknown := [m for m in named if m not in known]:
        raise ValueError(f"{unknown[0]!r} is not a module of {root or ROOT}")
    skip = set() if set(named) & set(SCORING) else set(SCORING)
    seen, todo, parts = set(), list(named), []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        tree = ast.parse(known[name])
        todo += sorted(_imports(tree, known) - seen - skip)
        parts.append((name, _code(tree)))
    return sorted(parts)


@functools.lru_cache(maxsize=None)
def code_key(module, root=None):
    """The one rule by which cached results follow the code: a hash of `module`'s source and of every project
    module it imports, directly or through others, each read as its syntax tree without docstrings, so a
    comment, a docstring or a re-wrapped line keeps the key and any change to code or prompt text changes it.
    code_key("flare") -> '3f9a...' (16 hex). Modules are the .py files in `root` (the repository) and its
    packages (modules())."""
    return Cache.key(code_modules(module, root))[:16]


def stale(folder=None, rekey=(), root=None):
    """{cache name: {module: [current, stale]}} over the keyed() entries of every cache file in `folder`: current
    ones are keyed by the module's code today, stale ones by older code with nothing current for the same inputs
    (a rerun recomputes them). Modules in `rekey` get their stale entries copied under the current key (of several
    for the same inputs, the latest written)."""
    out = {}
    for path in sorted(Path(folder or index_dir() / "cache").glob("*.jsonl")):
        store, moved, counts = Cache(path.stem, path.parent), [], {}
        for k, (module, rest) in store.meta.items():
            if not _in_repo(module, root):
                continue   # outside the repository: not followed
            now = Cache.key(code_key(module, root), rest)
            if k != now and now in store.meta:
                continue   # superseded: the same inputs are cached under the current code too
            counts.setdefault(module, [0, 0])[0 if k == now else 1] += 1
            if k != now and module in rekey:
                moved.append((Key(now, module, rest), store.data[k]))
        store.put_many(moved)
        if counts:
            out[path.stem] = counts
    return out


# their rows' inputs hold an answer's key, which a move changes: carry() leaves them, a rerun re-scores them from the
# carried answers and verdicts
ROW_MODULES = ("harness", "experiments.injection")


def renamed(before, root=None):
    """{module then: module now} for the modules of the tree `before` (an older checkout): the same name, else the
    one module now of the same last name (judge_eval -> experiments.judge_eval); a module gone is left out."""
    now, out = modules(root), {}
    for old in modules(before):
        last = old.rsplit(".", 1)[-1]
        same = [old] if old in now else [m for m in now if m.rsplit(".", 1)[-1] == last]
        if len(same) == 1:
            out[old] = same[0]
    return out


def carry(folder=None, before=None, root=None):
    """After a move (files moved to packages, import lines edited, no result changed): every entry that was current
    in the tree `before` (an older checkout) is copied under its module's name and code now (renamed()), so it
    stays current; an entry already stale there stays stale. -> {cache name: {module now: entries carried}}.
    Not carried: ROW_MODULES' rows (a rerun re-scores them from the carried answers and verdicts)."""
    names, out = renamed(before, root), {}
    for path in sorted(Path(folder or index_dir() / "cache").glob("*.jsonl")):
        store, carried = Cache(path.stem, path.parent), {}
        for k, (module, rest) in store.meta.items():
            parts = [names.get(m) for m in module.split("+")]   # an answer and its layers: each part renamed
            new = "+".join(parts) if all(parts) else None
            if new and module not in ROW_MODULES and k == Cache.key(code_key(module, before), rest):
                key = Key(Cache.key(code_key(new, root), rest), new, rest)
                if key not in store.meta:
                    carried[key] = store.data[k]
        store.put_many(carried.items())
        for key in carried:
            out.setdefault(path.stem, {}).setdefault(key.module, 0)
            out[path.stem][key.module] += 1
    return out


def checkout(ref, into):
    """The .py files of this repository's git `ref` (a commit, a branch), written under `into`: carry()'s tree
    `before`."""
    import subprocess
    git = lambda *a: subprocess.run(["git", *a], cwd=ROOT, capture_output=True, check=True).stdout
    try:
        for name in git("ls-tree", "-r", "--name-only", ref).decode().splitlines():
            if name.endswith(".py"):
                (Path(into) / name).parent.mkdir(parents=True, exist_ok=True)
                (Path(into) / name).write_bytes(git("show", f"{ref}:{name}"))
    except subprocess.CalledProcessError as e:
        sys.exit(f"cache: git {' '.join(e.cmd[1:3])} failed: {e.stderr.decode().strip()}")
    return Path(into)


def prune(folder=None, root=None):
    """Drop every keyed() entry that is not current (keyed by older code of a repository module), rewriting each cache
    file in `folder`: for a committed snapshot that should hold what today's code reads and nothing else.
    {cache name: entries dropped}."""
    dropped = {}
    for path in sorted(Path(folder or index_dir() / "cache").glob("*.jsonl")):
        store = Cache(path.stem, path.parent)
        old = {k for k, (module, rest) in store.meta.items()
               if _in_repo(module, root) and k != Cache.key(code_key(module, root), rest)}
        if old:
            with store.lock:
                keep = [(store._key(k), v) for k, v in store.data.items() if k not in old]
                tmp = path.with_suffix(".tmp")
                tmp.write_text("".join(Cache._line(k, v) for k, v in keep), encoding="utf-8")
                os.replace(tmp, path)
        dropped[path.stem] = len(old)
    return dropped


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description="What in the cache is stale: per cache file and module, the entries "
                                             "keyed by the module's current code and those keyed by older code.")
    ap.add_argument("--folder", type=Path, help="a cache folder (default .rag/cache; results/cache: the committed "
                                                "snapshot)")
    ap.add_argument("--rekey", nargs="+", default=(), metavar="MODULE",
                    help="copy MODULE's stale entries under its current code's key: only for an edit that does not "
                         "change results (a rename, a move); replay a committed table afterwards to check")
    ap.add_argument("--moved-from", metavar="REF",
                    help="after files moved (no result changed): carry every entry that was current at git REF "
                         "(e.g. main before the move) to its module's name and code now")
    ap.add_argument("--prune", action="store_true",
                    help="then drop every entry that is still stale (for the committed snapshot: today's entries only)")
    args = ap.parse_args(argv)
    if bad := [m for m in args.rekey if not _in_repo(m)]:
        sys.exit(f"cache: {', '.join(bad)} is not a module of {ROOT}")
    if args.moved_from:
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            for name, counts in carry(args.folder, checkout(args.moved_from, tmp)).items():
                for module, n in sorted(counts.items()):
                    print(f"{name:20} {module:24} carried {n:6}  (current at {args.moved_from})")
    for name, counts in stale(args.folder, set(args.rekey)).items():
        for module, (fresh, old) in sorted(counts.items()):
            print(f"{name:20} {module:24} current {fresh:6}  stale {old:6}"
                  + ("  (re-keyed)" if old and module in args.rekey else ""))
    if args.prune:
        for name, n in prune(args.folder).items():
            print(f"{name:20} pruned {n:6} stale entries")


if __name__ == "__main__":
    main()
